#pragma once
// `tracepipe replay`: feed a recorded trace.dat through tracepipe's own
// pipeline, stage -> filter -> commit, into per-CPU ring buffers, and count
// what the filters keep. See docs/replay.md.
//
// ══ Pipeline (one per recorded CPU; the CPUs run in parallel under TBB) ══════
//
//   trace.dat (mmap) ─▶ [read]   serial: decode up to kBatchRecords records of
//                                this CPU (zero-copy spans into the mapping)
//                    ─▶ [filter] serial: RawEmit::emit_at(record, cpu, ts) for each:
//                                stage → filter → commit into the ring of `cpu`
//                                (or cheap discard); counts per event, time per event
//                       [write]  (only with -o, in the same stage, right after
//                                [filter]): the batch's kept records leave the
//                                ring a sub-buffer at a time (SubbufReader, as
//                                the recorder drains), encoded in place into
//                                kernel pages (record::PageBatch) with their
//                                recorded stamps, appended to the output
//
// ══ Invariants ═══════════════════════════════════════════════════════════════
//  P1 Per-CPU order: every stage is serial_in_order, and a CPU's ring has one
//     writer (its [filter] stage) and one reader (its [write] step), so the
//     records of a CPU reach the ring and the output in file order.
//  P2 Pairing: [write] drains the ring right after [filter] fed the batch,
//     so the ring holds exactly the batch's kept records, handed out in
//     commit order: the k-th record drained is the batch's k-th kept record;
//     the writer checks the length of each pair and the count, and gives it
//     the recorded time stamp (the ring's stamp is the same one, via
//     RawEmit::emit_at and external_time, but clamped to be non-decreasing per CPU).
//  P3 No loss with -o: the ring is drop-newest and larger than the records of
//     one batch (3 x the batch byte bound), and holds one batch at a time, so
//     a kept record is never dropped; a loss would be counted and reported.
//     Without -o the ring is overwrite mode (a flight recorder nobody reads).
//  P4 Every replayed record ends as exactly one of kept, discarded, lost
//     (EmitResult), or skipped (event not replayed) / unknown (no format).
//
// Thread-safety: run_replay() is one call on one thread; it uses TBB inside.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tracepipe/core/config/instance_options.h"
#include "tracepipe/core/instance/instance.h"

namespace tracepipe::replay {

inline constexpr size_t kBatchRecords = 4096;      ///< records per batch, at most
inline constexpr size_t kBatchBytes = 256 * 1024;  ///< payload bytes per batch, at most
inline constexpr size_t kMaxLiveBatches = 4;       ///< batches in flight per CPU
/// --kallsyms larger than this is refused (a /proc/kallsyms is ~10-20 MiB).
inline constexpr uint64_t kMaxKallsymsBytes = uint64_t{256} << 20;

enum class ProgressMode : uint8_t { automatic, on, off };

struct ReplayOptions {
  std::filesystem::path input;
  std::vector<std::string> filter_args;  ///< raw -F arguments
  /// --trigger 'SYS:EVENT: TRIGGER' (core/triggers/triggers.h syntax): set
  /// on the replay instance before the run; an event with a trigger is
  /// replayed (soft-disabled if nothing else would replay it).
  std::vector<std::string> trigger_args;
  /// --synthetic 'NAME TYPE FIELD; ...' (the synthetic_events syntax):
  /// defined on the replay instance before the triggers, as events of system
  /// "synthetic" that --trigger may name. With these, or with triggers that
  /// pair events (variables, onmatch/onmax/onchange, enable_hist), the
  /// records replay in time order across CPUs on one thread (no -o).
  std::vector<std::string> synthetic_args;
  std::optional<std::filesystem::path> config;  ///< --config TOML (its main instance)
  std::optional<std::filesystem::path> output;  ///< -o OUT.dat
  /// --kallsyms, overrides the file's: a regular file of at most
  /// kMaxKallsymsBytes (else ReplayError naming the option and the path).
  std::optional<std::filesystem::path> kallsyms;
  bool only_filtered = false;  ///< trace-cmd report -F semantics
  /// A dangling "&&" / "||" in -F and config filters: rejected as the kernel
  /// here does, or ignored as an earlier kernel build did (filters/compile.h).
  filters::TrailingOperator trailing_operator = filters::TrailingOperator::reject;
  std::optional<Staging> staging;  ///< overrides the config's (default per_thread)
  uint32_t subbuf_size_kb = 0;     ///< ring sub-buffer; 0 = automatic
  uint64_t buffer_size_kb = 0;     ///< ring per CPU; 0 = automatic (with -o, at least the P3 bound)
  unsigned threads = 0;            ///< TBB threads; 0 = all cores
  /// Time spent per event: every 16th record of each event (its first
  /// included) is timed with two rdtsc and the sum is scaled to all records;
  /// samples over ~20 us (the thread was preempted) are dropped.
  bool timing = true;
  ProgressMode progress =
      ProgressMode::automatic;  ///< bar on stderr (automatic: a tty and a large file)
};

/// Counts of one event (or the total).
struct EventCounts {
  uint64_t replayed = 0;   ///< records fed to the instance
  uint64_t kept = 0;       ///< committed to the ring
  uint64_t discarded = 0;  ///< filter rejects and soft-disabled
  uint64_t lost = 0;       ///< the ring refused them
  uint64_t skipped = 0;    ///< records of an event not replayed (disabled / --only-filtered)
  uint64_t ns = 0;  ///< time spent in stage/filter/commit for these records (sampled estimate)

