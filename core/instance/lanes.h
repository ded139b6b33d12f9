#pragma once
// The write path's lanes. An emit tests the event's flags once
// (Instance::emit_in_scope, fast_path.h) and runs one lane; the picture and
// the invariants F1-F6 are at the top of core/instance/instance.h.
//
// ══ Steps, in the order an emit runs them (labels E1-E11 here and in the
//    other core/instance files; the ring buffer's own are in ring_buffer.h) ══
//   E1  the thread's context: a registered thread, or the emit is dropped
//   E2  WriterScope: nesting depth and the read-side section (F5)
//   E3  the CPU: the caller's (replay), read here (any_cpu rings), or left
//       to the ring, which reads it itself (cpu_local rings)
//   E4  the record's common header word (nested bits out of line)
//   E5  claim a staging slot: no clock read (F1)
//   E6  build the record: in the slot, in the ring, or on the stack
//   E7  the event's triggers see the built record, kept or discarded
//   E8  the filter: the program pointer is loaded once per emit (F5); its
//       context (CPU, comm) is made only if a predicate reads it
//   E9  accept: reserve in the ring (stamped there, F1), copy, commit
//   E10 reject: release the slot (the cheap discard: nothing touched the
//       ring), or ring.discard (reclaimed if still last, else padding)
//   E11 the triggers' post-commit actions
//
// ══ Lanes (emit_in_scope picks one; a slot lane whose claim fails goes on) ═
//   thread_slot    filtered, staging in the thread's slot:  E5 E6 E7 E8 E9|E10 E11
//   unfiltered     no filter, no soft-disable, no triggers:  reserve E6 commit
//   direct         filtered, no slot to try, or a slot busy: reserve E6 E7 E8 E9|E10 E11
//   soft_disabled  soft-disabled, staging in the thread's slot: E5 E6 E7 E10 E11
//   cpu_slot       the Stager's slot (per-CPU, or per-thread beside a
//                  soft-disable or an adaptive policy): E5 E6 E7 E8 E9|E10 E11;
//                  a claim refused (busy, too big) is counted, then direct
//   stack          EventDecl::trace of a fixed-size event (Instance::
//                  stage_on_stack below): E6 on the caller's stack, E8, E9|E10
//   reject-first   EventDecl::trace_rejects_first (event_decl.h): E8 on the
//                  argument itself, before any record is built
// The slot lanes share one tail (staged): E6 E7 E8 E9|E10 E11.
//
// Mirrors kernel/trace/trace.c: trace_event_buffer_lock_reserve (E5, else
// the direct reserve) and __buffer_unlock_commit / __trace_event_discard_commit
// (E9, E10).
#include <atomic>
#include <cstdint>
#include <span>

#include "tracepipe/core/instance/instance.h"

namespace tracepipe {

/// One emit's state once E1-E4 are done, and the lanes that use it.
/// Always inlined into emit_in_scope: the members stay in registers.
template <class Writer, class Hooks>
struct Instance::Emit {
  Instance& in;
  detail::EventState& st;
  const uint32_t flags;  ///< st.flags, loaded once with acquire
  ThreadContext* ctx;
  const uint32_t depth;
  const uint32_t size;
  const uint32_t cpu;        ///< E3: the buffer's CPU (any_cpu rings or a given CPU)
  const uint32_t given_cpu;  ///< the caller's CPU as given, for the filter (replay)
  const bool cpu_given;
  Writer& w;
  Hooks& hooks;
  decltype(detail::CounterGroup::v)& c;  ///< the thread's counters of this event
  const uint64_t hdr;                    ///< E4

  // ── Steps shared by the lanes ──────────────────────────────────────────

  /// E8 on a built record.
  [[gnu::always_inline]] bool passes_filter(std::span<const std::byte> rec) const noexcept {
    const filters::Program* prog = st.program.load(std::memory_order_acquire);  // never null
    const uint32_t filter_cpu = cpu_given ? given_cpu : cpu;
    return prog->match_lazy(
        rec, detail::EvalContextMaker{prog, ctx, filter_cpu, in.cpu_local_, cpu_given});
  }
  /// E7: kTriggered, in the flags already loaded; out of line, so an event
  /// without triggers pays one test of `flags`.
  [[gnu::always_inline]] detail::TriggersFired run_triggers(
      std::span<const std::byte> rec) const noexcept {
    detail::TriggersFired f;
    if ((flags & detail::EventState::kTriggered) != 0) [[unlikely]]
      f = detail::InstanceAccess::call_triggers(
          st, {rec, ctx, cpu_given ? given_cpu : cpu, in.cpu_local_ && !cpu_given});
    return f;
  }
  /// E11.
  [[gnu::always_inline]] void post_triggers(const detail::TriggersFired& f) const noexcept {
    if (f.mask != 0) [[unlikely]]
      detail::InstanceAccess::post_triggers(
          f, {{}, ctx, cpu_given ? given_cpu : cpu, in.cpu_local_ && !cpu_given});
  }

