#pragma once
// `tracepipe bench --peers` / `tracepipe bench-peers`: tracepipe side by side
// with the systems its users would otherwise pick, measured in the same
// process run on the same machine, interleaved (A B A B) so machine drift
// cancels.
//
//   table 1 (loop)       one sched_switch-like event (56-byte payload; 64
//                        bytes with the kernel's common header) fired in a
//                        tight loop by 1 and 2 pinned threads, through
//                        tracepipe and through LTTng-UST (plugin
//                        libtracepipe_peer_lttng.so, private lttng-sessiond,
//                        session on tmpfs), for the cases of MicroCase: ns per
//                        event, ratio tracepipe/peer.
//   table 2 (loop)       the kernel's own cost per event for the same cases:
//                        raw_syscalls:sys_enter (64-byte record) fired by a
//                        getppid() loop (kernel_micro.h).
//   table 3 (hackbench)  the main bench's hackbench cases (bench/engine/),
//                        traced by tracepipe and by the kernel's own trace
//                        events and filters: ns per event over the untraced
//                        run, and each side's reject/commit cost ratio.
// The kernel's tables use a dedicated tracefs instance, removed after.
//
// A peer that cannot run (plugin or daemon missing, tracefs not writable,
// forced off) is skipped with one line "peer <name>: skipped: <why>".
// See docs/peers.md.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tracepipe::peers {

/// Everything `run_peers` needs; defaults are the documented ones.
struct PeersOptions {
  // ── Table 1: micro loop ──────────────────────────────────────────────────
  /// Events per thread per timed round (enabled cases). The disabled case
  /// runs `disabled_scale` times more, since each costs a load and a branch.
  uint64_t events = 200'000;
  uint32_t disabled_scale = 50;
  /// Timed rounds per (case, threads, side); the report gives the median and
  /// the spread over rounds.
  uint32_t rounds = 7;
  /// Thread counts to run; each thread is pinned to its own allowed CPU.
  std::vector<uint32_t> threads{1, 2};
  /// Case names (MicroCase); empty = all.
  std::vector<std::string> cases;
  /// The glob of the string-glob case, which must match no prev_comm
  /// ("hackbench"): tracepipe `prev_comm ~ "<glob>"`, LTTng
  /// `prev_comm == "<glob>"`.
  std::string glob = "zz*";
  /// tracepipe's staging policy for filtered events: per_cpu, per_thread,
  /// adaptive or off (core/config/instance_options.h); "" = the Instance default.
  std::string staging;
  /// tracepipe's emit call: "trace" (EventDecl::trace, tracepoint-style,
  /// like lttng_ust_tracepoint) or "emit" (EventDecl::emit into the instance).
  std::string tp_api = "trace";
  /// tracepipe ring buffer / LTTng channel per CPU in the discard-mode cases
  /// (KiB); 0 = large enough for one round with nothing lost.
  uint64_t buffer_kb = 0;
  /// Buffer per CPU in the overwrite (flight recorder) case, both sides (KiB).
  uint64_t overwrite_kb = 1024;

  // ── Table 3: kernel hackbench ───────────────────────────────────────────
  uint32_t hb_groups = 2;
  uint32_t hb_fds = 10;
  uint32_t hb_loops = 200;
  uint32_t hb_runs = 10;
  /// Main-table case names to run for the kernel (bench/engine/model.h);
  /// empty = off, all, reject, accept, half.
  std::vector<std::string> hb_cases;
  /// Staging of tracepipe's hackbench engine (a core/config/instance_options.h
  /// Staging name; "on" = per_cpu).
  std::string hb_staging = "on";

  /// "cpu": each figure is CPU time (a worker thread's, or the whole
  /// process's for hackbench), so time other tasks of a shared machine run on
  /// our CPUs is not counted; "wall": wall-clock time.
  std::string timing = "cpu";

  // ── Peers and environment ───────────────────────────────────────────────
  bool run_loops = true;      ///< tables 1 and 2
  bool run_hackbench = true;  ///< table 3
  /// Peers to skip as if unavailable ("lttng", "kernel"); also read from
  /// $TRACEPIPE_PEERS_UNAVAILABLE (comma-separated), for tests.
  std::vector<std::string> unavailable;
  /// The LTTng plugin; empty = $TRACEPIPE_PEER_LTTNG_PLUGIN, then beside the
  /// executable, then the install libdir.
  std::string lttng_plugin;
  /// Where the private session daemon's home and the session output go; a
  /// tmpfs is wanted. Empty = a fresh directory under /dev/shm (or $TMPDIR).
  std::string work_dir;
  bool json = false;
  bool quiet = false;
};

/// Runs the peers bench and prints its tables (or JSON) on stdout, skip
/// lines and progress on stderr. Returns 0 on success, 1 if a measurement
/// failed (an error was printed). Never leaves a daemon or a tracefs
/// instance behind: both are removed on every exit path it controls.
int run_peers(const PeersOptions& options);

}  // namespace tracepipe::peers
