#include "tracepipe/bench/peers/kernel_micro.h"

#include <fmt/core.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "tracepipe/bench/peers/lttng_session.h"  // PeerUnavailable
#include "tracepipe/bench/peers/pinned_pool.h"
#include "tracepipe/bench/peers/tracefs.h"

namespace tracepipe::peers {
namespace {

constexpr const char* kSys = "raw_syscalls";
constexpr const char* kEvent = "sys_enter";

/// n getppid() calls; kept out of line so the loop is the same in every row.
[[gnu::noinline]] void syscall_loop(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) (void)::syscall(SYS_getppid);
}

struct RowSpec {
  std::string label;
  std::optional<MicroCase> kase;
};

// off and ignored first: the base rows every other row is read against.
std::vector<RowSpec> row_specs(const MicroOptions& o) {
  std::vector<RowSpec> specs{{"off", std::nullopt}, {"ignored", std::nullopt}};
  for (MicroCase c : o.cases)
    if (c != MicroCase::disabled) specs.push_back({std::string(name(c)), c});
  return specs;
}

// The thread counts this machine has CPUs for.
std::vector<uint32_t> thread_counts(const MicroOptions& o, const std::vector<int>& cpus) {
  std::vector<uint32_t> threads;
  for (uint32_t t : o.threads)
    if (t >= 1 && t <= cpus.size()) threads.push_back(t);
  return threads;
}

// The tracefs instance set up for one row at a time.
class RowConfigurator {
 public:
  RowConfigurator(TracefsInstance& inst, const MicroOptions& o, PinnedPool& pool,
                  uint32_t max_threads)
      : inst_(inst), o_(o) {
    std::vector<int32_t> tids(max_threads);
    pool.run(max_threads,
             [&](uint32_t t) { tids[t] = static_cast<int32_t>(::syscall(SYS_gettid)); });
    for (int32_t tid : tids) workers_ += (workers_.empty() ? "" : " ") + std::to_string(tid);
    inst_.write("tracing_on", "0");
    inst_.write("options/event-fork", "0");
    inst_.write("tracing_on", "1");
  }

  void configure(const RowSpec& s) {
    inst_.enable_event(kSys, kEvent, false);
    if (s.label == "off") return;
    const bool overwrite = s.kase == MicroCase::overwrite;
    const std::string kb = std::to_string(overwrite ? o_.overwrite_kb : round_kb_);
    if (kb != current_kb_) {
      inst_.write("buffer_size_kb", kb);
      current_kb_ = kb;
    }
    inst_.write("options/overwrite", overwrite ? "1" : "0");
    inst_.write("set_event_pid", s.label == "ignored" ? self_ : workers_);
    std::string filter;
    if (s.kase == MicroCase::reject_int) filter = "id < 0";
    if (s.kase == MicroCase::accept_int) filter = "id >= 0";
    if (s.kase == MicroCase::reject_glob) filter = fmt::format("comm ~ \"{}\"", o_.glob);
    inst_.set_filter(kSys, kEvent, filter);
    inst_.enable_event(kSys, kEvent, true);
  }

