#pragma once
// A cycle counter (the x86 TSC) scaled to ns, in the shape of the kernel's
// sched_clock: ns = base_ns + ((cyc - base_cyc) * mult) >> shift. The ring's
// FunctionClock (ring_buffer.h) reads it inline when it holds a scale, so a
// reserve stamped by the `local` trace clock pays no call and no registers
// saved around one.
// The calibration itself (which mult and shift) belongs to the trace clocks
// (core/clock/trace_clock.h: tsc_calibration()); this header only applies it.
// Mirrors kernel/time/sched_clock.c: cyc_to_ns.
#include <cstdint>

// The counter is read with the compiler's builtin, which <x86intrin.h>'s
// __rdtsc() wraps: that header declares every x86 intrinsic and would make
// each user's translation unit parse them all.
#if defined(__x86_64__) || defined(__i386__)
#define TRACEPIPE_HAVE_TSC 1
#else
#define TRACEPIPE_HAVE_TSC 0
#endif

namespace tracepipe::buffers {

/// True where read_tsc() reads a hardware cycle counter (x86).
inline constexpr bool kHaveTsc = TRACEPIPE_HAVE_TSC != 0;

/// How cycles map to ns. Plain values: copy it where it is read. The shift
/// is fixed (a constant shift is one instruction; a variable 128-bit shift
/// was five in the reserve), and mult is below 2^63 for any counter of at
/// least 1 Hz, so the product is one signed 64 x 64 -> 128 multiply.
struct TscScale {
  static constexpr uint32_t kShift = 32;
  uint64_t base_tsc = 0;  ///< counter value at calibration, cycles
  uint64_t base_ns = 0;   ///< the time at base_tsc, ns
  uint64_t mult = 0;      ///< ns per cycle, times 2^kShift (< 2^63)
};

/// ns for counter value `tsc`. The difference from base_tsc is taken as
/// signed, so a value before base_tsc gives a time before base_ns (the
/// product is 128-bit: no overflow for any 64-bit difference).
[[gnu::always_inline]] inline uint64_t scale_tsc(const TscScale& s, uint64_t tsc) noexcept {
  const auto delta = static_cast<__int128>(static_cast<int64_t>(tsc - s.base_tsc));
  const auto scaled = static_cast<int64_t>(
      (delta * static_cast<__int128>(static_cast<int64_t>(s.mult))) >> TscScale::kShift);
  return s.base_ns + static_cast<uint64_t>(scaled);
}

/// The cycle counter, unordered (like sched_clock: no fence); 0 where there
/// is none (kHaveTsc false).
[[gnu::always_inline]] inline uint64_t read_tsc() noexcept {
#if TRACEPIPE_HAVE_TSC
  return __builtin_ia32_rdtsc();
#else
  return 0;
#endif
}

}  // namespace tracepipe::buffers
