// The microbench's judge of the emit targets (bench/micro/emit_targets.h): which
// cases each target reads, its bound, and that a target whose cases did not
// run is left out.
#include "tracepipe/bench/micro/emit_targets.h"

#include <catch2/catch.hpp>
#include <string>

using tracepipe::bench::emit_case_key;
using tracepipe::bench::emit_targets;
using tracepipe::bench::render_targets;
using tracepipe::bench::TargetCheck;

namespace {
const TargetCheck* find(const std::vector<TargetCheck>& v, const std::string& what) {
  for (const TargetCheck& c : v)
    if (c.what == what) return &c;
  return nullptr;
}

// A whole run's medians (ns), shaped like a real one.
std::map<std::string, double> full_run() {
  return {{"no_filter", 13.3},
          {"staged_discard/per_thread", 4.34},
          {"staged_commit/per_thread", 14.8},
          {"direct_discard", 15.0},
          {"direct_commit", 13.8},
          {"direct_half", 14.0},
          {"direct_97", 14.0},
          {"staged_half/per_thread", 9.27},
          {"staged_97/per_thread", 14.7},
          {"adaptive/accept_0", 4.39},
          {"adaptive/accept_50", 9.46},
          {"adaptive/accept_97", 14.6},
          {"adaptive/accept_100", 14.1},
          {"loop_only", 0.26}};
}
}  // namespace

TEST_CASE("emit targets: each target from its cases, with its bound", "[bench]") {
  const auto v = emit_targets(full_run());
  REQUIRE(v.size() == 8);
  const TargetCheck* c = find(v, "staged discard (ns)");
  REQUIRE(c != nullptr);
  CHECK(c->value == 4.34);
  CHECK(c->bound == 5.0);
  CHECK(c->met);
  c = find(v, "commit (ns)");
  REQUIRE(c != nullptr);
  CHECK(c->value == 13.3);
  CHECK(c->bound == 20.0);
  c = find(v, "staged commit / unfiltered commit");
  REQUIRE(c != nullptr);
  CHECK(c->value == Approx(14.8 / 13.3));
  CHECK(c->bound == 1.15);
  CHECK(c->met);
  c = find(v, "adaptive 100% kept / unfiltered commit");
  REQUIRE(c != nullptr);
  CHECK(c->value == Approx(14.1 / 13.3));  // 1.060: over 1.05
  CHECK_FALSE(c->met);
  // Against the faster of staged and direct at each rate.
  c = find(v, "adaptive 0% kept / better policy");
  REQUIRE(c != nullptr);
  CHECK(c->value == Approx(4.39 / 4.34));
  CHECK(c->met);
  c = find(v, "adaptive 50% kept / better policy");
  REQUIRE(c != nullptr);
  CHECK(c->value == Approx(9.46 / 9.27));
  c = find(v, "adaptive 97% kept / better policy");
  REQUIRE(c != nullptr);
  CHECK(c->value == Approx(14.6 / 14.0));  // direct is the better one here
  CHECK(c->met);
  c = find(v, "adaptive 100% kept / better policy");
  REQUIRE(c != nullptr);
  CHECK(c->value == Approx(14.1 / 13.8));
  CHECK(c->bound == 1.05);
}

TEST_CASE("emit targets: the bounds are inclusive and a miss is reported", "[bench]") {
  auto m = full_run();
  m["staged_discard/per_thread"] = 5.0;
  m["no_filter"] = 20.5;
  const auto v = emit_targets(m);
  CHECK(find(v, "staged discard (ns)")->met);
  CHECK_FALSE(find(v, "commit (ns)")->met);
  const std::string text = render_targets(v);
  CHECK(text.find("commit (ns)") != std::string::npos);
  CHECK(text.find("NOT MET") != std::string::npos);
  size_t met = 0;
  for (const auto& c : v) met += c.met ? 1 : 0;
  CHECK(text.find(std::to_string(met) + " of 8 targets met") != std::string::npos);
}

