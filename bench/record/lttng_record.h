#pragma once
// The LTTng-UST side of tracepipe_record_bench: the same runs as tracepipe's
// recorder (record_run.h), recorded by LTTng's consumer daemon.
//
// Setup, per run (docs/measurements.md, "Recording"):
//   - a private lttng-sessiond (bench/peers/lttng_session.h) and the peers
//     plugin's tracepoint tracepipe_peer:sched_switch (lttng_probe.h), whose
//     56-byte payload is the payload of tracepipe's 64-byte record (8-byte
//     header + 56);
//   - a fresh session writing to tmpfs, one user-space channel in discard
//     mode (LTTng's drop-newest) with LTTng 2.13's default buffering scheme,
//     per-UID, and its default geometry for it: 4 sub-buffers of 512 KiB per
//     CPU (2 MiB, more than tracepipe's default 1408 KiB; per-PID's default
//     would be 4 x 16 KiB). Per-UID is also what an application traced by
//     LTTng gets unless its user asks otherwise;
//   - the consumer daemon (every thread) and the session daemon pinned to the
//     consumer CPU, as tracepipe's recorder thread is; the writer pinned to
//     the writer CPU.
// Counts: `lttng list` (MI) gives the channel's discarded events after `lttng
// stop` (which waits until the consumer has written every sub-buffer); the
// trace's packet indexes give the same count independently (lttng_index.h);
// a difference is reported in Run::note. written = emitted - discarded, and
// count_events() checks it against the trace itself (babeltrace2).
// Consumer CPU: the consumer daemon's utime + stime over the run, from
// `lttng start` to the end of `lttng stop`.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "tracepipe/bench/peers/lttng_probe.h"
#include "tracepipe/bench/peers/lttng_session.h"
#include "tracepipe/bench/record/record_run.h"

namespace tracepipe::record_bench {

class LttngRecordSide {
 public:
  /// Starts the private session daemon and loads the plugin (`plugin`: a
  /// path, or "" to search as find_lttng_plugin does). Throws
  /// peers::PeerUnavailable with the reason when LTTng cannot run here.
  static std::unique_ptr<LttngRecordSide> open(const std::string& plugin);
  ~LttngRecordSide();

  /// One run: `rate` events/s (0: as fast as it can) for `seconds`, the
  /// writer on `writer_cpu`, the daemons on `consumer_cpu`. With
  /// `keep_trace`, the trace stays on tmpfs until the next run (see
  /// last_trace()). Throws std::runtime_error if an lttng command fails.
  Run run(double seconds, double rate, bool keep_trace = false);

  /// The trace kept by the last run(keep_trace = true), or nullopt.
  std::optional<std::filesystem::path> last_trace() const;

  /// One line: daemon, isolation, channel, pinning.
  std::string description() const;

  int writer_cpu = 0;
  int consumer_cpu = 1;
  /// When non-zero: the consumer daemon's threads run SCHED_FIFO at this
  /// priority, as tracepipe's recorder does with
  /// RecorderOptions::realtime_priority (the bench's --realtime).
  int consumer_fifo_priority = 0;

 private:
  LttngRecordSide() = default;
  std::unique_ptr<peers::LttngDaemon> daemon_;
  std::unique_ptr<peers::LttngSession> kept_;  ///< last run's session, when kept
  peers::LttngProbe probe_;
  uint32_t seq_ = 0;
};

/// Events in the CTF trace at `trace_dir`, counted by babeltrace2's
/// sink.utils.counter; nullopt (with `why` set) when babeltrace2 is absent or
/// fails.
std::optional<uint64_t> count_events(const std::filesystem::path& trace_dir, std::string& why);

}  // namespace tracepipe::record_bench
