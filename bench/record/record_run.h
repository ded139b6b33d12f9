#pragma once
// One timed run of the recording bench (tracepipe_record_bench), whichever
// side recorded it: a writer pinned to one CPU emits 64-byte events for a
// fixed time, paced or as fast as it can, while the side's consumer (the
// tracepipe recorder thread, or LTTng's consumer daemon) writes to tmpfs.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

namespace tracepipe::record_bench {

struct Run {
  double rate = 0;  ///< events emitted per second of the writer's wall time
  uint64_t emitted = 0;
  uint64_t skipped =
      0;  ///< paced: events not emitted while the writer was behind (see paced_writer)
  uint64_t written = 0;              ///< records in the output
  uint64_t dropped = 0;              ///< lost by any cause (ring full, output failed)
  double consumer_ns_per_event = 0;  ///< consumer CPU time / written
  /// --collector auto: the collector's CPU time (trace-cmd listen's session
  /// and per-CPU readers) / written; 0 otherwise.
  double collector_ns_per_event = 0;
  uint64_t bytes = 0;  ///< bytes of the output's data streams
  /// The bare pwrite floor of the same bytes (record_bench.cc: pwrite_floor):
  /// its CPU ns divided by `written`; 0 when not measured.
  double floor_ns_per_event = 0;
  std::string note;  ///< a check that failed, for the report ("" when all agree)
  std::string gaps;  ///< tracepipe: where the longest gap between looks went ("" for other sides)
};

/// The longest burst a paced writer emits to catch up, in seconds of its rate.
inline constexpr double kMaxCatchUpSeconds = 100e-6;

/// The events the writer emits in a run at `rate` events/s (0: as fast as
/// it can) for `seconds`: the pacing both sides use, so that they differ
/// only in what one emit costs. `emit(n)` emits n events.
/// A paced writer that finds itself behind (it was preempted) catches up by
/// at most kMaxCatchUpSeconds of events at once and skips the rest
/// (Run::skipped): an application does not produce the events of the time it
/// did not run, and a catch-up burst larger than the buffer would count the
/// writer's own preemption as the consumer's loss. The rate reported is the
/// one emitted.
template <class Emit>
Run paced_writer(Emit&& emit, double seconds, double rate) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const auto dur = std::chrono::duration<double>(seconds);
  uint64_t n = 0, skipped = 0;
  if (rate <= 0) {
    do {
      emit(1024);
      n += 1024;
    } while (Clock::now() - t0 < dur);
  } else {
    const auto max_burst = static_cast<uint64_t>(std::max(1.0, rate * kMaxCatchUpSeconds));
    for (;;) {
      const std::chrono::duration<double> t = Clock::now() - t0;
      if (t >= dur) break;
      const auto due = static_cast<uint64_t>(t.count() * rate);
      if (due > n + skipped) {
        const uint64_t owed = due - n - skipped;
        const uint64_t k = std::min(owed, max_burst);
        skipped += owed - k;
        emit(k);
        n += k;
      }
    }
  }
  const std::chrono::duration<double> el = Clock::now() - t0;
  Run r;
  r.emitted = n;
  r.skipped = skipped;
  r.rate = static_cast<double>(n) / el.count();
  return r;
}

/// Pins the calling thread to `cpu`; false if it cannot.
inline bool pin_this_thread(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return pthread_setaffinity_np(pthread_self(), sizeof s, &s) == 0;
}

}  // namespace tracepipe::record_bench
