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
  CHECK_NOTHROW(validate(o));  // the replayed mix still runs
  o.mix_rounds = 0;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("nothing to run"));
  o.mix = false;
  o.mix_rounds = 10;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("nothing to run"));
  o = {};
  o.mix_block_events = 0;
  CHECK_THROWS_WITH(validate(o), Catch::Contains("--mix-events"));
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
  o.mix_source = "embedded";
  o.mix_rounds = 4;
  o.mix_block_events = 300;
  int mix_calls = 0;
  o.on_mix_done = [&](const BenchReport& partial) {
    // Called once, finalized, before the end-to-end phase has run.
    ++mix_calls;
    CHECK(partial.cases.empty());
    REQUIRE(partial.mix_cases.size() == 4 * 4);
    CHECK(partial.mix_cases[0].costs.size() == 4);
  };
  Progress quiet(Progress::Style::off);
  BenchReport r = run_bench(o, quiet);
  CHECK(mix_calls == 1);
  // The replayed mix: every traced cell, 4 rounds, one lane per allowed CPU.
  REQUIRE(r.mix_cases.size() == 4 * 4);
  CHECK(r.mix.source == "embedded");
  REQUIRE(r.mix.threads >= 1);
  const uint64_t mix_events = 4 * uint64_t{r.mix.threads} * 300;
  for (const MixResult& m : r.mix_cases) {
    INFO("mix " << name(m.spec.kase) << "/" << name(m.spec.staging));
    CHECK(m.block_ns.size() == 4);
    CHECK(m.base_ns.size() == 4);
    CHECK(m.costs.size() == 4);
    CHECK(m.counts.conserved);
    CHECK(m.counts.emitted == mix_events);
    CHECK(m.counts.emitted == m.counts.accepted + m.counts.rejected + m.counts.lost);
    for (double t : m.block_ns) CHECK(t > 0);
    if (m.spec.kase == Case::reject) CHECK(m.counts.accepted == 0);
    if (m.spec.kase == Case::all || m.spec.kase == Case::accept) CHECK(m.counts.rejected == 0);
    // Two lanes of equal length on CPUs 0 and 1: CPU >= 1 passes exactly half.
    if (m.spec.kase == Case::half && r.cpus == std::vector<int>{0, 1})
      CHECK(m.accept_pct == Approx(50.0));
    CHECK(m.ci.n == 4);
    CHECK(m.verdict == Verdict::too_few);  // 4 rounds: no 95% interval
  }
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
