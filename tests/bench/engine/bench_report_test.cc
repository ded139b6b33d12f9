// bench/engine/report: derived numbers, warnings, and the JSON contract.
#include <catch2/catch.hpp>

#include "mini_json.h"
#include "tracepipe/bench/engine/report.h"

using namespace tracepipe::bench;

namespace {

CaseResult row(Case c, Staging s, std::vector<double> secs, RunCounts k) {
  CaseResult r;
  r.spec = {c, s};
  r.seconds = std::move(secs);
  r.counts.assign(r.seconds.size(), k);
  return r;
}

// Seven runs per cell: enough for a 95% interval of the paired costs
// (stats.h: median_ci95 needs 6).
BenchReport sample_report() {
  BenchReport r;
  r.workload.groups = 1;
  r.workload.fds = 2;
  r.workload.loops = 3;
  r.runs = 7;
  r.cpus = {0, 1};
  r.buffer_bytes_per_cpu = 1408 * 1024;
  r.mode = "overwrite";
  r.clock = "local";
  r.engine = "test \"engine\"";
  r.cases.push_back(row(Case::off, Staging::off, {0.78, 0.80, 0.79, 0.79, 0.78, 0.80, 0.79}, {}));
  r.cases.push_back(row(Case::all, Staging::per_cpu, {1.79, 1.80, 1.78, 1.79, 1.78, 1.80, 1.79},
                        {1000, 1000, 0, 0}));
  r.cases.push_back(row(Case::reject, Staging::per_cpu, {1.31, 1.30, 1.32, 1.31, 1.30, 1.32, 1.31},
                        {1000, 0, 1000, 0}));
  r.cases.push_back(row(Case::reject, Staging::off, {1.40, 1.41, 1.39, 1.40, 1.39, 1.41, 1.40},
                        {1000, 0, 1000, 0}));
  r.perf_events = 100;
  PerfResult base;
  base.kase = PerfCase::base;
  base.seconds.assign(7, 1.0);
  base.counts.resize(7);
  r.perf.push_back(base);
  PerfResult ow;
  ow.kase = PerfCase::overwrite;
  ow.seconds.assign(7, 1.5);
  ow.counts = {{97, 3, 40, 0, 0},  {100, 0, 42, 0, 0}, {99, 1, 41, 0, 0}, {99, 1, 41, 0, 0},
               {100, 0, 42, 0, 0}, {98, 2, 40, 0, 0},  {99, 1, 41, 0, 0}};
  ow.events = 100;
  r.perf.push_back(ow);
  return r;
}

}  // namespace

TEST_CASE("bench report: medians, ratios and ns per event", "[tools][bench]") {
  BenchReport r = sample_report();
  finalize(r, 5.0);
  const CaseResult& all = r.cases[1];
  CHECK(all.summary.median == Approx(1.79));
  CHECK(all.events == 1000);
  CHECK(all.accepted == 1000);
  CHECK(all.accept_pct == Approx(100));
  CHECK(all.ratio_to_off == Approx(1.79 / 0.79));
  CHECK(all.ns_per_event == Approx((1.79 - 0.79) * 1e9 / 1000));
  CHECK(r.cases[2].accepted == 0);
  CHECK(r.cases[2].rejected == 1000);
  CHECK(r.cases[2].accept_pct == 0);
  CHECK(r.cases[0].events == 0);
  CHECK(r.cases[0].ns_per_event == 0);
  CHECK(r.perf[1].ns_per_event == Approx(0.5 * 1e9 / 100));
  // One run's counts (the median one by losses), so that they add up.
  CHECK(r.perf[1].median_counts.lost == 1);
  CHECK(r.perf[1].median_counts.written == 99);
  CHECK(r.perf[1].median_counts.overrun == 41);
  CHECK(r.warnings.empty());
}

