#pragma once
// buffers/ring_buffer.h — the per-CPU ring buffer every committed event goes
// through: reserve / commit / discard, overwrite or drop-newest, pause.
// Readers are in buffers/readers.h. Mirrors kernel/trace/ring_buffer.c and
// Documentation/trace/ring-buffer-design.rst, rebuilt for user space, where
// two writers of one CPU buffer may truly run at the same time (a thread can
// migrate between choosing its CPU and writing), not only nest.
//
// ══ Picture (one CPU buffer; P positions, each a sub-buffer of S bytes) ══════
//
//              tail = { lap | idx | off | PAUSED,  last_ts }   one 16-byte word, changed only
//                                  │                            by CAS16 (any_cpu) or the rseq
//                                  │                            section (cpu_local, rseq.h)
//   position:  0        1        2 ▼      3        4  ...   P-1
//            ┌────────┬────────┬────────┬────────┬──────┬────────┐
//            │LIVE L  │LIVE L  │LIVE L  │FREE L-1│ ...  │LIVE L-1│  position words:
//            │        │        │tail pg │(zeroed)│      │oldest  │  {lap, phase, pins,
//            └────────┴────────┴────────┴────────┴──────┴───▲────┘   read_off}
//                 sub-buffer seq = lap*P + idx               └ read_off: consuming reader
//
//   in a sub-buffer:  [h|data][h|data][h|DISCARDED][h|data.. ][h 0 0 0 ...  (uncommitted / unused:
//   zero) (record layout: buffers/record.h; h.word == 0 until the record is committed)
//
//   memory: P + N sub-buffers per CPU (N = spare_subbufs). slots[idx] names
//   the one position idx uses; each of the other N has a spare word:
//     slots  [0][5][2][3]...[P-1]     spares {EMPTY 1 (zeroed)} {ASIDE 6, from 128 (a
//            pos 0 1  2  3              stalled record's memory)} {EMPTY 7} ...
//
// The kernel names these head (oldest, next to read), tail (being written),
// commit (last fully committed) and reader page. Here the tail is one word;
// "commit" is per record (its header word); "head" is the oldest LIVE
// position; a reader does not swap a page out but pins it while it copies.
//
// ══ Sub-buffer (position) states, and who moves them ═════════════════════════
//   FREE(lap-1) ──(writer switching into it, CAS; before the tail CAS)───▶ LIVE(lap)
//   LIVE ──(pins +1 / -1: readers and recyclers; read_off forward: readers
//           only, while pinned; each a CAS or fetch_add/sub)─────────────▶ LIVE
//   LIVE{no pins, holders 1, read_off r}, closed, every record after r committed
//        ──(overwrite writer recycling it: hold (holders +1), walk from r,
//           then CAS from LIVE, no pins, that read_off, held by it alone;
//           counts the records after r as overrun; any other outcome:
//           release the hold)──────────────────────────────────────────▶ PREPARING
//   LIVE{no pins, holders h, read_off r}, a record after r pending, or
//        h > 1 (another recycler walks it: stalled, "Takeover")
//        ──(overwrite writer, same hold and CAS, holding an EMPTY spare:
//           "Set aside")───────────────────────────────────────────────▶ PREPARING
//   LIVE{pins 0, read_off S} ──(anyone: fully consumed)──────────────────▶ PREPARING
//   LIVE{pins 1, no holds, read_off r}, closed ──(the consuming reader whose
//        pin that is, having walked every record from r to END or S: it
//        consumes them and frees in one CAS, consume_and_free)──────────▶ PREPARING
//   PREPARING(lap) ──(the same party: zero, or swap in the spare;
//                     release-store)──────────────────────────────────────▶ FREE(lap)
//   "closed": the tail has left the sub-buffer. Every transition is a CAS on
//   the whole word and checks the lap, so a party with a stale view fails.
//   Nobody walks a sub-buffer without a pin (readers, stats()) or a hold
//   (recyclers), so no walk overlaps its zeroing or a new lap's writers: an
//   in-place zeroing CAS is from "no pins, holders 1" (its own hold only),
//   and a reader that pins or consumes (moves read_off) meanwhile makes it
//   fail; a swap's CAS may absorb other holders, whose walks then keep the
//   memory out of use instead ("Takeover").
//
//   ABA protection: the lap is in the word in EVERY phase, FREE included
//   (FREE(L) = "zeroed, last held lap L"; before first use lap -1 mod 2^20).
//   A position's lap only goes up: the tail passes each position once per
//   lap and may enter it only when it is LIVE(that lap), so its history is
//   LIVE(L) → PREPARING(L) → FREE(L) → LIVE(L+1) → ... and no word value
//   repeats (within 2^20 laps, the same wrap as the tail's own lap). A writer
//   may claim FREE only as FREE(nlap-1) → LIVE(nlap). A writer whose view of
//   the tail is stale (preempted, or a signal handler ran, between (A) and
//   (S1): other writers went around since) sees FREE(lap >= nlap) and retries
//   with a fresh tail; if the position is recycled after its load, its CAS
//   fails. (Without the lap, FREE was one value: a stale writer could CAS an
//   old lap into a recycled position, which no later switch could ever claim
//   or recycle again: every writer retried or failed there forever.)
//   Regression tests: tests/buffers/ring_buffer_aba_test.cc.
//
// ══ Invariants ═══════════════════════════════════════════════════════════════
//  I1 Zero: in a LIVE sub-buffer every byte after the last reserved record is 0,
//     and a reserved record's header word stays 0 until commit/discard.
//     (The sub-buffer was zeroed on its way to FREE; a reclaiming discard
//     re-zeroes its record before it gives the space back.)
//  I2 Visibility: a reader uses a record only after an acquire load of a
//     non-zero header word; the writer release-stores that word after filling
//     the payload. Readers stop at the first zero word (an uncommitted record,
//     or the end of what is reserved): records become visible in buffer order.
//  I3 No tear: a sub-buffer's memory is zeroed or reused only when no writer
//     can still store into it and nobody walks it: in place, from PREPARING,
//     entered by a CAS from LIVE with no pin whose only hold is the
//     recycler's own, taken before its walk found every record committed
//     (and an END word), or from LIVE with no pin and no hold when fully
//     consumed (read_off == S), or from LIVE with no hold whose only pin is
//     the consuming reader's own, taken before its walk from read_off found
//     every record committed up to END or S (the tail has left it, so no
//     writer can reserve there again); or, set aside, once a walk of it finds every
//     record committed (and an END word) and walkers[slot] is 0. A stalled writer's zero
//     header therefore never lets its memory be reused: in overwrite mode the
//     memory leaves the ring instead (a spare takes its place, "Set aside"),
//     and only when no spare is EMPTY does the writer that needs it drop its
//     own record (commit_overrun).
//  I6 Memory of a position: slots[idx] changes only while idx is PREPARING
//     (owned by one party), before the release-store to FREE. Whoever uses a
//     position's memory holds it still: a pin (readers, stats), a hold
//     (recyclers, T1-T4),
//     or the tail inside it (a writer resolves its record's address before
//     (C), from the tail value (C) then proves current; the slot of a
//     position cannot change while the tail is in it, as a swap needs the
//     tail a lap further on). A writer keeps the raw address it reserved at.
//  I4 Conservation: every reserve attempt ends as exactly one of: a loss
//     (counted by cause at the failure), a discard (counted by discard()), or
//     a committed record, which is counted exactly once later: as read (the
//     reader's CAS that moves read_off over it, or that consumes and frees
//     the sub-buffer it walked), as overrun (the recycler's CAS
//     LIVE{pins 1, read_off} → PREPARING counts the records after read_off;
//     a swap counts those committed by then, "Set aside" (X3)), as
//     lost_set_aside (committed into set-aside memory: counted by the reclaim
//     walk that passes it, (R)), or it is still buffered (entries). Hence
//        written = read + overrun + lost + discarded + entries (+ in flight).
//  I5 Time order: stamps are non-decreasing in buffer order on each CPU (proof
//     under "reserve").
//
// ══ reserve(cpu, len): the fast path, steps as labelled in the code ══════════
//  (A) load the tail {pos, last} (two 8-byte loads; a torn pair makes (C) fail)
//      and check that a record of stride = 16 + align8(len) fits: off + stride
//      <= S. PAUSED lies inside `off`, so the same comparison sends a paused
//      buffer to the slow path. Does not fit → reserve_slow (switch).
//      Fits: resolve the record's address through slots[idx] now (I6).
//  (B) ts = max(clock(), last)                      — the clamp
//  (C) CAS16 tail {pos, last} → {pos + stride, ts}; on failure go back to the
//      fit check with the value the CAS returned (and read the clock again).
//      cpu_local writers: the same compare-and-store inside an rseq critical
//      section on the tail's CPU (rseq.h); it fails like the CAS if another
//      writer of that CPU moved the tail, and if the writer was preempted,
//      migrated or signalled inside it (then it starts over on its CPU). All
//      writers of one CPU buffer are serialised either way, so every "CAS16"
//      below means "this compare-and-store" for cpu_local buffers.
//  (D) write stride and ts into the record header; hand out the Reservation.
//      (The stride lets crash recovery step over a reservation whose writer
//      died before (E): core/recover/recover.h. A plain store to the line
//      (C) already owns.)
//  commit: (E) release-store the header word (kind data, length).
//
//  A nested writer (a signal handler on this thread) or another thread on the
//  same CPU buffer that runs
//   - between (A) and (C): moves the tail, so our (C) fails; we retry after
//     its record, with a new clock read, so our stamp is >= its stamp;
//   - between (C) and (E): reserves after our record with a stamp >= ours
//     (its `last` is our ts). Readers stop at our zero word, so its record
//     becomes visible only when we commit. If we then discard, we are no
//     longer the last record: our record becomes padding;
//   - a writer that reserves and discards entirely between our (C) and our
//     discard reclaims its own space, so the tail is back at our end and we
//     can still reclaim ours.
//  Proof of I5: buffer order is the order of successful CAS16s on the tail
//  (also across sub-buffers: the switch is a CAS16 on the same word). Each
//  success stores ts = max(clock, last) >= last, the stamp of the reservation
//  right before it in that order. A reclaim moves pos back to the start of the
//  removed (last) record and keeps the stamp, so the next record is stamped
//  >= every stamp still before it. This holds whatever the clock does (a clock
//  that steps back yields equal stamps, like the kernel's delta 0): no
//  before_stamp/write_stamp pair is needed because the stamp and the position
//  change together.
//
// ══ The sub-buffer switch (reserve_slow, out of line), steps as in the code ═══
//  (S1) the record does not fit: make the next position LIVE(lap): claim it
//       if FREE(lap-1) (any other FREE lap: our view is stale, retry); if it
//       still holds the previous lap, recycle it (overwrite:
//       not while a reader pins it, else drop our record: busy; another
//       recycler holding it: take over, "Takeover"; a pending
//       record in it: set it aside, "Set aside", or with no spare free drop
//       our record: commit_overrun) or, drop-newest, free it only if fully
//       consumed (else lost_full).
//  (S2) CAS16 the tail from {old sub-buffer, off} to {next, our stride}, with
//       the stamp of (B); on failure look at the tail again (back to the fit
//       check: a reclaim may have made room, or another writer switched).
//       On success, (D) for our record at offset 0 at once.
//  (S3) write the END word at `off` in the sub-buffer we left.
//  (S4) overwrite: recycle the position after the new tail now, off the
//       critical path, so the next switch normally finds it FREE.
//  A nested writer between (S2) and (S3) reserves after our record in the
//  new sub-buffer; readers stop at the missing END (a zero word, I2) until
//  (S3), and recyclers treat it as a pending record (I3).
//
// ══ Set aside (overwrite): a pending record leaves the ring, not its CPU ══════
//  A writer preempted between (C) and (E) leaves a zero header word (I3). When
//  the tail comes round to its sub-buffer, recycle_overwrite (S1, or S4
//  ahead) holds it and walked to that word. Instead of dropping every
//  later record of the CPU until the writer runs again (the kernel disables
//  preemption there; user space cannot), it swaps the memory out, as the
//  kernel swaps its reader page in and out of the ring (ring_buffer.cc):
//  (X1) take an EMPTY spare word (CAS to TAKEN); none: reclaim (R) the
//       set-aside ones whose writers are done, and look again; still none:
//       Recycle::pending: the writer drops its new record (commit_overrun).
//  (X2) CAS the position word from LIVE(L), no pins, the read_off walked
//       from (any holders: "Takeover" (T3)) to PREPARING: a reader that
//       pinned or consumed meanwhile, or another recycler that completed
//       first, makes it fail (the spare goes back EMPTY, the hold is
//       released, Recycle::raced). From here the position is ours.
//  (X3) walk the old memory from the pending record: step over pending
//       records by the stride (D) stored (none yet: stop), turn every
//       committed data record into padding of its length and count it
//       overrun, with those before the pending one (a recycle would have).
//  (X4) slots[idx] = the spare's memory (zeroed: I1); the spare word becomes
//       ASIDE{old memory, from = the first pending record}.
//  (X5) release-store FREE(lap): the tail claims it as usual.
//  The stalled writer still holds the raw address of its record (I6): it
//  fills and commits (or discards) it in the set-aside memory, where no
//  reader looks. A discard that loaded the tail at its record's end just
//  before the tail went round may zero its record while (X3) loads that
//  record's stride: it zeroes the stamp and payload with plain stores
//  (nobody reads them in a record whose word is 0), the stride with an
//  atomic store last, and stores it back if its reclaim CAS fails; so (X3)
//  either steps over the record or stops at it (Step::discarding and
//  Step::reclaiming force both); a switcher stalled between (S2) and (S3) writes its END
//  there too (it resolved both sub-buffers before (S2)).
//  (R) reclaim (a swap that finds no EMPTY spare, stats(), and a reader that
//      reads the loss counters itself: SubbufReader::losses, as the
//      commit into set-aside memory cannot count its own loss): CAS an ASIDE
//      word to TAKEN, walk from `from`: every data record met there was
//      committed after (X3), so it is lost: lost_set_aside, counted once
//      because `from` moves past it. At a zero word: ASIDE{from = there}
//      again. At END or S: every writer is done; zero, EMPTY.
//  Cost: the fast path resolves slots[idx] (one load, its line shared by
//  every reserve of the sub-buffer) before (C) instead of after it; nothing
//  else changes on the write path. A swap costs a walk of the rest of the
//  sub-buffer. What is lost: the stalled record, and records committed after
//  a writer stalled between (C) and (D) in the same sub-buffer (no stride to
//  step over: counted lost_set_aside by (R)); a record is never counted twice.
//  Two counters, two causes: lost_set_aside is a record that was reserved
//  and lost with its set-aside memory; commit_overrun (the kernel's name)
//  stays a reservation refused at a switch because no spare was free.
//  Tests: tests/buffers/ring_buffer_set_aside_test.cc.
//
// ══ Takeover (overwrite): a stalled recycler costs no neighbour ══════════════
//  A writer preempted while it recycles (its walk) must not keep every
//  writer that needs that position out (lost_busy) until it runs again, so
//  the next writer that needs the position finishes the recycle:
//  (T1) hold: load the word (LIVE(L), no pins), load slots[idx], CAS the
//       word to holders + 1. The slot was read between two observations of
//       one LIVE(L) word, so it is the position's memory for lap L (I6: it
//       changes only while PREPARING, and the lap only goes up). Walk it.
//  (T2) alone (holders 1): the CAS to PREPARING, zero in place, FREE.
//  (T3) not alone: the other holders may be walking that memory (stalled
//       or not), so it must not be zeroed under them: swap a spare in, as
//       "Set aside" does, by a CAS from LIVE(L), no pins, the same read_off
//       (any holders), and move the other holders' count to walkers[slot]
//       (fetch_add, before the spare word says ASIDE). The reclaim (R)
//       zeroes that memory only once walkers[slot] is 0. Counted taken_over.
//  (T4) release: a recycler that does not complete gives its hold back by
//       a CAS while the word is still LIVE(L) (then its hold is still
//       there: nobody can have left LIVE(L) and come back), and otherwise
//       by walkers[slot] - 1 (a takeover absorbed its hold). A recycler
//       that stalled at any point before its CAS therefore finds, when it
//       runs again, either its hold (nothing happened) or its memory kept
//       for it out of the ring; its CAS fails on the word, never on data.
//  So a writer that needs a position held by a stalled recycler holds it
//  too, walks it (read only) and takes over with a spare: it drops its
//  record (lost_busy) only when no spare is free. What is still busy: a
//  recycler preempted inside PREPARING (its memset of one sub-buffer in
//  place, or a swap, which walks the set-aside sub-buffer (X3) before the
//  position leaves PREPARING), and a reader's pin.
//  Tests: tests/buffers/ring_buffer_set_aside_test.cc ("takeover").
//
// ══ pause(): stopping writers, steps as in ring_buffer.cc ═════════════════════
//  (P1) set the PAUSED bit of every tail (CAS16; a paused tail sends every
//       reserve to the slow path, which fails it as lost_paused).
//  (P2) cpu_local only: fence the sections. A section that compared the tail
//       before (P1) may still store its old value + stride over the bit
//       (rseq.h, "Invariant"). The fence ends every section in flight:
//       detail::rseq_fence() (membarrier PRIVATE_EXPEDITED_RSEQ: the kernel
//       restarts the sections of every CPU running one of our threads), or,
//       if that system call fails, the calling thread runs on each CPU of
//       the buffer in turn (detail::run_on_cpu: for it to run there, the
//       thread that was there was switched out, which restarts its section);
//       an offline CPU runs nobody and is skipped. The caller's affinity is
//       saved and restored around the visits.
//  (P3) look at every tail again: a bit lost before the fence is set again
//       and the fence repeated (sections that start after a fence see the
//       bit, so this ends).
//  (P4) if neither fence works (membarrier refused and some online CPU
//       refuses us: a cpuset), pause() sets the bits once more and returns
//       PauseFence::failed, counted pause_unfenced(): a writer may then keep
//       reserving on one CPU until the next pause(). A sleep would not be a
//       fence (a preempted vCPU can hold a section for milliseconds), so
//       pause() does not pretend. Tests force each failure through Hooks
//       (NoHooks' comment).
//  Invariant: pause() returns PauseFence::failed or no reserve() that
//  starts after its return succeeds until resume() (tested with spinning
//  writers, with membarrier and with the CPU visits).
//
// ══ Blocking (drop-newest): a full buffer waits for its reader ═══════════════
//  As LTTng's --blocking-timeout. With set_block_timeout(t), t != 0, a writer
//  whose switch finds the next position unread (S1: Recycle::unread, the
//  drop-newest "full") does not count lost_full at once:
//  (W1) ask the block policy (set_block_policy; none: yes) whether this
//       writer may wait: a writer nested in another one on its own thread
//       (a signal handler, a staged emit's nested emit) may not, as the
//       record it interrupted may be the one the reader waits for: it
//       drops, counted lost_full and block_stats().not_allowed;
//  (W2) waiters + 1, load the CPU's wake sequence, look at the position
//       again (a reader may have freed it before the load), sleep on the
//       sequence (futex) for at most min(time left, kBlockPollNs);
//  (W3) waiters - 1, look at the tail again and go back to (S1): the
//       position may be free, or another writer took it;
//  (W4) past the bound: drop, counted lost_full and block_stats().timed_out.
//  A reader that frees positions calls wake_blocked(cpu): one load when
//  nobody waits, else the sequence + 1 and a futex wake (the recorder does,
//  core/record/recorder.cc); any other reader frees silently, and its
//  writers notice within kBlockPollNs. The wait holds no pin, hold or
//  position (the tail is unmoved), so every invariant above is unchanged;
//  a waiting writer is a writer that has not reserved yet. Overwrite never
//  blocks (nothing to wait for: it recycles). The fast path is unchanged:
//  only the out-of-line switch looks at the timeout, only when full. The
//  wait is a system call by design (opt-in, and only on a full buffer).
//  Tests: tests/buffers/ring_buffer_block_test.cc.
//
// ══ Costs ═══════════════════════════════════════════════════════════════════
//  Fast path: one CAS16 (lock cmpxchg16b) or, cpu_local, the rseq section
//  (no locked instruction) + the clock; commit: one release store. No
//  allocation, lock or system call, on any path: slow path and discard
//  included, except blocking mode's wait (opt-in, on a full buffer only:
//  "Blocking"). Writers never wake readers: a reader blocked in
//  wait() polls with a 1 ms sleep (its latency bound), as the kernel defers
//  its wake-up out of the write path (irq_work).
//  Slow path (once per sub-buffer, out of line): claim the next position,
//  CAS16, END word, switch count, in overwrite mode recycle the one after
//  (walk + memset).
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>

