#include "tracepipe/bench/engine/runner.h"

#include <fmt/core.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <latch>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "tracepipe/bench/engine/case_filters.h"
#include "tracepipe/bench/engine/overwrite_series.h"
#include "tracepipe/bench/engine/report.h"

namespace tracepipe::bench {
namespace {

/// The replaying threads: one per lane, pinned to allowed CPU w, parked
/// between blocks (futex waits, outside the timed loops). A block releases
/// every thread at once; each times its own replay loop; the block's time is
/// the sum of the threads' times (CPU-time-like: a per-event cost summed
/// over threads, independent of how many threads there are).
class MixWorkers {
 public:
  MixWorkers(const EventMix& mix, const std::vector<int>& cpus, bool pin, CaseEngine& any)
      : mix_(mix), elapsed_(mix.lanes.size()) {
    const size_t n = mix.lanes.size();
    std::latch ready(static_cast<std::ptrdiff_t>(n));
    threads_.reserve(n);
    for (size_t w = 0; w < n; ++w)
      threads_.emplace_back([this, w, &cpus, pin, &any, &ready] {
        try {
          if (pin) detail::pin_self(cpus[w % cpus.size()]);
          any.prepare_thread();  // per thread, not per engine
        } catch (...) {
          std::lock_guard lock(mu_);
          if (!error_) error_ = std::current_exception();
        }
        ready.count_down();
        loop(w);
      });
    ready.wait();
    if (error_) {
      stop();
      std::rethrow_exception(error_);
    }
  }
  ~MixWorkers() { stop(); }
  MixWorkers(const MixWorkers&) = delete;
  MixWorkers& operator=(const MixWorkers&) = delete;

  /// One block: every thread replays `count` events of its lane into
  /// `engine`. Returns the summed time of the threads' loops, ns.
  double block(CaseEngine& engine, uint64_t count) {
    engine_ = &engine;
    count_ = count;
    done_.store(0, std::memory_order_relaxed);
    gen_.fetch_add(1, std::memory_order_release);
    gen_.notify_all();
    const uint32_t n = static_cast<uint32_t>(threads_.size());
    for (uint32_t d = done_.load(std::memory_order_acquire); d < n;
         d = done_.load(std::memory_order_acquire))
      done_.wait(d, std::memory_order_acquire);
    double sum = 0;
    for (uint64_t e : elapsed_) sum += double(e);
    return sum;
  }

