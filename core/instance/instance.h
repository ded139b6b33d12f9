#pragma once
// tracepipe core: instances and the write path. Start here.
//
// ══ The fast path: stage → filter → commit ═══════════════════════════════════
//
//   event site ─▶ Instance::emit*(event, ...)
//                   │ state = states[event.index]; not enabled → return      (1 load)
//                   │ ctx = this thread's context; WriterScope (nesting + RCU read section)
//                   │
//                   ├─ no filter, not soft-disabled ─▶ ring.reserve(cpu) ─▶ build ─▶ commit
//                   │
//                   └─ filtered or soft-disabled:
//                        staging on (and, if adaptive, the event's current choice is to stage)?
//                          slot = stager.try_claim(cpu or thread, size)       (no clock read;
//                                 per_thread: the thread's slot by address, picked by one flags
//                                 test)
//                          ├─ got it ─▶ build in slot ─▶ filter
//                          │              ├─ reject ─▶ release slot                (cheap discard)
//                          │              └─ accept ─▶ ring.reserve + copy + commit (stamped now)
//                          │                           ─▶ release slot
//                          └─ busy (nested) or record too big for the slot:
//                        direct: ring.reserve(cpu) ─▶ build in ring ─▶ filter
//                                   ├─ reject ─▶ ring.discard   (reclaimed if last, else padding)
//                                   └─ accept ─▶ ring.commit
//
//   EventDecl::trace / TRACEPIPE_TRACE of a fixed-size event (<= 512 bytes),
//   filtered, per-thread staging, no triggers, not soft-disabled (the stack
//   lane, stage_on_stack below; the kernel evaluates its filter on the temp
//   buffer, LTTng-UST its filter bytecode on the probe's arguments):
//     filter = one compare of a 4-byte integer field, or one string match
//     of a char array's first bytes (Program::single32_pos /
//     single_string_pos): its verdict on the argument itself (reject-first)
//        └─ reject ─▶ count, return                  (nothing built: no record,
//                                                     no slot, no ring, no clock)
//     otherwise, or accepted: build on the caller's stack only the fields
//     the filter reads (Program::read_chunks) ─▶ filter
//        ├─ reject ─▶ count, return                  (no slot, no ring, no clock)
//        └─ accept ─▶ build the other fields ─▶ ring.reserve + copy + commit
//
// Mirrors kernel/trace/trace.c: trace_event_buffer_lock_reserve and
// __buffer_unlock_commit / __trace_event_discard_commit (commit 0fc1b09ff1ff,
// "tracing: Use temp buffer when filtering events"). User guide: docs/instance.md
// ("Staging policies", "Writers", "Ordering").
//
// ══ Invariants ═══════════════════════════════════════════════════════════════
//  F1 Time stamps are taken when a record enters the ring buffer: a staged
//     record that is rejected never reads the clock; an accepted one is
//     stamped by the ring's reserve at copy time.
//  F2 Nesting: an emit that starts while another emit of the same thread is
//     between claim and release (a signal handler) finds the staging slot
//     busy and goes direct. If both are accepted, the nested record lands in
//     the ring BEFORE the outer one, with a smaller or equal stamp (the outer
//     one is stamped at its copy). Per-CPU stamps stay non-decreasing in
//     buffer order (the ring buffer's I5).
//     The stack lane has no slot to find busy: a nested emit stages on its
//     own frame, and is counted staged, not nested. Its order is the same:
//     the outer record enters the ring at its copy, after any nested one
//     that completed before.
//  F3 A claim remembers its slot: a thread that migrates between claim and
//     release builds in, filters, copies from and releases the slot it
//     claimed; the copy goes to the ring of the CPU it runs on at copy time.
//  F4 Every emit of an enabled event ends as exactly one of kept, discarded
//     (filter reject or soft-disable; in staging or by ring.discard) or lost
//     (the ring refused it; the cause is in the CPU's CpuStats), counted per
//     (thread, event) without any atomic read-modify-write: EventStats adds
//     the threads up exactly.
//  F5 Filters are swapped atomically: a writer loads the program pointer once
//     per emit and runs that program; the old program is freed only after a
//     grace period (synchronize(), core/instance/grace_period.h), so no writer ever
//     runs a freed or half-built program. A filter that fails to compile
//     leaves the previous one in force.
//  F6 No allocation, lock or system call on the path once the thread is
//     registered (thread_context(): the first emit of a thread registers it,
//     or call prepare_thread() first). tests/core/instance/noalloc_test.cc proves it
//     under a seccomp filter that kills on any system call, with malloc and
//     pthread_mutex_lock counted.
//
// ══ Staging policies (InstanceOptions::staging) ═══════════════════════════════
//   off         always direct: the kernel before the temp buffer (for measuring)
//   per_cpu     one slot per CPU (the kernel's design), claimed by a restartable
//               sequence (a locked exchange when the process has no rseq)
//   per_thread  one slot per thread, claimed with a plain thread-local store
//               (the default; the emit's own lane, by the slot's address)
//   adaptive    per_thread slots, and per (instance, event) a choice,
//               flipped by the writers' own evidence: while staging, at every
//               32nd accepted staged event of a thread, that thread's rate
//               over at least its last 32 accepts (since its last verdict)
//               above adaptive_threshold (default 0.9) sends the event direct
//               (reserve, no extra copy); while direct, each thread keeps a
//               moving average (about the last 32 events) and the first to
//               see it fall to the threshold or below turns staging back on.
//               The staged lane pays nothing for it on a reject and one test
//               on an accept; the direct path nothing on an accept (the
//               average moves at rejects, catching up the accepts counted
//               since: Instance::adaptive_direct_rejected).
//
// ══ Thread-safety ════════════════════════════════════════════════════════════
//  emit*: any thread and signal handler, concurrently, lock-free.
//  Control (enable, set_filter, pause, ...): any thread, serialised by a
//  mutex, concurrent with emits; they may block (grace periods), so never
//  call them from a signal handler or from inside an emit.
//  Readers/export: any thread; see the functions.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/buffers/current_cpu.h"
#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/core/clock/trace_clock.h"
#include "tracepipe/core/config/config.h"
#include "tracepipe/core/config/instance_options.h"
#include "tracepipe/core/events/event.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/instance/grace_period.h"
#include "tracepipe/core/instance/snapshot_buffer.h"
#include "tracepipe/core/instance/staging.h"
#include "tracepipe/core/instance/thread_context.h"
#include "tracepipe/core/instance/trigger_hook.h"
#include "tracepipe/filters/filter.h"