  EventCounts& operator+=(const EventCounts& o) noexcept {
    replayed += o.replayed;
    kept += o.kept;
    discarded += o.discarded;
    lost += o.lost;
    skipped += o.skipped;
    ns += o.ns;
    return *this;
  }
};

/// How an event's filter runs.
enum class FilterRoute : uint8_t {
  none,         ///< no filter: every record is kept (reserve + commit)
  instance,     ///< the instance's filter: stage → filter → commit (the kernel's path)
  replay_side,  ///< evaluated by replay, then committed unfiltered (see docs/replay.md:
                ///< COMM, char * strings and .function need the recorded context,
                ///< which RawEmit::emit cannot take yet)
};

struct EventRow {
  std::string name;    ///< "sched:sched_switch"
  std::string filter;  ///< in force, or "" for none
  FilterRoute route = FilterRoute::none;
  bool replayed = true;
  bool soft_disabled = false;
  std::string note;
  EventCounts counts;
  EventStats path;  ///< the instance's own counters (staged / direct / nested ...)
};

struct ReplayResult {
  std::vector<EventRow> events;  ///< events with records in the file, by name
  EventCounts total;
  uint64_t unknown = 0;          ///< records whose common_type has no format in the file
  uint64_t input_discarded = 0;  ///< padding records with a length in the input (kernel discards)
  uint64_t input_lost = 0;       ///< events the input pages say were lost (stored counts)
  uint32_t cpus = 0;
  std::vector<buffers::CpuStats> ring;  ///< per CPU, after the run
  uint64_t output_records = 0;          ///< written to -o
  double wall_s = 0;                    ///< the pipeline only (setup and output file excluded)
  double cpu_s = 0;                     ///< process CPU time over the same interval
  std::vector<std::string> warnings;
  /// Per event with a --trigger (by name): its trigger file and, when it has
  /// hist triggers, its hist file, read after the run.
  struct Triggered {
    std::string event;    ///< "sched:sched_switch"
    std::string trigger;  ///< the trigger file
    std::string hist;     ///< the hist file ("" without hist triggers)
  };
  std::vector<Triggered> triggered;
  /// Events per second of wall time (records read / wall_s).
  double events_per_s() const noexcept {
    const uint64_t n = total.replayed + total.skipped + unknown;
    return wall_s > 0 ? static_cast<double>(n) / wall_s : 0;
  }
};

/// Runs the replay. Throws ReplayError (filter_plan.h) on user errors (an
/// input that is missing, unreadable or not a regular file - a FIFO, a
/// device - is one, refused without blocking), TraceDatError on a malformed
/// file, std::system_error on other I/O errors.
ReplayResult run_replay(const ReplayOptions& options);

/// The per-event table and totals (stdout of the command).
std::string format_result(const ReplayResult& result, bool timing);

}  // namespace tracepipe::replay
