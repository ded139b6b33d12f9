#pragma once
// A private LTTng session daemon and its recording sessions, driven through
// the `lttng` command (lttng-tools 2.13).
//
// Isolation. The daemon must not disturb (or be disturbed by) any other
// LTTng on the machine:
//   - not root: LTTNG_HOME points at a fresh directory, so the daemon's
//     sockets, shared memory names and the CLI's .lttngrc live there;
//   - root: a root daemon ignores LTTNG_HOME and uses /run/lttng and
//     /dev/shm/lttng-ust-wait-*; so the calling thread first moves to a
//     private mount namespace (unshare(CLONE_NEWNS), mounts made private)
//     with fresh tmpfs mounts on /run/lttng and /dev/shm. The daemon, the
//     consumer daemon and the CLI are children of that thread and see the
//     same private mounts; threads created later by this process (the
//     bench's workers, liblttng-ust's listener threads) inherit them. If the
//     namespace cannot be made and a root daemon already runs, LTTng is
//     reported unavailable.
// The daemon is started as our child (not daemonized, so its PID is known)
// and stopped by that PID; it stops its consumer daemon itself.
//
// Sessions write to the private tmpfs (no disk I/O in the measurement).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tracepipe/bench/peers/process.h"

namespace tracepipe::peers {

/// Thrown when a peer cannot run here; what() is the one-line reason.
class PeerUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Counters LTTng keeps per channel, read with `lttng --mi xml list`.
struct LttngChannelStats {
  uint64_t discarded_events = 0;  ///< records dropped because the buffer was full
  uint64_t lost_packets = 0;      ///< sub-buffers lost (overwrite mode)
};

/// Sums <discarded_events> and <lost_packets> over every channel of an
/// `lttng --mi xml list SESSION` document. Throws std::runtime_error if the
/// document has no channel at all.
LttngChannelStats parse_mi_channel_stats(const std::string& xml);

class LttngDaemon {
 public:
  /// Starts a private lttng-sessiond (user-space tracing only) and waits until
  /// it answers. Throws PeerUnavailable (missing lttng/lttng-sessiond, no
  /// isolation possible, daemon did not come up: the reason names the log).
  static std::unique_ptr<LttngDaemon> start();
  /// Destroys every session it made, stops the daemon by PID, removes its
  /// directories and private mounts.
  ~LttngDaemon();
  LttngDaemon(const LttngDaemon&) = delete;
  LttngDaemon& operator=(const LttngDaemon&) = delete;

  /// Runs `lttng ARGS...`; throws std::runtime_error with the command and
  /// its output if it fails.
  std::string lttng(const std::vector<std::string>& args);
  /// Directory (on tmpfs) for session outputs.
  const std::filesystem::path& output_root() const noexcept { return output_root_; }
  /// How the daemon is isolated, for the report ("private mount namespace",
  /// "LTTNG_HOME=...").
  const std::string& isolation() const noexcept { return isolation_; }
  pid_t pid() const noexcept { return daemon_.pid(); }
  /// PIDs of the consumer daemons (lttng-consumerd) the session daemon has
  /// spawned so far: it spawns them when the first channel is enabled.
  std::vector<pid_t> consumer_pids() const;

 private:
  LttngDaemon() = default;
  std::filesystem::path root_;  ///< private tmpfs or temp dir
  std::filesystem::path output_root_;
  std::vector<std::string> mounts_;  ///< private mounts to detach, last first
  std::string created_rundir_;       ///< /run/lttng if we created it
  std::string isolation_;
  ChildProcess daemon_;
};

/// Channel geometry and mode of one session.
struct LttngChannelSpec {
  uint64_t subbuf_bytes =
      0;                    ///< power of two; 0: LTTng's default (512 KiB per-UID, 16 KiB per-PID)
  uint32_t num_subbuf = 0;  ///< power of two; 0: LTTng's default (4)
  bool overwrite = false;   ///< flight recorder; the session is then a snapshot session
  bool per_pid = false;     ///< --buffers-pid instead of LTTng's default --buffers-uid
};

/// One recording session with one user-space channel "ch" and the event
/// tracepipe_peer:sched_switch (optionally filtered). Destroyed (and its
/// output removed) by the destructor.
class LttngSession {
 public:
  /// Creates, configures and starts the session. `filter` is LTTng filter
  /// syntax, empty for none. Throws std::runtime_error on any lttng error.
  LttngSession(LttngDaemon& daemon, std::string name, const LttngChannelSpec& spec,
               const std::string& filter);
  ~LttngSession();
  LttngSession(const LttngSession&) = delete;
  LttngSession& operator=(const LttngSession&) = delete;

  /// Stops recording (flushes the buffers to the output) and reads the
  /// channel's counters. Idempotent.
  LttngChannelStats stop();
  /// Bytes of stream files written so far under the session's output (not
  /// metadata nor index); meaningful after stop().
  uint64_t stream_bytes() const;
  /// The session's output directory (CTF trace), removed by the destructor.
  const std::filesystem::path& output_dir() const noexcept { return out_; }

 private:
  LttngDaemon& daemon_;
  std::string name_;
  std::filesystem::path out_;
  bool started_ = false;
  std::optional<LttngChannelStats> stats_;
};

}  // namespace tracepipe::peers
