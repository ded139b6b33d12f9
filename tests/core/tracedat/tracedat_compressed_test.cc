// Compressed version-7 trace.dat files (zstd, zlib): reading them gives the
// same records as the uncompressed file, and corrupted compressed data gives
// a TraceDatError naming the section and offset, never a crash.
//
// data/sample_zstd.dat is `trace-cmd convert --file-version 7 --compression
// zstd` (trace-cmd 3.1.6) of tests/fuzz/corpus/tracedat_reader_fuzz/
// small_v7.dat; its layout (checked with xxd): the header_page section at
// 37 (body at 53: u32 csize 0xfe, u32 usize 0x1c2, zstd frame), CPU 0's
// chunks at 0x400 (u32 count 1, u32 csize 0x98, u32 usize 0x300, frame at
// 0x40c), the algorithm name "zstd" at 0x12.
#include <zlib.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>

#include "test_support.h"
#include "tracedat_test_util.h"
#include "tracepipe/core/tracedat/tracedat_decompress.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;

namespace {

const std::filesystem::path kData =
    std::filesystem::path(TP_SOURCE_DIR) / "tests/core/tracedat/data";
const std::filesystem::path kCorpus =
    std::filesystem::path(TP_SOURCE_DIR) / "tests/fuzz/corpus/tracedat_reader_fuzz";

std::vector<std::byte> compressed_file_bytes(const std::filesystem::path& p) {
  const std::string s = tp_test::read_file(p);
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

void put_u32(std::vector<std::byte>& v, size_t at, uint32_t x) {
  std::memcpy(v.data() + at, &x, 4);
}

void append_u32(std::vector<std::byte>& v, uint32_t x) {
  const size_t at = v.size();
  v.resize(at + 4);
  put_u32(v, at, x);
}

size_t drain_count(const TraceDatReader& r) {
  auto m = r.records();
  size_t n = 0;
  while (m.next()) ++n;
  return n;
}

// Opens and reads all of `v`; returns the TraceDatError text (empty if none).
std::string error_of(const std::vector<std::byte>& v, std::string* section = nullptr,
                     uint64_t* offset = nullptr) {
  try {
    const TraceDatReader r(MappedFile::copy_of(v));
    drain_count(r);
  } catch (const TraceDatError& e) {
    if (section) *section = e.section();
    if (offset) *offset = e.offset();
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("tracedat_compressed: a zstd file reads like its uncompressed source",
          "[tracedat][reader]") {
  const auto z = TraceDatReader::open(kData / "sample_zstd.dat");
  const auto n = TraceDatReader::open(kCorpus / "small_v7.dat");
  CHECK(z.compression() == "zstd");
  CHECK(n.compression() == "none");
  CHECK(z.formats() == n.formats());
  CHECK(z.cmdlines() == n.cmdlines());
  CHECK(z.header_page_text() == n.header_page_text());
  CHECK(z.header_event_text() == n.header_event_text());
  REQUIRE(z.cpu_data().size() == 2);
  CHECK(z.cpu_data()[0].uncompressed_size == 768);
  CHECK(z.cpu_data()[1].uncompressed_size == 1024);
  CHECK(n.cpu_data()[0].uncompressed_size == n.cpu_data()[0].size);
  CHECK(tp_tracedat_test::same_records(z, n) == 24);
}

TEST_CASE("tracedat_compressed: a real zstd capture (trace-cmd extract) reads whole",
          "[tracedat][reader]") {
  const auto r = TraceDatReader::open(kData / "sched_switch_zstd.dat");
  CHECK(r.compression() == "zstd");
  CHECK(r.kallsyms_text().size() == 754);
  CHECK(r.printk_text().size() == 4316);
  CHECK(r.find_format("sched", "sched_switch") != nullptr);
  CHECK(drain_count(r) == 363);
}

TEST_CASE("tracedat_compressed: corrupted compressed data names the section and offset",
          "[tracedat][reader]") {
  const auto good = compressed_file_bytes(kData / "sample_zstd.dat");
  REQUIRE(error_of(good).empty());
  std::string section;
  uint64_t offset = 0;
  struct Case {
    const char* what;
    size_t at;
    uint32_t value;
    const char* section;
    uint64_t offset;
    const char* text;
  } cases[] = {
      {"chunk count", 0x400, 0x10000000, "cpu 0 data", 0x400, "chunks do not fit"},
      {"chunk csize", 0x404, 0x7fffffff, "cpu 0 data", 0x404, "runs past the end"},
      {"chunk usize too big", 0x408, 0x301, "cpu 0 data", 0x404,
       "decompressed to 768 bytes, the header says 769"},
      {"chunk usize too small", 0x408, 0x2ff, "cpu 0 data", 0x404, "zstd decompression failed"},
      {"chunk usize absurd", 0x408, 0xffffffff, "cpu 0 data", 0x404, "is absurd"},
      {"chunk frame magic", 0x40c, 0, "cpu 0 data", 0x404, "zstd decompression failed"},
      {"section csize", 53, 0xfffffff0, "header_page", 53, "runs past the end"},
      {"section usize", 57, 0x1c3, "header_page", 53,
       "decompressed to 450 bytes, the header says 451"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    auto v = good;
    put_u32(v, c.at, c.value);
    const std::string e = error_of(v, &section, &offset);
    CHECK(section == c.section);
    CHECK(offset == c.offset);
    CHECK(e.find(c.text) != std::string::npos);
  }
}

TEST_CASE("tracedat_compressed: an unknown algorithm is refused by name", "[tracedat][reader]") {
  auto v = compressed_file_bytes(kData / "sample_zstd.dat");
  std::memcpy(v.data() + 0x12, "lzma", 4);
  std::string section;
  uint64_t offset = 0;
  const std::string e = error_of(v, &section, &offset);
  CHECK(section == "file header");
  CHECK(offset == 0x12);
  CHECK(e.find("compression algorithm 'lzma' is not supported") != std::string::npos);
}

TEST_CASE("tracedat_compressed: every truncation fails cleanly", "[tracedat][reader]") {
  // Each prefix of the file either is refused with a TraceDatError that
  // names a section (no other exception, no crash), or reads as a file with
  // no more records than the whole one. The whole file must read.
  const auto good = compressed_file_bytes(kData / "sample_zstd.dat");
  const size_t full = drain_count(TraceDatReader(MappedFile::copy_of(good)));
  REQUIRE(full > 0);
  size_t refused = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    const std::vector<std::byte> v(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    std::string section;
    const std::string err = error_of(v, &section);
    if (!err.empty()) {
      ++refused;
      INFO("prefix of " << n << " bytes: " << err);
      CHECK_FALSE(section.empty());
      continue;
    }
    const size_t got = drain_count(TraceDatReader(MappedFile::copy_of(v)));
    INFO("prefix of " << n << " bytes read without error");
    CHECK(got <= full);
  }
  // The header alone is most of the prefixes: most of them must be refused.
  CHECK(refused > good.size() / 2);
}

TEST_CASE(
    "tracedat_compressed: zlib chunks and sections (zlib's compress2, as trace-cmd writes them)",
    "[tracedat][reader]") {
  // trace-cmd here has no zlib support, so no zlib file can be made with it;
  // its zlib blocks are zlib streams from compress2(), built the same way.
  std::string text;
  for (int i = 0; i < 200; ++i) text += "line " + std::to_string(i) + " of some kernel text\n";
  std::vector<std::byte> z(compressBound(text.size()));
  uLongf zn = z.size();
  REQUIRE(compress2(reinterpret_cast<Bytef*>(z.data()), &zn,
                    reinterpret_cast<const Bytef*>(text.data()), text.size(), 9) == Z_OK);
  z.resize(zn);
  // Two chunks of the same block.
  std::vector<std::byte> file(8, std::byte{0});
  append_u32(file, 2);
  for (int i = 0; i < 2; ++i) {
    append_u32(file, static_cast<uint32_t>(z.size()));
    append_u32(file, static_cast<uint32_t>(text.size()));
    file.insert(file.end(), z.begin(), z.end());
  }
  using namespace tracepipe::detail;
  const auto out = decompress_chunks(Compression::zlib, file, 8, file.size(), "cpu 0 data");
  CHECK(std::string(reinterpret_cast<const char*>(out.data()), out.size()) == text + text);
  // A section body is one block.
  const auto sec = decompress_section(Compression::zlib, file, 12, 8 + z.size(), "kallsyms");
  CHECK(std::string(reinterpret_cast<const char*>(sec.data()), sec.size()) == text);
  // Corruptions.
  auto bad = file;
  put_u32(bad, 16, static_cast<uint32_t>(text.size() + 1));
  CHECK_THROWS_WITH(
      decompress_chunks(Compression::zlib, bad, 8, bad.size(), "cpu 0 data"),
      Catch::Contains("cpu 0 data at offset 12") && Catch::Contains("the header says"));
  bad = file;
  bad[20] = std::byte{0xff};  // zlib header byte
  CHECK_THROWS_WITH(decompress_chunks(Compression::zlib, bad, 8, bad.size(), "cpu 0 data"),
                    Catch::Contains("zlib decompression failed"));
  bad = file;
  put_u32(bad, 16, static_cast<uint32_t>(text.size() - 1));
  CHECK_THROWS_WITH(decompress_chunks(Compression::zlib, bad, 8, bad.size(), "cpu 0 data"),
                    Catch::Contains("zlib data is truncated or decompresses to more"));
  CHECK_THROWS_WITH(decompress_chunks(Compression::zlib, file, 8, file.size() - 1, "cpu 0 data"),
                    Catch::Contains("runs past the end"));
}
