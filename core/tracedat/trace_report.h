#pragma once
// Text report of a trace.dat in the layout of `trace-cmd report`:
//
//   cpus=2
//            python3-30240 [000]  1006.919299: sys_exit:             NR 1 = 1
//   └ comm ┘ └pid┘ └cpu┘ └─ time stamp ─┘ └ event: ┘ └ pad to 20 ┘ └ fields ┘
//   CPU:0 [3 EVENTS DROPPED]
//
//   * comm: saved_cmdlines ("<idle>" for pid 0, "<...>" when unknown), right
//     aligned in 16 columns; pid left aligned in 5;
//   * time stamp: seconds.microseconds (rounded to the nearest µs, as
//     libtraceevent does) or seconds.nanoseconds with ns_timestamps; a raw
//     12-column count for clocks that are not in ns (counter, x86-tsc, boot
//     and unknown names, as trace-cmd 3.1 decides);
//   * fields: the event's print fmt (print_fmt.h); with `plugins` (the
//     default, like trace-cmd without -N) sched_switch, sched_wakeup,
//     sched_wakeup_new and hrtimer_start use trace-cmd's plugin layouts, and
//     sched_switch/sched_wakeup teach the comm column new pids as the
//     plugins do (CommTable reproduces libtraceevent's pid -> comm table,
//     including its quirk: comms taught while only pid-0 records have been
//     printed may shadow saved_cmdlines).
//   * lost events: "CPU:N [K EVENTS DROPPED]" (or "[EVENTS DROPPED]" when
//     the count was not stored) before the first record after the loss.
//   * instances: a file with named buffers (`trace-cmd extract -B NAME`)
//     prints one stream, the top instance and every instance merged by
//     time stamp (ties to the earlier buffer of TraceDatReader::buffers()),
//     each output prefixed with the instance name right aligned to the
//     longest name and ": " (the top instance: that many spaces and two
//     more); each buffer's time stamps print per its own clock. As
//     trace-cmd 3.1 read_data_info / print_handle_file do.
//
// Mirrors trace-cmd tracecmd/trace-read.c and libtraceevent
// tep_print_event / plugins/plugin_sched_switch.c / plugin_hrtimer.c
// (behaviour, not code).
//
// Thread-safety: not thread-safe (the comm table learns while printing).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tracepipe/core/tracedat/print_fmt.h"
#include "tracepipe/core/tracedat/trace_symbols.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tracepipe {

struct ReportOptions {
  bool plugins = true;         ///< trace-cmd's plugin layouts (false = `trace-cmd report -N`)
  bool ns_timestamps = false;  ///< nanosecond time stamps (`trace-cmd report -t`)
};

/// libtraceevent's pid -> comm table as trace-cmd report drives it:
/// registrations are listed until the first lookup of a non-zero pid, then
/// the list is sorted by pid (newest first among equal pids, a stable
/// merge sort) and looked up by binary search; later registrations never
/// override a known pid. Mirrors libtraceevent src/event-parse.c:
/// _tep_register_comm, cmdline_init, add_new_comm, find_cmdline (behaviour).
class CommTable {
 public:
  void register_comm(int32_t pid, std::string_view comm);
  /// "<idle>" for pid 0, "<...>" when unknown.
  std::string_view find(int32_t pid);

 private:
  void init();
  const std::pair<int32_t, std::string>* search(int32_t pid) const;
  bool init_ = false;
  std::vector<std::pair<int32_t, std::string>> entries_;  // list (before init), then sorted array
};

class TraceReport {
 public:
  /// `reader` must outlive the report.
  explicit TraceReport(const TraceDatReader& reader, ReportOptions options = {});

  /// The header line(s): "cpus=N\n".
  std::string header() const;
  /// Appends the line(s) of one record, each ending in '\n' (a lost-events
  /// line first when the record follows a loss).
  void format(const TraceRecord& rec, fmt::memory_buffer& out);
  /// Prints the header and every record of every buffer, merged by time
  /// stamp, to `out` (instance prefixes as described above).
  /// Returns the number of records. Throws TraceDatError on a malformed
  /// page (after printing what came before it) and std::system_error on a
  /// write error.
  uint64_t print_all(std::FILE* out);

  /// True when time stamps print as seconds (ns clocks).
  bool ns_clock() const noexcept { return ns_clock_; }

 private:
  bool plugin(const EventFormat& f, std::span<const std::byte> payload, fmt::memory_buffer& out);
  void format_with(const TraceRecord& rec, bool ns_clock, fmt::memory_buffer& out);

  const TraceDatReader& reader_;
  ReportOptions opt_;
  bool ns_clock_ = true;
  KallsymsTable kallsyms_;
  PrintkTable printk_;
  std::vector<std::unique_ptr<PrintFmt>> printers_;  // by format index
  CommTable comms_;
};

}  // namespace tracepipe
