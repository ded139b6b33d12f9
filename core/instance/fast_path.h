#pragma once
// Inline definitions of the write path declared in core/instance/instance.h. The
// picture and the invariants (F1..F6) are at the top of instance.h; the
// labels below (R1..R9) name the steps.
#include <cstring>

#include "tracepipe/core/instance/instance.h"

// Marks a lambda's call operator always_inline, after its parameter list:
// clang takes the attribute before noexcept, GCC after it.
#if defined(__clang__)
#define TRACEPIPE_ALWAYS_INLINE_LAMBDA(spec) __attribute__((always_inline)) spec
#else
#define TRACEPIPE_ALWAYS_INLINE_LAMBDA(spec) spec __attribute__((always_inline))
#endif

namespace tracepipe {

namespace detail {

/// Builds a record from the instance's common header and a fill callback.
template <class Fill>
struct FillWriter {
  static constexpr bool kRaw = false;
  Fill& fill;
  [[gnu::always_inline]] void operator()(std::span<std::byte> rec, uint64_t header) const noexcept {
    std::memcpy(rec.data(), &header, sizeof header);  // CommonHeader, as one store
    fill(rec);
  }
};

/// Copies a pre-built record (replay): the recorded header is kept.
struct RawWriter {
  static constexpr bool kRaw = true;
  std::span<const std::byte> src;
  [[gnu::always_inline]] void operator()(std::span<std::byte> rec, uint64_t) const noexcept {
    std::memcpy(rec.data(), src.data(), src.size());
  }
};

/// Copies a staged record into its reservation: 32-byte moves for records up
/// to 256 bytes (no call into the library's memcpy dispatch), memcpy beyond.
/// The moves copy straight from slot to ring: a 32-byte temporary had GCC
/// bounce half of each move through the stack (4 extra moves per 64 bytes,
/// ~1 ns per staged commit).
[[gnu::always_inline]] inline void copy_record(std::byte* dst, const std::byte* src, size_t n) noexcept {
  if (n <= 256) [[likely]] {
    size_t i = 0;
    for (; i + 32 <= n; i += 32) __builtin_memcpy(dst + i, src + i, 32);
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, src + i, 8);
      std::memcpy(dst + i, &w, 8);
    }
    for (; i < n; ++i) dst[i] = src[i];
    return;
  }
  std::memcpy(dst, src, n);
}

/// The CommonHeader of a record as one little-endian word: common_type,
/// common_flags, common_preempt_count, common_pid (core/events/event.h).
[[gnu::always_inline]] inline uint64_t header_word(uint16_t type, int32_t pid) noexcept {
  return uint64_t{type} | (uint64_t{static_cast<uint32_t>(pid)} << 32);
}
/// The flags and preempt-count bytes of a nested emit (depth emits already in
/// flight on this thread) or of one inside a SignalScope: out of line.
[[gnu::cold, gnu::noinline]] inline uint64_t nested_header_bits(uint32_t depth) noexcept {
  const uint64_t preempt = depth < 15 ? depth : 15;
  return (uint64_t{TraceFlag::hardirq} << 16) | (preempt << 24);
}
static_assert(offsetof(CommonHeader, common_flags) == 2 && offsetof(CommonHeader, common_preempt_count) == 3);

/// Makes the filters::EvalContext of one emit when the program asks for it
/// (Program::match_lazy). cpu_local writers know no CPU up front: theirs is
/// read then, where the thread runs now.
struct EvalContextMaker {
  const filters::Program* prog;
  const ThreadContext* ctx;
  uint32_t cpu;
  /// The instance's cpu_local_, read only when a context is made: a bool
  /// computed up front was loaded, and kept, on every filtered emit.
  const bool& cpu_local;
  bool cpu_given;  ///< the caller gave the CPU (replay)
  [[gnu::always_inline]] filters::EvalContext operator()() const noexcept {
    // Member by member, not EvalContext{cpu, comm}: the aggregate form also
    // zeroes the padding after `cpu`, which GCC did with `rep stos` inside
    // the large inlined emit; its start-up cost made every filter that needs
    // a context (CPU, COMM) cost 6-9 ns more per event.
    filters::EvalContext e;
    e.cpu = cpu_local && !cpu_given && prog->needs_cpu() ? current_cpu() : cpu;
    e.comm = ctx->comm_view();
    return e;
  }
};

}  // namespace detail

