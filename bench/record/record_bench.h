#pragma once
// tracepipe_record_bench as a library: how fast one writer can emit while the
// recorder drains its buffer into a trace.dat on tmpfs, what the recorder
// costs, and (--peers lttng) the same runs for LTTng-UST's consumer daemon.
// The phases and what each reports are described in record_bench.cc; the
// command (main.cc) only parses and runs.
#include <cstdint>
#include <string>

namespace tracepipe::record_bench {

/// The command line of tracepipe_record_bench (its --help text lists each).
struct Options {
  std::string dir = "/dev/shm";  ///< --dir: where the trace.dat goes
  double seconds = 1;            ///< --seconds: length of each run, s
  int repeats = 5;            ///< --repeats: runs per figure, and clean runs in a row for lossless
  double steady_rate = 0;     ///< --steady: events/s of the one paced run; 0: the usual phases
  uint64_t rotate_mib = 512;  ///< --rotate-mib: with --steady, 4 files of this many MiB; 0: one
  double floor_seconds = 3;   ///< --floor: seconds of the wake-up floor first; 0: skip
  std::string peers;          ///< --peers: "" or "lttng"
  std::string plugin;         ///< --lttng-plugin: "" finds it beside the bench
  std::string collector;      ///< --collector: "" (the file), "auto" or HOST:PORT
  int realtime = 0;           ///< --realtime: SCHED_FIFO priority of the recorder; 0: default
  int64_t block_us = 0;       ///< --block: with --steady, µs writers may wait; -1: no bound
  uint32_t equal_kb = 2048;   ///< --equal-kb: the equal-memory leg's KiB per CPU
  uint32_t buffer_kb = 0;     ///< --buffer-kb: tracepipe's KiB per CPU; 0: the default
  bool verify = false;        ///< --verify: with --peers lttng, count two traces back
  bool max_only = false;      ///< --max-only: drain only and full speed (a profile's window)
  bool formats = false;       ///< --formats: drain only, per output format
};

/// Parses argv into `o`. Returns -1 to go on, else the exit code: 0 after
/// printing --help on stdout, 2 after printing a bad option's error on
/// stderr.
int parse_args(int argc, char** argv, Options& o);

/// Runs the bench as `o` says, printing its report on stdout. Returns the
/// exit code: 0, 1 when a side found no lossless rate (or --steady lost
/// events or could not hold its rate, or trace-cmd listen did not start),
/// 2 on options that do not combine, 77 when this machine cannot run it
/// (fewer than 2 CPUs, --collector auto without trace-cmd). Pins threads to
/// CPUs 0 and 1 and writes, then removes, files in `o.dir`. One run at a
/// time per process.
int run(const Options& o);

}  // namespace tracepipe::record_bench
