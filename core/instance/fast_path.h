#pragma once
// Inline definitions of the write path declared in core/instance/instance.h:
// the emit's entry and its dispatch; the lanes it dispatches to are in
// core/instance/lanes.h, whose top lists the steps E1-E11. The picture and
// the invariants (F1..F6) are at the top of instance.h.
#include <cstring>

#include "tracepipe/core/instance/inline_lambda.h"
#include "tracepipe/core/instance/instance.h"

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
/// bounce half of each move through the stack (4 extra moves per 64 bytes).
[[gnu::always_inline]] inline void copy_record(std::byte* dst, const std::byte* src,
                                               size_t n) noexcept {
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
static_assert(offsetof(CommonHeader, common_flags) == 2 &&
              offsetof(CommonHeader, common_preempt_count) == 3);

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
    // the large inlined emit; its start-up cost weighed on every filter that
    // needs a context (CPU, COMM).
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
// slower (code size, in the staged-reject and commit paths).
[[gnu::always_inline]] inline buffers::Reservation Instance::ring_reserve(uint32_t cpu,
                                                                          uint32_t size) noexcept {
  using buffers::FunctionClock, buffers::NoHooks, buffers::OverflowMode, buffers::RingBuffer,
      buffers::Writers;
  switch (ring_kind_) {
    case RingKind::overwrite_local:
      return static_cast<
                 RingBuffer<OverflowMode::overwrite, FunctionClock, NoHooks, Writers::cpu_local>&>(
                 *ring_)
          .reserve(cpu, size);
    case RingKind::drop_newest_local:
      return static_cast<RingBuffer<OverflowMode::drop_newest, FunctionClock, NoHooks,
                                    Writers::cpu_local>&>(*ring_)
          .reserve(cpu, size);
    default:
      return reserve_any_cpu(cpu, size);  // replay's rings: out of line, keeps the emit small
  }
}

[[gnu::always_inline]] inline void Instance::ring_commit(const buffers::Reservation& r) noexcept {
  buffers::RingBufferBase::commit_granted(r);  // the same store for every kind; r was tested
}

[[gnu::always_inline]] inline void Instance::ring_discard(const buffers::Reservation& r) noexcept {
  using buffers::FunctionClock, buffers::NoHooks, buffers::OverflowMode, buffers::RingBuffer,
      buffers::Writers;
  switch (ring_kind_) {
    case RingKind::overwrite_local:
      return static_cast<
                 RingBuffer<OverflowMode::overwrite, FunctionClock, NoHooks, Writers::cpu_local>&>(
                 *ring_)
          .discard(r);
    case RingKind::drop_newest_local:
      return static_cast<RingBuffer<OverflowMode::drop_newest, FunctionClock, NoHooks,
                                    Writers::cpu_local>&>(*ring_)
          .discard(r);
    case RingKind::overwrite_any:
      return static_cast<RingBuffer<OverflowMode::overwrite>&>(*ring_).discard(r);
    default:
      return static_cast<RingBuffer<OverflowMode::drop_newest>&>(*ring_).discard(r);
  }
}

template <class Writer, class Hooks>
[[gnu::always_inline]] inline EmitResult Instance::emit_impl(detail::EventState& st, uint32_t size,
                                                             uint32_t cpu, bool cpu_given,
                                                             Writer& w, Hooks& hooks) noexcept {
  const uint32_t flags = st.flags.load(std::memory_order_acquire);
  if ((flags & detail::EventState::kEnabled) == 0) [[unlikely]]
    return EmitResult::disabled;
  ThreadContext* ctx = thread_context();  // E1 registered thread, or drop
  if (ctx == nullptr) [[unlikely]] {
    count_unregistered_drop();
    return EmitResult::lost;
  }
  WriterScope scope(*ctx);  // E2 nesting depth + read-side section (F5)
  return emit_in_scope(st, flags, *ctx, scope.depth(), size, cpu, cpu_given, w, hooks);
}

// The emit once the caller holds a WriterScope on ctx and has seen `flags`
// (st.flags, loaded with acquire) say enabled (emit_impl above, or
// EventDecl::trace_slow_path, whose one scope covers its subscriber list and
// every instance it emits into: the thread-local lookup and the read-side
// section are paid once per event, not once per instance).
template <class Writer, class Hooks>
[[gnu::always_inline]] inline EmitResult Instance::emit_in_scope(detail::EventState& st,
                                                                 uint32_t flags, ThreadContext& tc,
                                                                 uint32_t depth, uint32_t size,
                                                                 uint32_t cpu, bool cpu_given,
                                                                 Writer& w, Hooks& hooks) noexcept {
  ThreadContext* ctx = &tc;
  auto& c = thread_counters(*ctx, st.counters).v;
  // E3 The CPU: any_cpu rings need it to pick a buffer; cpu_local rings read
  // it themselves, so it is read here only when the caller gave one. A given
  // CPU at or above the buffer count picks buffer cpu % buffers, while the
  // filter sees it as given (RawEmit's contract).
  const uint32_t given_cpu = cpu;
  if (cpu_given) {
    if (cpu >= ncpu_) [[unlikely]]
      cpu %= ncpu_;
  } else if (!cpu_local_) {
    cpu = current_cpu();
    if (cpu >= ncpu_) [[unlikely]]
      cpu %= ncpu_;
  }
  uint64_t hdr = 0;  // E4
  if constexpr (!Writer::kRaw) {
    hdr = detail::header_word(st.type, ctx->tid);
    if ((depth | ctx->in_signal.load(std::memory_order_relaxed)) != 0) [[unlikely]]
      hdr |= detail::nested_header_bits(depth);
  }
  Emit<Writer, Hooks> e{*this,     st,        flags, ctx,   depth, size, cpu,
                        given_cpu, cpu_given, w,     hooks, c,     hdr};
  using S = detail::EventState;

  // thread_slot: filtered, not soft-disabled, staging in the thread's slot
  // (per_thread, or adaptive while it stages), by one test of the flags. A
  // failed claim (nested, too big) goes on below, where the Stager's claim
  // fails the same way and counts why.
  constexpr uint32_t kLane = S::kFiltered | S::kThreadStaging;
  if ((flags & (kLane | S::kSoftDisabled)) == kLane && size <= kMaxStagedRecord) {
    if (buffers::PerThreadTempBuffer::claim_own()) [[likely]]  // E5
      return e.thread_slot();
  }
  if ((flags & (S::kFiltered | S::kSoftDisabled | S::kTriggered)) == 0) return e.unfiltered();
  // direct: filtered, not soft-disabled, no slot to try (staging off, or
  // adaptive gone direct). Here kAdaptive (set for every event of an
  // adaptive instance, never cleared) is the instance's staging mode.
  constexpr uint32_t kDirectMask =
      S::kFiltered | S::kSoftDisabled | S::kThreadStaging | S::kCpuStaging;
  if ((flags & kDirectMask) == S::kFiltered)
    return e.direct(false, [this]() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
      return options_.staging == Staging::adaptive;
    });

  const bool soft = (flags & S::kSoftDisabled) != 0;
  const bool adaptive_direct = (flags & (S::kAdaptive | S::kThreadStaging)) == S::kAdaptive;
  const bool stage = options_.staging != Staging::off && !adaptive_direct;
  const auto adaptive_now = [adaptive_direct]() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    return adaptive_direct;
  };
  // soft_disabled: staging in the thread's slot, which thread_slot did not
  // try. Nested and too-big emits failed its claim and fail the Stager's too.
  if ((flags & (S::kThreadStaging | S::kSoftDisabled)) == (S::kThreadStaging | S::kSoftDisabled) &&
      size <= kMaxStagedRecord) {
    if (buffers::PerThreadTempBuffer::claim_own()) [[likely]]  // E5
      return e.soft_disabled();
  }
  if (stage) {
    const Claim cl = stager_.try_claim(size);  // E5
    if (cl) [[likely]]
      return e.cpu_slot(cl, soft);
    e.slot_refused(cl);
  }
  return e.direct(soft, adaptive_now);
}