 private:
  TracefsInstance& inst_;
  const MicroOptions& o_;
  std::string workers_;
  const std::string self_ =
      std::to_string(::syscall(SYS_gettid));  // traced while the workers are "ignored"
  const uint64_t round_kb_ =
      std::max<uint64_t>(1024, (o_.events * 32 * 2 + 1023) / 1024);  // 32 B per record
  std::string current_kb_;
};

// Every row, interleaved within each round, so that the machine's drift
// hits all rows alike. rows[thread index * specs + spec index].
void measure_rows(KernelMicroTable& table, const MicroOptions& o, TracefsInstance& inst,
                  PinnedPool& pool, RowConfigurator& config, const std::vector<uint32_t>& threads,
                  const std::vector<RowSpec>& specs) {
  try {
    for (uint32_t r = 0; r <= o.rounds; ++r) {  // round 0: untimed warm-up
      const uint64_t n = r == 0 ? std::max<uint64_t>(1, o.events / 10) : o.events;
      for (size_t ti = 0; ti < threads.size(); ++ti) {
        for (size_t si = 0; si < specs.size(); ++si) {
          config.configure(specs[si]);
          inst.clear();
          const std::vector<PinnedPool::Elapsed> el =
              pool.run(threads[ti], [&](uint32_t) { syscall_loop(n); });
          inst.enable_event(kSys, kEvent, false);
          if (r == 0) continue;
          KernelMicroRow& row = table.rows[ti * specs.size() + si];
          row.ns.push_back(PinnedPool::mean_per(el, n, o.timing == Timing::cpu));
          row.wall_ns.push_back(PinnedPool::mean_per(el, n, false));
          row.recorded = inst.counts().recorded();
        }
      }
    }
  } catch (...) {
    inst.enable_event(kSys, kEvent, false);
    throw;
  }
  inst.clear();
}

// Each row's cost per event over ignored's, and a warning where the kernel
// recorded what the row's filter should not let through (or missed events).
void derive_costs(KernelMicroTable& table, const MicroOptions& o,
                  const std::vector<uint32_t>& threads, size_t nr_specs) {
  auto row_at = [&](size_t ti, size_t si) -> KernelMicroRow& {
    return table.rows[ti * nr_specs + si];
  };
  for (size_t ti = 0; ti < threads.size(); ++ti) {
    const size_t ignored = 1;
    for (size_t si = 0; si < nr_specs; ++si)
      row_at(ti, si).summary = bench::summarize(row_at(ti, si).ns);
    const double base = row_at(ti, ignored).summary.median;
    for (size_t si = 2; si < nr_specs; ++si) {
      KernelMicroRow& row = row_at(ti, si);
      row.ns_per_event = row.summary.median - base;
      const uint64_t expected = uint64_t{threads[ti]} * o.events;
      if (row.kase == MicroCase::enabled || row.kase == MicroCase::accept_int) {
        if (row.recorded < expected)
          table.warnings.push_back(fmt::format("{} x{}: the kernel recorded {} of {} events",
                                               row.label, threads[ti], row.recorded, expected));
      }
      if ((row.kase == MicroCase::reject_int || row.kase == MicroCase::reject_glob) &&
          row.recorded != 0)
        table.warnings.push_back(fmt::format("{} x{}: the kernel recorded {} events, expected none",
                                             row.label, threads[ti], row.recorded));
    }
  }
}

// reject-int over enabled at one thread; -1 when either is missing.
double reject_ratio(const KernelMicroTable& table) {
  const KernelMicroRow* rej = nullptr;
  const KernelMicroRow* all = nullptr;
  for (const KernelMicroRow& row : table.rows) {
    if (row.threads != 1) continue;
    if (row.kase == MicroCase::reject_int) rej = &row;
    if (row.kase == MicroCase::enabled) all = &row;
  }
  if (rej != nullptr && all != nullptr && all->ns_per_event > 0)
    return std::max(0.0, rej->ns_per_event) / all->ns_per_event;
  return table.reject_ratio;
}

}  // namespace

KernelMicroTable run_kernel_micro(const MicroOptions& o, TracefsInstance& inst,
                                  const std::vector<int>& cpus) {
  if (!inst.has_event(kSys, kEvent))
    throw PeerUnavailable("the kernel has no raw_syscalls:sys_enter trace event");
  KernelMicroTable table;
  table.events = o.events;
  const std::vector<RowSpec> specs = row_specs(o);
  const std::vector<uint32_t> threads = thread_counts(o, cpus);
  if (threads.empty()) return table;
  const uint32_t max_threads = *std::max_element(threads.begin(), threads.end());

  PinnedPool pool({cpus.begin(), cpus.begin() + max_threads});
  RowConfigurator config(inst, o, pool, max_threads);
  for (uint32_t t : threads)
    for (const RowSpec& s : specs) {
      KernelMicroRow row;
      row.label = s.label;
      row.kase = s.kase;
      row.threads = t;
      table.rows.push_back(std::move(row));
    }
  measure_rows(table, o, inst, pool, config, threads, specs);
  derive_costs(table, o, threads, specs.size());
  table.reject_ratio = reject_ratio(table);
  return table;
}

}  // namespace tracepipe::peers