// The ring's write path is specialised per overflow mode and writers
// (template arguments); the emit around it is written once. Only reserve()
// and discard() are picked by ring_kind_ (one predictable branch each;
// commit is the same store for all):
// inlining four whole copies of the emit, one per kind, made every emit
// ~2 ns slower (code size: measured in the staged-reject and commit paths).
[[gnu::always_inline]] inline buffers::Reservation Instance::ring_reserve(uint32_t cpu, uint32_t size) noexcept {
  using buffers::FunctionClock, buffers::NoHooks, buffers::OverflowMode, buffers::RingBuffer, buffers::Writers;
  switch (ring_kind_) {
    case RingKind::overwrite_local:
      return static_cast<RingBuffer<OverflowMode::overwrite, FunctionClock, NoHooks, Writers::cpu_local>&>(*ring_)
          .reserve(cpu, size);
    case RingKind::drop_newest_local:
      return static_cast<RingBuffer<OverflowMode::drop_newest, FunctionClock, NoHooks, Writers::cpu_local>&>(*ring_)
          .reserve(cpu, size);
    default:
      return reserve_any_cpu(cpu, size);  // replay's rings: out of line, keeps the emit small
  }
}

[[gnu::always_inline]] inline void Instance::ring_commit(const buffers::Reservation& r) noexcept {
  buffers::RingBufferBase::commit_granted(r);  // the same store for every kind; r was tested
}

[[gnu::always_inline]] inline void Instance::ring_discard(const buffers::Reservation& r) noexcept {
  using buffers::FunctionClock, buffers::NoHooks, buffers::OverflowMode, buffers::RingBuffer, buffers::Writers;
  switch (ring_kind_) {
    case RingKind::overwrite_local:
      return static_cast<RingBuffer<OverflowMode::overwrite, FunctionClock, NoHooks, Writers::cpu_local>&>(*ring_)
          .discard(r);
    case RingKind::drop_newest_local:
      return static_cast<RingBuffer<OverflowMode::drop_newest, FunctionClock, NoHooks, Writers::cpu_local>&>(*ring_)
          .discard(r);
    case RingKind::overwrite_any: return static_cast<RingBuffer<OverflowMode::overwrite>&>(*ring_).discard(r);
    default: return static_cast<RingBuffer<OverflowMode::drop_newest>&>(*ring_).discard(r);
  }
}

template <class Writer, class Hooks>
[[gnu::always_inline]] inline EmitResult Instance::emit_impl(detail::EventState& st, uint32_t size, uint32_t cpu,
                                                             bool cpu_given, Writer& w, Hooks& hooks) noexcept {
  const uint32_t flags = st.flags.load(std::memory_order_acquire);
  if ((flags & detail::EventState::kEnabled) == 0) [[unlikely]]
    return EmitResult::disabled;
  ThreadContext* ctx = thread_context();  // (R1) registered thread, or drop
  if (ctx == nullptr) [[unlikely]] {
    count_unregistered_drop();
    return EmitResult::lost;
  }
  WriterScope scope(*ctx);  // (R2) nesting depth + read-side section (F5)
  return emit_in_scope(st, flags, *ctx, scope.depth(), size, cpu, cpu_given, w, hooks);
}

