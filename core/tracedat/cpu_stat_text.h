#pragma once
// The text of one CPU's CPUSTAT option: trace-cmd's "CPU: N" line, then the
// kernel's per_cpu/cpuN/stats lines, which `trace-cmd report --stat` prints
// back. Every trace.dat tracepipe writes carries them: the recorder's (over
// the recording) and a snapshot's (write_trace_dat: over the buffer's life).
// Mirrors kernel/trace/trace.c: tracing_stats_read, and tracecmd/
// trace-record.c: add_buffer_stat.
#include <cstdint>
#include <string>

#include "tracepipe/buffers/stats.h"

namespace tracepipe {

/// The kernel's per_cpu/cpuN/stats figures.
struct CpuStatLines {
  uint64_t entries = 0;         ///< records still in the buffer
  uint64_t overrun = 0;         ///< records overwritten (overwrite mode)
  uint64_t commit_overrun = 0;  ///< records refused at a sub-buffer switch
  uint64_t bytes = 0;           ///< payload bytes of `entries`
  uint64_t oldest_ts = 0;       ///< trace-clock stamp of the oldest entry
  uint64_t now_ts = 0;          ///< trace-clock time the figures were taken
  uint64_t dropped = 0;         ///< records lost, buffer full (drop-newest mode)
  uint64_t read = 0;            ///< records a reader consumed
};

/// The lines of a ring's CpuStats, as the kernel counts them: "dropped" is
/// what a full or busy buffer refused and what set-aside memory lost
/// (commit_overrun has its own line; a pause's refusals are no loss).
/// `now_ts`: the time the figures stand for.
constexpr CpuStatLines cpu_stat_lines(const buffers::CpuStats& s, uint64_t now_ts) noexcept {
  return {.entries = s.entries,
          .overrun = s.overrun,
          .commit_overrun = s.commit_overrun,
          .bytes = s.bytes,
          .oldest_ts = s.oldest_ts,
          .now_ts = now_ts,
          .dropped = s.lost_full + s.lost_busy + s.lost_set_aside + s.lost_too_big,
          .read = s.read};
}

/// "CPU: N\nentries: ...\n...read events: R\n". Stamps of a clock in ns
/// (`in_ns`) print as seconds with microseconds, as the kernel prints them;
/// other clocks' raw counts as they are.
std::string cpu_stat_text(uint32_t cpu, const CpuStatLines& s, bool in_ns);

}  // namespace tracepipe