TEST_CASE("bench report: warnings for spread, noise and contradicting counts", "[tools][bench]") {
  BenchReport r = sample_report();
  r.cases[1].seconds = {1.0, 1.5, 2.0, 1.0, 1.5, 2.0, 1.5};  // ±27%
  r.cases[2].counts[1].accepted = 3;                         // a reject-all filter let 3 through
  r.cases[3].seconds = {0.79, 0.80, 0.78, 0.79, 0.80, 0.78, 0.79};
  finalize(r, 5.0);
  auto has = [&](const std::string& s) {
    for (const auto& w : r.warnings)
      if (w.find(s) != std::string::npos) return true;
    return false;
  };
  CHECK(has("high spread (relative stddev above 5%): all/on ±"));
  CHECK(has("reject/on: the reject-all filter accepted 3 events"));
  // all/on's paired costs spread from 0.2 to 1.2 us: positive, but the
  // interval is far wider than ±10%; reject/off is no slower than off.
  CHECK(has(
      "end to end: ns/event not significant (95% interval of the paired runs reaching 0 or "
      "wider than ±10%, or too few runs; shown as n.s.): all/on (CI > ±10%), reject/off (≈ 0)"));
  CHECK(r.cases[1].verdict == Verdict::wide);
  CHECK_FALSE(r.cases[3].significant);
  CHECK(r.cases[3].verdict == Verdict::not_positive);
  CHECK(r.cases[2].significant);
  // finalize() is idempotent: warnings are not duplicated.
  const size_t n = r.warnings.size();
  finalize(r, 5.0);
  CHECK(r.warnings.size() == n);
}

TEST_CASE("bench report: lost events and a lopsided half filter are reported", "[tools][bench]") {
  BenchReport r = sample_report();
  r.cases.push_back(row(Case::half, Staging::per_cpu, std::vector<double>(7, 1.5),
                        {1000, 300, 500, 200, 150, 2, 50, 0}));
  finalize(r, 5.0);
  const CaseResult& h = r.cases.back();
  CHECK(h.accepted == 300);
  CHECK(h.lost == 200);
  CHECK(h.accept_pct == Approx(50.0));  // passed the filter: committed or lost
  auto has = [&](const std::string& s) {
    for (const auto& w : r.warnings)
      if (w.find(s) != std::string::npos) return true;
    return false;
  };
  CHECK(has("events lost by the ring buffer: half/on 20.0% (of them 150 because"));
  CHECK(has("free: commit_overrun; 50 because"));
  CHECK(h.lost_set_aside == 2);
  // Each cause on its own in the table, the preempted writers' own records too.
  const std::string t = format_table(r);
  CHECK(t.find("half    on         commit_overrun      150  lost_busy       50  lost_set_aside     "
               " 2") != std::string::npos);
  CHECK(to_json(r).find("\"lost_commit_overrun\": 150, \"lost_busy\": 50, \"lost_set_aside\": 2") !=
        std::string::npos);
  CHECK_FALSE(has("the half filter passed"));
  r.cases.back().counts.assign(7, RunCounts{1000, 300, 700, 0, 0, 0});
  finalize(r, 5.0);
  CHECK(has("the half filter passed half/on 30.0% of the events"));
}

TEST_CASE("bench report: traced cases need the off base", "[tools][bench]") {
  BenchReport r = sample_report();
  r.cases.erase(r.cases.begin());
  CHECK_THROWS_AS(finalize(r, 5.0), std::logic_error);
}

TEST_CASE("bench report: JSON has the documented shape", "[tools][bench]") {
  BenchReport r = sample_report();
  finalize(r, 5.0);
  mini_json::Value doc = mini_json::parse(to_json(r));
  CHECK(doc["tool"].str() == "tracepipe bench");
  CHECK(doc["config"]["engine"].str() == "test \"engine\"");
  const auto& cases = doc["cases"].array();
  REQUIRE(cases.size() == 4);
  for (const auto& c : cases) {
    for (const char* k : {"case", "staging"}) CHECK(c[k].is_string());
    for (const char* k : {"runs", "mean_s", "median_s", "stddev_pct", "events", "ns_per_event",
                          "accepted", "accept_pct"})
      CHECK(c[k].is_number());
    CHECK(c["samples_s"].array().size() == 7);
    for (const char* k : {"ci95_ns", "ci95_lo_ns", "ci95_hi_ns"}) CHECK(c[k].is_number());
    CHECK(c["significant"].is_bool());
    CHECK(c["why"].is_string());
  }
  CHECK(cases[0]["case"].str() == "off");
  CHECK(cases[0]["events"].number() == 0);
  CHECK(cases[1]["case"].str() == "all");
  CHECK(cases[1]["staging"].str() == "on");
  CHECK(cases[1]["median_s"].number() == Approx(1.79));
  // all/on's paired costs: 0.99 .. 1.01 s over 1000 events, median 1.00.
  CHECK(cases[1]["ns_per_event"].number() == Approx(1e6));
  CHECK(cases[1]["ci95_lo_ns"].number() == Approx(0.99e6));
  CHECK(cases[1]["ci95_hi_ns"].number() == Approx(1.01e6));
  CHECK(cases[1]["ci95_ns"].number() == Approx(0.01e6));
  CHECK(cases[1]["why"].str().empty());
  CHECK(cases[3]["staging"].str() == "off");
  const auto& series = doc["overwrite_series"];
  CHECK(series["events"].number() == 100);
  REQUIRE(series["cases"].array().size() == 2);
  CHECK(series["cases"].array()[1]["case"].str() == "overwrite");
  CHECK(series["cases"].array()[1]["overrun"].number() == 41);
  CHECK(doc["warnings"].array().empty());
}