namespace tracepipe {

namespace flight {
class FlightFile;
}

// The current CPU and the number of possible CPUs (buffers/current_cpu.h).
using buffers::current_cpu;
using buffers::current_cpu_uses_rseq;
using buffers::possible_cpus;

namespace detail {
template <class Fill>
struct FillWriter;
/// The time stamp RawEmit::emit_at() hands to instances with external_time.
extern thread_local constinit uint64_t tl_external_ts TRACEPIPE_TLS_MODEL;
/// The filter "0": an empty program that accepts every record. detail::EventState::
/// program holds it when the event has no filter, so that pointer is never
/// null. Made on first use (allocates once; throws std::bad_alloc) and never
/// destroyed, so static destructors and late writers may still use it.
/// Thread-safe.
const filters::Program& accept_all_program();
}  // namespace detail

/// How one emit ended (F4).
enum class EmitResult : uint8_t {
  kept,       ///< committed to the ring buffer
  discarded,  ///< rejected by the filter, or the event is soft-disabled
  lost,       ///< the ring buffer refused it (full, paused, too big; see CpuStats)
  disabled,   ///< the event is not enabled in this instance (nothing counted)
};

/// Per-(instance, event) counters, summed over all threads (exact once the
/// writers are quiet). emitted() = kept + discarded + lost.
struct EventStats {
  uint64_t kept = 0;
  uint64_t discarded = 0;       ///< filter rejects and soft-disabled drops
  uint64_t lost = 0;            ///< ring refused (full, paused, too big, ...)
  uint64_t soft_discarded = 0;  ///< of discarded: because the event is soft-disabled
  uint64_t ring_discards = 0;   ///< of discarded: reserved directly, then ring.discard()
  uint64_t unfiltered = 0;      ///< emits with no filter and not soft-disabled (reserved directly)
  uint64_t staged = 0;          ///< filtered emits built in a staging slot
  uint64_t direct = 0;          ///< filtered emits built directly in the ring
  uint64_t nested = 0;  ///< of direct: the staging slot was busy, held by this thread's own outer
                        ///< emit (a signal handler, or an emit inside a fill)
  uint64_t contended = 0;  ///< of direct: the per-CPU staging slot was held by another thread (one
                           ///< preempted while it staged there; per_cpu staging only: the kernel
                           ///< cannot see this, it stages with preemption off)
  uint64_t too_big = 0;    ///< of direct: the record did not fit a staging slot
  uint64_t adaptive_direct = 0;  ///< of direct: chosen by adaptive staging (direct - nested -
                                 ///< contended - too_big for an adaptive instance, 0 otherwise)
  uint64_t emitted() const noexcept { return kept + discarded + lost; }
  /// Records that reached the ring buffer's reserve (what CpuStats conserves).
  uint64_t ring_attempts() const noexcept { return kept + lost + ring_discards; }
};

/// Result of set_filter(): success, or the kernel's error (the previous
/// filter stays in force).
class [[nodiscard]] FilterStatus {
 public:
  FilterStatus() = default;
  explicit FilterStatus(filters::FilterError e, std::string expr)
      : error_(std::move(e)), expr_(std::move(expr)) {}
  bool ok() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  /// Precondition: !ok().
  const filters::FilterError& error() const { return *error_; }
  /// The kernel's error_log text for the failed expression ("" when ok).
  std::string render() const { return error_ ? error_->render(expr_) : std::string(); }

