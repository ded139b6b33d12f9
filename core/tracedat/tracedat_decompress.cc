#include "tracepipe/core/tracedat/tracedat_decompress.h"

#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <stdexcept>

#include "tracepipe/core/tracedat/tracedat_cursor.h"

namespace tracepipe::detail {

Compression compression_from_name(std::string_view name, uint64_t at) {
  if (name == "none") return Compression::none;
  if (name == "zstd") return Compression::zstd;
  if (name == "zlib") return Compression::zlib;
  throw TraceDatError(
      "file header", at,
      fmt::format("compression algorithm '{}' is not supported (only zstd, zlib, none)", name));
}

namespace {

// Throws unless `usize` more output bytes (after `done` so far, from
// `cdone` compressed bytes so far) stay within the caps.
void check_output_size(const ByteCursor& c, uint64_t at, uint64_t done, uint64_t cdone,
                       uint64_t usize) {
  const uint64_t total = done + usize;
  if (total > kMaxOutput)
    c.fail(at, fmt::format("uncompressed size {} exceeds the {}-byte limit", total, kMaxOutput));
  if (total > cdone * kMaxRatio + kRatioAllowance)
    c.fail(at, fmt::format("uncompressed size {} from {} compressed bytes is absurd (ratio > {}:1)",
                           total, cdone, kMaxRatio));
}

// Decompresses `in` into `out` (exactly out.size() bytes expected).
void decompress_block(Compression algo, std::span<const std::byte> in, std::span<std::byte> out,
                      const ByteCursor& c, uint64_t at) {
  if (algo == Compression::zstd) {
    const size_t n = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(n))
      c.fail(at, fmt::format("zstd decompression failed: {}", ZSTD_getErrorName(n)));
    if (n != out.size())
      c.fail(at, fmt::format("decompressed to {} bytes, the header says {}", n, out.size()));
    return;
  }
  if (algo == Compression::zlib) {
    uLongf n = static_cast<uLongf>(out.size());
    const int rc =
        ::uncompress(reinterpret_cast<Bytef*>(out.data()), &n,
                     reinterpret_cast<const Bytef*>(in.data()), static_cast<uLong>(in.size()));
    if (rc == Z_BUF_ERROR)
      c.fail(at,
             fmt::format(
                 "zlib data is truncated or decompresses to more than the {} bytes the header says",
                 out.size()));
    if (rc != Z_OK) c.fail(at, fmt::format("zlib decompression failed: {} ({})", zError(rc), rc));
    if (n != out.size())
      c.fail(at, fmt::format("decompressed to {} bytes, the header says {}", n, out.size()));
    return;
  }
  c.fail(at, "block is marked compressed but the file's compression is 'none'");
}

// One (u32 csize, u32 usize, data) block at c.pos(), appended to `out`.
void read_block(Compression algo, ByteCursor& c, std::vector<std::byte>& out, uint64_t& cdone) {
  const uint64_t at = c.pos();
  const uint32_t csize = c.u32();
  const uint32_t usize = c.u32();
  if (csize > c.remaining())
    c.fail(at, fmt::format("compressed size {} runs past the end ({} bytes left)", csize,
                           c.remaining()));
  cdone += csize;
  check_output_size(c, at, out.size(), cdone, usize);
  const auto in = c.bytes(csize);
  const size_t old = out.size();
  out.resize(old + usize);
  decompress_block(algo, in, std::span(out).subspan(old), c, at);
}

}  // namespace

std::vector<std::byte> decompress_section(Compression algo, std::span<const std::byte> file,
                                          uint64_t body, uint64_t size,
                                          const std::string& section) {
  ByteCursor c(file.first(static_cast<size_t>(body + size)), body, section);
  std::vector<std::byte> out;
  uint64_t cdone = 0;
  read_block(algo, c, out, cdone);
  return out;
}

std::vector<std::byte> decompress_chunks(Compression algo, std::span<const std::byte> file,
                                         uint64_t at, uint64_t end, const std::string& section) {
  ByteCursor c(file.first(static_cast<size_t>(std::min<uint64_t>(end, file.size()))), at, section);
  const uint64_t count_at = c.pos();
  const uint32_t count = c.u32();
  if (count > c.remaining() / 8)
    c.fail(count_at,
           fmt::format("{} chunks do not fit in the {} bytes left", count, c.remaining()));
  std::vector<std::byte> out;
  uint64_t cdone = 0;
  for (uint32_t i = 0; i < count; ++i) read_block(algo, c, out, cdone);
  return out;
}

BlockCompressor::BlockCompressor(Compression algo) : algo_(algo) {
  if (algo == Compression::none) throw std::invalid_argument("block compressor: no algorithm");
  if (algo == Compression::zstd) {
    ZSTD_CCtx* z = ZSTD_createCCtx();
    if (z == nullptr) throw std::bad_alloc();
    (void)ZSTD_CCtx_setParameter(z, ZSTD_c_contentSizeFlag, 0);
    zstd_ = z;
  }
}

BlockCompressor::~BlockCompressor() { ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_)); }

std::span<const std::byte> BlockCompressor::compress(std::span<const std::byte> in) {
  if (algo_ == Compression::zstd) {
    out_.resize(ZSTD_compressBound(in.size()));
    const size_t n = ZSTD_compress2(static_cast<ZSTD_CCtx*>(zstd_), out_.data(), out_.size(),
                                    in.data(), in.size());
    if (ZSTD_isError(n)) return {};
    return std::span<const std::byte>(out_).first(n);
  }
  uLongf n = compressBound(static_cast<uLong>(in.size()));
  out_.resize(n);
  if (::compress2(reinterpret_cast<Bytef*>(out_.data()), &n,
                  reinterpret_cast<const Bytef*>(in.data()), static_cast<uLong>(in.size()),
                  Z_DEFAULT_COMPRESSION) != Z_OK)
    return {};
  return std::span<const std::byte>(out_).first(n);
}

const char* BlockCompressor::name(Compression algo) noexcept {
  return algo == Compression::zstd ? "zstd" : algo == Compression::zlib ? "zlib" : "none";
}

std::string BlockCompressor::version(Compression algo) {
  if (algo == Compression::zstd) return ZSTD_versionString();
  if (algo == Compression::zlib) return zlibVersion();
  return "";
}

}  // namespace tracepipe::detail