TEST_CASE("bench report: the table shows every row and the warnings", "[tools][bench]") {
  BenchReport r = sample_report();
  r.warnings.push_back("something odd");
  finalize(r, 5.0);
  std::string t = format_table(r);
  CHECK(t.find("common_preempt_count==20") != std::string::npos);
  CHECK(t.find("perf overwrite series") != std::string::npos);
  CHECK(t.find("warning: something odd") != std::string::npos);
  CHECK(t.find("1,000") != std::string::npos);
}

TEST_CASE("bench report: a negative or in-spread cost is n.s. in the table, null in the JSON",
          "[tools][bench]") {
  BenchReport r = sample_report();
  // reject/on faster than off by far more than the spread: a negative cost
  // (the noise of a short run), not a figure.
  r.cases[2].seconds = {0.70, 0.71, 0.69, 0.70, 0.69, 0.71, 0.70};
  // reject/off around off: paired costs on both sides of 0.
  r.cases[3].seconds = {0.70, 0.80, 0.90, 0.70, 0.80, 0.90, 0.80};
  // overwrite below base in the second table.
  r.perf[1].seconds = std::vector<double>(7, 0.9);
  finalize(r, 1000.0);
  CHECK(r.cases[2].ns_per_event < 0);
  CHECK_FALSE(r.cases[2].significant);
  CHECK(r.cases[3].ns_per_event > 0);
  CHECK_FALSE(r.cases[3].significant);
  CHECK(r.cases[1].significant);
  CHECK_FALSE(r.perf[1].significant);
  bool listed = false;
  for (const auto& w : r.warnings)
    if (w.find("shown as n.s.): reject/on (≈ 0), reject/off (≈ 0), overwrite (≈ 0)") !=
        std::string::npos)
      listed = true;
  CHECK(listed);

  const std::string t = format_table(r);
  auto row_of = [&](const std::string& start) {
    const size_t p = t.find(start);
    REQUIRE(p != std::string::npos);
    return t.substr(p, t.find('\n', p) - p);
  };
  CHECK(row_of("reject  common_preempt_count==20   on").find(" n.s. ") != std::string::npos);
  CHECK(row_of("reject  common_preempt_count==20   off").find(" n.s. ") != std::string::npos);
  CHECK(row_of("all").find(" 1000000.0 ") != std::string::npos);
  CHECK(row_of("overwrite  ").find(" n.s. ") != std::string::npos);
  CHECK(t.find("-90000") == std::string::npos);  // reject/on's -90,000 ns never printed

  mini_json::Value doc = mini_json::parse(to_json(r));
  const auto& cases = doc["cases"].array();
  CHECK(cases[1]["ns_per_event"].number() == Approx(1e6));
  CHECK(cases[1]["significant"].boolean());
  CHECK(cases[2]["ns_per_event"].is_null());
  CHECK_FALSE(cases[2]["significant"].boolean());
  CHECK(cases[2]["ns_per_event_measured"].number() == Approx(-0.09 * 1e9 / 1000));
  CHECK(cases[3]["ns_per_event"].is_null());
  const auto& perf = doc["overwrite_series"]["cases"].array();
  CHECK(perf[1]["ns_per_event"].is_null());
  CHECK(perf[1]["ns_per_event_measured"].number() == Approx(-0.1 * 1e9 / 100));
}

