// TraceDatError names the file: a reader made from bytes with a
// custom or empty name, one opened from a path, cursors made before and
// after the reader is moved (move-construct and move-assign), and errors of
// compressed (v7, zstd) files thrown by the parser and by a cursor over
// decompressed data. Always: what() == file() + ": " + detail(), and
// detail() == section + " at offset N (0xN): " + reason().
#include <fmt/format.h>
#include <zstd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "sample_events.h"
#include "test_support.h"
#include "tracedat_test_util.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

using namespace tracepipe;
using namespace tp_tracedat_test;

namespace {

int g_checked = 0;

void check_shape(const TraceDatError& e, const std::string& file) {
  ++g_checked;
  CHECK(e.file() == file);
  CHECK(std::string(e.what()) == e.file() + ": " + e.detail());
  CHECK(e.detail() == fmt::format("{} at offset {} (0x{:x}): {}", e.section(), e.offset(),
                                  e.offset(), e.reason()));
}

std::vector<std::byte> good_bytes() {
  TraceDatWriter w({.cpus = 2});
  w.add_format(tick_format());
  for (uint64_t i = 0; i < 1000; ++i)
    w.add_record(i % 2, 1000 + i, encode_tick(static_cast<uint32_t>(i), 2));
  return w.to_bytes();
}

// The first record of CPU 0's first page given length 100000.
std::vector<std::byte> bad_page_bytes(uint64_t* at = nullptr) {
  std::vector<std::byte> b = good_bytes();
  const uint64_t page = TraceDatReader(MappedFile::copy_of(b)).cpu_data()[0].offset;
  const uint32_t words[2] = {0, 100000};
  std::memcpy(&b[page + 16], words, 8);
  if (at) *at = page + 16;
  return b;
}

// Drains every CPU cursor; returns the error if one threw.
// (A merged cursor reads each CPU's first page when made: make it inside.)
template <class MakeCursor>
std::optional<TraceDatError> drain_err(MakeCursor make) {
  try {
    auto c = make();
    while (c.next()) {
    }
  } catch (const TraceDatError& e) {
    return e;
  }
  return std::nullopt;
}

std::vector<std::byte> read_bytes(const std::filesystem::path& p) {
  const std::string s = tp_test::read_file(p);
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

}  // namespace

TEST_CASE("tracedat errors: custom, empty and default names from bytes", "[tracedat][errors]") {
  auto magic = good_bytes();
  magic[3] = std::byte{'X'};
  for (const std::string& name : std::vector<std::string>{
           "custom/name.dat", "", "trace.dat", "with: colon.dat", std::string(300, 'n')}) {
    INFO("name '" << name << "'");
    const std::string file =
        name.empty() ? std::string("trace.dat") : name;  // an empty name is the default
    try {
      (void)TraceDatReader(MappedFile::copy_of(magic), name);
      FAIL("accepted a bad magic");
    } catch (const TraceDatError& e) {
      check_shape(e, file);
      CHECK(e.section() == "file header");
    }
    uint64_t at = 0;
    const TraceDatReader r(MappedFile::copy_of(bad_page_bytes(&at)), name);
    CHECK(r.name() == file);
    auto e = drain_err([&] { return r.cpu_records(0); });
    REQUIRE(e);
    check_shape(*e, file);
    CHECK(e->offset() == at);
    auto m = drain_err([&] { return r.records(); });
    REQUIRE(m);
    check_shape(*m, file);
  }
  // Default constructor argument.
  const TraceDatReader d(MappedFile::copy_of(bad_page_bytes()));
  CHECK(d.name() == "trace.dat");
  auto e = drain_err([&] { return d.cpu_records(0); });
  REQUIRE(e);
  check_shape(*e, "trace.dat");
  // with_file keeps everything but the file.
  const TraceDatError w = e->with_file("other");
  check_shape(w, "other");
  CHECK(w.section() == e->section());
  CHECK(w.offset() == e->offset());
  CHECK(w.reason() == e->reason());
}

TEST_CASE("tracedat errors: cursors made before and after moving the reader",
          "[tracedat][errors]") {
  uint64_t at = 0;
  const auto bytes = bad_page_bytes(&at);
  // A short name (SSO: the string lives inside the std::string object) and a long one.
  for (const std::string& name :
       std::vector<std::string>{std::string("s.dat"), std::string(200, 'L') + ".dat"}) {
    INFO(name.size());
    auto r1 = std::make_unique<TraceDatReader>(MappedFile::copy_of(bytes), name);
    auto before = r1->cpu_records(0);
    auto before1 = r1->cpu_records(1);  // CPU 1 is good: a merged cursor of it reads fine later
    TraceDatReader r2 = std::move(*r1);
    r1.reset();  // the moved-from object is gone
    auto after = r2.cpu_records(0);
    // Move-assign into a reader that had another name.
    TraceDatReader r3(MappedFile::copy_of(good_bytes()), "to-be-replaced.dat");
    r3 = std::move(r2);
    auto after_assign = r3.cpu_records(0);
    CHECK(r3.name() == name);
    for (auto* c : {&before, &after, &after_assign}) {
      auto e = drain_err([&] { return std::move(*c); });
      REQUIRE(e);
      check_shape(*e, name);
      CHECK(e->offset() == at);
    }
    CHECK(!drain_err([&] { return std::move(before1); }));
    auto m = drain_err([&] { return r3.records(); });
    REQUIRE(m);
    check_shape(*m, name);
  }
}

TEST_CASE("tracedat errors: opened from a path (and an empty path)", "[tracedat][errors]") {
  const TempPath p("errors_named_bad_page.dat");
  {
    const auto b = bad_page_bytes();
    std::FILE* f = std::fopen(p.path.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(b.data(), 1, b.size(), f) == b.size());
    std::fclose(f);
  }
  const TraceDatReader r = TraceDatReader::open(p.path);
  CHECK(r.name() == p.path.string());
  auto e = drain_err([&] { return r.cpu_records(0); });
  REQUIRE(e);
  check_shape(*e, p.path.string());
  // An empty path cannot be opened: not a TraceDatError.
  CHECK_THROWS_AS(TraceDatReader::open(""), std::exception);
  try {
    (void)TraceDatReader::open("");
  } catch (const TraceDatError&) {
    FAIL("an empty path gave a TraceDatError");
  } catch (const std::exception& x) {
    WARN("open(\"\") throws: " << x.what());
  }
}

TEST_CASE("tracedat errors: compressed (zstd v7) files: parser and cursor errors name the file",
          "[tracedat][errors]") {
  const auto good =
      read_bytes(std::filesystem::path(TP_SOURCE_DIR) / "tests/core/tracedat/data/sample_zstd.dat");
  // Parser errors: corrupt chunk header words and the algorithm name.
  struct Case {
    size_t at;
    uint32_t value;
  } cases[] = {{0x400, 0x10000000}, {0x404, 0x7fffffff}, {0x408, 0x301},
               {0x408, 0x2ff},      {0x40c, 0},          {53, 0xfffffff0}};
  for (const auto& c : cases) {
    auto v = good;
    std::memcpy(v.data() + c.at, &c.value, 4);
    try {
      const TraceDatReader r(MappedFile::copy_of(v), "z.dat");
      auto m = r.records();
      while (m.next()) {
      }
      FAIL("no error for corruption at " << c.at);
    } catch (const TraceDatError& e) {
      check_shape(e, "z.dat");
    }
  }
  auto alg = good;
  std::memcpy(alg.data() + 0x12, "lzma", 4);
  try {
    (void)TraceDatReader(MappedFile::copy_of(alg), "");
    FAIL("lzma accepted");
  } catch (const TraceDatError& e) {
    check_shape(e, "trace.dat");
    CHECK(e.section() == "file header");
  }

  // A cursor error in decompressed data: CPU 0's one chunk (csize 0x98 at
  // 0x404, usize 0x300, frame at 0x40c) decompressed, a record's length
  // corrupted, recompressed and padded back to 0x98 bytes with a zstd
  // skippable frame.
  uint32_t csize = 0, usize = 0;
  std::memcpy(&csize, good.data() + 0x404, 4);
  std::memcpy(&usize, good.data() + 0x408, 4);
  REQUIRE(csize == 0x98);
  REQUIRE(usize == 0x300);
  std::vector<std::byte> raw(usize);
  REQUIRE(ZSTD_decompress(raw.data(), raw.size(), good.data() + 0x40c, csize) == usize);
  const uint32_t words[2] = {0, 100000};
  std::memcpy(raw.data() + 16, words, 8);            // the first record of the first page
  std::memset(raw.data() + 24, 0, raw.size() - 24);  // (compresses into the old frame's room)
  std::vector<std::byte> z(ZSTD_compressBound(raw.size()));
  const size_t zn = ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), 19);
  REQUIRE(!ZSTD_isError(zn));
  REQUIRE(zn + 8 <= csize);
  auto v = good;
  std::memcpy(v.data() + 0x40c, z.data(), zn);
  const uint32_t skip[2] = {0x184D2A50u, static_cast<uint32_t>(csize - zn - 8)};
  std::memcpy(v.data() + 0x40c + zn, skip, 8);
  std::memset(v.data() + 0x40c + zn + 8, 0, csize - zn - 8);
  for (const std::string& name : std::vector<std::string>{"zc.dat", ""}) {
    INFO("name '" << name << "'");
    TraceDatReader r0(MappedFile::copy_of(v), name);  // the headers are fine
    auto before = r0.cpu_records(0);
    const TraceDatReader r = std::move(r0);
    const std::optional<TraceDatError> e = drain_err([&] { return std::move(before); });
    REQUIRE(e);
    check_shape(*e, name.empty() ? std::string("trace.dat") : name);
    CHECK(e->section() == "cpu 0 decompressed data");
    CHECK(e->offset() == 16);
  }
}

// A moved-from reader still has a name (the default): its name() once
// dereferenced the null pointer its name was moved out of.
TEST_CASE("tracedat errors: name() of a moved-from reader", "[tracedat][errors]") {
  TraceDatReader a(MappedFile::copy_of(good_bytes()), "a.dat");
  const TraceDatReader b = std::move(a);
  CHECK(b.name() == "a.dat");
  CHECK_THROWS_AS(a.cpu_records(0), std::out_of_range);  // NOLINT(bugprone-use-after-move)
  CHECK(a.name() == "trace.dat");                        // NOLINT(bugprone-use-after-move)
}