  // ── Lanes ──────────────────────────────────────────────────────────────

  /// unfiltered: reserve, E6 in place, commit.
  [[gnu::always_inline]] EmitResult unfiltered() noexcept {
    const buffers::Reservation r = in.ring_reserve(cpu, size);
    if (!r) [[unlikely]] {
      counter_add(c[detail::slot::lost_unfiltered]);
      return EmitResult::lost;
    }
    w(r.payload(), hdr);  // E6
    in.ring_commit(r);
    counter_add(c[detail::slot::kept_unfiltered]);
    return EmitResult::kept;
  }

  /// thread_slot: the thread's slot, claimed by the caller (E5); soft is
  /// constant false here and folds away.
  [[gnu::always_inline]] EmitResult thread_slot() noexcept {
    return staged({buffers::PerThreadTempBuffer::own_data(), size}, false, true,
                  []() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
                    buffers::PerThreadTempBuffer::release_own();
                  });
  }

  /// soft_disabled: the thread's slot, claimed by the caller (E5), for a
  /// soft-disabled event (never accepted: nothing adaptive to check).
  [[gnu::always_inline]] EmitResult soft_disabled() noexcept {
    return staged({buffers::PerThreadTempBuffer::own_data(), size}, true, false,
                  []() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
                    buffers::PerThreadTempBuffer::release_own();
                  });
  }

  /// cpu_slot: a slot the caller claimed through the Stager (E5: its
  /// per-CPU slot, or the thread's), then staged.
  [[gnu::always_inline]] EmitResult cpu_slot(const Claim& cl, bool soft) noexcept {
    return staged(cl.payload(), soft, false,
                  [&]() TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) { in.stager_.release(cl); });
  }
  /// The Stager's claim failed: counts why, before the emit goes direct.
  /// Busy: this thread's own outer emit holds the slot (nested), or, with
  /// per-CPU slots and no emit of ours in flight, another thread does: one
  /// preempted on this CPU between its claim and release (contended).
  [[gnu::always_inline]] void slot_refused(const Claim& cl) noexcept {
    counter_add(c[cl.why() == buffers::StageError::too_big ? detail::slot::too_big
                  : depth == 0 && in.stager_.per_cpu()     ? detail::slot::contended
                                                           : detail::slot::nested]);
  }

  /// direct: reserve in the ring, E6 there, E7, E8, commit (E9) or
  /// ring.discard (E10), E11. Inlined twice: for the commonest direct emit
  /// (filtered, staging off or adaptive gone direct), where `soft` is
  /// constant false, and after a slot lane. One shared copy kept `soft` and
  /// the adaptive flag in stack slots across the reserve: two stores and
  /// two reloads per direct commit. adaptive_direct() (adaptive, and direct
  /// now: mostly accepted, so no extra copy) is asked only on the reject
  /// and lost paths. Such emits are not counted as adaptive here:
  /// event_stats() derives adaptive_direct from the direct counts less
  /// nested, contended and too_big, one store less per emit.
  template <class AdaptiveDirect>
  [[gnu::always_inline]] EmitResult direct(bool soft, AdaptiveDirect adaptive_direct) noexcept {
    const buffers::Reservation r = in.ring_reserve(cpu, size);
    if (!r) [[unlikely]] {
      counter_add(c[detail::slot::lost_direct]);
      // An adaptive event stages again while the ring refuses (full, paused,
      // busy): there its rejects are discarded without asking the ring, which
      // would count each as lost. Kept staged accepts bring it back direct
      // once the ring has room. A too-big record is refused by size alone.
      if (adaptive_direct() && r.error() != buffers::ReserveError::too_big)
        in.adaptive_back_to_staging(st, c);
      return EmitResult::lost;
    }
    w(r.payload(), hdr);  // E6
    hooks(detail::EmitStep::built_direct);
    const detail::TriggersFired fired = run_triggers(r.payload());  // E7
    if (!soft && passes_filter(r.payload())) {                      // E8
      in.ring_commit(r);                                            // E9
      counter_add(c[detail::slot::kept_direct]);  // also an adaptive event's evidence: its next
                                                  // reject reads it
      post_triggers(fired);                       // E11
      return EmitResult::kept;
    }
    in.ring_discard(r);  // E10: reclaimed if still the last record, else padding
    counter_add(c[detail::slot::rejected_direct]);
    if (soft) counter_add(c[detail::slot::soft]);
    post_triggers(fired);  // E11
    // Adaptive gone direct: the thread's average moves at rejects only, an
    // accept pays nothing (adaptive_direct_rejected catches up the accepts
    // since the thread's previous reject from its kept_direct count).
    if (adaptive_direct()) in.adaptive_direct_rejected(st, c);
    return EmitResult::discarded;
  }

  // ── The slot lanes' tail ───────────────────────────────────────────────

  /// staged: on a claimed slot, E6 E7 E8, then E9 (copy into the ring of
  /// the CPU the thread runs on now, F3) or E10, then `release` frees the
  /// slot and E11. `adaptive` (thread_slot): every 32nd accept of an
  /// adaptive event (kAdaptive, in the flags already loaded) asks, out of
  /// line, whether it is accepted often enough to go direct; a reject pays
  /// nothing.
  template <class Release>
  [[gnu::always_inline]] EmitResult staged(std::span<std::byte> rec, bool soft, bool adaptive,
                                           Release release) noexcept {
    w(rec, hdr);  // E6
    hooks(detail::EmitStep::built_staged);
    const detail::TriggersFired fired = run_triggers(rec);  // E7
    bool accept = false;
    if (!soft) [[likely]]
      accept = passes_filter(rec);  // E8
    EmitResult res;
    if (accept) {
      hooks(detail::EmitStep::before_copy);
      // E9: copy into the ring of the CPU we run on now; stamped here (F1, F3).
      uint32_t wcpu = cpu;
      if (!in.cpu_local_ && !cpu_given) {
        wcpu = current_cpu();
        if (wcpu >= in.ncpu_) [[unlikely]]
          wcpu %= in.ncpu_;
      }
      const buffers::Reservation rr = in.ring_reserve(wcpu, size);
      if (rr) [[likely]] {
        detail::copy_record(rr.payload().data(), rec.data(), size);
        in.ring_commit(rr);
        counter_add(c[detail::slot::kept_staged]);
        if (adaptive && (flags & detail::EventState::kAdaptive) != 0 &&
            (c[detail::slot::kept_staged].load(std::memory_order_relaxed) & 31) == 0) [[unlikely]]
          in.adaptive_check_staged(st, c);
        res = EmitResult::kept;
      } else {
        counter_add(c[detail::slot::lost_staged]);
        res = EmitResult::lost;
      }
    } else {
      counter_add(
          c[detail::slot::rejected_staged]);  // E10: the cheap discard, nothing touched the ring
      if (soft) counter_add(c[detail::slot::soft]);
      res = EmitResult::discarded;
    }
    release();
    post_triggers(fired);  // E11
    return res;
  }
};