// The emit once the caller holds a WriterScope on ctx and has seen `flags`
// (st.flags, loaded with acquire) say enabled (emit_impl above, or
// EventDecl::trace_slow_path, whose one scope covers its subscriber list and
// every instance it emits into: the thread-local lookup and the read-side
// section are paid once per event, not once per instance).
template <class Writer, class Hooks>
[[gnu::always_inline]] inline EmitResult Instance::emit_in_scope(detail::EventState& st, uint32_t flags, ThreadContext& tc,
                                                                 uint32_t depth, uint32_t size, uint32_t cpu,
                                                                 bool cpu_given, Writer& w, Hooks& hooks) noexcept {
  ThreadContext* ctx = &tc;
  auto& c = thread_counters(*ctx, st.counters).v;
  // The CPU: any_cpu rings need it to pick a buffer; cpu_local rings read it
  // themselves, so it is read here only when the caller gave one. A given
  // CPU at or above the buffer count picks buffer cpu % buffers, while the
  // filter sees it as given (emit_raw's contract).
  const uint32_t given_cpu = cpu;
  if (cpu_given) {
    if (cpu >= ncpu_) [[unlikely]]
      cpu %= ncpu_;
  } else if (!cpu_local_) {
    cpu = current_cpu();
    if (cpu >= ncpu_) [[unlikely]]
      cpu %= ncpu_;
  }

  uint64_t hdr = 0;
  if constexpr (!Writer::kRaw) {
    hdr = detail::header_word(st.type, ctx->tid);
    if ((depth | ctx->in_signal.load(std::memory_order_relaxed)) != 0) [[unlikely]]
      hdr |= detail::nested_header_bits(depth);
  }

  // (R4, R6) The filter, run by whichever path built the record (on_staged
  // after its claim, or the direct path): the program pointer is loaded
  // once per emit (F5); its context (CPU, comm) is built only if a
  // predicate can read it, not for integer-compare programs (truth-table
  // mode).
  const auto passes_filter = [&](std::span<const std::byte> rec) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    const filters::Program* prog = st.program.load(std::memory_order_acquire);  // never null
    const uint32_t filter_cpu = cpu_given ? given_cpu : cpu;
    return prog->match_lazy(rec, detail::EvalContextMaker{prog, ctx, filter_cpu, cpu_local_, cpu_given});
  };

  // (R6a) The event's triggers (kTriggered, in the flags already loaded):
  // they see every built record, kept or discarded, before the filter
  // decides; post-commit actions run after the commit or discard (R8a).
  // Out of line: an event without triggers pays one test of `flags`.
  const auto run_triggers = [&](std::span<const std::byte> rec) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    detail::TriggersFired f;
    if ((flags & detail::EventState::kTriggered) != 0) [[unlikely]]
      f = detail::InstanceAccess::call_triggers(
          st, {rec, ctx, cpu_given ? given_cpu : cpu, cpu_local_ && !cpu_given});
    return f;
  };
  const auto post_triggers = [&](const detail::TriggersFired& f) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    if (f.mask != 0) [[unlikely]]
      detail::InstanceAccess::post_triggers(f, {{}, ctx, cpu_given ? given_cpu : cpu, cpu_local_ && !cpu_given});
  };

  // (R6..R8) on a claimed staging slot: build, filter, then copy into the
  // ring and commit, or just release (nothing touched the ring). `release`
  // frees the slot. Inlined three times below: the thread-slot lane (soft is
  // constant false there and folds away), the thread's slot for a
  // soft-disabled event, and the per-CPU slot with its handle. `adaptive`
  // (the lane): every 32nd accept of an adaptive event (kAdaptive, in the
  // flags already loaded) asks, out of line, whether it is accepted often
  // enough to go direct; a reject pays nothing.
  const auto on_staged = [&](std::span<std::byte> rec, bool soft, bool adaptive, auto release)
                             TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) -> EmitResult {
    w(rec, hdr);
    hooks(EmitStep::built_staged);
    const detail::TriggersFired fired = run_triggers(rec);  // (R6a)
    bool accept = false;
    if (!soft) [[likely]]
      accept = passes_filter(rec);  // (R6)
    EmitResult res;
    if (accept) {
      hooks(EmitStep::before_copy);
      // (R7) copy into the ring of the CPU we run on now; stamped here (F1, F3).
      uint32_t wcpu = cpu;
      if (!cpu_local_ && !cpu_given) {
        wcpu = current_cpu();
        if (wcpu >= ncpu_) [[unlikely]]
          wcpu %= ncpu_;
      }
      const buffers::Reservation rr = ring_reserve(wcpu, size);
      if (rr) [[likely]] {
        detail::copy_record(rr.payload().data(), rec.data(), size);
        ring_commit(rr);
        counter_add(c[detail::slot::kept_staged]);
        if (adaptive && (flags & detail::EventState::kAdaptive) != 0 &&
            (c[detail::slot::kept_staged].load(std::memory_order_relaxed) & 31) == 0) [[unlikely]]
          adaptive_check_staged(st, c);
        res = EmitResult::kept;
      } else {
        counter_add(c[detail::slot::lost_staged]);
        res = EmitResult::lost;
      }
    } else {
      counter_add(c[detail::slot::rejected_staged]);  // (R8) cheap discard: nothing touched the ring
      if (soft) counter_add(c[detail::slot::soft]);
      res = EmitResult::discarded;
    }
    release();
    post_triggers(fired);  // (R8a)
    return res;
  };
  const auto release_own = []() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) { buffers::PerThreadTempBuffer::release_own(); };

  // (R5) no clock read (F1). The lane: filtered, not soft-disabled, staging
  // in the thread's slot (kThreadStaging: per_thread, or adaptive while it
  // stages), decided by one test of the flags already loaded. A loop of
  // staged discards runs at the speed of its instruction count, and this
  // lane has no policy to test and no handle or capacity to load. A failed
  // claim (nested, too big) goes on below, where try_claim() fails the same
  // way and counts why.
  constexpr uint32_t kLane = detail::EventState::kFiltered | detail::EventState::kThreadStaging;
  if ((flags & (kLane | detail::EventState::kSoftDisabled)) == kLane && size <= kMaxStagedRecord) {
    if (buffers::PerThreadTempBuffer::claim_own()) [[likely]]
      return on_staged({buffers::PerThreadTempBuffer::own_data(), size}, false, true, release_own);
  }

  if ((flags & (detail::EventState::kFiltered | detail::EventState::kSoftDisabled | detail::EventState::kTriggered)) == 0) {
    // (R3) unfiltered: reserve, build in place, commit.
    const buffers::Reservation r = ring_reserve(cpu, size);
    if (!r) [[unlikely]] {
      counter_add(c[detail::slot::lost_unfiltered]);
      return EmitResult::lost;
    }
    w(r.payload(), hdr);
    ring_commit(r);
    counter_add(c[detail::slot::kept_unfiltered]);
    return EmitResult::kept;
  }

  // (R9) direct: reserve in the ring, build, filter, commit or discard.
  // Inlined twice: for the commonest direct emit (filtered, staging off or
  // adaptive gone direct), where `soft` is constant false, and for the emits
  // that tried a slot. One shared copy kept `soft` and the adaptive flag in
  // stack slots across the reserve: two stores and two reloads per direct
  // commit.
  // adaptive_direct() (adaptive, and direct now: mostly accepted, so no
  // extra copy) is asked only on the reject and lost paths; the first copy
  // reads it there from options_, fixed at construction. Such emits are not
  // counted as adaptive here: event_stats() derives adaptive_direct from the
  // direct counts less nested, contended and too_big, one store less per emit.
  const auto direct = [&](bool soft, auto adaptive_direct) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) -> EmitResult {
    const buffers::Reservation r = ring_reserve(cpu, size);
    if (!r) [[unlikely]] {
      counter_add(c[detail::slot::lost_direct]);
      // An adaptive event stages again while the ring refuses (full, paused,
      // busy): there its rejects are discarded without asking the ring, which
      // would count each as lost. Kept staged accepts bring it back direct
      // once the ring has room. A too-big record is refused by size alone.
      if (adaptive_direct() && r.error() != buffers::ReserveError::too_big) adaptive_back_to_staging(st, c);
      return EmitResult::lost;
    }
    w(r.payload(), hdr);
    hooks(EmitStep::built_direct);
    const detail::TriggersFired fired = run_triggers(r.payload());  // (R6a)
    if (!soft && passes_filter(r.payload())) {
      ring_commit(r);
      counter_add(c[detail::slot::kept_direct]);  // also an adaptive event's evidence: its next reject reads it
      post_triggers(fired);  // (R8a)
      return EmitResult::kept;
    }
    ring_discard(r);  // reclaimed if still the last record, else padding
    counter_add(c[detail::slot::rejected_direct]);
    if (soft) counter_add(c[detail::slot::soft]);
    post_triggers(fired);  // (R8a)
    // Adaptive gone direct: the thread's average moves at rejects only, an
    // accept pays nothing (adaptive_direct_rejected catches up the accepts
    // since the thread's previous reject from its kept_direct count).
    if (adaptive_direct()) adaptive_direct_rejected(st, c);
    return EmitResult::discarded;
  };

  // Filtered, not soft-disabled, and no slot to try (staging off, or
  // adaptive gone direct: kThreadStaging clear): straight to the direct
  // path, by one test of the flags. Else the slots, in the order below.
  constexpr uint32_t kDirectMask =
      detail::EventState::kFiltered | detail::EventState::kSoftDisabled | detail::EventState::kThreadStaging | detail::EventState::kCpuStaging;
  // Here kAdaptive (set for every event of an adaptive instance, never
  // cleared) is the instance's staging mode.
  if ((flags & kDirectMask) == detail::EventState::kFiltered)
    return direct(false, [this]() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) { return options_.staging == Staging::adaptive; });

  const bool soft = (flags & detail::EventState::kSoftDisabled) != 0;
  const bool adaptive_direct =
      (flags & (detail::EventState::kAdaptive | detail::EventState::kThreadStaging)) == detail::EventState::kAdaptive;
  const bool stage = options_.staging != Staging::off && !adaptive_direct;

  // The thread's slot when the lane above did not try it: a soft-disabled
  // event that stages in it (soft events never accept: nothing to check).
  // Nested and too-big emits failed the lane's claim and fail try_claim too.
  if ((flags & (detail::EventState::kThreadStaging | detail::EventState::kSoftDisabled)) ==
          (detail::EventState::kThreadStaging | detail::EventState::kSoftDisabled) &&
      size <= kMaxStagedRecord) {
    if (buffers::PerThreadTempBuffer::claim_own()) [[likely]]
      return on_staged({buffers::PerThreadTempBuffer::own_data(), size}, true, false, release_own);
  }

  if (stage) {
    const Claim cl = stager_.try_claim(size);
    if (cl) [[likely]]
      return on_staged(cl.payload(), soft, false, [&]() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) { stager_.release(cl); });
    // Busy: this thread's own outer emit holds the slot (nested), or, with
    // per-CPU slots and no emit of ours in flight, another thread does: one
    // preempted on this CPU between its claim and release (contended).
    counter_add(c[cl.why() == buffers::StageError::too_big              ? detail::slot::too_big
                  : depth == 0 && stager_.per_cpu() ? detail::slot::contended
                                                    : detail::slot::nested]);
  }
  return direct(soft, [adaptive_direct]() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) { return adaptive_direct; });
}

