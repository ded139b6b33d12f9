// bench/engine/runner: the case matrix, option checks, and one tiny run
// through tracepipe core in process (every staging mode, per_thread too).
#include <catch2/catch.hpp>
#include <csignal>

#include "tracepipe/bench/engine/runner.h"

using namespace tracepipe::bench;

TEST_CASE("bench runner: off first, then each case with each staging mode", "[tools][bench]") {
  BenchOptions o;
  o.cases = {Case::half, Case::reject};  // order of the option does not matter
  o.stagings = {Staging::adaptive, Staging::per_cpu};
  std::vector<CaseSpec> m = case_matrix(o);
  REQUIRE(m.size() == 5);
  CHECK(m[0] == CaseSpec{Case::off, Staging::off});
  CHECK(m[1] == CaseSpec{Case::reject, Staging::per_cpu});
  CHECK(m[2] == CaseSpec{Case::reject, Staging::adaptive});
  CHECK(m[3] == CaseSpec{Case::half, Staging::per_cpu});
  CHECK(m[4] == CaseSpec{Case::half, Staging::adaptive});
}

TEST_CASE("bench runner: bad options are rejected before anything runs", "[tools][bench]") {
  BenchOptions o;
  o.runs = 0;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--runs"));
  o = {};
  o.engine.clock = "sundial";
  CHECK_THROWS_WITH(validate(o), Catch::Contains("unknown trace clock 'sundial'"));
  o = {};
  o.hackbench = false;
  o.perf_events = 0;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("nothing to run"));
  o = {};
  o.stagings.clear();
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--staging"));
}

TEST_CASE("bench runner: a tiny in-process run through core, all four staging modes",
          "[tools][bench]") {
  std::signal(SIGPIPE, SIG_IGN);
  BenchOptions o;
  o.workload.groups = 1;
  o.workload.fds = 2;
  o.workload.loops = 10;
  o.runs = 2;
  o.stagings = {Staging::per_cpu, Staging::off, Staging::adaptive, Staging::per_thread};
  o.perf_events = 5000;
  o.perf_syscall = false;
  o.warmup = false;
  Progress quiet(Progress::Style::off);
  BenchReport r = run_bench(o, quiet);
  REQUIRE(r.cases.size() == 1 + 4 * 4);
  const uint64_t events = 6 * 1 * 2 * 2 * 10;
  for (const CaseResult& c : r.cases) {
    INFO(name(c.spec.kase) << "/" << name(c.spec.staging));
    REQUIRE(c.seconds.size() == 2);
    for (const RunCounts& k : c.counts) {
      CHECK(k.conserved);
      CHECK(k.emitted == k.accepted + k.rejected + k.lost);
    }
    if (c.spec.kase == Case::off) {
      CHECK(c.events == 0);
      continue;
    }
    CHECK(c.events == events);
    if (c.spec.kase == Case::reject) CHECK(c.accepted == 0);
    if (c.spec.kase == Case::accept || c.spec.kase == Case::all) CHECK(c.rejected == 0);
    // Only filtered events are staged, and only when staging is not off.
    if (c.spec.kase == Case::all || c.spec.staging == Staging::off) CHECK(c.staged == 0);
    if (c.spec.kase == Case::reject && c.spec.staging == Staging::per_thread)
      CHECK(c.staged == events);  // per-thread slots are never busy without nesting
  }
  REQUIRE(r.perf.size() == 4);
  for (const PerfResult& p : r.perf)
    for (const PerfCounts& k : p.counts) CHECK(k.conserved);
}