 private:
  std::optional<filters::FilterError> error_;
  std::string expr_;
};

/// Result of set_system_filter(): which events took the filter and which
/// could not (they lack a field); the latter are left unfiltered, as the
/// kernel's events/SYS/filter does.
struct SystemFilterResult {
  std::vector<const EventDesc*> applied;
  std::vector<std::pair<const EventDesc*, filters::FilterError>> rejected;
};

class Instance;
struct RawEmit;

namespace detail {
struct InstanceAccess;
struct InstanceTesting;  // core/instance/testing/emit_hooks.h (not installed)

/// Points of the write path where the lanes call their Hooks object (a
/// template parameter, NoEmitHooks in every build but the ordering tests',
/// which raise a signal or migrate between two steps through
/// core/instance/testing/emit_hooks.h).
enum class EmitStep : uint8_t {
  built_staged,  ///< record built in a staging slot, filter not yet run
  built_direct,  ///< record built in a direct reservation, filter not yet run
  before_copy,   ///< staged record accepted, about to be copied into the ring
};
/// The lanes' hooks outside the tests: nothing, compiled away.
struct NoEmitHooks {
  [[gnu::always_inline]] constexpr void operator()(EmitStep) const noexcept {}
};

/// Per-instance state of one event: what a writer reads, one cache line.
/// Internal: the write path's, reached only through Instance and EventDecl.
struct alignas(64) EventState {
  static constexpr uint32_t kEnabled = 1u << 0;
  static constexpr uint32_t kSoftDisabled = 1u << 1;
  static constexpr uint32_t kFiltered = 1u << 2;
  /// The event stages in the thread's slot now, so that the emit picks its
  /// per-thread lane with one test of this word (core/instance/fast_path.h). Set
  /// once when the state is made for Staging::per_thread; for adaptive it is
  /// the event's current choice, which writers flip (adaptive_* below).
  static constexpr uint32_t kThreadStaging = 1u << 3;
  /// Staging::adaptive (set once): the lane checks the acceptance rate of
  /// its accepted events, and the direct path keeps a moving average.
  static constexpr uint32_t kAdaptive = 1u << 4;
  /// Staging::per_cpu (set once): a filtered emit tries the per-CPU slot,
  /// so that the direct path is picked by one test of this word when no
  /// slot is to be tried (staging off, or adaptive gone direct).
  static constexpr uint32_t kCpuStaging = 1u << 5;
  /// The event has triggers (`triggers` below, core/instance/trigger_hook.h):
  /// it stages like a filtered event and the hook sees every built record.
  static constexpr uint32_t kTriggered = 1u << 6;
  /// Adaptive: bits 8..31 count the flips to direct, so that a thread can
  /// tell its moving average (detail::slot::adaptive_score) is from an earlier
  /// direct period and start again.
  static constexpr uint32_t kGenShift = 8;