#include "tracepipe/buffers/cpu_buffer.h"
#include "tracepipe/buffers/record.h"
#include "tracepipe/buffers/ring_types.h"
#include "tracepipe/buffers/rseq.h"
#include "tracepipe/buffers/stats.h"
#include "tracepipe/buffers/tsc_clock.h"

namespace tracepipe::buffers {

/// Geometry of a ring buffer. Kernel defaults: 1408 KiB per CPU, 4 KiB sub-buffers.
struct RingBufferConfig {
  uint32_t cpus = 1;                  ///< number of per-CPU buffers (>= 1)
  size_t size_per_cpu = 1408 * 1024;  ///< bytes of data per CPU; rounded up to whole
                                      ///< sub-buffers, at least 2, plus one spare
  size_t subbuf_size = 4096;          ///< bytes per sub-buffer: a power of two in [64, 4 MiB]
  /// Overwrite mode only: extra sub-buffers per CPU, outside the ring, that
  /// a recycler swaps in for a sub-buffer that still holds a pending record
  /// (the stalled one is set aside until its writer commits; "Set aside"
  /// at the top of this file). 0 to kMaxSpares (64); 0 disables the swap
  /// (such a record then costs every record of its CPU until it is
  /// committed: commit_overrun). A drop-newest ring ignores it and
  /// allocates none (its reader waits at a pending record instead):
  /// ring_memory_layout(cfg, OverflowMode::drop_newest).nr_spares == 0.
  uint32_t spare_subbufs = 8;
  /// Where the buffers live. nullptr (the default): this process's private
  /// memory. Otherwise a caller-owned, 4096-aligned region of at least
  /// ring_memory_layout(*this, mode).total bytes that outlives the ring (a
  /// MAP_SHARED file mapping: core/flight/flight_file.h); the ring puts its
  /// CPU states (tail words, loss counters), position words and sub-buffers
  /// there, at the offsets ring_memory_layout() gives, and does not free it.
  /// The write path is the same code either way.
  std::byte* memory = nullptr;
  size_t memory_size = 0;  ///< bytes at `memory` (checked against the layout)
};

/// Where a ring buffer keeps its state inside RingBufferConfig::memory, so
/// that another process can find it (crash recovery, core/recover). Byte
/// offsets from the start of the region.
struct RingMemoryLayout {
  uint32_t cpus = 0;
  uint32_t nr_subbufs = 0;  ///< positions per CPU, the spare included
  uint32_t nr_spares = 0;   ///< set-aside spares per CPU: RingBufferConfig::spare_subbufs
                            ///< in overwrite mode, 0 in drop-newest
  size_t subbuf_size = 0;
  size_t cpu_state_offset = 0;  ///< cpus x detail::CpuBuffer (cpu_state_size bytes each)
  size_t cpu_state_size = 0;
  size_t positions_offset = 0;  ///< cpus x nr_subbufs position words (u64), CPU-major
  size_t slots_offset = 0;      ///< cpus x nr_subbufs slot words (u32): position i's
                                ///< memory is sub-buffer slots[i] of its CPU's pages
  size_t spares_offset = 0;     ///< cpus x nr_spares spare words (u64, detail::make_sw)
  size_t pages_offset = 0;      ///< CPU c's sub-buffers at pages_offset + c * pages_per_cpu
  size_t pages_per_cpu = 0;     ///< (nr_subbufs + nr_spares) * subbuf_size
  size_t total = 0;             ///< bytes the region needs
};
/// The layout for `cfg` (its memory fields ignored) in mode `mode` (only
/// overwrite has spares). Throws ConfigError for a bad config, as the
/// constructor does. Memory: total bytes, of which the sub-buffers are
/// cpus x (nr_subbufs + nr_spares) x subbuf_size.
RingMemoryLayout ring_memory_layout(const RingBufferConfig& cfg, OverflowMode mode);

/// Thrown by the RingBuffer constructor for a bad RingBufferConfig; what() names the field.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The trace clock, called by reserve() to stamp a record: a monotonic time
/// in ns (the buffer clamps it so stamps never go back on one CPU).
using ClockFn = uint64_t (*)() noexcept;

/// CLOCK_MONOTONIC in ns; the default clock.
uint64_t monotonic_clock_ns() noexcept;

/// Clock policy holding a function pointer (the default), or a TSC scale
/// read inline (buffers/tsc_clock.h). The second form is the same clock as a
/// `fn` that returns scale_tsc(scale, read_tsc()) (core's `local`), without
/// the indirect call and the caller-saved registers spilled around it on
/// every reserve. `fn` stays the clock's identity either way.
/// Where there is no TSC (kHaveTsc false) the scale is ignored and fn is called.
struct FunctionClock {
  ClockFn fn = &monotonic_clock_ns;
  bool inline_tsc = false;  ///< read `tsc` inline instead of calling fn
  TscScale tsc{};
  constexpr FunctionClock() noexcept = default;
  constexpr FunctionClock(ClockFn f) noexcept : fn(f) {}  // NOLINT: implicit on purpose
  constexpr FunctionClock(ClockFn f, const TscScale& scale) noexcept
      : fn(f), inline_tsc(kHaveTsc), tsc(scale) {}
  [[gnu::always_inline]] uint64_t operator()() const noexcept {
    if constexpr (kHaveTsc) {
      if (inline_tsc) [[likely]]
        return scale_tsc(tsc, read_tsc());
    }
    return fn();
  }
};
/// Clock policy that reads no clock: every stamp is 0 (benchmarks, tests).
struct NullClock {
  [[gnu::always_inline]] constexpr uint64_t operator()() const noexcept { return 0; }
};

/// Points in the write path where a Hooks policy is called; tests use them to
/// run a nested writer between two steps (style item 12).
enum class Step : uint8_t {
  loaded,      ///< after (A)
  clocked,     ///< after (B), before the CAS (C)
  reserving,   ///< after (C), before (D): the tail is past our record, its header still all zero
  reserved,    ///< after (C)/(D): record reserved, not committed
  switching,   ///< slow path: about to claim the next sub-buffer
  switched,    ///< slow path: tail moved to the next sub-buffer, END not yet written
  discarding,  ///< discard: the tail was at our end when loaded; nothing zeroed yet
  reclaiming,  ///< discard: tail is at our end, record zeroed (stride too), about to CAS it back
};
/// Default Hooks: does nothing, compiles to nothing.
///
/// A Hooks type may also replace pause()'s two fences for cpu_local writers
/// (tests force them to fail; see "pause()" at the top of this file):
///   bool rseq_fence() noexcept;          instead of detail::rseq_fence()
///   bool run_on_cpu(uint32_t) noexcept;  instead of detail::run_on_cpu()
/// Each is optional and used only by pause(), never by the write path.
struct NoHooks {
  [[gnu::always_inline]] constexpr void operator()(Step, uint32_t /*cpu*/) const noexcept {}
};

/// Who may write a CPU's buffer; fixed at compile time (RingBuffer's W).
enum class Writers : uint8_t {
  /// Any thread may reserve in any CPU's buffer (replay writes recorded CPUs
  /// from worker threads): the tail moves by a locked 16-byte CAS.
  any_cpu,
  /// A writer always reserves in the buffer of the CPU it runs on (the
  /// kernel's model; reserve()'s cpu argument is ignored): the tail moves by
  /// a restartable sequence, no locked instruction (buffers/rseq.h). Needs
  /// detail::rseq_usable(); the constructor throws ConfigError otherwise.
  cpu_local,
};

template <OverflowMode M, class Clock, class Hooks, Writers W>
class RingBuffer;

/// A reserved record: fill payload(), then pass it exactly once to commit()
/// or discard() of the buffer that made it. An empty (false) Reservation
/// holds nothing; error() says why, and the cause was counted.
class Reservation {
 public:
  Reservation() noexcept = default;
  explicit operator bool() const noexcept { return hdr_ != nullptr; }
  /// Where to write the record; exactly the length asked for.
  std::span<std::byte> payload() const noexcept {
    return {reinterpret_cast<std::byte*>(hdr_) + detail::kHeaderSize, len_};
  }
  /// The record's stamp (0 when empty).
  uint64_t ts() const noexcept { return hdr_ != nullptr ? hdr_->ts : 0; }
  uint32_t cpu() const noexcept { return cpu_; }
  ReserveError error() const noexcept { return err_; }

