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

}  // namespace

KernelMicroTable run_kernel_micro(const MicroOptions& o, TracefsInstance& inst,
                                  const std::vector<int>& cpus) {
  if (!inst.has_event(kSys, kEvent))
    throw PeerUnavailable("the kernel has no raw_syscalls:sys_enter trace event");
  KernelMicroTable table;
  table.events = o.events;

  std::vector<RowSpec> specs{{"off", std::nullopt}, {"ignored", std::nullopt}};
  for (MicroCase c : o.cases)
    if (c != MicroCase::disabled) specs.push_back({std::string(name(c)), c});
  uint32_t max_threads = 0;
  std::vector<uint32_t> threads;
  for (uint32_t t : o.threads)
    if (t >= 1 && t <= cpus.size()) {
      threads.push_back(t);
      max_threads = std::max(max_threads, t);
    }
  if (max_threads == 0) return table;

  PinnedPool pool({cpus.begin(), cpus.begin() + max_threads});
  std::vector<int32_t> tids(max_threads);
  pool.run(max_threads, [&](uint32_t t) { tids[t] = static_cast<int32_t>(::syscall(SYS_gettid)); });
  std::string workers;
  for (int32_t tid : tids) workers += (workers.empty() ? "" : " ") + std::to_string(tid);
  const std::string self =
      std::to_string(::syscall(SYS_gettid));  // traced while the workers are "ignored"

  const uint64_t round_kb =
      std::max<uint64_t>(1024, (o.events * 32 * 2 + 1023) / 1024);  // 32 B per record
  inst.write("tracing_on", "0");
  inst.write("options/event-fork", "0");
  inst.write("tracing_on", "1");

  std::string current_kb;
  auto configure = [&](const RowSpec& s) {
    inst.enable_event(kSys, kEvent, false);
    if (s.label == "off") return;
    const bool overwrite = s.kase == MicroCase::overwrite;
    const std::string kb = std::to_string(overwrite ? o.overwrite_kb : round_kb);
    if (kb != current_kb) {
      inst.write("buffer_size_kb", kb);
      current_kb = kb;
    }
    inst.write("options/overwrite", overwrite ? "1" : "0");
    inst.write("set_event_pid", s.label == "ignored" ? self : workers);
    std::string filter;
    if (s.kase == MicroCase::reject_int) filter = "id < 0";
    if (s.kase == MicroCase::accept_int) filter = "id >= 0";
    if (s.kase == MicroCase::reject_glob) filter = fmt::format("comm ~ \"{}\"", o.glob);
    inst.set_filter(kSys, kEvent, filter);
    inst.enable_event(kSys, kEvent, true);
  };

  // rows[t index][spec index]
  for (uint32_t t : threads)
    for (const RowSpec& s : specs) {
      KernelMicroRow row;
      row.label = s.label;
      row.kase = s.kase;
      row.threads = t;
      table.rows.push_back(std::move(row));
    }
  auto row_at = [&](size_t ti, size_t si) -> KernelMicroRow& {
    return table.rows[ti * specs.size() + si];
  };

  try {
    for (uint32_t r = 0; r <= o.rounds; ++r) {  // round 0: untimed warm-up
      const uint64_t n = r == 0 ? std::max<uint64_t>(1, o.events / 10) : o.events;
      for (size_t ti = 0; ti < threads.size(); ++ti) {
        for (size_t si = 0; si < specs.size(); ++si) {
          configure(specs[si]);
          inst.clear();
          const std::vector<PinnedPool::Elapsed> el =
              pool.run(threads[ti], [&](uint32_t) { syscall_loop(n); });
          inst.enable_event(kSys, kEvent, false);
          if (r == 0) continue;
          KernelMicroRow& row = row_at(ti, si);
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

  for (size_t ti = 0; ti < threads.size(); ++ti) {
    const size_t ignored = 1;
    for (size_t si = 0; si < specs.size(); ++si)
      row_at(ti, si).summary = bench::summarize(row_at(ti, si).ns);
    const double base = row_at(ti, ignored).summary.median;
    for (size_t si = 2; si < specs.size(); ++si) {
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
  const KernelMicroRow* rej = nullptr;
  const KernelMicroRow* all = nullptr;
  for (const KernelMicroRow& row : table.rows) {
    if (row.threads != 1) continue;
    if (row.kase == MicroCase::reject_int) rej = &row;
    if (row.kase == MicroCase::enabled) all = &row;
  }
  if (rej != nullptr && all != nullptr && all->ns_per_event > 0)
    table.reject_ratio = std::max(0.0, rej->ns_per_event) / all->ns_per_event;
  return table;
}

}  // namespace tracepipe::peers
