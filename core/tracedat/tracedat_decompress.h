#pragma once
// Decompression of trace.dat version-7 blocks (internal to the reader), and
// the matching compression for the version-7 writer (tracedat_v7_writer.h).
//
// A v7 file names its algorithm in the file header ("zstd", "zlib" or
// "none"). Two shapes are compressed with it:
//   - a compressed section body: u32 compressed size, u32 uncompressed
//     size, then the compressed bytes (one block);
//   - a CPU's flyrecord data: u32 chunk count, then per chunk u32
//     compressed size, u32 uncompressed size, the compressed bytes.
// zstd blocks are zstd frames (libzstd), zlib blocks are zlib streams
// (RFC 1950, zlib's uncompress()). Mirrors trace-cmd
// lib/trace-cmd/trace-compress.c: tracecmd_uncompress_block,
// tracecmd_uncompress_chunks; never our own decompressor.
//
// Invariants: every size is checked against the bytes that remain before
// anything is read or allocated; output sizes are capped (kMaxRatio,
// kRatioAllowance, kMaxOutput) before allocating; the decompressed size
// must equal the stored uncompressed size exactly. Any failure throws
// TraceDatError(section, file offset of the offending size field or block).
//
// Thread-safety: stateless free functions; safe from any thread.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tracepipe::detail {

enum class Compression : uint8_t { none, zstd, zlib };

/// Output may exceed 1024 x its compressed input only within the first
/// kRatioAllowance bytes; beyond that the sizes are called absurd.
inline constexpr uint64_t kMaxRatio = 1024;
inline constexpr uint64_t kRatioAllowance = 16ull << 20;  // bytes
/// No section or CPU decompresses to more than this (bytes).
inline constexpr uint64_t kMaxOutput = 4ull << 30;

/// The algorithm named in the file header, or nullopt-equivalent: throws
/// TraceDatError("file header", at, ...) for an unknown name.
Compression compression_from_name(std::string_view name, uint64_t at);

/// A whole compressed section body at file offset `body` with `size`
/// bytes (u32 csize, u32 usize, data): the decompressed bytes.
std::vector<std::byte> decompress_section(Compression algo, std::span<const std::byte> file,
                                          uint64_t body, uint64_t size, const std::string& section);

/// A CPU's chunked data starting at file offset `at` and bounded by file
/// offset `end`: the concatenated decompressed chunks.
std::vector<std::byte> decompress_chunks(Compression algo, std::span<const std::byte> file,
                                         uint64_t at, uint64_t end, const std::string& section);

/// Compresses blocks the way trace-cmd writes them (lib/trace-cmd/
/// trace-compress-zstd.c: ZSTD_compress2 at zstd's default level, no content
/// size in the frame; trace-compress-zlib.c: compress2 at the default level),
/// so that the functions above and trace-cmd's reader take them back. One
/// context, reused; not thread-safe.
class BlockCompressor {
 public:
  /// Throws std::invalid_argument for Compression::none,
  /// std::bad_alloc if the library context cannot be made.
  explicit BlockCompressor(Compression algo);
  ~BlockCompressor();
  BlockCompressor(const BlockCompressor&) = delete;
  BlockCompressor& operator=(const BlockCompressor&) = delete;
  /// The compressed bytes of `in` (valid until the next call); empty on a
  /// library failure.
  std::span<const std::byte> compress(std::span<const std::byte> in);
  /// The name and version a v7 file header records ("zstd", ZSTD_versionString()).
  static const char* name(Compression algo) noexcept;
  static std::string version(Compression algo);

 private:
  Compression algo_;
  void* zstd_ = nullptr;  // ZSTD_CCtx
  std::vector<std::byte> out_;
};

}  // namespace tracepipe::detail
