#include "tracepipe/core/tracedat/tracedat_reader.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include "test_support.h"

using namespace tracepipe;

namespace {

std::vector<std::byte> file_bytes(const std::filesystem::path& p) {
  const std::string s = tp_test::read_file(p);
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

TraceDatReader from_bytes(const std::vector<std::byte>& v) {
  return TraceDatReader(MappedFile::copy_of(v));
}

// Reads everything, to make a cursor walk every page.
size_t drain(const TraceDatReader& r) {
  auto m = r.records();
  size_t n = 0;
  while (m.next()) ++n;
  return n;
}

}  // namespace

TEST_CASE("tracedat_reader: hackbench.dat headers", "[tracedat][reader]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const auto r = TraceDatReader::open(path);
  CHECK(r.version() == 6);
  CHECK(r.page_size() == 4096);
  CHECK(r.user_long_size() == 8);
  CHECK(r.header_page().commit.size == 8);
  CHECK(r.header_page().data.offset == 16);
  CHECK(r.header_page().layout == kpage::PageLayout{4096, 8});
  CHECK(r.header_page_text() == kpage::header_page_text(kpage::PageLayout{4096, 8}));
  CHECK(r.header_event_text() == kpage::header_event_text());
  REQUIRE(r.formats().size() == 18 + 19);
  CHECK(r.formats()[0].system == "ftrace");
  CHECK(r.format(372)->name == "sched_switch");
  CHECK(r.format(372)->system == "sched");
  CHECK(r.format(1)->name == "function");
  CHECK(r.format(9999) == nullptr);
  CHECK(r.find_format("kmem", "kmalloc")->id == 658);
  CHECK(r.kallsyms_text().empty());
  CHECK(r.printk_text().substr(0, 37) == "0xffffffff828195af : \"thaw_processes\"");
  CHECK(r.comm(30240) == std::string_view("python3"));
  CHECK(r.comm(15) == std::string_view("rcu_preempt"));
  CHECK_FALSE(r.comm(-5).has_value());
  REQUIRE(r.options().size() == 1);
  CHECK(r.options()[0].id == static_cast<uint16_t>(TraceDatOptionId::cpucount));
  CHECK(r.cpu_count() == 2);
  REQUIRE(r.cpu_data().size() == 2);
  CHECK(r.cpu_data()[0].offset == 0x1a000);
  CHECK(r.cpu_data()[0].size == 0x66c000);
  CHECK(r.cpu_data()[1].offset == 0x686000);
  CHECK_FALSE(r.is_latency());
}

TEST_CASE("tracedat_reader: hackbench.dat records match the kernel's counts",
          "[tracedat][reader]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const auto r = TraceDatReader::open(path);
  std::map<std::string, int> counts;
  auto m = r.records();
  uint64_t prev = 0;
  size_t n = 0;
  std::optional<TraceRecord> first;
  size_t out_of_order = 0, unknown = 0, short_payload = 0, lost = 0;
  while (auto rec = m.next()) {
    if (!first) first = rec;
    out_of_order += rec->ts < prev;  // merged order
    prev = rec->ts;
    const auto* f = r.format(*rec->event_id());
    if (!f) {
      ++unknown;
      continue;
    }
    short_payload += rec->payload.size() < f->fixed_size();
    lost += rec->lost_before != 0;
    ++counts[f->name];
    ++n;
  }
  CHECK(n == 257346);
  CHECK(out_of_order == 0);
  CHECK(unknown == 0);
  CHECK(short_payload == 0);
  CHECK(lost == 0);
  const std::map<std::string, int> want = {
      {"sys_enter", 81040},   {"sys_exit", 81040},       {"kfree", 44757},
      {"kmalloc", 42345},     {"sched_switch", 3596},    {"sched_waking", 2187},
      {"sched_wakeup", 2185}, {"signal_generate", 81},   {"softirq_entry", 66},
      {"hrtimer_start", 48},  {"sched_process_exec", 1},
  };
  CHECK(counts == want);
  // First line of `trace-cmd report -t`: python3-30240 [000] 1006.919299263: sys_exit
  REQUIRE(first);
  CHECK(first->cpu == 0);
  CHECK(first->ts == 1006919299263ull);
  CHECK(r.format(*first->event_id())->name == "sys_exit");

  // Per CPU: the kernel's per_cpu stats entries.
  auto c0 = r.cpu_records(0);
  auto c1 = r.cpu_records(1);
  uint64_t last0 = 0;
  size_t backwards = 0;
  while (auto rec = c0.next()) {
    backwards += rec->ts < last0;
    last0 = rec->ts;
  }
  CHECK(backwards == 0);
  while (c1.next()) {
  }
  CHECK(c0.stats().records == 141860);
  CHECK(c1.stats().records == 115486);
  CHECK(c0.stats().pages == 1644);
  CHECK(c0.stats().pages_with_loss == 0);
  CHECK(c1.stats().time_stamps == 3);
}

TEST_CASE("tracedat_reader: bad files name the section and offset", "[tracedat][reader]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const auto good = file_bytes(path);
  auto expect_error = [](const std::vector<std::byte>& bytes, const std::string& section,
                         uint64_t offset) {
    try {
      const auto r = from_bytes(bytes);
      drain(r);
      FAIL("accepted");
    } catch (const TraceDatError& e) {
      INFO(e.what());
      CHECK(e.section() == section);
      CHECK(e.offset() == offset);
      CHECK_THAT(e.what(), Catch::StartsWith("trace.dat: " + section + " at offset " +
                                             std::to_string(offset)));
    }
  };
  SECTION("bad magic") {
    auto b = good;
    b[3] = std::byte{'X'};
    expect_error(b, "file header", 0);
  }
  SECTION("unsupported version") {
    auto b = good;
    b[10] = std::byte{'5'};
    expect_error(b, "file header", 10);
  }
  SECTION("big endian") {
    auto b = good;
    b[12] = std::byte{1};
    expect_error(b, "file header", 12);
  }
  SECTION("truncated inside header_page") {
    expect_error({good.begin(), good.begin() + 40}, "header_page", 38);  // the text's start
  }
  SECTION("truncated inside the event formats") {
    // Cut inside the first event system's name/format list.
    const auto r = TraceDatReader::open(path);
    const std::string_view text(reinterpret_cast<const char*>(good.data()), good.size());
    const auto at = text.find("name: hrtimer_start");
    REQUIRE(at != std::string_view::npos);
    try {
      from_bytes({good.begin(), good.begin() + static_cast<long>(at) + 10});
      FAIL("accepted");
    } catch (const TraceDatError& e) {
      CHECK(e.section() == "event formats");
      CHECK(e.offset() == at);
      CHECK_THAT(e.what(), Catch::Contains("truncated"));
    }
  }
  SECTION("a malformed format is skipped with a warning naming the format line") {
    auto b = good;
    const std::string_view text(reinterpret_cast<const char*>(b.data()), b.size());
    const auto at = text.find("offset:8;", text.find("name: hrtimer_start"));
    REQUIRE(at != std::string_view::npos);
    b[at + 7] = std::byte{'x'};
    const auto intact = from_bytes(good);
    const auto r = from_bytes(b);
    CHECK(r.formats().size() + 1 == intact.formats().size());
    CHECK(r.find_format("timer", "hrtimer_start") == nullptr);
    CHECK(intact.find_format("timer", "hrtimer_start") != nullptr);
    CHECK(intact.warnings().empty());
    REQUIRE(r.warnings().size() == 1);
    CHECK_THAT(r.warnings()[0], Catch::StartsWith("event formats at offset "));
    CHECK_THAT(r.warnings()[0], Catch::Contains("timer/hrtimer_start: format line"));
  }
  SECTION("cpu data cut by the end of the file: what precedes the cut is read, with a warning") {
    // Cut 100 bytes into cpu 0's data: no whole page of it, nothing of the
    // CPUs after it; each says so.
    const std::vector<std::byte> cut(good.begin(), good.begin() + 0x1a000 + 100);
    const auto r = from_bytes(cut);
    REQUIRE(!r.warnings().empty());
    CHECK_THAT(r.warnings()[0], Catch::StartsWith("truncated: cpu 0 data [106496, +"));
    CHECK_THAT(r.warnings()[0], Catch::Contains("read up to byte 106496 (0 of "));
    uint64_t n = 0;
    auto m = r.records();
    while (m.next()) ++n;
    CHECK(n == 0);
  }
  SECTION("a corrupt page commit") {
    auto b = good;
    const uint64_t page = 0x1a000 + 5 * 4096;
    const uint64_t commit = 4090;
    std::memcpy(&b[page + 8], &commit, 8);
    expect_error(b, "cpu 0 data", page + 8);
  }
  SECTION("a corrupt record length") {
    auto b = good;
    const uint64_t page = 0x686000 + 7 * 4096;
    const uint32_t words[2] = {0, 100000};  // first record: type_len 0, length 100000
    std::memcpy(&b[page + 16], words, 8);
    expect_error(b, "cpu 1 data", page + 16);
  }
}

TEST_CASE("tracedat_reader: every truncation of the headers fails cleanly", "[tracedat][reader]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const auto good = file_bytes(path);
  const size_t header_end = 0x1a000;  // first CPU's data
  size_t failures = 0;
  for (size_t cut = 0; cut < header_end; cut += 97) {
    try {
      from_bytes({good.begin(), good.begin() + static_cast<long>(cut)});
    } catch (const TraceDatError& e) {
      ++failures;
      CHECK(e.offset() <= cut);
    }
  }
  CHECK(failures == (header_end + 96) / 97);
}

TEST_CASE(
    "tracedat_reader: a version-7 file (trace-cmd convert of a tracepipe file) reads like its v6 "
    "source",
    "[tracedat][reader]") {
  // Both files are in the fuzz seed corpus: small_v6.dat was written by
  // TraceDatWriter (256-byte pages, a lost-events mark, a time extend, an
  // absolute time stamp); small_v7.dat is `trace-cmd convert --file-version 7
  // --compression none` of it.
  const std::filesystem::path dir =
      std::filesystem::path(TP_SOURCE_DIR) / "tests/fuzz/corpus/tracedat_reader_fuzz";
  const auto v6 = TraceDatReader::open(dir / "small_v6.dat");
  const auto v7 = TraceDatReader::open(dir / "small_v7.dat");
  CHECK(v6.version() == 6);
  CHECK(v7.version() == 7);
  CHECK(v7.compression() == "none");
  CHECK(v7.page_size() == 256);
  CHECK(v7.clock_name() == "local");
  CHECK(v7.formats() == v6.formats());
  CHECK(v7.cmdlines() == v6.cmdlines());
  REQUIRE(v7.cpu_data().size() == 2);
  auto a = v6.records();
  auto b = v7.records();
  size_t n = 0, lost = 0;
  for (;;) {
    const auto x = a.next();
    const auto y = b.next();
    REQUIRE(x.has_value() == y.has_value());
    if (!x) break;
    CHECK(x->ts == y->ts);
    CHECK(x->cpu == y->cpu);
    CHECK(x->lost_before == y->lost_before);
    CHECK(std::equal(x->payload.begin(), x->payload.end(), y->payload.begin(), y->payload.end()));
    lost += x->lost_before > 0 ? static_cast<size_t>(x->lost_before) : 0;
    ++n;
  }
  CHECK(n == 24);
  CHECK(lost == 3);
}

TEST_CASE("tracedat_reader: a version-7 file with no BUFFER option is a trace without records",
          "[tracedat][reader]") {
  // What trace-cmd restore + convert wrote for a kernel instance whose filter
  // kept nothing (tests/core/replay/data); trace-cmd report prints "cpus=2".
  const auto p = std::filesystem::path(TP_SOURCE_DIR) / "tests/core/replay/data/comm_exec/f01.dat";
  const TraceDatReader r = TraceDatReader::open(p);
  CHECK(r.version() == 7);
  CHECK(r.cpu_count() == 2);
  CHECK(r.cpu_data().empty());
  CHECK(drain(r) == 0);
  CHECK(r.formats().size() > 10);  // the recorded events' and ftrace's formats
  bool rename = false;
  for (const EventFormat& f : r.formats()) rename = rename || f.name == "task_rename";
  CHECK(rename);
}