 private:
  template <OverflowMode, class, class, Writers>
  friend class RingBuffer;
  friend class RingBufferBase;
  Reservation(detail::RecordHeader* h, detail::CpuBuffer* cb, uint64_t pos, uint32_t len) noexcept
      : hdr_(h), cb_(cb), pos_(pos), len_(len), cpu_(cb->cpu) {}
  Reservation(ReserveError e, uint32_t cpu) noexcept : cpu_(cpu), err_(e) {}

  detail::RecordHeader* hdr_ = nullptr;
  detail::CpuBuffer* cb_ = nullptr;
  uint64_t pos_ = 0;  // tail word at the record's start (for reclaim)
  uint32_t len_ = 0;
  uint32_t cpu_ = 0;
  ReserveError err_ = ReserveError::none;
};

/// What does not depend on the overflow mode, the clock or the hooks: the
/// memory, pause/resume, statistics, and what readers (readers.h) use.
/// Thread-safety: every member may be called from any thread at any time.
class RingBufferBase {
 public:
  RingBufferBase(const RingBufferConfig& cfg, OverflowMode mode);  // throws ConfigError
  RingBufferBase(const RingBufferBase&) = delete;
  RingBufferBase& operator=(const RingBufferBase&) = delete;
  /// Virtual: owners may hold a RingBuffer<M> as std::unique_ptr<RingBufferBase>.
  virtual ~RingBufferBase();

