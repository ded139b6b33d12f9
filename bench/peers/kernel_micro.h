#pragma once
// Table 3 of the peers bench: the kernel's own cost per event, measured like
// table 1 (pinned threads, interleaved rounds, median and spread), so that
// its reject/commit ratio comes from per-event costs rather than from the
// small differences of whole hackbench runs.
//
// The event is raw_syscalls:sys_enter: its record is 64 bytes (8-byte common
// header, long id, unsigned long args[6]), the size of table 1's event, and a
// thread can fire it at will: each worker calls getppid() N times, so it
// fires once per call. It records into the dedicated tracefs instance
// (tracefs.h), restricted to the worker threads with set_event_pid.
//
// Rows, per thread count, all interleaved round by round:
//   off        the event disabled: the bare system call
//   ignored    the event enabled for other threads only: the system call
//              takes the traced entry path and calls the probe, which drops
//              the event at its PID check; this is the base of every row below
//   enabled    recorded, no filter (drop mode; the buffer holds a round)
//   reject-int filter `id < 0`          accept-int  filter `id >= 0`
//   reject-glob filter `comm ~ "<glob>"` (the generic comm field)
//   overwrite  recorded into an overwrite buffer of overwrite_kb per CPU
// ns per event of a row = median(row) - median(ignored).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracepipe/bench/engine/stats.h"
#include "tracepipe/bench/peers/micro.h"

namespace tracepipe::peers {

class TracefsInstance;

struct KernelMicroRow {
  std::string label;              ///< "off", "ignored" or a MicroCase name
  std::optional<MicroCase> kase;  ///< empty for off and ignored
  uint32_t threads = 1;
  std::vector<double> ns;       ///< ns per system call, one per round (MicroOptions::timing)
  std::vector<double> wall_ns;  ///< the same rounds in wall time
  bench::Summary summary;
  double ns_per_event = 0;  ///< median - median(ignored); 0 for off/ignored
  uint64_t recorded = 0;    ///< events recorded in the last round (entries + overrun + dropped)
};

struct KernelMicroTable {
  std::string event = "raw_syscalls:sys_enter";
  uint32_t record_bytes = 64;
  uint64_t events = 0;  ///< system calls per thread per round
  std::vector<KernelMicroRow> rows;
  std::vector<std::string> warnings;
  /// ns(reject-int) / ns(enabled) for 1 thread, or < 0 if not measured.
  double reject_ratio = -1;
};

/// Runs table 3 for `options.cases` (disabled maps to the off row) and
/// `options.threads`, pinning worker t to cpus[t]. Throws PeerUnavailable if
/// the kernel has no raw_syscalls:sys_enter event; std::runtime_error on a
/// tracefs error. Leaves the event disabled.
KernelMicroTable run_kernel_micro(const MicroOptions& options, TracefsInstance& instance,
                                  const std::vector<int>& cpus);

}  // namespace tracepipe::peers