TEST_CASE("bench report: per-CPU staging is printed by the name it was asked by",
          "[tools][bench]") {
  BenchReport r = sample_report();
  r.staging_on_name = "per_cpu";
  r.cases[2].counts[1].accepted = 3;
  finalize(r, 5.0);
  const std::string t = format_table(r);
  CHECK(t.find("common_preempt_count==20   per_cpu") != std::string::npos);
  bool named = false;
  for (const auto& w : r.warnings)
    if (w.find("reject/per_cpu: the reject-all filter accepted 3 events") != std::string::npos)
      named = true;
  CHECK(named);
  mini_json::Value doc = mini_json::parse(to_json(r));
  CHECK(doc["cases"].array()[1]["staging"].str() == "per_cpu");
  CHECK(doc["cases"].array()[3]["staging"].str() == "off");
  CHECK(t.find("/on") == std::string::npos);
}

namespace {

// A replayed-mix phase of 8 rounds, 2 threads x 100 events per block (200
// events per block): every base block 200 ns (1 ns/event), the cells'
// blocks as given.
MixResult mix_row(Case c, Staging s, std::vector<double> block_ns, RunCounts k) {
  MixResult m;
  m.spec = {c, s};
  m.block_ns = std::move(block_ns);
  m.base_ns.assign(m.block_ns.size(), 200.0);
  m.counts = k;
  return m;
}

BenchReport mix_report() {
  BenchReport r = sample_report();
  r.mix.source = "/data/hackbench.dat";
  r.mix.records = 1000;
  r.mix.file_records = 1500;
  r.mix.per_kind = {100, 100, 400, 400};
  r.mix.threads = 2;
  r.mix.rounds = 8;
  r.mix.block_events = 100;
  // all: 3200 ns over 200 events above the base's 200: 15 ns/event +- 0.1.
  r.mix_cases.push_back(mix_row(Case::all, Staging::per_cpu,
                                {3200, 3180, 3220, 3200, 3200, 3210, 3190, 3200},
                                {1600, 1600, 0, 0}));
  // reject staged: 4 ns/event, tight.
  r.mix_cases.push_back(mix_row(Case::reject, Staging::per_cpu,
                                {1000, 1002, 998, 1000, 1000, 1001, 999, 1000},
                                {1600, 0, 1600, 0}));
  // reject direct: paired costs spread 2..14 ns: wide.
  r.mix_cases.push_back(mix_row(Case::reject, Staging::off,
                                {600, 3000, 1000, 2000, 1400, 2600, 800, 1800},
                                {1600, 0, 1600, 0}));
  // accept: no slower than the base: the interval reaches 0.
  r.mix_cases.push_back(mix_row(Case::accept, Staging::per_cpu,
                                {190, 210, 200, 205, 195, 200, 202, 198}, {1600, 1600, 0, 0}));
  return r;
}

}  // namespace

TEST_CASE("bench report: the replayed mix's costs, intervals and verdicts", "[tools][bench]") {
  BenchReport r = mix_report();
  finalize(r, 5.0);
  const MixResult& all = r.mix_cases[0];
  REQUIRE(all.costs.size() == 8);
  CHECK(all.costs[0] == Approx(15.0));  // (3200 - 200) / 200
  CHECK(all.ci.median == Approx(15.0));
  // n = 8: the interval is [x(1), x(8)] (coverage 1 - 2/256 = 99.2%; x(2),
  // x(7) would cover only 93%).
  CHECK(all.ci.lo == Approx(14.9));
  CHECK(all.ci.hi == Approx(15.1));
  CHECK(all.verdict == Verdict::significant);
  CHECK(all.accept_pct == Approx(100));
  CHECK(r.mix_cases[1].ci.median == Approx(4.0));
  CHECK(r.mix_cases[1].verdict == Verdict::significant);
  CHECK(r.mix_cases[1].accept_pct == 0);
  CHECK(r.mix_cases[2].verdict == Verdict::wide);
  CHECK(r.mix_cases[3].verdict == Verdict::not_positive);
  CHECK(r.mix.base.median == Approx(1.0));
  auto has = [&](const std::string& s) {
    for (const auto& w : r.warnings)
      if (w.find(s) != std::string::npos) return true;
    return false;
  };
  CHECK(
      has("replayed mix: ns/event not significant (95% interval reaching 0 or wider than ±10%, "
          "marked *): reject/off (CI > ±10%), accept/on (≈ 0)"));
  // Discarding against committing, per staging mode with both cells.
  const auto dvc = discard_vs_commit(r);
  REQUIRE(dvc.size() == 1);
  CHECK(dvc[0].staging == Staging::per_cpu);
  CHECK(dvc[0].ratio == Approx(4.0 / 15.0));
  // Wrong counts are reported.
  r.mix_cases[1].counts.accepted = 5;
  r.mix_cases[0].counts.emitted = 1599;
  finalize(r, 5.0);
  CHECK(has("replayed mix reject/on: the reject-all filter accepted 5 events"));
  CHECK(has("replayed mix all/on: 1599 events reached the engine, expected 1600"));
  // A half filter far from 50% in the replayed mix (one CPU: the default
  // common_pid & 1 is the one replaying thread's parity) is reported too.
  r.mix_cases.push_back(
      mix_row(Case::half, Staging::per_cpu, std::vector<double>(8, 2200.0), {1600, 1600, 0, 0}));
  finalize(r, 5.0);
  CHECK(has("the half filter passed replayed mix half/on 100.0% of the events"));
}

