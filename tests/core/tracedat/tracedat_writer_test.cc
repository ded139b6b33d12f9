#include "tracepipe/core/tracedat/tracedat_writer.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "sample_events.h"
#include "tracedat_test_util.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_tracedat_test;

TEST_CASE("tracedat_writer: round trip through the reader", "[tracedat][writer]") {
  TraceDatWriter w({.cpus = 3});
  w.add_format(sample_format());
  w.add_format(tick_format());
  for (int32_t pid = 100; pid < 104; ++pid) w.set_cmdline(pid, fmt::format("worker{}", pid));
  const auto in = make_records(w, 5000);
  w.add_lost(1, 12345);
  std::vector<std::byte> tail = encode_tick(9999, 100);
  w.add_record(1, 900'000'000'000, tail);  // after every other record
  w.add_lost(2, std::nullopt);
  w.add_record(2, 900'000'000'001, tail);

  const TraceDatReader r(MappedFile::copy_of(w.to_bytes()));
  CHECK(r.version() == 6);
  CHECK(r.cpu_count() == 3);
  CHECK(r.clock_name() == "local");
  REQUIRE(r.formats().size() == 2);
  CHECK(r.formats()[0] == sample_format());
  CHECK(r.formats()[1] == tick_format());
  CHECK(r.comm(102) == std::string_view("worker102"));
  CHECK(r.header_page().layout == kpage::PageLayout{4096, 8});

  // Per CPU: same records, same order, same bytes.
  for (uint32_t cpu = 0; cpu < 3; ++cpu) {
    auto c = r.cpu_records(cpu);
    CHECK(c.cpu() == cpu);
    for (const auto& wr : in) {
      if (wr.cpu != cpu) continue;
      const auto rec = c.next();
      REQUIRE(rec);
      CHECK(rec->ts == wr.ts);
      CHECK(rec->lost_before == 0);
      REQUIRE(rec->payload.size() == ((wr.payload.size() + 3) & ~size_t{3}));
      REQUIRE(std::memcmp(rec->payload.data(), wr.payload.data(), wr.payload.size()) == 0);
    }
    if (cpu == 0) {
      CHECK_FALSE(c.next());
    } else {
      const auto last = c.next();
      REQUIRE(last);
      CHECK(last->lost_before == (cpu == 1 ? 12345 : -1));
      CHECK_FALSE(c.next());
      CHECK(c.stats().pages_with_loss == 1);
    }
    CHECK(c.stats().time_extends > 0);
  }
  size_t n = 0;
  auto m = r.records();
  uint64_t prev = 0;
  while (auto rec = m.next()) {
    CHECK(rec->ts >= prev);
    prev = rec->ts;
    ++n;
  }
  CHECK(n == in.size() + 2);
  CHECK(w.stats().records == in.size() + 2);
}

TEST_CASE("tracedat_writer: write() and to_bytes() give the same file, empty CPUs are fine",
          "[tracedat][writer]") {
  TraceDatWriter w({.cpus = 4, .page_size = 8192, .clock = "mono"});
  w.add_format(tick_format());
  w.add_record(2, 77, encode_tick(1, 5));
  const TempPath out("writer_same.dat");
  w.write(out.path);
  const auto bytes = w.to_bytes();
  CHECK(tp_test::read_file(out.path).size() == bytes.size());
  CHECK(to_bytes(tp_test::read_file(out.path)) == bytes);
  const auto r = TraceDatReader::open(out.path);
  CHECK(r.page_size() == 8192);
  CHECK(r.clock_name() == "mono");
  REQUIRE(r.cpu_data().size() == 4);
  CHECK(r.cpu_data()[0].size == 0);
  CHECK(r.cpu_data()[2].size == 8192);
  auto m = r.records();
  const auto rec = m.next();
  REQUIRE(rec);
  CHECK(rec->cpu == 2);
  CHECK(rec->ts == 77);
  CHECK_FALSE(m.next());
}

TEST_CASE("tracedat_writer: bad input is refused", "[tracedat][writer]") {
  CHECK_THROWS_AS(TraceDatWriter({.cpus = 0}), std::invalid_argument);
  CHECK_THROWS_AS(TraceDatWriter({.cpus = 1, .page_size = 1000}), std::invalid_argument);
  TraceDatWriter w({.cpus = 1});
  w.add_format(tick_format());
  auto dup = sample_format();
  dup.id = 1001;
  CHECK_THROWS_WITH(w.add_format(dup), Catch::Contains("already used by tracepipe/tick"));
  dup.id = 70000;
  CHECK_THROWS_AS(w.add_format(dup), std::invalid_argument);
  const std::vector<std::byte> big(w.max_payload() + 1);
  CHECK_THROWS_AS(w.add_record(0, 1, big), std::invalid_argument);
  CHECK_THROWS_AS(w.add_record(1, 1, encode_tick(1, 1)), std::invalid_argument);
  CHECK_NOTHROW(w.add_record(0, 1, {big.data(), w.max_payload()}));
}

TEST_CASE("tracedat_writer: write() replaces a regular file but never a FIFO or a symlink",
          "[tracedat][writer]") {
  TraceDatWriter w({.cpus = 1});
  w.add_format(tick_format());
  w.add_record(0, 5, encode_tick(1, 2));
  const TempPath fifo("writer_fifo.dat");
  REQUIRE(::mkfifo(fifo.path.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(w.write(fifo.path), Catch::Contains("not a regular file"));
  CHECK(std::filesystem::is_fifo(fifo.path));
  const TempPath target("writer_target.dat"), link("writer_link.dat");
  std::filesystem::create_symlink(target.path, link.path);
  CHECK_THROWS_WITH(w.write(link.path), Catch::Contains("not a regular file"));
  CHECK(std::filesystem::is_symlink(link.path));
  const TempPath regular("writer_regular.dat");
  {
    std::FILE* f = std::fopen(regular.path.c_str(), "w");
    REQUIRE(f);
    std::fputs("old", f);
    std::fclose(f);
  }
  w.write(regular.path);
  CHECK(TraceDatReader::open(regular.path).cpu_data().size() == 1);
  for (const auto& e : std::filesystem::directory_iterator(regular.path.parent_path()))
    CHECK(e.path().filename().string().rfind(regular.path.filename().string() + ".", 0) !=
          0);  // no temp left
}

TEST_CASE("tracedat_writer: write() into a missing folder names the path asked for",
          "[tracedat][writer]") {
  TraceDatWriter w({.cpus = 1});
  w.add_format(tick_format());
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / "tp-no-such-folder" / "x.dat";
  // Not the temporary beside it (x.dat.XXXXXX), which the user never named.
  CHECK_THROWS_WITH(w.write(p), "cannot create " + p.string() + ": No such file or directory");
}

// A reader opened from a path names it in its errors, the headers' and its
// cursors' alike (also after the reader was moved); one made from bytes
// says "trace.dat".
TEST_CASE("tracedat_reader: errors name the file the reader was opened from",
          "[tracedat][reader]") {
  TraceDatWriter w({.cpus = 1});
  w.add_format(tick_format());
  for (uint64_t i = 0; i < 1000; ++i) w.add_record(0, 1000 + i, encode_tick(i, 2));
  std::vector<std::byte> bytes = w.to_bytes();
  const TempPath good("reader_named_good.dat"), bad_page("reader_named_page.dat"),
      bad_magic("reader_named_magic.dat");
  const auto put = [](const TempPath& p, const std::vector<std::byte>& b) {
    std::FILE* f = std::fopen(p.path.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(b.data(), 1, b.size(), f) == b.size());
    std::fclose(f);
  };
  put(good, bytes);
  const uint64_t page = TraceDatReader::open(good.path).cpu_data()[0].offset;
  std::vector<std::byte> corrupt = bytes;
  const uint32_t words[2] = {0, 100000};  // first record: type_len 0, length 100000
  std::memcpy(&corrupt[page + 16], words, 8);
  put(bad_page, corrupt);
  corrupt = bytes;
  corrupt[3] = std::byte{'X'};
  put(bad_magic, corrupt);

  const std::string magic_path = bad_magic.path.string();
  try {
    (void)TraceDatReader::open(bad_magic.path);
    FAIL("accepted a bad magic");
  } catch (const TraceDatError& e) {
    CHECK(e.file() == magic_path);
    CHECK(std::string(e.what()) == magic_path + ": " + e.detail());
    CHECK_THAT(e.detail(),
               Catch::StartsWith("file header at offset 0 (0x0): expected the trace.dat magic"));
  }

  const std::string page_path = bad_page.path.string();
  TraceDatReader opened = TraceDatReader::open(bad_page.path);
  CHECK(opened.name() == page_path);
  const TraceDatReader moved = std::move(opened);
  auto cursor = moved.cpu_records(0);
  try {
    while (cursor.next()) {
    }
    FAIL("accepted a bad record length");
  } catch (const TraceDatError& e) {
    CHECK(e.file() == page_path);
    CHECK(e.section() == "cpu 0 data");
    CHECK(e.offset() == page + 16);
    CHECK_THAT(e.what(), Catch::StartsWith(page_path + ": cpu 0 data at offset " +
                                           std::to_string(page + 16)));
  }

  try {
    (void)TraceDatReader(MappedFile::copy_of(corrupt));
    FAIL("accepted a bad magic");
  } catch (const TraceDatError& e) {
    CHECK(e.file() == "trace.dat");
    CHECK_THAT(e.what(), Catch::StartsWith("trace.dat: file header at offset 0"));
  }
}