// The stack lane (top of instance.h). The steps keep the labels of the
// staged path: (R6) filter, (R7) copy on accept, (R8) discard on reject.
template <uint32_t Size, class Build>
[[gnu::always_inline]] inline void Instance::stage_on_stack(detail::EventState& st, uint32_t flags, ThreadContext& ctx,
                                                            uint32_t depth, const filters::Program& program,
                                                            const Build& build) noexcept {
  static_assert(Size >= sizeof(CommonHeader) && Size <= kMaxStagedRecord);
  // This call's own staging buffer: a signal handler's emit has its own
  // frame (F2). Only the bytes the filter reads are written before it runs.
  // At least 32 bytes: GCC cannot see that the filter's 8- and 16-byte
  // string loads stay inside a small record (match_inline checks the size)
  // and warned of an access past a 12-byte array.
  alignas(8) std::byte rec[Size < 32 ? 32 : Size];
  const filters::Program* prog = &program;  // the caller's one load of st.program (F5)
  const uint64_t need = prog->read_chunks();
  const auto header = [&]() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    uint64_t hdr = detail::header_word(st.type, ctx.tid);
    if ((depth | ctx.in_signal.load(std::memory_order_relaxed)) != 0) [[unlikely]] {
      // nested_header_bits() inline: no call on the lane (see commit_from_stack)
      const uint64_t preempt = depth < 15 ? depth : 15;
      hdr |= (uint64_t{TraceFlag::hardirq} << 16) | (preempt << 24);
    }
    std::memcpy(rec, &hdr, sizeof hdr);
  };
  if ((need & 1) != 0) header();  // a common_* field is read
  build(rec, need);
  int verdict = prog->match_inline({rec, Size});  // (R6) one compare, a string prefix, a truth table
  if (verdict < 0) [[unlikely]] {
    // The general evaluator is a call: finish the record first, so that
    // nothing the lane holds in registers is needed after it.
    if ((need & 1) == 0) header();
    build(rec, ~need);
    filter_from_stack(*prog, st, flags, ctx, {rec, Size});  // (R6..R8)
    return;
  }
  if (verdict == 0) {
    counter_add(thread_counters(ctx, st.counters).v[detail::slot::rejected_staged]);  // (R8) nothing else touched
    return;
  }
  if ((need & 1) == 0) header();
  build(rec, ~need);  // the fields the filter did not read (a field in both sets: the same bytes again)
  commit_from_stack(st, flags, ctx, {rec, Size});  // (R7)
}