 private:
  void loop(size_t w) {
    uint32_t seen = 0;
    for (;;) {
      gen_.wait(seen, std::memory_order_acquire);
      seen = gen_.load(std::memory_order_acquire);
      if (stopping_.load(std::memory_order_acquire)) return;
      const uint64_t t0 = detail::now_ns();
      engine_->replay(mix_.lanes[w], count_);
      elapsed_[w] = detail::now_ns() - t0;
      done_.fetch_add(1, std::memory_order_acq_rel);
      done_.notify_one();
    }
  }
  void stop() {
    if (threads_.empty()) return;
    stopping_.store(true, std::memory_order_release);
    gen_.fetch_add(1, std::memory_order_release);
    gen_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  const EventMix& mix_;
  std::vector<uint64_t> elapsed_;
  std::vector<std::thread> threads_;
  std::atomic<uint32_t> gen_{0};
  std::atomic<uint32_t> done_{0};
  std::atomic<bool> stopping_{false};
  CaseEngine* engine_ = nullptr;
  uint64_t count_ = 0;
  std::mutex mu_;
  std::exception_ptr error_;
};

RunCounts minus(const RunCounts& a, const RunCounts& b) {
  return {a.emitted - b.emitted,
          a.accepted - b.accepted,
          a.rejected - b.rejected,
          a.lost - b.lost,
          a.lost_commit_overrun - b.lost_commit_overrun,
          a.lost_set_aside - b.lost_set_aside,
          a.lost_busy - b.lost_busy,
          a.overrun - b.overrun,
          a.staged - b.staged,
          a.staging_busy - b.staging_busy,
          a.conserved && b.conserved};
}

}  // namespace

void run_mix(const BenchOptions& o, const std::vector<CaseSpec>& cells,
             const std::vector<CaseEngine*>& engines, const EventMix& mix, BenchReport& report,
             Progress& progress) {
  const uint64_t t_start = detail::now_ns();
  MixInfo& info = report.mix;
  info.source = mix.source;
  info.fallback_reason = mix.fallback_reason;
  info.records = mix.records();
  info.file_records = mix.file_records;
  info.per_kind = mix.per_kind;
  info.threads = static_cast<uint32_t>(mix.lanes.size());
  info.rounds = o.mix_rounds;
  info.block_events = o.mix_block_events;
  info.seed = o.mix_seed;
  report.mix_cases.clear();
  for (size_t i = 1; i < cells.size(); ++i) {
    MixResult row;
    row.spec = cells[i];
    report.mix_cases.push_back(std::move(row));
  }
  if (cells.size() < 2 || o.mix_rounds == 0) return;

  MixWorkers workers(mix, detail::allowed_cpus(), o.workload.pin, *engines[0]);
  const auto label = [&](uint32_t cell) {
    const CaseSpec& c = cells[cell];
    return fmt::format("{}/{}", name(c.kase), name(c.staging, o.staging_on_name));
  };
  auto block = [&](uint32_t cell) {
    engines[cell]->drain();
    return workers.block(*engines[cell], o.mix_block_events);
  };
  // Untimed warm-up: every engine's buffers, slots and filters touched.
  if (o.warmup)
    for (const BlockSlot& s : interleave_order(uint32_t(cells.size()), 2, o.mix_seed ^ 0x5eed))
      block(s.base ? 0 : s.cell);

  std::vector<RunCounts> before(cells.size());
  for (size_t i = 0; i < cells.size(); ++i) before[i] = engines[i]->totals();
  const std::vector<BlockSlot> order =
      interleave_order(uint32_t(cells.size()), o.mix_rounds, o.mix_seed);
  // Progress in tenths of the pairs: a log gets 10 lines, not one per round.
  const size_t pairs = order.size() / 2;
  const uint32_t tenths = static_cast<uint32_t>(std::min<size_t>(10, pairs));
  uint32_t shown = 0;
  progress.begin("replayed mix", tenths, fmt::format("of the {} rounds", o.mix_rounds));
  for (size_t i = 0; i < order.size(); i += 2) {
    // A pair: two adjacent blocks, the cell's and off's, in the drawn order.
    double cell_ns = 0, base_ns = 0;
    for (size_t j = i; j < i + 2; ++j) {
      const double t = block(order[j].base ? 0 : order[j].cell);
      (order[j].base ? base_ns : cell_ns) = t;
    }
    MixResult& r = report.mix_cases[order[i].cell - 1];
    r.block_ns.push_back(cell_ns);
    r.base_ns.push_back(base_ns);
    const uint32_t now = static_cast<uint32_t>((i / 2 + 1) * tenths / pairs);
    for (; shown < now; ++shown) progress.step(label(order[i].cell), shown, tenths, cell_ns * 1e-9);
  }
  progress.end();
  for (size_t i = 1; i < cells.size(); ++i)
    report.mix_cases[i - 1].counts = minus(engines[i]->totals(), before[i]);
  info.seconds = double(detail::now_ns() - t_start) * 1e-9;
}

void validate(const BenchOptions& o) {
  validate(o.workload);
  validate(o.engine);
  if (o.runs < 1 || o.runs > 1000)
    throw std::invalid_argument(fmt::format("--runs must be 1..1000, got {}", o.runs));
  if (o.hackbench && o.cases.empty()) throw std::invalid_argument("--cases is empty");
  if (o.hackbench && o.stagings.empty()) throw std::invalid_argument("--staging is empty");
  if (o.perf_events > 1'000'000'000)
    throw std::invalid_argument("--perf-events must be at most 1e9");
  if (o.mix && o.mix_rounds > 100000)
    throw std::invalid_argument(
        fmt::format("--mix-rounds must be at most 100000, got {}", o.mix_rounds));
  if (o.mix && (o.mix_block_events < 1 || o.mix_block_events > 100'000'000))
    throw std::invalid_argument(
        fmt::format("--mix-events must be 1..100000000, got {}", o.mix_block_events));
  if ((o.mix || o.hackbench) && o.cases.empty()) throw std::invalid_argument("--cases is empty");
  if ((o.mix || o.hackbench) && o.stagings.empty())
    throw std::invalid_argument("--staging is empty");
  if (!(o.mix && o.mix_rounds > 0) && !o.hackbench && o.perf_events == 0)
    throw std::invalid_argument(
        "nothing to run: the replayed mix and the hackbench table are off and --perf-events is 0");
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
  if (o.filters_file) {
    const FilterSet defaults = filters;
    load_filter_file(*o.filters_file, filters);
    for (Case c : {Case::reject, Case::accept, Case::half})
      if (filters.for_case(c) != defaults.for_case(c)) report.filters_from_file.push_back(c);
  }

  const bool mix = o.mix && o.mix_rounds > 0;
  // Build every cell's engine first: a filter that does not compile fails
  // here, before any timed run. Both tables use the same engines.
  std::vector<CaseSpec> cells;
  std::vector<std::unique_ptr<CaseEngine>> engines;
  if (mix || o.hackbench) {
    if (std::find(o.cases.begin(), o.cases.end(), Case::half) != o.cases.end())
      report.half_filters = describe(filters.half);
    cells = case_matrix(o);
    for (const CaseSpec& cell : cells) {
      EngineOptions eo = o.engine;
      eo.staging = cell.staging;
      engines.push_back(make_case_engine(eo, cell.kase, filters.for_case(cell.kase)));
    }
  }
  if (mix) {
    const std::vector<int> cpus = detail::allowed_cpus();
    const EventMix events = find_mix(o.mix_source, cpus.size());
    std::vector<CaseEngine*> raw;
    for (auto& e : engines) raw.push_back(e.get());
    run_mix(o, cells, raw, events, report, progress);
    if (o.on_mix_done) {
      BenchReport partial = report;
      finalize(partial, o.warn_spread_pct);
      o.on_mix_done(partial);
    }
  }

  if (o.hackbench) {
    for (const CaseSpec& cell : cells) {
      CaseResult row;
      row.spec = cell;
      report.cases.push_back(std::move(row));
    }
    auto label = [&o](const CaseSpec& c) {
      return c.kase == Case::off
                 ? std::string("off")
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