  uint32_t cpus() const noexcept { return ncpu_; }
  OverflowMode mode() const noexcept { return mode_; }
  /// Bytes per sub-buffer (S).
  size_t subbuf_size() const noexcept { return subbuf_size_; }
  /// Sub-buffers per CPU, including the spare one.
  uint32_t nr_subbufs() const noexcept { return nr_pos_; }
  /// Largest payload a record can have: subbuf_size() - 16.
  uint32_t max_payload() const noexcept {
    return static_cast<uint32_t>(subbuf_size_ - detail::kHeaderSize);
  }

  /// Stops output on every CPU: from return on, reserve() fails with
  /// ReserveError::paused (counted lost_paused). Records reserved before
  /// may still be committed. pause() and resume() may race each other from
  /// several threads (they are serialised: the last one to run wins); not
  /// async-signal-safe (cpu_local: one membarrier system call, or if that
  /// fails a visit of every CPU, which briefly changes the calling thread's
  /// affinity and restores it). Returns how writers in flight were fenced;
  /// PauseFence::failed means the guarantee above does not hold for
  /// cpu_local writers (see PauseFence; paused() is still true, and a second
  /// pause() may succeed). Mirrors perf's PERF_EVENT_IOC_PAUSE_OUTPUT and
  /// kernel/trace/ring_buffer.c: ring_buffer_record_off.
  PauseFence pause() noexcept;
  /// Restarts output. Mirrors ring_buffer_record_on.
  void resume() noexcept;
  /// pause() (paused = true) or resume() from a writer, as the kernel's
  /// tracing_off / tracing_on called by a trigger: no mutex, no fence, no
  /// system call. Every tail's PAUSED bit is moved to match paused(), read
  /// again per CPU, so racing calls settle on the last value stored. A
  /// cpu_local writer already inside its reserve may still succeed once.
  void set_paused_nowait(bool paused) noexcept;
  bool paused() const noexcept { return paused_.load(std::memory_order_acquire); }
  /// True for Writers::cpu_local buffers.
  bool cpu_local() const noexcept { return fence_on_pause_; }