  std::atomic<uint32_t> flags{0};
  uint32_t counters = 0;  ///< counter group (core/instance/thread_context.h)
  /// Never null: detail::accept_all_program() when there is no filter. The
  /// write path loads it only under kFiltered, but a writer that saw the
  /// flag just before a clear loads it after; with no null to test, its
  /// filter call is one load and a compare shorter.
  std::atomic<const filters::Program*> program{&detail::accept_all_program()};
  const EventDesc* desc = nullptr;
  uint16_t type = 0;  ///< desc->id(): common_type, without the extra load
  Instance* instance = nullptr;
  /// The trigger list, loaded only under kTriggered; null when none.
  std::atomic<TriggerHook*> triggers{nullptr};
  // Cold, under the instance mutex:
  std::shared_ptr<TriggerHook> triggers_owner;
  int soft_mode_refs = 0;  ///< sm_ref: triggers that keep the event armed (SOFT_MODE while > 0)
  std::shared_ptr<const filters::Program> program_owner;
  std::string filter_text;                           ///< active expression, "" if none
  std::optional<filters::FilterError> filter_error;  ///< last failure (system filters)
};

/// Counter slots of an detail::EventState's group: each emit adds 1 to exactly one
/// outcome slot, plus at most two diagnostic slots. The group is two cache
/// lines (detail::CounterGroup): what the common paths touch (their outcome,
/// soft, nested, the adaptive score) shares the first, so a path touches one
/// counter line; losses, too_big and contended, the rare ones, fill the
/// second.
namespace slot {
inline constexpr uint32_t
    kept_unfiltered = 0,
    kept_staged = 1, rejected_staged = 2, kept_direct = 3, rejected_direct = 4, soft = 5,
    nested = 6,
    adaptive_score = 7,  ///< per thread, not a count: while direct, the acceptance
                         ///< average, the kept_direct mark and the period, one
                         ///< word (detail::AdaptiveScore, core/instance/adaptive_average.h)
    lost_unfiltered = 8, lost_staged = 9, lost_direct = 10, too_big = 11, contended = 12,
    adaptive_kept_mark = 13,      ///< kept_staged at the last staged-window check
    adaptive_rejected_mark = 14;  ///< rejected_staged then
}  // namespace slot
}  // namespace detail

/// One tracing instance: a ring buffer with its clock, a staging policy, and
/// per-event state (enabled, soft-disabled, filter). Several instances may
/// record the same event with different filters, as
/// /sys/kernel/tracing/instances/NAME does.
class Instance {
 public:
  /// Builds the buffers (throws buffers::ConfigError / std::invalid_argument
  /// on bad sizes). Rings larger than the machine's physical memory (cpus x
  /// buffer_size_kb, rounded up to sub-buffers, with the ring's extra ones)
  /// are refused with std::invalid_argument before anything is allocated,
  /// as a config file refuses them. Every event starts disabled.
  explicit Instance(InstanceOptions options = {}, Registry& registry = Registry::global());
  /// Builds from a parsed config section and applies its events (throws
  /// ConfigError naming file/line/key for unknown events or bad filters, and
  /// naming the file, and the `writers` line when that is the cause, for
  /// options the constructor refuses).
  static std::unique_ptr<Instance> from_config(const InstanceConfig& config,
                                               Registry& registry = Registry::global());
  /// Disables every event, waits for in-flight emits (grace period), frees.
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  const InstanceOptions& options() const noexcept { return options_; }
  const std::string& name() const noexcept { return options_.name; }
  Registry& registry() const noexcept { return registry_; }
  uint32_t cpus() const noexcept { return ncpu_; }
  /// True if writers reserve with rseq in their own CPU's buffer (WriterMode).
  bool cpu_local_writers() const noexcept { return cpu_local_; }
  const TraceClock& clock() const noexcept { return clock_; }

  // ── Control (cold, thread-safe, not async-signal-safe) ──────────────────────

  /// Enables or disables one event in this instance.
  void enable(const EventDesc& event, bool on = true);
  /// Every event matching a set_event pattern ("sched:*", "sched:sched_switch",
  /// "irq", "*:*"); returns how many matched. 0 is the kernel's EINVAL for a
  /// name that matches nothing (a typo): [[nodiscard]] so it is not lost.
  [[nodiscard]] size_t enable(std::string_view pattern, bool on = true);
  bool enabled(const EventDesc& event) const noexcept;

  /// Soft-disable: the event stays armed (it goes through staging and its
  /// record is built) but is always discarded, as the kernel's
  /// EVENT_FILE_FL_SOFT_DISABLED used by triggers. Counted in soft_discarded.
  void set_soft_disabled(const EventDesc& event, bool soft);
  bool soft_disabled(const EventDesc& event) const noexcept;

  /// Soft mode (SOFT_MODE, sm_ref), for triggers: `get` takes a reference
  /// that keeps the event armed; the first one enables an event that was
  /// off, soft-disabled (its triggers see it, nothing is recorded). While in
  /// soft mode, enable(event, false) only soft-disables it, and
  /// enable(event, true) clears the soft-disable. `get == false` drops a
  /// reference; the last one disables the event if it is still
  /// soft-disabled (an enable_event trigger or the user turned it on: it
  /// stays on). Mirrors kernel/trace/trace_events.c:
  /// __ftrace_event_enable_disable() with soft_disable = 1 (and = 0 for
  /// enable()). Control plane; thread-safe.
  void soft_mode(const EventDesc& event, bool get);
  /// True while some trigger holds the event in soft mode.
  bool in_soft_mode(const EventDesc& event) const;