TEST_CASE("bench report: the replayed-mix table and its JSON", "[tools][bench]") {
  BenchReport r = mix_report();
  finalize(r, 5.0);
  const std::string t = format_mix_table(r);
  CHECK(t.find("replayed kernel event mix (hackbench.dat: 1,000 of its 1,500 records") !=
        std::string::npos);
  CHECK(t.find("staging on") != std::string::npos);
  auto row_of = [&](const std::string& start) {
    const size_t p = t.find(start);
    REQUIRE(p != std::string::npos);
    return t.substr(p, t.find('\n', p) - p);
  };
  CHECK(row_of("all ").find("15.0 ±0.1 ") != std::string::npos);
  CHECK(row_of("reject ").find("4.00 ±0.01 ") != std::string::npos);
  CHECK(row_of("reject ").find("*") != std::string::npos);  // reject/off is wide
  CHECK(row_of("off     tracing off").find("1.00 ±0.00 ns/event") != std::string::npos);
  CHECK(t.find("discarding against committing (reject / all): staging on 0.27") !=
        std::string::npos);
  CHECK(t.find("half") == std::string::npos);  // no half cells: no row
  // format_table prints it first unless told not to.
  CHECK(format_table(r).find(t) == 0);
  CHECK(format_table(r, false).find("replayed kernel event mix (") == std::string::npos);

  mini_json::Value doc = mini_json::parse(to_json(r));
  const auto& mix = doc["mix"];
  CHECK(mix["source"].str() == "/data/hackbench.dat");
  CHECK(mix["threads"].number() == 2);
  CHECK(mix["base_ns_per_event"].number() == Approx(1.0));
  CHECK(mix["per_kind"]["sys_enter"].number() == 400);
  const auto& cases = mix["cases"].array();
  REQUIRE(cases.size() == 4);
  for (const auto& c : cases) {
    for (const char* k : {"ns_per_event", "ci95_ns", "ci95_lo_ns", "ci95_hi_ns", "coverage",
                          "events", "accept_pct", "rounds"})
      CHECK(c[k].is_number());
    CHECK(c["significant"].is_bool());
    CHECK(c["samples_ns"].array().size() == 8);
  }
  CHECK(cases[0]["ns_per_event"].number() == Approx(15.0));
  CHECK(cases[0]["ci95_ns"].number() == Approx(0.1));
  CHECK(cases[0]["significant"].boolean());
  CHECK(cases[2]["why"].str() == "CI > ±10%");
  CHECK_FALSE(cases[2]["significant"].boolean());
  CHECK(mix["discard_vs_commit"].array()[0]["ratio"].number() == Approx(4.0 / 15.0));
}

TEST_CASE("bench report: filters changed by a --filters file are labelled so", "[tools][bench]") {
  BenchReport r = mix_report();
  r.filters_from_file = {Case::reject};
  finalize(r, 5.0);
  const std::string t = format_table(r);
  CHECK(t.find("common_preempt_count==20") == std::string::npos);
  CHECK(t.find("reject  from --filters") != std::string::npos);
  CHECK(t.find("all     no filter") != std::string::npos);
}
