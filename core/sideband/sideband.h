#pragma once
// Sideband: record task names and memory-map state into the trace itself, in
// order with the events, so that a reader can name every task and map every
// address without reading /proc afterwards (which races with the events
// already in the buffer: a thread renamed or a library unmapped after its
// events were recorded would be named or mapped wrongly).
// Modelled on the kernel's COMM/MMAP/FORK sideband records and perf's RFC
// "perf: Add ioctl to emit sideband events" (Adrian Hunter, 2023), which emits
// them on demand instead of scraping /proc.
//
// ══ What is written, and when ════════════════════════════════════════════════
//
//   live (every instance that enabled the event; EventDecl-style fan-out)
//     thread's first event ──▶ task_comm(first_write)       core hook, see (H1)
//     set_thread_name()   ──▶ task_comm(rename, oldcomm)
//     announce_thread()   ──▶ task_comm(announce)
//     registered thread exits ─▶ task_exit                  core hook, see (H2)
//     note_mapping()      ──▶ mmap(synth 0)
//
//   on demand: synthesize_sideband(instance)  (one instance; round N = synth)
//     lock ─▶ process_exec(exe) ─▶ for each thread in /proc/self/task:
//             read comm ─▶ task_newtask(tid, comm) ─▶ read /proc/self/maps ─▶
//             for each mapping: mmap ─▶ synth_done(N, counts, lost) ─▶ unlock
//
// Every record goes through the instance's ordinary write path (stage →
// filter → commit), stamped when it enters the ring buffer, so it is ordered
// with the events around it exactly as events are ordered with each other.
//
// ══ Invariants ═══════════════════════════════════════════════════════════════
//  S1 Rename order. For a thread that renames itself through
//     set_thread_name(): every event it writes before the call precedes the
//     task_comm(rename) record, every event after it follows it, and an event
//     written by a signal handler of that thread is on the side matching the
//     name its COMM filter saw. The sequence (prctl, update of the cached
//     comm, record) runs with signals blocked, so no event of the thread can
//     fall between the name change and its record.
//  S2 Synthesis against renames: synthesis holds the sideband lock from its
//     first /proc read to synth_done; renames through the API, first-write
//     records and exit records take the same lock. So for each thread, the
//     name a synthesized task_newtask carries is the name in force when it
//     was written, and a rename record written later follows it.
//  S3 No silent loss: every record synthesis attempts ends kept, discarded
//     (a user filter on the sideband event rejected it) or lost (the ring
//     buffer refused it), counted in SynthesisReport. synth_done carries the
//     number of records kept before it and lost, so a reader detects an
//     incomplete round even if the caller ignored the report: a round is
//     complete only if its synth_done is present, its `lost` is 0, and the
//     reader saw `records` records of that round (fewer: the start of the
//     round was overwritten). SidebandState::rounds() performs that check.
//  S4 Live sideband costs nothing when no instance enables it: each hook
//     returns after one relaxed load (the event's subscriber list).
//
// ══ Thread-safety ════════════════════════════════════════════════════════════
//  All functions: any thread, concurrently with emits; they take the sideband
//  mutex and may block, so never call them from a signal handler or from
//  inside an emit. Not async-signal-safe.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>

#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/sideband/sideband_events.h"
#include "tracepipe/core/sideband/sideband_proc.h"
#include "tracepipe/core/sideband/sideband_state.h"  // the read-back side: SidebandState

