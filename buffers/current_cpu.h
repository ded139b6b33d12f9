#pragma once
// The CPU the calling thread runs on, read without a system call.
//
// glibc >= 2.35 registers an rseq area for every thread; the kernel keeps its
// cpu_id field current on every return to user space. Reading it is one load
// from the thread pointer, with no call (sched_getcpu() reads the same field
// through one) and no system call (the getcpu call that sched_getcpu() falls
// back to when rseq is unregistered).
//
// The value is a hint, as the kernel's raw_smp_processor_id() is with
// preemption enabled: the thread may migrate right after the load. Callers
// that must stay on one slot (the staging claim) remember the slot they
// claimed, never re-derive it (docs/instance.md, "Ordering").
//
// The one reader of the current CPU: the fast path, the staging claim
// (temp_buffer.h) and run_on_cpu() (rseq.h) all call current_cpu().
#include <cstdint>
#include <optional>

#include "tracepipe/buffers/rseq.h"

namespace tracepipe::buffers {

namespace detail {
/// Out-of-line fallback when this thread has no rseq area (registration
/// disabled by GLIBC_TUNABLES=glibc.pthread.rseq=0, or an old kernel):
/// sched_getcpu(), then 0 if even that fails.
[[gnu::cold, gnu::noinline]] uint32_t current_cpu_slow() noexcept;
}  // namespace detail

/// Current CPU number (0-based, < the number of configured CPUs). Never a
/// system call while rseq is registered, which glibc does for every thread by
/// default. Any thread, async-signal-safe.
[[gnu::always_inline]] inline uint32_t current_cpu() noexcept {
  const int32_t cpu = detail::rseq_cpu();  // -1 unregistered, -2 failed
  if (cpu >= 0) [[likely]]
    return static_cast<uint32_t>(cpu);
  return detail::current_cpu_slow();
}

/// True if current_cpu() reads the rseq area on this thread (no call, no
/// system call); false if it falls back to sched_getcpu().
bool current_cpu_uses_rseq() noexcept;

/// The kernel's nr_cpu_ids: the highest CPU number the system may ever
/// bring online + 1 (/sys/devices/system/cpu/possible), and at least
/// get_nprocs_conf(). Every value of current_cpu() is below it, also when
/// CPU numbers have holes ("0,2,4": a count would say 3, CPU 4 exists) or
/// CPUs can be hot-added. Per-CPU structures are sized by it, so no writer
/// finds its CPU without a buffer. Read once per process.
uint32_t possible_cpus() noexcept;

namespace detail {
/// possible_cpus()'s rule: nr_cpu_ids when known, never below nprocs_conf,
/// at least 1.
constexpr uint32_t cpu_slots(std::optional<uint32_t> nr_cpu_ids, int nprocs_conf) noexcept {
  uint32_t n = nprocs_conf > 0 ? static_cast<uint32_t>(nprocs_conf) : 1u;
  if (nr_cpu_ids && *nr_cpu_ids > n) n = *nr_cpu_ids;
  return n;
}
}  // namespace detail

}  // namespace tracepipe::buffers