template <class Writer, class Hooks>
[[gnu::always_inline]] inline EmitResult Instance::dispatch(detail::EventState& st, uint32_t size, uint32_t cpu,
                                                            bool cpu_given, Writer& w, Hooks& hooks) noexcept {
  return emit_impl(st, size, cpu, cpu_given, w, hooks);
}

template <class Fill, class Hooks>
[[gnu::always_inline]] inline EmitResult Instance::emit_fill(const EventDesc& event, uint32_t size, Fill&& fill,
                                                             Hooks&& hooks) noexcept {
  detail::EventState* st = states_[event.index()].load(std::memory_order_acquire);
  if (st == nullptr || st->desc != &event) [[unlikely]]  // never configured here / another registry's event
    return EmitResult::disabled;
  if (size < sizeof(CommonHeader)) [[unlikely]]
    size = sizeof(CommonHeader);
  detail::FillWriter<std::remove_reference_t<Fill>> w{fill};
  return dispatch(*st, size, 0, false, w, hooks);
}

template <class Hooks>
inline EmitResult Instance::emit_raw(const EventDesc& event, std::span<const std::byte> record, uint32_t cpu,
                                     Hooks&& hooks) noexcept {
  detail::EventState* st = states_[event.index()].load(std::memory_order_acquire);
  if (st == nullptr || st->desc != &event) [[unlikely]]
    return EmitResult::disabled;
  if (record.size() < sizeof(CommonHeader) || record.size() > UINT32_MAX) [[unlikely]] {
    raw_refused_.fetch_add(1, std::memory_order_relaxed);
    return EmitResult::lost;
  }
  detail::RawWriter w{record};
  return dispatch(*st, static_cast<uint32_t>(record.size()), cpu, true, w, hooks);
}

template <class Hooks>
inline EmitResult Instance::emit_raw(std::span<const std::byte> record, uint32_t cpu, Hooks&& hooks) noexcept {
  if (record.size() < sizeof(CommonHeader)) [[unlikely]] {
    raw_refused_.fetch_add(1, std::memory_order_relaxed);
    return EmitResult::lost;
  }
  uint16_t id;
  std::memcpy(&id, record.data(), sizeof id);
  const EventDesc* d = registry_.by_id(id);
  if (d == nullptr) [[unlikely]] {
    raw_refused_.fetch_add(1, std::memory_order_relaxed);
    return EmitResult::lost;
  }
  return emit_raw(*d, record, cpu, hooks);
}

// ── EventDecl emission (core/instance/event_decl.h) ─────────────────────────────────────

}  // namespace tracepipe