TEST_CASE("emit targets: the commit target shows the host's clock read and floor where they ran",
          "[bench]") {
  auto v = emit_targets({{"no_filter", 33.99}, {"floor/clock", 20.5}, {"floor/commit", 32.6}});
  REQUIRE(v.size() == 1);
  CHECK(v[0].detail == "no_filter; clock read 20.50; floor/commit 32.60 ns");
  CHECK_FALSE(v[0].met);
  v = emit_targets({{"no_filter", 13.3}, {"floor/commit", 13.1}});
  REQUIRE(v.size() == 1);
  CHECK(v[0].detail == "no_filter; floor/commit 13.10 ns");
  CHECK(emit_targets({{"no_filter", 13.3}})[0].detail == "no_filter");
}

TEST_CASE("emit targets: a target whose cases did not all run is left out", "[bench]") {
  const auto v =
      emit_targets({{"no_filter", 13.0}, {"adaptive/accept_97", 14.0}, {"direct_97", 13.5}});
  REQUIRE(v.size() == 1);
  CHECK(v[0].what == "commit (ns)");
  CHECK(emit_targets({}).empty());
  // A zero or negative median is no measurement.
  CHECK(emit_targets({{"no_filter", 0.0}}).empty());
}

TEST_CASE("emit targets: ratio targets read the paired counters where they ran", "[bench]") {
  const std::map<std::string, double> paired = {
      {"staged_commit/no_filter", 1.044},
      {"staged_commit/no_filter_p25", 1.038},
      {"staged_commit/no_filter_p75", 1.050},
      {"adaptive_100/no_filter", 1.061},
      {"adaptive_100/no_filter_p25", 1.05},
      {"adaptive_100/no_filter_p75", 1.07},
      {"adaptive_0/better", 1.002},
      {"adaptive_0/better_p25", 0.998},
      {"adaptive_0/better_p75", 1.004},
      {"adaptive_0_ns", 4.04},
      {"staged_discard_ns", 4.03},
      {"direct_discard_ns", 13.9},
      // adaptive_97/better without its quartiles: not a complete paired
      // measurement, so the single cases' medians are used.
      {"adaptive_97/better", 0.5}};
  const auto v = emit_targets(full_run(), paired);
  REQUIRE(v.size() == 8);
  const TargetCheck* c = find(v, "staged commit / unfiltered commit");
  REQUIRE(c != nullptr);
  CHECK(c->value == 1.044);  // not 14.8 / 13.3 = 1.113 from the single cases
  CHECK(c->detail.find("quartiles 1.038-1.050") != std::string::npos);
  c = find(v, "adaptive 100% kept / unfiltered commit");
  CHECK(c->value == 1.061);
  CHECK_FALSE(c->met);
  c = find(v, "adaptive 0% kept / better policy");
  CHECK(c->value == 1.002);
  CHECK(c->detail.find("adaptive_0 4.04, staged_discard 4.03, direct_discard 13.90 ns") !=
        std::string::npos);
  c = find(v, "adaptive 97% kept / better policy");
  CHECK(c->value == Approx(14.6 / 14.0));
  CHECK(c->detail.find("paired") == std::string::npos);
  c = find(v, "adaptive 50% kept / better policy");
  CHECK(c->value == Approx(9.46 / 9.27));
  // The ns targets always come from the single cases.
  CHECK(find(v, "staged discard (ns)")->value == 4.34);
  // Paired counters alone judge the ratio targets they hold.
  const auto only = emit_targets({}, paired);
  REQUIRE(only.size() == 3);
  CHECK(only[0].what == "staged commit / unfiltered commit");
  CHECK(only[2].what == "adaptive 0% kept / better policy");
}

TEST_CASE("emit targets: case keys from run names", "[bench]") {
  CHECK(emit_case_key("emit/no_filter/min_time:0.200") == "no_filter");
  CHECK(emit_case_key("emit/adaptive/accept_97/min_time:0.200") == "adaptive/accept_97");
  CHECK(emit_case_key("emit/floor/commit") == "floor/commit");
  CHECK(emit_case_key("ring/reserve_commit/min_time:0.200").empty());
  CHECK(emit_case_key("emi").empty());
  CHECK(emit_case_key("emit/paired/commit/min_time:0.500") == "paired/commit");
  CHECK(tracepipe::bench::is_paired_case("paired/commit"));
  CHECK_FALSE(tracepipe::bench::is_paired_case("staged_commit/per_thread"));
}
