#include "tracepipe/bench/peers/kernel_table.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "tracepipe/bench/engine/case_filters.h"
#include "tracepipe/bench/engine/records.h"
#include "tracepipe/bench/peers/lttng_session.h"  // PeerUnavailable
#include "tracepipe/bench/peers/tracefs.h"

namespace tracepipe::peers {
namespace {

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

uint64_t median_u64(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Configures the kernel instance for one case and runs the workload once.
class KernelRunner {
 public:
  KernelRunner(TracefsInstance& inst, const bench::EngineOptions& engine) : inst_(inst) {
    for (const bench::EventInfo& e : bench::kEventInfo) {
      const std::string sys(e.system), name(e.name);
      if (!inst_.has_event(sys, name))
        throw PeerUnavailable(fmt::format("the kernel has no {}:{} trace event", sys, name));
      events_.emplace_back(sys, name);
    }
    inst_.write("tracing_on", "0");
    inst_.write("buffer_size_kb",
                std::to_string(std::max<uint64_t>(4, engine.buffer_bytes_per_cpu / 1024)));
    inst_.write("options/overwrite", engine.overwrite ? "1" : "0");
    inst_.write("trace_clock", engine.clock == "local" ? "local" : engine.clock);
    inst_.write("options/event-fork", "1");
    // Only this thread and the workload threads it will create.
    inst_.write("set_event_pid", std::to_string(bench::detail::current_tid()));
    inst_.write("tracing_on", "1");
  }

  /// One run; `filters` per EventKind; off = no event enabled. `cpu`
  /// receives the process CPU time of the workload alone (not of the
  /// tracefs writes around it).
  bench::RunTiming run(const bench::WorkloadConfig& w, bench::Case kase,
                       const bench::EventFilters& filters, TracefsCounts& counts, double& cpu) {
    const bool traced = kase != bench::Case::off;
    if (traced) {
      for (size_t k = 0; k < events_.size(); ++k) {
        inst_.set_filter(events_[k].first, events_[k].second, filters[k]);
        inst_.enable_event(events_[k].first, events_[k].second, true);
      }
    }
    inst_.clear();
    bench::NullTracer none;
    bench::RunTiming t;
    try {
      const double c0 = process_cpu_seconds();
      t = bench::run_hackbench(w, none);
      cpu = process_cpu_seconds() - c0;
    } catch (...) {
      disable();
      throw;
    }
    if (traced) disable();
    counts = inst_.counts();
    inst_.clear();
    return t;
  }

  void disable() {
    for (const auto& [sys, name] : events_) {
      try {
        inst_.enable_event(sys, name, false);
      } catch (...) {
      }
    }
  }

  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const auto& [sys, name] : events_) v.push_back(sys + ":" + name);
    return v;
  }

