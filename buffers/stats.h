#pragma once
// Why a reservation failed (one table, with the text), and the per-CPU
// accounting of the ring buffer. Mirrors the kernel's per_cpu/cpuN/stats
// (kernel/trace/trace.c: tracing_stats_read) and LTTng's loss-by-cause
// counters (records_lost_full / _wrap / _big).
#include <array>
#include <cstdint>
#include <string_view>

namespace tracepipe::buffers {

/// Why reserve()/write() returned nothing. Each cause other than `none` and
/// `bad_cpu` is counted in that CPU's CpuStats.
enum class ReserveError : uint8_t {
  none,     ///< success
  too_big,  ///< payload larger than subbuf_size - 16 (CpuStats::lost_too_big)
  full,     ///< drop-newest mode and no free sub-buffer (lost_full)
  paused,   ///< output paused (lost_paused)
  busy,     ///< next sub-buffer being zeroed by another party, pinned by a reader, or held by a
            ///< stalled recycler with no spare to take over with (lost_busy)
  commit_overrun,  ///< overwrite mode: the oldest sub-buffer still holds an uncommitted
                   ///< record, so it cannot be recycled (commit_overrun, as the kernel)
  bad_cpu,         ///< cpu >= cpus(); counted in RingBufferBase::lost_bad_cpu()
};

inline constexpr std::array<std::string_view, 7> kReserveErrorText = {
    "ok",
    "record larger than a sub-buffer",
    "buffer full (drop-newest)",
    "output paused",
    "next sub-buffer busy",
    "oldest sub-buffer has a pending commit",
    "no such CPU buffer",
};
static_assert(kReserveErrorText.size() == static_cast<size_t>(ReserveError::bad_cpu) + 1);

constexpr std::string_view to_string(ReserveError e) noexcept {
  return kReserveErrorText[static_cast<size_t>(e)];
}

/// Accounting of one CPU buffer. Counts are records unless named bytes.
/// Exact when no writer or reader runs; a consistent-enough view otherwise.
///
/// Conservation (checked by every test):
///   written = read + overrun + lost() + discarded + entries (+ records in flight)
/// where `written` is the number of reserve()/write() calls on this CPU,
/// counted by the caller (the buffer does not count successes on its fast
/// path: that would cost an atomic per record).
struct CpuStats {
  uint64_t entries = 0;  ///< committed records still in the buffer, not yet consumed
  uint64_t overrun = 0;  ///< committed records overwritten before being read (overwrite mode)
  uint64_t commit_overrun = 0;  ///< records refused at a switch: the sub-buffer the tail needed
                                ///< held a pending commit and no spare was free (the kernel's name)
  uint64_t lost_set_aside =
      0;                      ///< records reserved, then committed into a sub-buffer that had been
                              ///< set aside while they were pending (overwrite; counted once, when
                              ///< the set-aside memory is reclaimed: by a swap or by stats())
  uint64_t lost_full = 0;     ///< records dropped: buffer full (drop-newest mode)
  uint64_t lost_paused = 0;   ///< records dropped while paused
  uint64_t lost_too_big = 0;  ///< records refused: larger than a sub-buffer holds
  uint64_t lost_busy = 0;     ///< records dropped: next sub-buffer busy (being zeroed / pinned)
  uint64_t discarded = 0;     ///< records discarded by their writer (reclaimed or padding)
  uint64_t reclaimed = 0;     ///< of `discarded`, those whose space was reclaimed
  uint64_t read = 0;          ///< records consumed by consuming readers
  uint64_t bytes = 0;         ///< payload bytes of the `entries` records
  uint64_t oldest_ts = 0;     ///< stamp of the oldest entry (0 when empty)
  uint64_t newest_ts = 0;     ///< stamp of the newest entry (0 when empty)
  uint64_t subbuf_switches = 0;  ///< times the writer moved to the next sub-buffer
  uint64_t set_aside = 0;   ///< sub-buffers swapped out of the ring (overwrite) because they held
                            ///< a pending record (its writer's record is then lost: lost_set_aside)
  uint64_t taken_over = 0;  ///< recycles completed by a writer that found another recycler walking
                            ///< the sub-buffer (stalled, or on another CPU): its memory was swapped
                            ///< out instead of zeroed in place (ring_buffer.h, "Takeover"); no loss

  /// All records that did not make it into the buffer (or, lost_set_aside, out of it to a reader).
  constexpr uint64_t lost() const noexcept {
    return commit_overrun + lost_set_aside + lost_full + lost_paused + lost_too_big + lost_busy;
  }
  /// read + overrun + lost() + discarded + entries.
  constexpr uint64_t accounted() const noexcept {
    return read + overrun + lost() + discarded + entries;
  }
  /// The conservation law, given the caller's count of write attempts.
  constexpr bool conserved(uint64_t written) const noexcept { return accounted() == written; }
};

}  // namespace tracepipe::buffers
