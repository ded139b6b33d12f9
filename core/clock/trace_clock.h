#pragma once
// Trace clocks, under the kernel's names (/sys/kernel/tracing/trace_clock).
//
//   name      source                                   unit  kernel counterpart
//   local     rdtsc scaled to ns (calibrated once)     ns    sched_clock (per CPU, fastest)
//   global    clock_gettime(CLOCK_MONOTONIC)            ns    trace_clock_global (synchronised)
//   counter   one process-wide atomic increment         count trace_clock_counter (atomic64)
//   uptime    CLOCK_MONOTONIC_COARSE in 10 ms ticks     tick  trace_clock_jiffies (USER_HZ)
//   perf      same as local                            ns    local_clock
//   mono      clock_gettime(CLOCK_MONOTONIC)            ns    ktime_get_mono_fast_ns
//   mono_raw  clock_gettime(CLOCK_MONOTONIC_RAW)        ns    ktime_get_raw_fast_ns
//   boot      clock_gettime(CLOCK_BOOTTIME)             ns    ktime_get_boot_fast_ns
//   tai       clock_gettime(CLOCK_TAI)                  ns    ktime_get_tai_fast_ns
//   x86-tsc   raw rdtsc                                 cycles the arch clock "x86-tsc"
//
// Every clock is read without a system call: clock_gettime goes through the
// vDSO, rdtsc is one instruction.
//
// `local` mirrors the kernel's sched_clock: ns = base_ns + (tsc - base_tsc) *
// mult >> shift, with base_ns taken from CLOCK_MONOTONIC_RAW at calibration, so
// `local` and `mono_raw` agree at start (they drift apart by the calibration
// error, a few ppm). Like sched_clock it uses a plain (unordered) rdtsc; the
// ring buffer keeps per-CPU time stamps non-decreasing. On a machine without
// an invariant TSC (no constant_tsc + nonstop_tsc in /proc/cpuinfo) `local`
// and `perf` read CLOCK_MONOTONIC_RAW instead (see tsc_calibration()).
//
// Thread-safety: every read function is noexcept, lock-free, async-signal-
// safe and callable from any thread once trace_clock() has returned for it
// (that call performs the one-time TSC calibration, ~10 ms, on first use).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tracepipe/buffers/tsc_clock.h"

namespace tracepipe::buffers {
struct FunctionClock;  // buffers/ring_buffer.h
}  // namespace tracepipe::buffers

namespace tracepipe {

enum class ClockId : uint8_t {
  local,
  global,
  counter,
  uptime,
  perf,
  mono,
  mono_raw,
  boot,
  tai,
  x86_tsc
};

/// A clock read function, as the ring buffer takes it: noexcept, no state.
using ClockFn = uint64_t (*)() noexcept;

struct TraceClock {
  ClockId id;
  std::string_view name;  ///< the kernel's name ("local", "x86-tsc")
  ClockFn read;           ///< returns the time stamp stored in records
  bool in_nanoseconds;    ///< false for counter and x86-tsc
};

/// The clock `id`, ready to read (calibrates the TSC on the first request of
/// local/perf). Thread-safe.
const TraceClock& trace_clock(ClockId id);

/// Looks a clock up by its kernel name ("local", "mono_raw", "x86-tsc").
/// nullopt for unknown names.
std::optional<ClockId> parse_trace_clock(std::string_view name) noexcept;

/// The kernel's name of `id`.
std::string_view trace_clock_name(ClockId id) noexcept;

/// Every supported clock, in the order the kernel lists them.
std::span<const TraceClock> trace_clocks();

/// The content of the kernel's trace_clock file with `selected` in brackets:
/// "[local] global counter uptime perf mono mono_raw boot tai x86-tsc".
std::string trace_clock_list(ClockId selected);

/// How `local` converts TSC cycles to ns. Computed once, on first use.
struct TscCalibration {
  bool invariant_tsc = false;  ///< constant_tsc and nonstop_tsc; false -> local reads mono_raw
  uint64_t tsc_hz = 0;         ///< measured TSC frequency (0 if not invariant)
  uint64_t base_tsc = 0;       ///< TSC at calibration
  uint64_t base_ns = 0;        ///< CLOCK_MONOTONIC_RAW at calibration, ns
  uint64_t mult = 0;           ///< ns = base_ns + ((tsc - base_tsc) * mult) >> shift
  uint32_t shift = 32;         ///< always buffers::TscScale::kShift
};
const TscCalibration& tsc_calibration();

/// Converts a TSC value with the calibration above (used by `local`).
/// Values before base_tsc give times before base_ns.
uint64_t tsc_to_ns(uint64_t tsc) noexcept;

// The ring's side of a clock (what Instance and tools that build rings
// themselves use; the types are the ring's, internal/).
namespace detail {
/// The scale `id` applies to the TSC, for a ring to read the clock inline
/// (buffers::FunctionClock, no call per reserve): set for local and perf
/// when the TSC is invariant (calibrating on first use, like trace_clock()),
/// nullopt for every other clock, or where local/perf fall back to mono_raw.
/// scale_tsc(*inline_tsc_scale(id), t) == tsc_to_ns(t) for every t. Thread-safe.
std::optional<buffers::TscScale> inline_tsc_scale(ClockId id);

/// The clock policy a ring buffer should stamp with for `id`: `id`'s scale
/// read inline when inline_tsc_scale(id) has one, else a call of
/// trace_clock(id).read. What Instance gives its ring; for tools that build
/// rings themselves (include buffers/ring_buffer.h to use the result).
buffers::FunctionClock ring_clock(ClockId id);
}  // namespace detail

}  // namespace tracepipe