  /// RingBuffer::commit for a caller that holds only the base: commit is
  /// the same release store whatever the mode, clock or writers.
  [[gnu::always_inline]] static void commit_reservation(const Reservation& r) noexcept {
    if (r.hdr_ == nullptr) [[unlikely]]
      return;
    commit_granted(r);
  }
  /// commit_reservation for a caller that has tested `r` (a granted
  /// reservation, not yet committed or discarded): no second test of it
  /// after the record's stores, which the compiler cannot prove left `r`
  /// alone (the emit, core/instance/fast_path.h).
  [[gnu::always_inline]] static void commit_granted(const Reservation& r) noexcept {
    std::atomic_ref<uint32_t>(r.hdr_->word)
        .store(detail::make_word(detail::kKindData, r.len_), std::memory_order_release);  // (E)
  }

  /// Accounting of one CPU (zeroed CpuStats for a bad cpu). Walks the
  /// buffered records (entries, bytes, stamps): O(buffer), not for hot paths.
  /// Mirrors kernel/trace/trace.c: tracing_stats_read.
  CpuStats stats(uint32_t cpu) const noexcept;
  /// Reservations refused because cpu >= cpus().
  uint64_t lost_bad_cpu() const noexcept { return lost_bad_cpu_.load(std::memory_order_relaxed); }
  /// pause() calls whose membarrier failed and that fenced by CPU visits
  /// (PauseFence::cpu_visits), and those that could not fence at all
  /// (PauseFence::failed). Both 0 for any_cpu buffers.
  uint64_t pause_fence_fallbacks() const noexcept {
    return pause_fence_fallbacks_.load(std::memory_order_relaxed);
  }
  uint64_t pause_unfenced() const noexcept {
    return pause_unfenced_.load(std::memory_order_relaxed);
  }