namespace tracepipe {

/// Where state synthesis takes each thread's name from.
enum class CommSource : uint8_t {
  /// /proc/self/task/TID/comm for every thread: the kernel's current name,
  /// whoever set it (one open/read/close per thread).
  kernel,
  /// The name tracepipe last wrote into the trace for the thread (first
  /// write, rename, announce, previous synthesis), /proc for threads it has
  /// never seen. Saves the per-thread read, but misses renames made outside
  /// set_thread_name() (pthread_setname_np directly) since then.
  tracepipe,
};

/// Points of synthesis where SynthesisOptions::hook is called (tests use
/// them to force interleavings, e.g. a rename between reading a name and
/// writing it).
enum class SynthesisStep : uint8_t {
  locked,          ///< sideband lock taken, nothing written yet (tid 0)
  comm_read,       ///< thread `tid`'s name was read, its record not yet written
  thread_written,  ///< thread `tid`'s task_newtask was emitted
  maps_read,       ///< /proc/self/maps was read (tid 0)
  done_written,    ///< synth_done was emitted; the lock is still held (tid 0)
};

struct SynthesisOptions {
  bool process = true;   ///< write process_exec (the executable)
  bool threads = true;   ///< write one task_newtask per live thread
  bool mappings = true;  ///< write one mmap per /proc/self/maps line
  CommSource comm_source = CommSource::kernel;
  /// Called at each SynthesisStep with the thread id it concerns (0 if
  /// none). Runs with the sideband lock held: it must not call sideband
  /// functions from the same thread. Test hook; leave empty otherwise.
  std::function<void(SynthesisStep, int32_t tid)> hook;
};

/// What one synthesis wrote. Record counts include synth_done.
/// attempted == kept + discarded + lost + disabled.
struct SynthesisReport {
  uint32_t synth = 0;     ///< round number: the `synth` field of its records (process-wide, from 1)
  uint32_t threads = 0;   ///< live threads found (task_newtask records attempted)
  uint32_t mappings = 0;  ///< mappings found (mmap records attempted)
  uint32_t threads_gone = 0;    ///< listed, but exited before their name was read (nothing written)
  uint32_t maps_malformed = 0;  ///< /proc/self/maps lines that did not parse (skipped)
  uint64_t attempted = 0;
  uint64_t kept = 0;       ///< committed to the ring buffer
  uint64_t discarded = 0;  ///< rejected by a filter set on a sideband event (by the user's choice)
  uint64_t lost = 0;       ///< refused by the ring buffer (full, paused, ...): the loss of S3
  uint64_t lost_threads = 0, lost_mappings = 0, lost_other = 0;  ///< `lost` by record kind
  uint64_t disabled = 0;  ///< the event is not enabled in this instance (nothing written)
  /// Records overwritten (overrun, overwrite mode) on the CPUs synthesis
  /// wrote to while it ran: some may be its own. Conservative; the reader's
  /// check (S3) is exact.
  uint64_t overwritten = 0;
  bool done_kept = false;   ///< synth_done made it into the buffer
  std::string error;        ///< a /proc file could not be read ("" if none)
  uint64_t elapsed_ns = 0;  ///< wall time of the synthesis (lock to unlock)

  /// Everything found was written and nothing was overwritten.
  bool complete() const noexcept {
    return lost == 0 && discarded == 0 && disabled == 0 && overwritten == 0 && done_kept &&
           error.empty();
  }
  /// One line: "synth 3: 12 threads, 40 mappings; 54 records kept, 0 lost, ...".
  std::string summary() const;
};

/// Enables the six sideband events in `instance` (registering them in its
/// registry if it is not the global one). Then, unless `synthesize` is
/// false, writes the current state (synthesize_sideband) so that threads
/// that registered earlier are named too; returns that report (empty
/// otherwise).
SynthesisReport enable_sideband(Instance& instance, bool synthesize = true,
                                const SynthesisOptions& options = {});
/// Disables them.
void disable_sideband(Instance& instance);

/// Writes the current state of the process into `instance`, in order with
/// the events being recorded (see the picture above, S2, S3). Only events
/// enabled in the instance are written (others count as `disabled`). A
/// buffer that fills up makes the remaining records lost: they are counted
/// and the synthesis goes on (and synth_done reports the loss if it fits).
/// Throws nothing for /proc trouble: it is in `error`, and what could be read
/// is written (without /proc/self/task: the threads tracepipe named itself).
/// Any other exception (std::bad_alloc) propagates with the lock released;
/// records already written stay, without a synth_done (readers see the
/// round incomplete).
SynthesisReport synthesize_sideband(Instance& instance, const SynthesisOptions& options = {});

/// Renames the calling thread (prctl(PR_SET_NAME), as
/// pthread_setname_np(pthread_self(), name)), refreshes tracepipe's cached
/// name (the COMM filter field, saved_cmdlines), and writes
/// task_comm(rename) into every instance recording it (S1). Names longer than
/// 15 bytes are truncated, as the kernel does. Returns the prctl error, if any
/// (nothing is written then).
std::error_code set_thread_name(std::string_view name);
/// Renames another thread of this process by tid (writes
/// /proc/self/task/TID/comm, as pthread_setname_np does) and writes
/// task_comm(rename) for it (common_pid is the renaming thread, pid/tid the
/// renamed one, as the kernel's task_rename). ESRCH if no such thread.
/// Ordering against the renamed thread's own concurrent events is only as
/// good as in the kernel: it renames at one instant, the record follows.
std::error_code set_thread_name(int32_t tid, std::string_view name);
/// Writes task_comm(announce) for the calling thread with its current
/// kernel name (registering the thread first if needed).
void announce_thread();
/// Writes a live tracepipe:mmap record (synth 0) for a mapping the caller
/// made or learned about (a JIT's code region, a dlopen), into every instance
/// recording mmap.
void note_mapping(const ProcMapping& mapping);

}  // namespace tracepipe