  /// Compiles `expr` against the event's fields and swaps it in atomically
  /// (F5). "0" (whitespace around it allowed) clears the filter, as in the
  /// kernel; a blank string is the kernel's EINVAL "Error" at position 0.
  /// On a compile error the previous filter stays in force and the error is
  /// returned (the kernel's message and caret). The kernel instead disables
  /// the event's filter on a failed write: a deliberate difference
  /// (docs/filters.md, "Where the core deliberately differs"). `options`
  /// are compile()'s (filters/compile.h): the defaults are the kernel's.
  [[nodiscard]] FilterStatus set_filter(const EventDesc& event, std::string_view expr,
                                        const filters::CompileOptions& options = {});
  void clear_filter(const EventDesc& event);
  /// The active filter expression as the kernel's filter file shows it (cut
  /// at a NUL, trailing whitespace removed, leading kept), or "none".
  std::string filter(const EventDesc& event) const;
  /// Why the last system filter left this event unfiltered (nullopt if it
  /// did not): the kernel's "Couldn't find or set field in one of a
  /// subsystem's events" at 0, as its filter file shows; the event's own
  /// compile error is in set_system_filter()'s SystemFilterResult::rejected.
  std::optional<filters::FilterError> filter_error(const EventDesc& event) const;

  /// events/SYS/filter: compiles `expr` for every event of `system`; events
  /// that have the fields take it, the others become unfiltered (their error
  /// is returned), like the kernel. "0" clears the whole system. Throws
  /// std::invalid_argument if the system has no events.
  SystemFilterResult set_system_filter(std::string_view system, std::string_view expr);

  /// tracing_on / tracing_off from a writer (the traceon / traceoff
  /// triggers): sets or clears the ring's PAUSED bits without the pause()
  /// fence, lock-free and without a system call. A writer already past its
  /// reserve on another CPU may still commit, as in the kernel.
  void set_tracing_on_from_writer(bool on) noexcept { ring_->set_paused_nowait(!on); }

  /// Applies a config section's [systems.*] then [events.*] (see
  /// core/config/config.h), then the events' `trigger` keys (through the
  /// triggers library: a config with triggers needs tracepipe::triggers
  /// linked, else ConfigError). Throws ConfigError naming the file, line and
  /// key; a trigger error is reported after the filters were applied.
  void apply(const InstanceConfig& config);

  // ── Write path (any thread, lock-free; see the top of this file) ────────────

  /// Emits a record of `size` bytes (>= 8) built by `fill(std::span<std::byte>
  /// record)`, which writes bytes [8, size); the common header is written by
  /// the instance (ID, flags, nesting depth, pid). `fill` is called exactly
  /// once if the event is enabled and room was found, never otherwise, and
  /// must not throw.
  template <class Fill>
  [[gnu::always_inline]] EmitResult emit_fill(const EventDesc& event, uint32_t size,
                                              Fill&& fill) noexcept {
    detail::NoEmitHooks hooks;
    return emit_fill_with(event, size, fill, hooks);
  }

  /// Raw records refused by RawEmit (core/instance/raw_emit.h: too short or
  /// unknown ID).
  uint64_t raw_refused() const noexcept { return raw_refused_.load(std::memory_order_relaxed); }

  // ── Buffer control and statistics ──────────────────────────────────────────

  /// Stops / restarts recording (writes are dropped and counted lost_paused).
  /// pause() says how in-flight cpu_local writers were fenced; `failed`
  /// means a writer may still have reserved after it returned (see
  /// buffers::PauseFence; counted in ring().pause_unfenced()).
  buffers::PauseFence pause() noexcept { return ring_->pause(); }
  void resume() noexcept { ring_->resume(); }
  bool paused() const noexcept { return ring_->paused(); }

  /// One CPU's accounting (per_cpu/cpuN/stats) and all of them.
  buffers::CpuStats cpu_stats(uint32_t cpu) const noexcept { return ring_->stats(cpu); }
  std::vector<buffers::CpuStats> cpu_stats() const;
  /// The event's counters in this instance (zero if never configured).
  EventStats event_stats(const EventDesc& event) const;
  /// Sum of event_stats().ring_attempts() over every event: the `written`
  /// of the ring buffer's conservation law, summed over CPUs.
  uint64_t ring_attempts() const;

  /// pid -> comm of every thread that ever emitted (saved_cmdlines), plus
  /// the entries added with add_cmdline (replay adds the recorded ones).
  std::vector<Cmdline> cmdlines() const;
  void add_cmdline(int32_t pid, std::string_view comm);

  /// The flight file the ring lives in (InstanceOptions::flight_recorder),
  /// empty otherwise.
  std::filesystem::path flight_path() const;

  /// The ring buffer (readers in buffers/readers.h take it).
  buffers::RingBufferBase& ring() noexcept { return *ring_; }
  const buffers::RingBufferBase& ring() const noexcept { return *ring_; }