  /// Blocking mode (drop-newest only; "Blocking" at the top of this file,
  /// LTTng's --blocking-timeout): a writer that finds its CPU buffer full
  /// waits for a reader up to `ns` nanoseconds (kBlockForever: no bound)
  /// instead of dropping; 0 (the default) drops at once. Takes effect for
  /// the next writer that finds the buffer full; setting 0 releases every
  /// waiting writer within kBlockPollNs (they drop, counted timed_out).
  /// Ignored by an overwrite buffer. Any thread.
  void set_block_timeout(uint64_t ns) noexcept;
  uint64_t block_timeout() const noexcept {
    return block_ != nullptr ? block_->timeout_ns.load(std::memory_order_relaxed) : 0;
  }
  static constexpr uint64_t kBlockForever = UINT64_MAX;
  /// Longest single sleep of a waiting writer: how soon it notices a reader
  /// that frees without calling wake_blocked(), or a new timeout.
  static constexpr uint64_t kBlockPollNs = 1'000'000;
  /// Whether the calling writer may wait (W1): called only on a full buffer
  /// with blocking on, in the writer's own context; must be
  /// async-signal-safe. nullptr (the default): every writer may wait.
  using BlockPolicy = bool (*)() noexcept;
  void set_block_policy(BlockPolicy p) noexcept {
    if (block_ != nullptr) block_->policy.store(p, std::memory_order_release);
  }
  /// After a reader freed positions of `cpu`: wakes the writers waiting on
  /// it (W2). One relaxed load when none waits. Any thread; not for writers.
  void wake_blocked(uint32_t cpu) noexcept {
    if (block_ != nullptr && cpu < ncpu_ &&
        block_->cpus[cpu].waiters.load(std::memory_order_seq_cst) != 0) [[unlikely]]
      wake_blocked_slow(cpu);
  }
  /// Blocking mode's accounting of one CPU (zero for a bad cpu). The drops
  /// counted here are also in CpuStats::lost_full (the conservation law is
  /// unchanged); these say why a full buffer still lost them.
  struct BlockStats {
    uint64_t waits = 0;        ///< reservations that waited (then reserved, or timed out)
    uint64_t wait_ns = 0;      ///< total time writers waited (ns)
    uint64_t max_wait_ns = 0;  ///< the longest single wait (ns)
    uint64_t timed_out = 0;    ///< dropped after waiting the whole bound (lost_full)
    uint64_t not_allowed =
        0;  ///< dropped without waiting: the policy said no (nested, signal) (lost_full)
  };
  BlockStats block_stats(uint32_t cpu) const noexcept;

  /// Internal, for readers.h: the state of one CPU (cpu < cpus()).
  detail::CpuBuffer& cpu_buffer(uint32_t cpu) const noexcept { return cpus_[cpu]; }

 protected:
  void release() noexcept;

