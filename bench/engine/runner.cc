#include "tracepipe/bench/engine/runner.h"

#include <fmt/core.h>

#include <algorithm>
#include <stdexcept>

#include "tracepipe/bench/engine/case_filters.h"
#include "tracepipe/bench/engine/overwrite_series.h"
#include "tracepipe/bench/engine/report.h"

namespace tracepipe::bench {

void validate(const BenchOptions& o) {
  validate(o.workload);
  validate(o.engine);
  if (o.runs < 1 || o.runs > 1000)
    throw std::invalid_argument(fmt::format("--runs must be 1..1000, got {}", o.runs));
  if (o.hackbench && o.cases.empty()) throw std::invalid_argument("--cases is empty");
  if (o.hackbench && o.stagings.empty()) throw std::invalid_argument("--staging is empty");
  if (o.perf_events > 1'000'000'000)
    throw std::invalid_argument("--perf-events must be at most 1e9");
  if (!o.hackbench && o.perf_events == 0)
    throw std::invalid_argument("nothing to run: the first table is off and --perf-events is 0");
}

std::vector<CaseSpec> case_matrix(const BenchOptions& o) {
  std::vector<CaseSpec> cells;
  // The base is always measured: every traced cell is compared with it.
  cells.push_back({Case::off, Staging::off});
  for (Case c : kAllCases) {
    if (c == Case::off || std::find(o.cases.begin(), o.cases.end(), c) == o.cases.end()) continue;
    for (Staging s : {Staging::per_cpu, Staging::off, Staging::adaptive, Staging::per_thread})
      if (std::find(o.stagings.begin(), o.stagings.end(), s) != o.stagings.end())
        cells.push_back({c, s});
  }
  return cells;
}

BenchReport run_bench(const BenchOptions& o, Progress& progress) {
  validate(o);
  const uint64_t t_start = detail::now_ns();
  BenchReport report;
  report.workload = o.workload;
  report.runs = o.runs;
  report.staging_on_name = o.staging_on_name;
  report.buffer_bytes_per_cpu = o.engine.buffer_bytes_per_cpu;
  report.mode = o.engine.overwrite ? "overwrite" : "drop";
  report.clock = o.engine.clock;
  report.engine = engine_description(o.engine);
  if (o.workload.pin) report.cpus = detail::allowed_cpus();

  FilterSet filters = default_filters(detail::allowed_cpus());
  if (o.filters_file) load_filter_file(*o.filters_file, filters);

  if (o.hackbench) {
    if (std::find(o.cases.begin(), o.cases.end(), Case::half) != o.cases.end())
      report.half_filters = describe(filters.half);
    // Build every cell's engine first: a filter that does not compile fails
    // here, before any timed run.
    const std::vector<CaseSpec> cells = case_matrix(o);
    std::vector<std::unique_ptr<CaseEngine>> engines;
    for (const CaseSpec& cell : cells) {
      EngineOptions eo = o.engine;
      eo.staging = cell.staging;
      engines.push_back(make_case_engine(eo, cell.kase, filters.for_case(cell.kase)));
      CaseResult row;
      row.spec = cell;
      report.cases.push_back(std::move(row));
    }
    auto label = [&o](const CaseSpec& c) {
      return c.kase == Case::off ? std::string("off")
                                 : fmt::format("{}/{}", name(c.kase), name(c.staging, o.staging_on_name));
    };
    if (o.warmup) {
      WorkloadConfig small = o.workload;
      small.loops = std::max<uint32_t>(1, small.loops / 10);
      progress.begin("warm-up", cells.size());
      for (size_t i = 0; i < cells.size(); ++i)
        progress.step(label(cells[i]), 0, 1, engines[i]->run(small).seconds);
      progress.end();
    }
    progress.begin("hackbench", uint64_t{o.runs} * cells.size());
    for (uint32_t rep = 0; rep < o.runs; ++rep) {
      for (size_t i = 0; i < cells.size(); ++i) {
        RunTiming t = engines[i]->run(o.workload);
        report.cases[i].seconds.push_back(t.seconds);
        report.cases[i].counts.push_back(engines[i]->last_counts());
        progress.step(label(cells[i]), rep, o.runs, t.seconds);
      }
    }
    progress.end();
  }

  if (o.perf_events > 0) {
    OverwriteSeriesOptions so;
    so.events = o.perf_events;
    so.syscall = o.perf_syscall;
    so.runs = o.runs;
    so.buffer_bytes_per_cpu = o.engine.buffer_bytes_per_cpu;
    so.clock = o.engine.clock;
    so.pin = o.workload.pin;
    report.perf_events = o.perf_events;
    report.perf_syscall = o.perf_syscall;
    report.perf = run_overwrite_series(so, progress);
  }

  report.total_seconds = double(detail::now_ns() - t_start) * 1e-9;
  finalize(report, o.warn_spread_pct);
  return report;
}

}  // namespace tracepipe::bench