 private:
  friend struct detail::InstanceAccess;
  friend struct detail::InstanceTesting;
  friend struct RawEmit;

  /// Replay's entry points (public through RawEmit, core/instance/raw_emit.h).
  template <class Hooks>
  EmitResult emit_raw(std::span<const std::byte> record, uint32_t cpu, Hooks& hooks) noexcept;
  template <class Hooks>
  EmitResult emit_raw(const EventDesc& event, std::span<const std::byte> record, uint32_t cpu,
                      Hooks& hooks) noexcept;
  /// emit_fill with the lanes' Hooks (NoEmitHooks, or a test's).
  template <class Fill, class Hooks>
  [[gnu::always_inline]] EmitResult emit_fill_with(const EventDesc& event, uint32_t size,
                                                   Fill& fill, Hooks& hooks) noexcept;
  /// Installs the event's trigger list (core/triggers builds it; nullptr
  /// removes it) and sets or clears kTriggered; the previous list is freed
  /// after a grace period, so no writer runs a freed one. Reached through
  /// detail::InstanceAccess by tracepipe::set_trigger (core/triggers).
  void set_triggers(const EventDesc& event, std::shared_ptr<detail::TriggerHook> hook);
  /// The installed trigger list (nullptr if none).
  std::shared_ptr<detail::TriggerHook> triggers(const EventDesc& event) const;
  /// Internal (tracepoint-style emission: EventDecl::trace_slow_path, the
  /// sideband's fan-out): emits into one subscribed state of this instance,
  /// for a caller that already holds a WriterScope on `ctx` (its depth() is
  /// `depth`), one scope for all the instances an event fans out to.
  template <class Fill>
  [[gnu::always_inline]] EmitResult emit_to_state_in_scope(detail::EventState& state,
                                                           ThreadContext& ctx, uint32_t depth,
                                                           uint32_t size, Fill& fill) noexcept {
    const uint32_t flags = state.flags.load(std::memory_order_acquire);
    if ((flags & detail::EventState::kEnabled) == 0) [[unlikely]]
      return EmitResult::disabled;
    detail::FillWriter<Fill> w{fill};
    detail::NoEmitHooks hooks;
    return emit_in_scope(state, flags, ctx, depth, size, 0, false, w, hooks);
  }

  /// The stack lane (see the top of this file): `build(rec, chunks)` writes
  /// the fields (not the header) of a Size-byte record that overlap
  /// `chunks` (Program::read_chunks() bits). For st.flags ==
  /// stages_on_stack(); the caller holds a WriterScope on `ctx` of depth
  /// `depth`, and loaded `prog` from st.program inside it (once per emit,
  /// F5). Counted as a staged emit (kept, rejected or lost).
  template <uint32_t Size, class Build>
  [[gnu::always_inline]] void stage_on_stack(detail::EventState& st, uint32_t flags,
                                             ThreadContext& ctx, uint32_t depth,
                                             const filters::Program& prog,
                                             const Build& build) noexcept;
  /// Its accept: copies the built record into the ring (stamped there, F1)
  /// and counts it, as the staged path's (E9, core/instance/lanes.h). Out of line: the lane's
  /// reject path then needs no callee-saved register.
  [[gnu::noinline]] void commit_from_stack(detail::EventState& st, uint32_t flags,
                                           ThreadContext& ctx,
                                           std::span<const std::byte> rec) noexcept;
  /// EventDecl::trace's accept decided before any record was built (its
  /// reject-first step's verdict on the argument): reserve in the ring
  /// (stamped there, F1), `build(rec)` writes the whole record there,
  /// header included, commit; counted as the stack lane's accept.
  template <class Build>
  [[gnu::always_inline]] void commit_decided(detail::EventState& st, uint32_t flags,
                                             ThreadContext& ctx, uint32_t size,
                                             const Build& build) noexcept;
  /// Its filter for programs without an inline verdict (match_lazy with
  /// the emit's context), then the reject's count or commit_from_stack: one
  /// call, after which the lane needs nothing it held.
  [[gnu::noinline]] void filter_from_stack(const filters::Program& prog, detail::EventState& st,
                                           uint32_t flags, ThreadContext& ctx,
                                           std::span<const std::byte> rec) noexcept;