template <class Writer, class Hooks>
[[gnu::always_inline]] inline EmitResult Instance::dispatch(detail::EventState& st, uint32_t size,
                                                            uint32_t cpu, bool cpu_given, Writer& w,
                                                            Hooks& hooks) noexcept {
  return emit_impl(st, size, cpu, cpu_given, w, hooks);
}

template <class Fill, class Hooks>
[[gnu::always_inline]] inline EmitResult Instance::emit_fill_with(const EventDesc& event,
                                                                  uint32_t size, Fill& fill,
                                                                  Hooks& hooks) noexcept {
  detail::EventState* st = states_[event.index()].load(std::memory_order_acquire);
  if (st == nullptr || st->desc != &event)
      [[unlikely]]  // never configured here / another registry's event
    return EmitResult::disabled;
  if (size < sizeof(CommonHeader)) [[unlikely]]
    size = sizeof(CommonHeader);
  detail::FillWriter<std::remove_reference_t<Fill>> w{fill};
  return dispatch(*st, size, 0, false, w, hooks);
}

template <class Hooks>
inline EmitResult Instance::emit_raw(const EventDesc& event, std::span<const std::byte> record,
                                     uint32_t cpu, Hooks& hooks) noexcept {
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
inline EmitResult Instance::emit_raw(std::span<const std::byte> record, uint32_t cpu,
                                     Hooks& hooks) noexcept {
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

#include "tracepipe/core/instance/lanes.h"  // IWYU pragma: export (Instance::Emit, stage_on_stack)