  detail::CpuBuffer* cpus_ = nullptr;  // owned (aligned array)
  uint32_t ncpu_ = 0;
  uint32_t nr_pos_ = 0;
  size_t subbuf_size_ = 0;
  OverflowMode mode_;
  std::atomic<bool> paused_{false};
  std::mutex pause_mu_;  // serialises pause() and resume() (control plane only)
  mutable std::atomic<uint64_t> lost_bad_cpu_{0};
  std::atomic<uint64_t> pause_fence_fallbacks_{0};
  std::atomic<uint64_t> pause_unfenced_{0};
  bool external_memory_ = false;  // RingBufferConfig::memory: the caller owns it
  bool fence_on_pause_ = false;   // cpu_local writers: pause() must abort their sections (rseq.h)
  // Blocking mode ("Blocking"): drop-newest only, behind one pointer that
  // takes the 8 bytes the two flags above freed, so that the members a
  // writer's fast path reads (and RingBuffer's clock after them) keep their
  // offsets. Process memory, not the flight file's: nobody waits after a crash.
  struct alignas(64) BlockState {
    std::atomic<uint32_t> seq{0};      // futex word: + 1 by wake_blocked
    std::atomic<uint32_t> waiters{0};  // writers in (W2)
    std::atomic<uint64_t> waits{0}, wait_ns{0}, max_wait_ns{0}, timed_out{0}, not_allowed{0};
  };
  struct Blocking {
    explicit Blocking(uint32_t ncpu) : cpus(std::make_unique<BlockState[]>(ncpu)) {}
    std::atomic<uint64_t> timeout_ns{0};
    std::atomic<BlockPolicy> policy{nullptr};
    std::unique_ptr<BlockState[]> cpus;
  };
  std::unique_ptr<Blocking> block_;
  // One reservation's wait: when it began and its bound (monotonic ns; 0: not yet).
  struct BlockWait {
    // credited: the time up to which this reservation's wait is in wait_ns,
    // so that the gaps between a writer's retries count as waiting too.
    uint64_t start = 0, deadline = 0, credited = 0;
  };
  // (W1)-(W4) for a writer whose switch found `nidx` unread or busy (lap
  // old_lap). `bw` starts zeroed for a reservation and is kept by the caller
  // across its calls. Returns true to look again, false to drop (counted here).
  [[gnu::cold, gnu::noinline]] bool block_wait(detail::CpuBuffer& cb, uint64_t nidx,
                                               uint64_t old_lap, BlockWait& bw) noexcept;
  [[gnu::cold, gnu::noinline]] void wake_blocked_slow(uint32_t cpu) noexcept;
  // pause()'s fences: detail::rseq_fence / detail::run_on_cpu, or a Hooks
  // policy's replacements (set by RingBuffer's constructor; tests).
  using FenceFn = bool (*)(RingBufferBase&) noexcept;
  using VisitFn = bool (*)(RingBufferBase&, uint32_t cpu) noexcept;
  FenceFn fence_fn_ = [](RingBufferBase&) noexcept { return detail::rseq_fence(); };
  VisitFn visit_fn_ = [](RingBufferBase&, uint32_t cpu) noexcept {
    return detail::run_on_cpu(cpu);
  };

 private:
  PauseFence fence_sections() noexcept;
};

/// The per-CPU ring buffer, specialised per overflow mode at compile time:
/// the write path has no branch on the mode (it only differs in the
/// out-of-line sub-buffer switch). Clock: the trace-clock policy
/// (FunctionClock holds a ClockFn; NullClock reads none; any type with
/// `uint64_t operator()() const noexcept` may be inlined). Hooks: test hooks.
/// W: who may write which CPU's buffer (Writers). Explicitly instantiated
/// for both modes and both Writers with the default Clock and Hooks.
///
/// Thread-safety: reserve/commit/discard/write may be called from any number
/// of threads and signal handlers at once, for any cpu (cpu_local: each on
/// the CPU it runs on); they are lock-free,
/// allocate nothing and make no system call, not even to wake a reader
/// blocked in ConsumingReader::wait() (that one polls every
/// kWaitPollInterval = 1 ms instead; see readers.h).
template <OverflowMode M, class Clock = FunctionClock, class Hooks = NoHooks,
          Writers W = Writers::any_cpu>
class RingBuffer : public RingBufferBase {
 public:
  static constexpr OverflowMode kMode = M;
  static constexpr Writers kWriters = W;

  /// Throws ConfigError for a bad config, or for cpu_local writers when
  /// detail::rseq_usable() is false.
  explicit RingBuffer(const RingBufferConfig& cfg, Clock clock = Clock{}, Hooks hooks = Hooks{})
      : RingBufferBase(cfg, M), clock_(clock), hooks_(hooks) {
    if constexpr (W == Writers::cpu_local) {
#if TRACEPIPE_TSAN
      // The locked CAS stands in for the sections (the sanitizer cannot
      // follow them), but writers still find their CPU in the rseq area.
      if (!detail::rseq_registered())
#else
      if (!detail::rseq_usable())
#endif
        throw ConfigError(
            "ring buffer: cpu_local writers need rseq (glibc >= 2.35, not disabled by "
            "GLIBC_TUNABLES) and membarrier RSEQ; use Writers::any_cpu");
      fence_on_pause_ = !TRACEPIPE_TSAN;
    }
    if constexpr (requires(Hooks & h) {
                    { h.rseq_fence() }
                    noexcept->std::convertible_to<bool>;
                  })
      fence_fn_ = [](RingBufferBase& b) noexcept -> bool {
        return static_cast<RingBuffer&>(b).hooks_.rseq_fence();
      };
    if constexpr (requires(Hooks & h, uint32_t c) {
                    { h.run_on_cpu(c) }
                    noexcept->std::convertible_to<bool>;
                  })
      visit_fn_ = [](RingBufferBase& b, uint32_t c) noexcept -> bool {
        return static_cast<RingBuffer&>(b).hooks_.run_on_cpu(c);
      };
  }

  /// Reserves a record of payload_len bytes in CPU `cpu`'s buffer (cpu_local:
  /// the buffer of the CPU the caller runs on; `cpu` is ignored) and stamps
  /// it. Returns an empty Reservation when the CPU is unknown, the record is
  /// larger than max_payload(), output is paused, the buffer is full
  /// (drop-newest), or the sub-buffer to recycle is busy or has a pending
  /// commit (overwrite); each counted by cause (see ReserveError). A
  /// non-empty Reservation must be passed exactly once to commit() or
  /// discard(). Any thread; lock-free.
  /// Mirrors kernel/trace/ring_buffer.c: ring_buffer_lock_reserve, __rb_reserve_next.
  [[nodiscard, gnu::always_inline]] inline Reservation reserve(uint32_t cpu,
                                                               uint32_t payload_len) noexcept;

  /// Publishes a reserved record to readers (I2). No-op for an empty one.
  /// Mirrors ring_buffer_unlock_commit.
  [[gnu::always_inline]] inline void commit(const Reservation& r) noexcept;

  /// Gives a reserved record back: its space is reclaimed if it is still the
  /// last record reserved on its CPU, otherwise it becomes padding that
  /// readers skip. Counted in `discarded` (and `reclaimed`). No-op when empty.
  /// Mirrors ring_buffer_discard_commit, rb_try_to_discard.
  void discard(const Reservation& r) noexcept {
    // The fields, not r: a reference reaching an out-of-line call makes the
    // caller keep its whole Reservation in memory on every path, the commit
    // path too (6 stores and their reloads per direct commit in the emit).
    if (r.hdr_ != nullptr) discard_slow(r.hdr_, *r.cb_, r.pos_, r.len_);
  }

  /// reserve + copy + commit. False when the reservation failed (counted).
  /// Mirrors ring_buffer_write.
  [[gnu::always_inline]] inline bool write(uint32_t cpu,
                                           std::span<const std::byte> payload) noexcept;

  Hooks& hooks() noexcept { return hooks_; }
  Clock& clock() noexcept { return clock_; }

