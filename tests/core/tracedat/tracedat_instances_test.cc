// Multi-buffer trace.dat files (instances). data/instances_zstd.dat is
// `trace-cmd extract -t -B ib -B ib2` (v7, zstd) of this machine: top
// instance sched_switch, instance "ib" sched_switch, instance "ib2"
// sched_wakeup, 2 CPUs; data/instance_only_zstd.dat is `extract -B ib`
// (no top data: its BUFFER option has 0 CPUs). Both were captured with
// trimmed events/, kallsyms and printk_formats (bind mounts in a private
// mount namespace) to stay small.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>

#include "tracedat_test_util.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_tracedat_test;

namespace {

std::filesystem::path data(const char* name) {
  return std::filesystem::path(TP_SOURCE_DIR) / "tests/core/tracedat/data" / name;
}

uint64_t count(MergedRecordCursor m, uint64_t* last_ts = nullptr) {
  uint64_t n = 0, prev = 0;
  while (auto r = m.next()) {
    REQUIRE(r->ts >= prev);
    prev = r->ts;
    ++n;
  }
  if (last_ts) *last_ts = prev;
  return n;
}

std::vector<std::byte> instances_file_bytes(const std::filesystem::path& p) {
  return to_bytes(tp_test::read_file(p.string()));
}

// Offset of the first byte of the v7 BUFFER option data naming `name`
// (its u64 section offset), found by the "name\0local\0" it holds.
size_t buffer_option(const std::vector<std::byte>& f, const std::string& name) {
  const std::string key = name + std::string(1, '\0') + "local" + std::string(1, '\0');
  const std::string_view s(reinterpret_cast<const char*>(f.data()), f.size());
  const size_t at = s.find(key);
  REQUIRE(at != std::string_view::npos);
  REQUIRE(s.find(key, at + 1) == std::string_view::npos);
  return at - 8;
}

std::string open_error(std::vector<std::byte> f) {
  try {
    const TraceDatReader r(MappedFile::copy_of(f));
    for (size_t b = 0; b < r.buffers().size(); ++b) count(r.buffer_records(b));
  } catch (const TraceDatError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("tracedat_instances: top plus two instances are all read", "[tracedat][reader]") {
  const auto r = TraceDatReader::open(data("instances_zstd.dat"));
  REQUIRE(r.version() == 7);
  CHECK(r.compression() == "zstd");
  CHECK(r.cpu_count() == 2);
  REQUIRE(r.buffers().size() == 3);
  CHECK(r.buffers()[0].name == "");
  CHECK(r.buffers()[1].name == "ib2");  // BUFFER option order
  CHECK(r.buffers()[2].name == "ib");
  for (const auto& b : r.buffers()) {
    CHECK(b.clock == "local");
    CHECK(b.cpu_count == 2);
    CHECK(b.cpu_data.size() == 2);
  }
  CHECK(r.find_buffer("ib") == 2u);
  CHECK(r.find_buffer("") == 0u);
  CHECK(!r.find_buffer("nope"));
  // The top-instance API is unchanged: it sees the top buffer only.
  CHECK(r.cpu_data().size() == 2);
  CHECK(count(r.records()) == 37);
  CHECK(count(r.buffer_records(0)) == 37);
  CHECK(count(r.buffer_records(1)) == 11);
  CHECK(count(r.buffer_records(2)) == 28);
  // Each instance holds only its own event.
  const auto* wakeup = r.find_format("sched", "sched_wakeup");
  REQUIRE(wakeup);
  auto m = r.buffer_records(1);
  while (auto rec = m.next()) CHECK(rec->event_id() == wakeup->id);
  auto c = r.buffer_cpu_records(2, 0);
  uint64_t n0 = 0;
  while (c.next()) ++n0;
  CHECK(n0 == c.stats().records);
  CHECK(n0 > 0);
  CHECK_THROWS_AS(r.buffer_records(3), std::out_of_range);
  CHECK_THROWS_AS(r.buffer_cpu_records(1, 2), std::out_of_range);
}

TEST_CASE("tracedat_instances: a file with only a named instance opens", "[tracedat][reader]") {
  const auto r = TraceDatReader::open(data("instance_only_zstd.dat"));
  CHECK(r.cpu_count() == 2);  // CPUCOUNT, as trace-cmd report's cpus=2
  REQUIRE(r.buffers().size() == 2);
  CHECK(r.buffers()[0].name == "");
  CHECK(r.buffers()[0].cpu_data.empty());
  CHECK(r.cpu_data().empty());
  CHECK(count(r.records()) == 0);
  CHECK(r.buffers()[1].name == "ib");
  CHECK(count(r.buffer_records(1)) == 40);
}

TEST_CASE("tracedat_instances: bad BUFFER options are named errors", "[tracedat][reader]") {
  const auto f = instances_file_bytes(data("instances_zstd.dat"));
  const size_t ib2 = buffer_option(f, "ib2");
  const size_t cpus_at = ib2 + 8 + 4 + 6 + 4;  // after offset, "ib2\0", "local\0", page size
  SECTION("section offset outside the file") {
    auto g = f;
    const uint64_t far = uint64_t{1} << 40;
    std::memcpy(g.data() + ib2, &far, 8);
    const auto e = open_error(g);
    CHECK_THAT(e, Catch::Contains("options at offset " + std::to_string(ib2)));
    CHECK_THAT(
        e, Catch::Contains(
               "BUFFER option 'ib2': flyrecord section offset 1099511627776 lies beyond the end"));
  }
  SECTION("zero CPUs") {
    auto g = f;
    const uint32_t zero = 0;
    std::memcpy(g.data() + cpus_at, &zero, 4);
    CHECK_THAT(open_error(g), Catch::Contains("BUFFER option 'ib2' has 0 CPUs"));
  }
  SECTION("absurd CPU count") {
    auto g = f;
    const uint32_t many = 0xffffffffu;
    std::memcpy(g.data() + cpus_at, &many, 4);
    CHECK_THAT(open_error(g),
               Catch::Contains("BUFFER option 'ib2': 4294967295 CPUs do not fit in the option"));
  }
  SECTION("duplicate instance names") {
    // Overwrite ib2's option data (66 bytes) with ib's (65 bytes).
    auto g = f;
    const size_t ib = buffer_option(f, "ib");
    std::memcpy(g.data() + ib2, f.data() + ib, 65);
    const auto e = open_error(g);
    CHECK_THAT(e, Catch::Contains("BUFFER option 'ib' repeats an instance name"));
  }
  SECTION("a CPU's data offset outside the file") {
    auto g = f;
    const uint64_t far = f.size() + 100;
    std::memcpy(g.data() + cpus_at + 4 + 4, &far, 8);
    CHECK_THAT(open_error(g), Catch::Contains("lies beyond the end of the file"));
  }
}
