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

BenchReport sample_report() {
  BenchReport r;
  r.workload.groups = 1;
  r.workload.fds = 2;
  r.workload.loops = 3;
  r.runs = 3;
  r.cpus = {0, 1};
  r.buffer_bytes_per_cpu = 1408 * 1024;
  r.mode = "overwrite";
  r.clock = "local";
  r.engine = "test \"engine\"";
  r.cases.push_back(row(Case::off, Staging::off, {0.78, 0.80, 0.79}, {}));
  r.cases.push_back(row(Case::all, Staging::per_cpu, {1.79, 1.80, 1.78}, {1000, 1000, 0, 0}));
  r.cases.push_back(row(Case::reject, Staging::per_cpu, {1.31, 1.30, 1.32}, {1000, 0, 1000, 0}));
  r.cases.push_back(row(Case::reject, Staging::off, {1.40, 1.41, 1.39}, {1000, 0, 1000, 0}));
  r.perf_events = 100;
  r.perf.push_back(PerfResult{PerfCase::base, {1.0, 1.0, 1.0}, {{}, {}, {}}, {}, 0, {}, 0});
  r.perf.push_back(PerfResult{PerfCase::overwrite,
                              {1.5, 1.5, 1.5},
                              {{97, 3, 40, 0, 0}, {100, 0, 42, 0, 0}, {99, 1, 41, 0, 0}},
                              {},
                              100,
                              {},
                              0});
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
  r.cases[1].seconds = {1.0, 1.5, 2.0};  // ±33%
  r.cases[2].counts[1].accepted = 3;     // a reject-all filter let 3 through
  r.cases[3].seconds = {0.79, 0.80, 0.78};
  finalize(r, 5.0);
  auto has = [&](const std::string& s) {
    for (const auto& w : r.warnings)
      if (w.find(s) != std::string::npos) return true;
    return false;
  };
  CHECK(has("high spread (relative stddev above 5%): all/on ±33.3%"));
  CHECK(has("reject/on: the reject-all filter accepted 3 events"));
  CHECK(
      has("difference to off (or base) negative or within the run-to-run spread (ns/event not "
          "significant, shown as n.s.): reject/off"));
  CHECK_FALSE(r.cases[3].significant);
  CHECK(r.cases[2].significant);
  // finalize() is idempotent: warnings are not duplicated.
  const size_t n = r.warnings.size();
  finalize(r, 5.0);
  CHECK(r.warnings.size() == n);
}

TEST_CASE("bench report: lost events and a lopsided half filter are reported", "[tools][bench]") {
  BenchReport r = sample_report();
  r.cases.push_back(row(Case::half, Staging::per_cpu, {1.5, 1.5, 1.5}, {1000, 300, 500, 200, 150, 0}));
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
  CHECK(has("events lost by the ring buffer: half/on 20.0% (150 of them"));
  CHECK_FALSE(has("the half filter passed"));
  r.cases.back().counts.assign(3, RunCounts{1000, 300, 700, 0, 0, 0});
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
    CHECK(c["samples_s"].array().size() == 3);
  }
  CHECK(cases[0]["case"].str() == "off");
  CHECK(cases[0]["events"].number() == 0);
  CHECK(cases[1]["case"].str() == "all");
  CHECK(cases[1]["staging"].str() == "on");
  CHECK(cases[1]["median_s"].number() == Approx(1.79));
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

TEST_CASE("bench report: a negative or in-spread cost is n.s. in the table, null in the JSON", "[tools][bench]") {
  BenchReport r = sample_report();
  // reject/on faster than off by far more than the spread: a negative cost
  // (the noise of a short run), not a figure.
  r.cases[2].seconds = {0.70, 0.71, 0.69};
  // reject/off above off, but by less than its spread.
  r.cases[3].seconds = {0.70, 0.80, 0.90};
  // overwrite below base in the second table.
  r.perf[1].seconds = {0.9, 0.9, 0.9};
  finalize(r, 1000.0);
  CHECK(r.cases[2].ns_per_event < 0);
  CHECK_FALSE(r.cases[2].significant);
  CHECK(r.cases[3].ns_per_event > 0);
  CHECK_FALSE(r.cases[3].significant);
  CHECK(r.cases[1].significant);
  CHECK_FALSE(r.perf[1].significant);
  bool listed = false;
  for (const auto& w : r.warnings)
    if (w.find("not significant, shown as n.s.): reject/on, reject/off, overwrite") != std::string::npos)
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

TEST_CASE("bench report: per-CPU staging is printed by the name it was asked by", "[tools][bench]") {
  BenchReport r = sample_report();
  r.staging_on_name = "per_cpu";
  r.cases[2].counts[1].accepted = 3;
  finalize(r, 5.0);
  const std::string t = format_table(r);
  CHECK(t.find("common_preempt_count==20   per_cpu") != std::string::npos);
  bool named = false;
  for (const auto& w : r.warnings)
    if (w.find("reject/per_cpu: the reject-all filter accepted 3 events") != std::string::npos) named = true;
  CHECK(named);
  mini_json::Value doc = mini_json::parse(to_json(r));
  CHECK(doc["cases"].array()[1]["staging"].str() == "per_cpu");
  CHECK(doc["cases"].array()[3]["staging"].str() == "off");
  CHECK(t.find("/on") == std::string::npos);
}