 private:
  [[gnu::noinline, gnu::cold]] Reservation reserve_slow(detail::CpuBuffer& cb, uint32_t len,
                                                        uint64_t pos, uint64_t last) noexcept;
  // reserve_slow's steps. {pos, last} is the tail the caller loaded; a lost
  // CAS leaves the tail's current value there and returns an empty
  // Reservation with no error (look again: reserve() never returns one).
  // Not std::optional: in the cold, size-optimised switch its constructor
  // stays a call.
  // The tail moved and the record fits in its sub-buffer now: (B)-(D).
  [[gnu::always_inline]] inline Reservation reserve_fitting(detail::CpuBuffer& cb, uint32_t len,
                                                            uint64_t stride, uint64_t& pos,
                                                            uint64_t& last) noexcept;
  // (S2)-(S4): moves the tail to offset 0 of `nidx` (made LIVE(nlap) by (S1)).
  [[gnu::always_inline]] inline Reservation switch_subbuf(detail::CpuBuffer& cb, uint32_t len,
                                                          uint64_t stride, uint64_t& pos,
                                                          uint64_t& last, uint64_t nidx,
                                                          uint64_t nlap) noexcept;
  // (S1) found `nidx` unread or pinned: whether blocking mode waited for the
  // reader (look again) or the record drops. Drop-newest only. Inline: a
  // writer that drops into a full buffer tests the blocking mode in place,
  // and the wait itself (block_wait) is out of line.
  [[gnu::always_inline]] inline bool wait_for_reader(detail::CpuBuffer& cb, uint64_t nidx,
                                                     uint64_t nlap, BlockWait& bw) noexcept;
  [[gnu::noinline]] void discard_slow(detail::RecordHeader* hdr, detail::CpuBuffer& cb,
                                      uint64_t start, uint32_t len) noexcept;
  [[gnu::noinline, gnu::cold]] Reservation fail_bad_cpu(uint32_t cpu) noexcept;
  /// (C): the tail's compare-and-swap: a locked CAS16 (any_cpu, and under
  /// ThreadSanitizer) or a restartable sequence on cb's CPU (cpu_local). On
  /// failure {pos, last} hold the tail's current value.
  [[gnu::always_inline]] static detail::LocalCas tail_cas(detail::CpuBuffer& cb, uint64_t& pos,
                                                          uint64_t& last, uint64_t npos,
                                                          uint64_t nts) noexcept {
#if !TRACEPIPE_TSAN
    if constexpr (W == Writers::cpu_local) {
      const detail::LocalCas r = detail::cas16_local(&cb.tail, cb.cpu, pos, last, npos, nts);
      if (r != detail::LocalCas::ok) [[unlikely]] {
        pos = detail::load_acquire(cb.tail.pos);
        last = detail::load_relaxed(cb.tail.ts);
      }
      return r;
    }
#endif
    return detail::cas16(&cb.tail, pos, last, npos, nts) ? detail::LocalCas::ok
                                                         : detail::LocalCas::changed;
  }
  /// cpu_local: the CPU the caller runs on (as uint32_t; huge when the thread has no rseq area).
  [[gnu::always_inline]] static uint32_t writer_cpu(uint32_t cpu) noexcept {
    if constexpr (W == Writers::cpu_local) return static_cast<uint32_t>(detail::rseq_cpu());
    return cpu;
  }

  [[no_unique_address]] Clock clock_;
  [[no_unique_address]] Hooks hooks_;
};

// ── Fast path ──────────────────────────────────────────────────────────────

template <OverflowMode M, class Clock, class Hooks, Writers W>
inline Reservation RingBuffer<M, Clock, Hooks, W>::reserve(uint32_t cpu,
                                                           uint32_t payload_len) noexcept {
  cpu = writer_cpu(cpu);
  if (cpu >= ncpu_) [[unlikely]]
    return fail_bad_cpu(cpu);
  detail::CpuBuffer* cb = &cpus_[cpu];
  const uint64_t stride = detail::stride_for(payload_len);
  uint64_t pos = detail::load_acquire(cb->tail.pos);  // (A)
  uint64_t last = detail::load_relaxed(cb->tail.ts);
  hooks_(Step::loaded, cpu);
  for (;;) {
    const uint64_t off = detail::tail_off(pos);
    if (off + stride > cb->subbuf_size) [[unlikely]]
      return reserve_slow(*cb, payload_len, pos, last);
    // The record's address, resolved before (C) ("Set aside": after (C) the
    // position may be swapped to other memory while we are preempted).
    auto* const h = reinterpret_cast<detail::RecordHeader*>(cb->page(detail::tail_idx(pos)) + off);
    const uint64_t now = clock_();  // (B)
    const uint64_t ts = now > last ? now : last;
    hooks_(Step::clocked, cpu);
    const detail::LocalCas r = tail_cas(*cb, pos, last, pos + stride, ts);  // (C)
    if (r == detail::LocalCas::ok) [[likely]] {
      hooks_(Step::reserving, cpu);
      detail::store_stride(h, stride);  // (D)
      h->ts = ts;
      hooks_(Step::reserved, cpu);
      return Reservation(h, cb, pos, payload_len);
    }
    if (r == detail::LocalCas::migrated) {  // cpu_local only: follow the thread to its CPU
      cpu = writer_cpu(cpu);
      if (cpu >= ncpu_) [[unlikely]]
        return fail_bad_cpu(cpu);
      cb = &cpus_[cpu];
      pos = detail::load_acquire(cb->tail.pos);
      last = detail::load_relaxed(cb->tail.ts);
    }
  }
}

template <OverflowMode M, class Clock, class Hooks, Writers W>
inline void RingBuffer<M, Clock, Hooks, W>::commit(const Reservation& r) noexcept {
  commit_reservation(r);
}

template <OverflowMode M, class Clock, class Hooks, Writers W>
inline bool RingBuffer<M, Clock, Hooks, W>::write(uint32_t cpu,
                                                  std::span<const std::byte> payload) noexcept {
  const uint32_t len =
      payload.size() > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(payload.size());
  Reservation r = reserve(cpu, len);
  if (!r) [[unlikely]]
    return false;
  if (len != 0) std::memcpy(r.payload().data(), payload.data(), len);
  commit(r);
  return true;
}

using OverwriteRingBuffer = RingBuffer<OverflowMode::overwrite>;
using DropNewestRingBuffer = RingBuffer<OverflowMode::drop_newest>;

}  // namespace tracepipe::buffers

#include "tracepipe/buffers/ring_buffer_slow.h"  // IWYU pragma: export