// The stack lane (EventDecl::trace; the lane's condition is
// detail::InstanceAccess::stages_on_stack): E6 on the caller's stack, only
// the bytes the filter reads first, then E8, then E9 or E10.
template <uint32_t Size, class Build>
[[gnu::always_inline]] inline void Instance::stage_on_stack(detail::EventState& st, uint32_t flags,
                                                            ThreadContext& ctx, uint32_t depth,
                                                            const filters::Program& program,
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
  if ((need & 1) != 0) header();                  // a common_* field is read
  build(rec, need);                               // E6, the filter's part
  int verdict = prog->match_inline({rec, Size});  // E8: one compare, a string prefix, a truth table
  if (verdict < 0) [[unlikely]] {
    // The general evaluator is a call: finish the record first, so that
    // nothing the lane holds in registers is needed after it.
    if ((need & 1) == 0) header();
    build(rec, ~need);
    filter_from_stack(*prog, st, flags, ctx, {rec, Size});  // E8 E9|E10
    return;
  }
  if (verdict == 0) {
    counter_add(thread_counters(ctx, st.counters)
                    .v[detail::slot::rejected_staged]);  // E10: nothing else touched
    return;
  }
  if ((need & 1) == 0) header();
  build(rec,
        ~need);  // the fields the filter did not read (a field in both sets: the same bytes again)
  commit_from_stack(st, flags, ctx, {rec, Size});  // E9
}

// The decided accept (EventDecl::trace_in_section): the filter's verdict
// was taken on the argument, so the record is built once, in the ring.
template <class Build>
[[gnu::always_inline]] inline void Instance::commit_decided(detail::EventState& st, uint32_t flags,
                                                            ThreadContext& ctx, uint32_t size,
                                                            const Build& build) noexcept {
  auto& c = thread_counters(ctx, st.counters).v;
  uint32_t wcpu = 0;  // cpu_local rings read the CPU themselves
  if (!cpu_local_) {
    wcpu = current_cpu();
    if (wcpu >= ncpu_) [[unlikely]]
      wcpu %= ncpu_;
  }
  const buffers::Reservation rr = ring_reserve(wcpu, size);  // stamped here (F1)
  if (!rr) [[unlikely]] {
    counter_add(c[detail::slot::lost_staged]);
    return;
  }
  build(rr.payload().data());  // E6
  ring_commit(rr);             // E9
  counter_add(c[detail::slot::kept_staged]);
  if ((flags & detail::EventState::kAdaptive) != 0 &&
      (c[detail::slot::kept_staged].load(std::memory_order_relaxed) & 31) == 0) [[unlikely]]
    adaptive_check_staged(st, c);
}

}  // namespace tracepipe
