#pragma once
// What `tracepipe bench` measures and what it reports: the case matrix of the
// kernel patch (tracing off / all events / reject-all filter / accept-all
// filter / half filter, each with staging on, off, adaptive), the perf
// overwrite series, and their results.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/bench/engine/stats.h"
#include "tracepipe/bench/engine/workload.h"
#include "tracepipe/core/config/instance_options.h"

namespace tracepipe::bench {

/// The traced cases of the kernel patch (0fc1b09ff1ff), plus a 50% filter.
enum class Case : uint8_t {
  off,     ///< tracing off: events disabled, the emit points cost only their check
  all,     ///< every event enabled, no filter
  reject,  ///< a filter that rejects every event: common_preempt_count==20
  accept,  ///< a filter that accepts every event: common_preempt_count!=20
  half,    ///< a filter that accepts about half of the events (see filters.h)
};
inline constexpr Case kAllCases[] = {Case::off, Case::all, Case::reject, Case::accept, Case::half};

/// Whether a filtered event is built in a temp buffer first: the instance's
/// own Staging (core/config/instance_options.h). per_cpu is printed "on"
/// unless --staging spelled it per_cpu.
using tracepipe::Staging;
/// The staging modes run by default (per_thread on request).
inline constexpr Staging kAllStagings[] = {Staging::per_cpu, Staging::off, Staging::adaptive};

std::string_view name(Case c);
std::string_view name(Staging s);
std::optional<Case> parse_case(std::string_view s);
/// name(s), except that Staging::per_cpu reads `on_name`: the spelling given to
/// --staging ("on", bench's, or "per_cpu", the config file's), so that the
/// table, the warnings, the progress line and the JSON all print one name.
std::string_view name(Staging s, std::string_view on_name);

/// A name(Staging), or "per_cpu" for Staging::per_cpu (core's and the config
/// file's name for it, core/config/instance_options.h); nullopt otherwise.
std::optional<Staging> parse_staging(std::string_view s);

/// One cell of the matrix. The `off` case traces nothing, so it is run once
/// per repetition and labelled staging "off".
struct CaseSpec {
  Case kase = Case::off;
  Staging staging = Staging::off;
  friend bool operator==(const CaseSpec&, const CaseSpec&) = default;
};

/// Counts of one traced run (engine-side).
struct RunCounts {
  uint64_t emitted = 0;   ///< events that reached the engine enabled
  uint64_t accepted = 0;  ///< committed to the ring buffer
  uint64_t rejected = 0;  ///< discarded by the filter
  uint64_t lost = 0;      ///< refused by the ring buffer, by the engine's accounting
  /// Of `lost`: because the sub-buffer to overwrite still held a record
  /// whose writer had not committed it and no spare was free (the ring's
  /// commit_overrun).
  uint64_t lost_commit_overrun = 0;
  /// Ring losses of records that were reserved (not counted in `lost`, which
  /// counts refused reservations): committed into a sub-buffer set aside
  /// while they were pending, i.e. the preempted writer's own record (the
  /// ring's lost_set_aside, docs/buffers.md).
  uint64_t lost_set_aside = 0;
  /// Of `lost`: the next sub-buffer was pinned or being zeroed by a party
  /// that was preempted there (the ring's lost_busy).
  uint64_t lost_busy = 0;
  uint64_t overrun = 0;       ///< committed records overwritten during the run (overwrite mode)
  uint64_t staged = 0;        ///< filtered emits built in a staging slot
  uint64_t staging_busy = 0;  ///< filtered emits that found their slot busy and went direct
  /// After the run, the engine's count of ring reservations equals the ring's
  /// accounting (consumed + overrun + lost + discarded + buffered).
  bool conserved = true;
};

/// All runs of one cell.
struct CaseResult {
  CaseSpec spec;
  std::vector<double> seconds;    ///< one per run, in run order
  std::vector<RunCounts> counts;  ///< one per run
  Summary summary;
  uint64_t events = 0;    ///< emitted per run (the same in every run)
  uint64_t accepted = 0;  ///< committed per run, median over runs
  uint64_t rejected = 0;  ///< rejected by the filter per run, median over runs
  /// Filter pass rate: 100 * (events - rejected) / events (events that passed
  /// the filter but were then lost by the ring count as passed).
  double accept_pct = 0;
  uint64_t lost = 0;                 ///< median over runs
  uint64_t lost_commit_overrun = 0;  ///< median over runs
  uint64_t lost_set_aside = 0;       ///< median over runs
  uint64_t lost_busy = 0;            ///< median over runs
  uint64_t staged = 0;               ///< median over runs
  uint64_t staging_busy = 0;         ///< median over runs
  /// Per repetition: (this cell's run - off's run of the same repetition)
  /// / events, in ns; its median and 95% interval (stats.h).
  std::vector<double> pair_costs;
  MedianCI ci;
  double ns_per_event = 0;  ///< ci.median: the median of the paired costs
  /// The verdict of judge(ci): significant when the 95% interval is above 0
  /// and within ±10% of the median. When not, the table prints "n.s." and
  /// the reason, and the JSON's ns_per_event is null (the measured figure
  /// stays in ns_per_event_measured). Significant for off.
  Verdict verdict = Verdict::significant;
  bool significant = true;  ///< verdict == Verdict::significant
  double ratio_to_off = 0;  ///< median / median of off
};

/// The second table: the perf overwrite series' experiment.
enum class PerfCase : uint8_t {
  base,                ///< the loop without tracing
  drop_consumer,       ///< drop-newest buffer, a consumer thread reading concurrently
  overwrite,           ///< overwrite buffer, nobody reading
  overwrite_snapshot,  ///< overwrite buffer, paused and read as a snapshot periodically
};
inline constexpr PerfCase kAllPerfCases[] = {PerfCase::base, PerfCase::drop_consumer,
                                             PerfCase::overwrite, PerfCase::overwrite_snapshot};
std::string_view name(PerfCase c);

struct PerfCounts {
  uint64_t written = 0;    ///< reservations that succeeded, counted by the writer
  uint64_t lost = 0;       ///< dropped: full (drop-newest) or paused
  uint64_t overrun = 0;    ///< overwritten before being read
  uint64_t read = 0;       ///< read by the consumer or the snapshots
  uint64_t snapshots = 0;  ///< paused snapshot reads done
  /// The ring's conservation law held at the end of the run: every record
  /// the writer attempted is consumed, overrun, lost, discarded or still
  /// buffered (buffers/stats.h), and written + lost == attempts.
  bool conserved = true;
};

struct PerfResult {
  PerfCase kase = PerfCase::base;
  std::vector<double> seconds;
  std::vector<PerfCounts> counts;
  Summary summary;
  uint64_t events = 0;             ///< events emitted per run (N; 0 for base)
  PerfCounts median_counts;        ///< counts of the lower-median run by `lost` (they add up)
  std::vector<double> pair_costs;  ///< per repetition, ns per event over base's run
  MedianCI ci;
  double ns_per_event = 0;  ///< ci.median
  Verdict verdict = Verdict::significant;
  bool significant = true;  ///< as CaseResult::significant, against base
};

/// One cell of the replayed-mix table (mix.h).
struct MixResult {
  CaseSpec spec;
  /// Per round: the summed per-thread time of the cell's block and of its
  /// paired off block, ns.
  std::vector<double> block_ns, base_ns;
  std::vector<double> costs;  ///< per round: (block - base) / events per block, ns
  MedianCI ci;                ///< median and 95% interval of costs
  Verdict verdict = Verdict::significant;
  RunCounts counts;       ///< summed over the timed blocks
  double accept_pct = 0;  ///< 100 * (emitted - rejected) / emitted
};

/// The replayed-mix phase: what was replayed and how.
struct MixInfo {
  std::string source;           ///< capture path or "embedded"
  std::string fallback_reason;  ///< why the embedded mix was used, or ""
  uint64_t records = 0;         ///< replayable records (the four kinds)
  uint64_t file_records = 0;    ///< every record of the capture
  std::array<uint64_t, kEventKinds> per_kind{};
  uint32_t threads = 0;  ///< replaying threads, one per allowed CPU
  uint32_t rounds = 0;
  uint64_t block_events = 0;  ///< events per thread per block
  uint64_t seed = 0;          ///< of the block order
  MedianCI base;              ///< off's own time per event (loop + disabled check), ns
  double seconds = 0;         ///< wall time of the phase
};

/// Everything the report prints. Filled by the runner.
struct BenchReport {
  WorkloadConfig workload;
  uint32_t runs = 0;
  std::vector<int> cpus;  ///< CPUs the threads were pinned to (empty = not pinned)
  uint64_t buffer_bytes_per_cpu = 0;
  std::string mode;    ///< "overwrite" | "drop"
  std::string clock;   ///< trace clock name
  std::string engine;  ///< what the emit points were bound to
  std::vector<std::pair<std::string, std::string>> half_filters;  ///< event -> expression
  /// Cases whose filters a --filters file changed (the tables label them so).
  std::vector<Case> filters_from_file;
  std::vector<CaseResult> cases;
  MixInfo mix;                         ///< valid when mix_cases is not empty
  std::vector<MixResult> mix_cases;    ///< the traced cells of the replayed mix, in matrix order
  std::string staging_on_name = "on";  ///< how Staging::per_cpu is printed (name(Staging, on_name))
  uint64_t perf_events = 0;            ///< N of the second table; 0 = table not run
  bool perf_syscall = true;            ///< each perf iteration also makes a close(-1)
  std::vector<PerfResult> perf;
  std::vector<std::string> warnings;
  double total_seconds = 0;  ///< wall time of the whole bench
};

}  // namespace tracepipe::bench