  /// One emit's state and its lanes (core/instance/lanes.h).
  template <class Writer, class Hooks>
  struct Emit;
  template <class Writer, class Hooks>
  EmitResult emit_impl(detail::EventState& st, uint32_t size, uint32_t cpu, bool cpu_given,
                       Writer& w, Hooks& hooks) noexcept;
  template <class Writer, class Hooks>
  EmitResult emit_in_scope(detail::EventState& st, uint32_t flags, ThreadContext& ctx,
                           uint32_t depth, uint32_t size, uint32_t cpu, bool cpu_given, Writer& w,
                           Hooks& hooks) noexcept;
  buffers::Reservation ring_reserve(uint32_t cpu, uint32_t size) noexcept;
  [[gnu::noinline]] buffers::Reservation reserve_any_cpu(uint32_t cpu, uint32_t size) noexcept;
  void ring_commit(const buffers::Reservation& r) noexcept;  ///< r granted (tested) by the caller
  void ring_discard(const buffers::Reservation& r) noexcept;
  template <class Writer, class Hooks>
  [[gnu::always_inline]] EmitResult dispatch(detail::EventState& st, uint32_t size, uint32_t cpu,
                                             bool cpu_given, Writer& w, Hooks& hooks) noexcept;

  struct Retired;
  detail::EventState& state_locked(const EventDesc& event);
  const detail::EventState* state_of(const EventDesc& event) const noexcept;
  void set_flag_locked(detail::EventState& st, uint32_t flag, bool on);
  [[gnu::cold, gnu::noinline]] void adaptive_check_staged(detail::EventState& st,
                                                          std::atomic<uint64_t>* c) noexcept;
  [[gnu::cold, gnu::noinline]] void adaptive_back_to_staging(detail::EventState& st,
                                                             std::atomic<uint64_t>* c) noexcept;
  [[gnu::noinline]] void adaptive_direct_rejected(detail::EventState& st,
                                                  std::atomic<uint64_t>* c) noexcept;
  void enable_locked(const EventDesc& event, bool on, Retired& retired,
                     std::optional<bool> soft = std::nullopt);
  void subscribe_locked(detail::EventState& st, bool on, Retired& retired);
  void unsubscribe_locked(detail::EventState& st, Retired& retired);
  void install_program_locked(detail::EventState& st,
                              std::shared_ptr<const filters::Program> program, std::string text,
                              Retired& retired);
  void reclaim(Retired& retired);

  InstanceOptions options_;
  Registry& registry_;
  TraceClock clock_;
  uint32_t ncpu_;
  bool cpu_local_ = false;  ///< the ring is RingBuffer<M, ..., Writers::cpu_local>
  /// Which RingBuffer<M, FunctionClock, NoHooks, W> ring_ is (fast_path.h).
  enum class RingKind : uint8_t {
    overwrite_local,
    drop_newest_local,
    overwrite_any,
    drop_newest_any
  };
  RingKind ring_kind_ = RingKind::drop_newest_any;
  uint64_t adaptive_threshold_;  ///< in 1/65536
  /// InstanceOptions::flight_recorder: the file the ring lives in (declared
  /// before ring_: destroyed after it).
  std::unique_ptr<flight::FlightFile> flight_;
  detail::LiveRing ring_;  ///< the live ring and the snapshot spare (snapshot_buffer.h)
  Stager stager_;          ///< by value: the emit reads its policy without a pointer hop
  std::unique_ptr<std::atomic<detail::EventState*>[]> states_;  ///< Registry::kMaxEvents entries
  mutable std::atomic<uint64_t> raw_refused_{0};

  mutable std::mutex mu_;  ///< control plane
  std::vector<std::unique_ptr<detail::EventState>> owned_states_;
  std::vector<Cmdline> extra_cmdlines_;
};

}  // namespace tracepipe

namespace tracepipe::detail {
/// Applies the `trigger` keys of a config section: set at run time by the
/// triggers library (core/triggers/triggers.cc) when it is linked, so the
/// instance knows nothing of triggers. Instance::apply calls it, and refuses
/// a config with triggers when it is not set.
using ConfigTriggersFn = void (*)(Instance& instance, const InstanceConfig& config);
void set_config_triggers_hook(ConfigTriggersFn fn) noexcept;

/// The write path's entry points that are not API: EventDecl's fan-out and
/// sideband's (emit into one subscribed state, inside the caller's
/// WriterScope), and tests that force a staging slot busy.
struct InstanceAccess {
  template <class Fill>
  [[gnu::always_inline]] static EmitResult emit_to_state_in_scope(EventState& state,
                                                                  ThreadContext& ctx,
                                                                  uint32_t depth, uint32_t size,
                                                                  Fill& fill) noexcept {
    return state.instance->emit_to_state_in_scope(state, ctx, depth, size, fill);
  }
  /// The stack lane's condition on st.flags: enabled, filtered, staged in
  /// the thread's slot (per_thread, or adaptive while it stages), no
  /// triggers (they see the whole record), not soft-disabled.
  [[gnu::always_inline]] static constexpr bool stages_on_stack(uint32_t flags) noexcept {
    constexpr uint32_t lane =
        EventState::kEnabled | EventState::kFiltered | EventState::kThreadStaging;
    return (flags & (lane | EventState::kSoftDisabled | EventState::kTriggered)) == lane;
  }
  /// The stack lane's two out-of-line steps, for a lane whose record size
  /// is known only at run time (the C API's packed records, core/capi): the
  /// caller holds the read-side section and built `rec`, header included.
  static void commit_from_stack(EventState& st, uint32_t flags, ThreadContext& ctx,
                                std::span<const std::byte> rec) noexcept {
    st.instance->commit_from_stack(st, flags, ctx, rec);
  }
  static void filter_from_stack(const filters::Program& prog, EventState& st, uint32_t flags,
                                ThreadContext& ctx, std::span<const std::byte> rec) noexcept {
    st.instance->filter_from_stack(prog, st, flags, ctx, rec);
  }

