#pragma once
// Table 1 of the peers bench: one event fired in a tight loop by pinned
// threads, through tracepipe and through each peer, interleaved.
//
//   for each case, for each thread count:
//     every side: begin_case (untimed: session, buffers, filter), two untimed
//                 warm-up rounds (threads register, every page of a one-round
//                 buffer written once)
//     round r = 0..R-1:  side A, side B, side C, ...   (A B A B: drift cancels)
//        each side: T pinned threads start together (a spin barrier) and each
//        times its own loop of N events; the round's value is the mean over
//        threads of time/N, in ns per event, where time is the thread's CPU
//        time (default: on a shared machine, time other tasks ran on that
//        CPU is not counted) or its wall time (Timing::wall); then
//        after_round (untimed: drain the buffer so the next round loses
//        nothing)
//     every side: end_case (counters: lost events must be 0 on both sides, or
//                 the table says so)
//
// The event (bench/peers/lttng_plugin/peer_plugin.h): the kernel's
// sched_switch payload, prev_comm "hackbench", next_comm "swapper/0",
// prev_pid = iteration & 0x7fffffff (never negative).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/bench/engine/stats.h"
#include "tracepipe/bench/peers/lttng_plugin/peer_plugin.h"

namespace tracepipe::peers {

/// The cases of table 1 (docs/peers.md).
enum class MicroCase : uint8_t {
  disabled,     ///< event compiled in, not enabled anywhere
  enabled,      ///< enabled, no filter: every event committed (drop-newest / discard mode)
  reject_int,   ///< integer filter that rejects every event: prev_pid < 0
  accept_int,   ///< integer filter that accepts every event: prev_pid >= 0
  reject_glob,  ///< string glob filter that rejects every event: prev_comm against "zz*"
  overwrite,    ///< enabled, no filter, overwrite (flight recorder) buffer nobody reads
};
inline constexpr MicroCase kMicroCases[] = {MicroCase::disabled,    MicroCase::enabled,
                                            MicroCase::reject_int,  MicroCase::accept_int,
                                            MicroCase::reject_glob, MicroCase::overwrite};

std::string_view name(MicroCase c) noexcept;
std::optional<MicroCase> parse_micro_case(std::string_view s) noexcept;
/// True for the cases whose events are all recorded (enabled, accept_int,
/// overwrite); false for disabled and the rejecting filters.
bool commits(MicroCase c) noexcept;

/// The constant fields every side emits.
tp_peer_event peer_event() noexcept;

/// What a side must set up for one case.
struct MicroSetup {
  MicroCase kase = MicroCase::enabled;
  uint32_t threads = 1;
  uint64_t events = 0;           ///< per thread per round
  uint32_t rounds = 0;           ///< timed rounds (after two untimed warm-up rounds)
  std::string glob = "zz*";      ///< reject_glob's pattern
  uint64_t buffer_kb = 0;        ///< per CPU, discard-mode cases: room for one round
  uint64_t overwrite_kb = 1024;  ///< per CPU, overwrite case
};

/// Loss accounting of one case, summed over rounds (warm-up included).
struct SideCounts {
  uint64_t recorded = 0;  ///< events committed to a buffer (tracepipe), if known
  bool recorded_known = false;
  uint64_t lost = 0;     ///< events dropped because the buffer was full
  uint64_t overrun = 0;  ///< events/packets overwritten (overwrite case)
  uint64_t bytes = 0;    ///< bytes the side wrote out (LTTng: stream files), 0 if n/a
  std::string note;      ///< anything the reader must know ("" if none)
};

/// One system measured in table 1.
class MicroSide {
 public:
  virtual ~MicroSide() = default;
  virtual std::string_view name() const = 0;
  /// Prepares the case (untimed). Throws std::runtime_error on failure.
  virtual void begin_case(const MicroSetup& setup) = 0;
  /// Emits `n` events from worker thread `thread` (pinned; 0..threads-1).
  /// Called concurrently from `threads` threads; timed by the caller.
  virtual void emit(uint32_t thread, uint64_t n) = 0;
  /// Untimed, after each round (all threads done).
  virtual void after_round() {}
  /// Ends the case and returns its counters.
  virtual SideCounts end_case() = 0;
};

/// What a round's figure is made of.
enum class Timing : uint8_t {
  cpu,   ///< each thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
  wall,  ///< each thread's wall time (CLOCK_MONOTONIC)
};

/// Results of one side in one (case, threads) cell.
struct SideResult {
  std::string side;
  std::vector<double> ns;       ///< ns per event, one per timed round (the chosen Timing)
  std::vector<double> wall_ns;  ///< the same rounds in wall time, for reference
  bench::Summary summary;       ///< over `ns`
  SideCounts counts;
  std::string error;  ///< non-empty if the side failed in this cell
};

struct MicroCell {
  MicroCase kase = MicroCase::enabled;
  uint32_t threads = 1;
  uint64_t events = 0;            ///< per thread per round
  std::vector<SideResult> sides;  ///< sides[0] is tracepipe
};

struct MicroOptions {
  std::vector<MicroCase> cases{std::begin(kMicroCases), std::end(kMicroCases)};
  std::vector<uint32_t> threads{1, 2};
  uint64_t events = 200'000;
  uint32_t disabled_scale = 50;
  uint32_t rounds = 7;
  std::string glob = "zz*";
  uint64_t buffer_kb = 0;
  uint64_t overwrite_kb = 1024;
  Timing timing = Timing::cpu;
};

/// Bytes per CPU a discard-mode buffer needs to hold one round of `events`
/// 64-byte records twice over (record and sub-buffer headers, and slack), in
/// KiB (at least 1024).
uint64_t round_buffer_kb(uint64_t events) noexcept;

/// Runs table 1 over `sides` (sides[0] = tracepipe). `cpus` are the CPUs to
/// pin worker t to (cpus[t]); thread counts above cpus.size() are skipped
/// with a note in `skipped`. `progress(cell_label)` is called per cell.
std::vector<MicroCell> run_micro(const MicroOptions& options, const std::vector<MicroSide*>& sides,
                                 const std::vector<int>& cpus, std::vector<std::string>& skipped,
                                 void (*progress)(const std::string& label, void* ctx) = nullptr,
                                 void* progress_ctx = nullptr);

}  // namespace tracepipe::peers