 private:
  TracefsInstance& inst_;
  std::vector<std::pair<std::string, std::string>> events_;  // indexed by EventKind
};

// off first (the base of both sides), then each asked case once.
std::vector<bench::Case> cases_with_off(const KernelTableOptions& o) {
  std::vector<bench::Case> cases{bench::Case::off};
  for (bench::Case c : o.cases)
    if (c != bench::Case::off && std::find(cases.begin(), cases.end(), c) == cases.end())
      cases.push_back(c);
  return cases;
}

// What both sides ran, case by case, besides their times.
struct RunSamples {
  explicit RunSamples(size_t cases) : tp_events(cases), tp_kept(cases), k_rec(cases) {}
  std::vector<std::vector<uint64_t>> tp_events, tp_kept, k_rec;
};

// The two sides and what they run: tracepipe's engines and the kernel's
// instance, case by case.
struct Sides {
  std::vector<bench::Case> cases;
  bench::FilterSet filters;
  std::vector<std::unique_ptr<bench::CaseEngine>> engines;
  KernelRunner& kernel;
};

// One untimed pass of every case on both sides, with a tenth of the loops.
void warm_up(Sides& sides, const bench::WorkloadConfig& w) {
  bench::WorkloadConfig small = w;
  small.loops = std::max<uint32_t>(1, small.loops / 10);
  for (size_t i = 0; i < sides.cases.size(); ++i) {
    (void)sides.engines[i]->run(small);
    TracefsCounts c;
    double cpu = 0;
    (void)sides.kernel.run(small, sides.cases[i], sides.filters.for_case(sides.cases[i]), c, cpu);
  }
}

// The timed runs, A B A B (tracepipe, kernel) within each case, so that the
// machine's drift hits both sides alike.
void measure_runs(KernelTable& table, Sides& sides, RunSamples& samples,
                  const KernelTableOptions& o, bench::Progress& progress) {
  const std::vector<bench::Case>& cases = sides.cases;
  progress.begin("peers: kernel hackbench", uint64_t{o.runs} * cases.size() * 2);
  for (uint32_t rep = 0; rep < o.runs; ++rep) {
    for (size_t i = 0; i < cases.size(); ++i) {
      KernelRow& row = table.rows[i];
      const double c0 = process_cpu_seconds();
      const bench::RunTiming t = sides.engines[i]->run(o.workload);
      const double tp_cpu = process_cpu_seconds() - c0;
      const bench::RunCounts rc = sides.engines[i]->last_counts();
      row.tracepipe.seconds.push_back(o.cpu_time ? tp_cpu : t.seconds);
      row.tracepipe.wall_seconds.push_back(t.seconds);
      samples.tp_events[i].push_back(rc.emitted);
      samples.tp_kept[i].push_back(rc.accepted);
      progress.step(fmt::format("tracepipe {}", bench::name(cases[i])), rep, o.runs, t.seconds);

      TracefsCounts kc;
      double k_cpu = 0;
      const bench::RunTiming kt =
          sides.kernel.run(o.workload, cases[i], sides.filters.for_case(cases[i]), kc, k_cpu);
      row.kernel.seconds.push_back(o.cpu_time ? k_cpu : kt.seconds);
      row.kernel.wall_seconds.push_back(kt.seconds);
      samples.k_rec[i].push_back(kc.recorded());
      progress.step(fmt::format("kernel {}", bench::name(cases[i])), rep, o.runs, kt.seconds);
    }
  }
  progress.end();
}

// Each row's medians and cost per event over its side's off; warnings where
// the kernel recorded what it should not have.
void derive_costs(KernelTable& table, const std::vector<bench::Case>& cases,
                  const RunSamples& samples) {
  // Kernel events per run: what its unfiltered (else accept-all) runs recorded.
  uint64_t kernel_events = 0;
  for (bench::Case ref : {bench::Case::all, bench::Case::accept})
    for (size_t i = 0; i < cases.size() && kernel_events == 0; ++i)
      if (cases[i] == ref) kernel_events = median_u64(samples.k_rec[i]);
  if (kernel_events == 0 && cases.size() > 1)
    table.warnings.push_back(
        "kernel: no `all` or `accept` case, so its events per run are unknown");

  const double tp_off = table.rows[0].tracepipe.seconds.empty()
                            ? 0
                            : bench::summarize(table.rows[0].tracepipe.seconds).median;
  const double k_off = table.rows[0].kernel.seconds.empty()
                           ? 0
                           : bench::summarize(table.rows[0].kernel.seconds).median;
  for (size_t i = 0; i < cases.size(); ++i) {
    KernelRow& row = table.rows[i];
    row.tracepipe.summary = bench::summarize(row.tracepipe.seconds);
    row.kernel.summary = bench::summarize(row.kernel.seconds);
    row.tracepipe.events = median_u64(samples.tp_events[i]);
    row.tracepipe.recorded = median_u64(samples.tp_kept[i]);
    row.kernel.recorded = median_u64(samples.k_rec[i]);
    if (cases[i] == bench::Case::off) {
      if (row.kernel.recorded != 0)
        table.warnings.push_back(
            fmt::format("kernel off runs recorded {} events", row.kernel.recorded));
      continue;
    }
    row.kernel.events = kernel_events;
    row.tracepipe.ns_per_event =
        bench::ns_per_event(row.tracepipe.summary.median, tp_off, row.tracepipe.events);
    row.kernel.ns_per_event = bench::ns_per_event(row.kernel.summary.median, k_off, kernel_events);
    if (cases[i] == bench::Case::reject && row.kernel.recorded != 0)
      table.warnings.push_back(
          fmt::format("kernel reject runs recorded {} events: the filter did not reject all",
                      row.kernel.recorded));
  }
}

// A side's reject cost over its all cost; -1 when either is missing or the
// cost of all is not positive.
double reject_ratio(const KernelTable& table, bool kernel_side) {
  const HackbenchSide* rej = nullptr;
  const HackbenchSide* all = nullptr;
  for (const KernelRow& r : table.rows) {
    const HackbenchSide& s = kernel_side ? r.kernel : r.tracepipe;
    if (r.kase == bench::Case::reject) rej = &s;
    if (r.kase == bench::Case::all) all = &s;
  }
  if (rej == nullptr || all == nullptr || all->ns_per_event <= 0 || rej->ns_per_event < 0)
    return -1;
  return rej->ns_per_event / all->ns_per_event;
}

}  // namespace

KernelTable run_kernel_table(const KernelTableOptions& o, TracefsInstance& instance,
                             bench::Progress& progress) {
  bench::validate(o.workload);
  KernelTable table;
  KernelRunner kernel(instance, o.engine);
  table.kernel_events = kernel.names();
  table.engine = bench::engine_description(o.engine);

  Sides sides{cases_with_off(o), bench::default_filters(bench::detail::allowed_cpus()), {}, kernel};
  for (bench::Case c : sides.cases) {
    sides.engines.push_back(bench::make_case_engine(o.engine, c, sides.filters.for_case(c)));
    KernelRow row;
    row.kase = c;
    table.rows.push_back(std::move(row));
  }
  RunSamples samples(sides.cases.size());
  if (o.warmup) warm_up(sides, o.workload);
  measure_runs(table, sides, samples, o, progress);
  derive_costs(table, sides.cases, samples);
  table.tracepipe_reject_ratio = reject_ratio(table, false);
  table.kernel_reject_ratio = reject_ratio(table, true);
  return table;
}

}  // namespace tracepipe::peers