  /// EventDecl::trace's decided accept (Instance::commit_decided).
  template <class Build>
  [[gnu::always_inline]] static void commit_decided(EventState& st, uint32_t flags,
                                                    ThreadContext& ctx, uint32_t size,
                                                    const Build& build) noexcept {
    st.instance->commit_decided(st, flags, ctx, size, build);
  }
  /// EventDecl::trace's stack lane (Instance::stage_on_stack).
  template <uint32_t Size, class Build>
  [[gnu::always_inline]] static void stage_on_stack(EventState& st, uint32_t flags,
                                                    ThreadContext& ctx, uint32_t depth,
                                                    const filters::Program& prog,
                                                    const Build& build) noexcept {
    st.instance->stage_on_stack<Size>(st, flags, ctx, depth, prog, build);
  }
  static Stager& stager(Instance& instance) noexcept { return instance.stager_; }
  /// The live ring and the snapshot spare (core/instance/snapshot_buffer.h).
  static LiveRing& live_ring(Instance& instance) noexcept { return instance.ring_; }
  static const LiveRing& live_ring(const Instance& instance) noexcept { return instance.ring_; }
  /// The triggers library's (core/triggers): Instance::set_triggers and
  /// Instance::triggers.
  static void set_triggers(Instance& instance, const EventDesc& event,
                           std::shared_ptr<TriggerHook> hook) {
    instance.set_triggers(event, std::move(hook));
  }
  static std::shared_ptr<TriggerHook> triggers(const Instance& instance, const EventDesc& event) {
    return instance.triggers(event);
  }
  /// The event's state in `instance`, made if needed (control plane: takes
  /// the instance mutex). States live as long as the instance: triggers keep
  /// pointers to their targets' states (enable_event flips kSoftDisabled).
  static EventState& state(Instance& instance, const EventDesc& event) {
    std::lock_guard lk(instance.mu_);
    return instance.state_locked(event);
  }
  /// The write path's two calls into an event's triggers: one virtual call
  /// each, out of line (an event without triggers never reaches them:
  /// kTriggered is tested first).
  [[gnu::always_inline]] static TriggersFired call_triggers(EventState& st,
                                                            const TriggerCall& c) noexcept {
    TriggerHook* h = st.triggers.load(std::memory_order_acquire);
    if (h == nullptr) return {};
    return {h, h->call(c)};
  }
  [[gnu::always_inline]] static void post_triggers(const TriggersFired& f,
                                                   const TriggerCall& c) noexcept {
    f.hook->post_call(f.mask, c);
  }
  /// Runs the event's triggers on a record that does not reach the
  /// instance, because a filter outside it rejected the record (replay's
  /// filters that need the recorded context): triggers see every record,
  /// kept or discarded, as in the kernel. `ts` is the record's time stamp
  /// (common_timestamp on an external_time instance). No-op without
  /// triggers or on an unregistered thread. Write path: no allocation, lock
  /// or system call.
  static void run_triggers_only(EventState& st, std::span<const std::byte> rec, uint32_t cpu,
                                uint64_t ts) noexcept {
    if ((st.flags.load(std::memory_order_acquire) & EventState::kTriggered) == 0) [[likely]]
      return;
    ThreadContext* ctx = thread_context();
    if (ctx == nullptr) [[unlikely]]
      return;
    WriterScope scope(*ctx);  // the list stays alive until the scope ends
    tl_external_ts = ts;
    const TriggerCall c{rec, ctx, cpu, false};
    const TriggersFired f = call_triggers(st, c);
    if (f.mask != 0) post_triggers(f, c);
  }
};
}  // namespace tracepipe::detail

#include "tracepipe/core/instance/fast_path.h"  // IWYU pragma: export
