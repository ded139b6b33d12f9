#pragma once
// Each task's name over time, rebuilt from a recorded trace, for the COMM
// generic field of replayed filters: the kernel's filter_pred_comm reads
// current->comm, the name the task had when the event was recorded, while a
// trace's saved_cmdlines holds one name per pid (the last one the kernel
// saved).
//
//   records (every CPU) ─ events that name tasks ─▶ observations per pid ─▶ name_at(pid, position)
//
// What names a task, and from when:
//   state   the name the task has at that record (before and after it):
//           sched_switch prev_comm/prev_pid and next_comm/next_pid,
//           sched_process_fork parent and child, and every event with a
//           `comm` string and a `pid` field (sched_wakeup, sched_waking,
//           sched_wakeup_new, sched_process_exit, task_newtask,
//           signal_generate, ...)
//   rename  task_rename pid/oldcomm/newcomm: oldcomm up to and including the
//           record (the kernel traces it before copying the new name in),
//           newcomm after it
//   exec    sched_process_exec pid/filename: the file's base name (at most
//           15 bytes) from that record on; used only when the trace holds no
//           task_rename record (an exec always emits one when the event is
//           on, and it is exact: fexecve's new name is the file's, its
//           filename /dev/fd/N)
// A pid with no observation at or before a record takes the name its first
// observation says it had before (state: that name; rename: oldcomm); a pid
// never observed has no name here (the caller falls back to saved_cmdlines).
//
// Position: records are ordered by (time stamp, CPU, index in that CPU's
// stream). Records of two CPUs with the same time stamp are ordered by CPU,
// which the kernel does not promise.
//
// Thread-safety: built once, then immutable; name_at() allocates nothing and
// may run on any number of threads.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tracepipe::replay {

/// Where a record is in the trace (see the position rule above).
struct RecordPosition {
  uint64_t ts = 0;
  uint32_t cpu = 0;
  uint64_t seq = 0;  ///< index of the record in its CPU's stream (every record counted)
};

class CommTimeline {
 public:
  CommTimeline() = default;
  /// Reads every record of `reader` once. Throws what the reader throws on a
  /// damaged file.
  explicit CommTimeline(const TraceDatReader& reader);

  /// The name of `pid` at `at`, or nullopt if the trace never names it.
  std::optional<std::string_view> name_at(int32_t pid, const RecordPosition& at) const noexcept;

  /// What the build kept.
  struct Stats {
    uint64_t observations = 0;  ///< state, rename and exec observations read
    uint64_t renames = 0, execs = 0;
    bool execs_used = false;  ///< false when task_rename records made them redundant
    uint64_t kept = 0;        ///< after dropping those that repeat a known name
    uint64_t pids = 0;
  };
  const Stats& stats() const noexcept { return stats_; }

 private:
  struct Name {
    char s[16] = {};
    uint8_t len = 0;
    std::string_view view() const noexcept { return {s, len}; }
  };
  // One observation. `half` orders it against the records around it: 0 =
  // takes effect at its own record (state, exec), 2 = after it (rename);
  // lookups use 1.
  struct Entry {
    int32_t pid;
    uint8_t kind;  // state, rename or exec (comm_timeline.cc)
    uint8_t half;
    bool has_before;
    uint64_t ts;
    uint32_t cpu;
    uint64_t seq;
    Name before, after;
  };
  struct Range {
    int32_t pid;
    uint32_t begin, end;
  };
  struct Build;                 // the constructor's steps (comm_timeline.cc)
  std::vector<Entry> entries_;  // by (pid, ts, cpu, seq, half)
  std::vector<Range> pids_;     // by pid
  Stats stats_;
};

}  // namespace tracepipe::replay
