// bench/engine/case_filters: default filters and the --filters TOML file.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "tracepipe/bench/engine/case_filters.h"

using namespace tracepipe::bench;

namespace {

std::filesystem::path write_temp(const std::string& text) {
  static int n = 0;
  auto p = std::filesystem::temp_directory_path() /
           ("tp_bench_filters_" + std::to_string(getpid()) + "_" + std::to_string(n++) + ".toml");
  std::ofstream(p) << text;
  return p;
}

size_t idx(EventKind k) { return static_cast<size_t>(k); }

}  // namespace

TEST_CASE("bench filters: defaults are the kernel patch's expressions", "[tools][bench]") {
  FilterSet s = default_filters({0, 1});
  for (const std::string& e : s.reject) CHECK(e == "common_preempt_count==20");
  for (const std::string& e : s.accept) CHECK(e == "common_preempt_count!=20");
  for (const std::string& e : s.half) CHECK(e == "CPU >= 1");
  for (const std::string& e : s.for_case(Case::all)) CHECK(e.empty());
  for (const std::string& e : s.for_case(Case::off)) CHECK(e.empty());
  CHECK(s.for_case(Case::half)[0] == "CPU >= 1");
}

TEST_CASE("bench filters: the half filter splits the allowed CPUs in the middle",
          "[tools][bench]") {
  CHECK(default_half_filter({0, 1, 2, 3}) == "CPU >= 2");
  CHECK(default_half_filter({2, 5, 7, 9}) == "CPU >= 7");
  CHECK(default_half_filter({3}) == "common_pid & 1");
  CHECK(default_half_filter({}) == "common_pid & 1");
}

TEST_CASE("bench filters: file overrides, per-event keys win over *", "[tools][bench]") {
  auto p = write_temp(R"(
[half]
sys_enter = "id == 1"
"*" = "common_pid & 1"
"raw_syscalls:sys_exit" = ""

[reject]
"*" = "common_pid == 0"
)");
  FilterSet s = default_filters({0, 1});
  load_filter_file(p, s);
  CHECK(s.half[idx(EventKind::sys_enter)] == "id == 1");
  CHECK(s.half[idx(EventKind::sys_exit)].empty());
  CHECK(s.half[idx(EventKind::sched_switch)] == "common_pid & 1");
  CHECK(s.reject[idx(EventKind::sched_wakeup)] == "common_pid == 0");
  CHECK(s.accept[0] == "common_preempt_count!=20");  // untouched
  auto d = describe(s.half);
  REQUIRE(d.size() == 4);
  CHECK(d[2].first == "sys_enter");
  CHECK(d[2].second == "id == 1");
  std::filesystem::remove(p);
}

TEST_CASE("bench filters: bad files are errors naming the problem", "[tools][bench]") {
  FilterSet s = default_filters({0, 1});
  auto bad_table = write_temp("[sometimes]\n\"*\" = \"x == 1\"\n");
  CHECK_THROWS_WITH(load_filter_file(bad_table, s), Catch::Contains("unknown table [sometimes]"));
  auto bad_event = write_temp("[half]\nkmalloc = \"x == 1\"\n");
  CHECK_THROWS_WITH(load_filter_file(bad_event, s), Catch::Contains("unknown event 'kmalloc'"));
  auto bad_type = write_temp("[half]\nsys_enter = 3\n");
  CHECK_THROWS_WITH(load_filter_file(bad_type, s), Catch::Contains("must be a string"));
  auto bad_toml = write_temp("[half\n");
  CHECK_THROWS_WITH(load_filter_file(bad_toml, s), Catch::Contains(":1:"));
  CHECK_THROWS(load_filter_file("/nonexistent/tp_filters.toml", s));
  for (auto& p : {bad_table, bad_event, bad_type, bad_toml}) std::filesystem::remove(p);
}
