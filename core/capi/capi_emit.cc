// The C API's write path: the same stage -> filter -> commit as the C++
// events (core/instance/instance.h, top), reached in two ways.
//
//   tracepipe_trace(event, body, size)              tracepoint-style: every instance
//     word = event's subscriber word; none → return                 (EventDecl::trace)
//     one instance, fixed-size record <= 512 bytes, filtered, per-thread
//     staging, no trigger, not soft-disabled (the stack lane):
//       filter reads no common field ─▶ verdict on the caller's own bytes
//         └─ reject ─▶ count, return          (no copy, no slot, no ring, no clock: F1)
//       otherwise ─▶ header + body on this call's stack ─▶ filter
//         ├─ reject ─▶ count
//         └─ accept ─▶ ring.reserve + copy + commit (Instance's commit_from_stack)
//     one instance, no filter, trigger or soft-disable: the emit's direct
//     path (reserve, copy, commit) in the lane's read-side section
//     (thread's context: one %fs-relative load when the library's
//     thread-locals are static TLS, capi_tls.cc; else the lane out of line)
//     anything else ─▶ one WriterScope, each subscribed instance's emit
//                      (its staging slot or direct reservation, as the C++ fan-out)
//   tracepipe_emit(instance, event, body, size)     one instance: Instance::emit_fill
//
// The caller's body is never written. Its bytes are the record's from
// offset 8: a program that reads no common field (Program::read_chunks()
// bit 0 clear) never loads below offset 8, so it may run on a view whose
// start lies 8 bytes before the body; every load it makes is inside the
// record's size (match_inline checks it), that is inside the body.
// No allocation, lock or system call here once the thread is registered (F6).
#include <cstring>

#include "tracepipe/core/capi/capi_internal.h"

namespace tracepipe::capi {
namespace {

using detail::EventState;
using detail::InstanceAccess;
using detail::Subscribers;

[[gnu::always_inline]] inline void count_reject(EventState& st, ThreadContext& ctx) noexcept {
  counter_add(thread_counters(ctx, st.counters).v[detail::slot::rejected_staged]);  // (R8)
}

/// Copies n bytes in moves of 32, 16 or 8 bytes, the last one overlapping
/// the one before it rather than finishing word by word and byte by byte:
/// a run-time size costs two or three moves, as a constant one does, for
/// bodies of 8 to 64 bytes (shorter ones byte by byte, longer than 256 by
/// memcpy).
[[gnu::always_inline]] inline void copy_body(std::byte* dst, const std::byte* src,
                                             size_t n) noexcept {
  if (n >= 32) [[likely]] {
    if (n > 256) [[unlikely]] {
      std::memcpy(dst, src, n);
      return;
    }
    size_t i = 0;
    for (; i + 32 < n; i += 32) __builtin_memcpy(dst + i, src + i, 32);
    __builtin_memcpy(dst + n - 32, src + n - 32, 32);
  } else if (n >= 16) {
    __builtin_memcpy(dst, src, 16);
    __builtin_memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    __builtin_memcpy(dst, src, 8);
    __builtin_memcpy(dst + n - 8, src + n - 8, 8);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

/// The stack lane once the caller's bytes did not decide (the filter reads
/// a common field, needs the general evaluator, or accepted): the record
/// built on this frame, then filter_from_stack or commit_from_stack. Out of
/// line, so that the reject before it needs no 512-byte frame.
[[gnu::noinline]] void stage_built(EventState& st, uint32_t flags, ThreadContext& ctx,
                                   uint32_t depth, const filters::Program& prog,
                                   const std::byte* body, uint32_t size, int verdict) noexcept {
  alignas(8) std::byte rec[kStackLaneMax];
  uint64_t hdr = detail::header_word(st.type, ctx.tid);
  if ((depth | ctx.in_signal.load(std::memory_order_relaxed)) != 0) [[unlikely]]
    hdr |= detail::nested_header_bits(depth);
  std::memcpy(rec, &hdr, sizeof hdr);
  copy_body(rec + sizeof hdr, body, size - sizeof hdr);
  const std::span<const std::byte> r{rec, size};
  if (verdict < 0) verdict = prog.match_inline(r);
  if (verdict < 0)
    InstanceAccess::filter_from_stack(prog, st, flags, ctx, r);  // (R6..R8) with CPU, COMM
  else if (verdict == 0)
    count_reject(st, ctx);
  else
    InstanceAccess::commit_from_stack(st, flags, ctx, r);  // (R7) stamped at the copy (F1)
}

/// The verdict of `prog` on the caller's bytes (see the top of this file),
/// or -1 when they cannot decide it (a common field is read, or the
/// program needs the general evaluator).
[[gnu::always_inline]] inline int verdict_on_body(const filters::Program& prog,
                                                  const std::byte* body, uint32_t size) noexcept {
  if ((prog.read_chunks() & 1) != 0) return -1;
  const auto* rec =
      reinterpret_cast<const std::byte*>(reinterpret_cast<uintptr_t>(body) - sizeof(CommonHeader));
  return prog.match_inline({rec, size});  // (R6)
}

/// The stack lane for one state (flags: stages_on_stack) inside the
/// caller's WriterScope, a fixed-size record of `size` bytes whose body the
/// caller holds.
[[gnu::always_inline]] inline void stage_body(EventState& st, uint32_t flags, ThreadContext& ctx,
                                              uint32_t depth, const filters::Program& prog,
                                              const std::byte* body, uint32_t size) noexcept {
  const int verdict = verdict_on_body(prog, body, size);
  if (verdict == 0)
    count_reject(st, ctx);
  else
    stage_built(st, flags, ctx, depth, prog, body, size, verdict);
}

/// trace_lane()'s out-of-line rest: the verdict on the caller's bytes when
/// the lane did not have it (`verdict` -2), then the reject's count or
/// stage_built(); closes the outermost read-side section trace_lane()
/// opened. trace_lane() calls it last and holds nothing across it, so its
/// integer reject needs no frame and no callee-saved register (as
/// EventDecl::trace_slow_path).
/// The flags are loaded again here rather than passed: one register less
/// for trace_lane() to keep (any value loaded inside the section is one
/// a writer may act on).
[[gnu::noinline]] void lane_rest_outermost(EventState& st, const filters::Program& prog,
                                           const std::byte* body, uint32_t size,
                                           int verdict) noexcept {
  ThreadContext& ctx = *detail::context_word();
  const uint32_t flags = st.flags.load(std::memory_order_acquire);
  if (verdict == -2) verdict = verdict_on_body(prog, body, size);
  if (verdict == 0)
    count_reject(st, ctx);  // (R8)
  else
    stage_built(st, flags, ctx, 0, prog, body, size, verdict);
  detail::leave_outermost_section();
}

/// The lane for an unfiltered event (enabled, no filter, trigger or
/// soft-disable in `flags`) in one instance: the emit's direct path (R3:
/// reserve, the caller's bytes copied in, commit) inside the outermost
/// read-side section trace_lane() opened, which this closes; no second
/// section and subscriber load in trace_fan_out.
[[gnu::noinline]] void lane_direct_outermost(EventState& st, ThreadContext& ctx,
                                             const std::byte* body, uint32_t size) noexcept {
  auto fill = [&](std::span<std::byte> rec) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    copy_body(rec.data() + sizeof(CommonHeader), body, size - sizeof(CommonHeader));
  };
  InstanceAccess::emit_to_state_in_scope(st, ctx, 0, size, fill);
  detail::leave_outermost_section();
}

/// Closes the outermost read-side section trace_lane() opened on `ctx`
/// (detail::leave_outermost_section(), with the context already read).
[[gnu::always_inline]] inline void leave_section(ThreadContext& ctx) noexcept {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  ctx.read_section.store(detail::opaque_zero(), std::memory_order_release);  // (D)
}

/// EventDecl::trace_rejects_first's shape: the lane for the commonest case
/// (one subscribed instance), in the outermost read-side section; inline,
/// only the commonest filter, one compare of a 4-byte field
/// (Program::single32_pos), read from the caller's bytes. True: done (the
/// section closed); false: not taken (nested, several instances, another
/// path), the section closed: go to fan_out.
/// `ctx`: the thread's context (null: not registered).
[[gnu::always_inline]] inline bool trace_lane(const tracepipe_event& ev, const std::byte* body,
                                              ThreadContext* ctx) noexcept {
  if (ctx == nullptr) [[unlikely]]
    return false;
  if (!detail::enter_outermost_section(*ctx)) [[unlikely]]
    return false;
  const Subscribers* subs = ev.word->load(std::memory_order_acquire);  // (D3)
  bool done = subs == nullptr;  // disabled since the caller looked
  if (!done && subs->count == 1) [[likely]] {
    EventState& st = *subs->states[0];
    const uint32_t flags = st.flags.load(std::memory_order_acquire);
    if (InstanceAccess::stages_on_stack(flags)) [[likely]] {
      const filters::Program* prog =
          st.program.load(std::memory_order_acquire);  // once per emit (F5)
      const uint32_t pos = prog->single32_pos(ev.fixed_size);
      int verdict = -2;
      if (pos >= sizeof(CommonHeader) && pos != UINT32_MAX) {
        uint32_t x;
        std::memcpy(&x, body + (pos - sizeof(CommonHeader)),
                    sizeof x);  // (R6) the record's bytes at pos
        if (!prog->match_u32(x)) {
          count_reject(st, *ctx);  // (R8): nothing else touched
          leave_section(*ctx);
          return true;
        }
        verdict = 1;
      }
      lane_rest_outermost(st, *prog, body, ev.fixed_size, verdict);  // closes the section
      return true;
    }
    constexpr uint32_t kDirect = detail::EventState::kEnabled | detail::EventState::kFiltered |
                                 detail::EventState::kSoftDisabled | detail::EventState::kTriggered;
    if ((flags & kDirect) == detail::EventState::kEnabled) {
      lane_direct_outermost(st, *ctx, body, ev.fixed_size);  // closes the section
      return true;
    }
  }
  leave_section(*ctx);
  return done;
}

/// trace_lane() with the thread's context read through the TLS descriptor
/// (the library's thread-locals are dynamic TLS): out of line, so that the
/// static case's lane has no call and no frame.
[[gnu::noinline]] void trace_dynamic_tls(const tracepipe_event& ev, const std::byte* body) noexcept;

/// Every subscribed instance in one WriterScope (EventDecl::fan_out).
/// `body` non-null: a fixed-size body, which may take the stack lane per
/// instance; `fill` builds the record otherwise.
template <class Fill>
[[gnu::always_inline]] inline void fan_out(const tracepipe_event& ev, uint32_t size,
                                           const std::byte* body, Fill& fill) noexcept {
  ThreadContext* ctx = thread_context();
  if (ctx == nullptr) [[unlikely]] {
    count_unregistered_drop();
    return;
  }
  WriterScope scope(*ctx);
  const Subscribers* subs = ev.word->load(std::memory_order_acquire);
  if (subs == nullptr) return;
  const uint32_t depth = scope.depth();
  for (uint32_t i = 0; i < subs->count; ++i) {
    EventState& st = *subs->states[i];
    const uint32_t flags = st.flags.load(std::memory_order_acquire);
    if (body != nullptr && ev.stack_lane && InstanceAccess::stages_on_stack(flags)) {
      stage_body(st, flags, *ctx, depth, *st.program.load(std::memory_order_acquire), body, size);
      continue;
    }
    InstanceAccess::emit_to_state_in_scope(st, *ctx, depth, size, fill);
  }
}

/// tracepipe_trace() past its lane: every subscribed instance.
[[gnu::noinline]] void trace_fan_out(const tracepipe_event& ev, const std::byte* body,
                                     uint32_t rec_size) noexcept {
  auto fill = [&](std::span<std::byte> rec) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    copy_body(rec.data() + sizeof(CommonHeader), body, rec_size - sizeof(CommonHeader));
  };
  fan_out(ev, rec_size, ev.stack_lane ? body : nullptr, fill);
}

/// Bytes of a text value, at most `max`.
[[gnu::always_inline]] inline size_t text_len(const tracepipe_value& v, size_t max) noexcept {
  if (v.data == nullptr) return 0;
  if (v.len == TRACEPIPE_STRLEN) return strnlen(static_cast<const char*>(v.data), max);
  return v.len < max ? v.len : max;
}

/// The record size for these values (fixed part + strings with their NUL).
uint32_t values_size(const tracepipe_event& ev, const tracepipe_value* v) noexcept {
  uint32_t size = ev.fixed_size;
  if (ev.dynamic)
    for (size_t i = 0; i < ev.fields.size(); ++i)
      if (ev.fields[i].kind == TRACEPIPE_FIELD_STRING)
        size += static_cast<uint32_t>(text_len(v[i], TRACEPIPE_MAX_STRING)) + 1;
  return size;
}

/// Writes the fields (not the header) of a values_size()-byte record.
void write_values(const tracepipe_event& ev, std::byte* rec, const tracepipe_value* v) noexcept {
  std::memset(rec + sizeof(CommonHeader), 0, ev.body_fixed);  // gaps, padding, short arrays
  uint32_t dyn = ev.fixed_size;
  for (size_t i = 0; i < ev.fields.size(); ++i) {
    const FieldLayout& l = ev.fields[i];
    std::byte* at = rec + l.offset;
    switch (l.kind) {
      case TRACEPIPE_FIELD_INT:
        if (!l.array) {
          const uint64_t x = v[i].num;
          switch (l.elem) {
            case 1: {
              const auto t = static_cast<uint8_t>(x);
              std::memcpy(at, &t, 1);
              break;
            }
            case 2: {
              const auto t = static_cast<uint16_t>(x);
              std::memcpy(at, &t, 2);
              break;
            }
            case 4: {
              const auto t = static_cast<uint32_t>(x);
              std::memcpy(at, &t, 4);
              break;
            }
            default:
              std::memcpy(at, &x, 8);
              break;
          }
        } else if (v[i].data != nullptr) {
          const size_t n = v[i].len < l.count ? v[i].len : l.count;
          std::memcpy(at, v[i].data, n * l.elem);
        }
        break;
      case TRACEPIPE_FIELD_CHARS:
        if (const size_t n = text_len(v[i], l.count); n != 0) std::memcpy(at, v[i].data, n);
        break;
      case TRACEPIPE_FIELD_STRING: {
        const auto n = static_cast<uint32_t>(text_len(v[i], TRACEPIPE_MAX_STRING));
        const uint32_t word = ((n + 1) << 16) | dyn;  // __data_loc: length with NUL, offset
        std::memcpy(at, &word, sizeof word);
        if (n != 0) std::memcpy(rec + dyn, v[i].data, n);
        rec[dyn + n] = std::byte{0};
        dyn += n + 1;
        break;
      }
    }
  }
}

/// The record size of a packed body of `n` bytes, 0 when it is invalid:
/// shorter than the fixed part (a fixed-size event's record is its fixed
/// part: bytes past it are not recorded).
[[gnu::always_inline]] inline uint32_t body_record_size(const tracepipe_event& ev, const void* body,
                                                        size_t n) noexcept {
  if (n < ev.body_fixed || (body == nullptr && n != 0) || n > UINT32_MAX - sizeof(CommonHeader))
      [[unlikely]]
    return 0;
  return ev.dynamic ? static_cast<uint32_t>(n + sizeof(CommonHeader)) : ev.fixed_size;
}

tracepipe_emit_result to_c(EmitResult r) noexcept {
  switch (r) {
    case EmitResult::kept:
      return TRACEPIPE_EMIT_KEPT;
    case EmitResult::discarded:
      return TRACEPIPE_EMIT_DISCARDED;
    case EmitResult::lost:
      return TRACEPIPE_EMIT_LOST;
    case EmitResult::disabled:
      break;
  }
  return TRACEPIPE_EMIT_DISABLED;
}

void trace_dynamic_tls(const tracepipe_event& ev, const std::byte* body) noexcept {
  if (!trace_lane(ev, body, detail::context_word())) trace_fan_out(ev, body, ev.fixed_size);
}

}  // namespace
}  // namespace tracepipe::capi

using namespace tracepipe;
using namespace tracepipe::capi;

extern "C" {

void tracepipe_trace(const tracepipe_event* event, const void* body, size_t size) {
  if (event == nullptr) [[unlikely]]
    return;
  const auto* b = static_cast<const std::byte*>(body);
  // The commonest call first: a fixed-size body of exactly its size. No
  // look at the word before the lane's own: the caller's
  // TRACEPIPE_TRACEPOINT_ENABLED has just read it.
  if (size == event->body_fixed && event->stack_lane && b != nullptr) [[likely]] {
#if defined(TRACEPIPE_TLS_CACHED_OFFSET) && defined(__x86_64__)
    // The thread's context by its static TLS offset, one %fs-relative load
    // (capi_tls.cc); dynamic TLS: the same lane, out of line.
    const std::ptrdiff_t off = detail::tl_context_offset;
    if (off == 0) [[unlikely]]
      return trace_dynamic_tls(*event, b);
    ThreadContext* ctx;
    asm volatile("movq %%fs:(%1), %0" : "=r"(ctx) : "r"(off));
#else
    ThreadContext* ctx = detail::context_word();
#endif
    if (trace_lane(*event, b, ctx)) [[likely]]
      return;
    return trace_fan_out(*event, b, event->fixed_size);  // tail calls: no frame here
  }
  if (event->word->load(std::memory_order_relaxed) == nullptr) return;  // nobody listens
  const uint32_t rec_size = body_record_size(*event, body, size);
  if (rec_size == 0) [[unlikely]]
    return;
  trace_fan_out(*event, b, rec_size);
}

void tracepipe_trace_values(const tracepipe_event* event, const tracepipe_value* values,
                            size_t count) {
  if (event == nullptr || count != event->fields.size() || (values == nullptr && count != 0))
      [[unlikely]]
    return;
  if (event->word->load(std::memory_order_relaxed) == nullptr) return;
  if (event->stack_lane) {
    alignas(8) std::byte rec[kStackLaneMax];
    write_values(*event, rec, values);
    tracepipe_trace(event, rec + sizeof(CommonHeader), event->body_fixed);
    return;
  }
  const uint32_t size = values_size(*event, values);
  auto fill = [&](std::span<std::byte> rec) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
    write_values(*event, rec.data(), values);
  };
  fan_out(*event, size, nullptr, fill);
}

tracepipe_emit_result tracepipe_emit(tracepipe_instance* instance, const tracepipe_event* event,
                                     const void* body, size_t size) {
  if (instance == nullptr || event == nullptr) [[unlikely]]
    return TRACEPIPE_EMIT_INVALID;
  const uint32_t rec_size = body_record_size(*event, body, size);
  if (rec_size == 0) [[unlikely]]
    return TRACEPIPE_EMIT_INVALID;
  const auto* b = static_cast<const std::byte*>(body);
  return to_c(instance->inst->emit_fill(
      *event->desc, rec_size,
      [&](std::span<std::byte> rec) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
        copy_body(rec.data() + sizeof(CommonHeader), b, rec_size - sizeof(CommonHeader));
      }));
}

tracepipe_emit_result tracepipe_emit_values(tracepipe_instance* instance,
                                            const tracepipe_event* event,
                                            const tracepipe_value* values, size_t count) {
  if (instance == nullptr || event == nullptr || count != event->fields.size() ||
      (values == nullptr && count != 0)) [[unlikely]]
    return TRACEPIPE_EMIT_INVALID;
  const uint32_t size = values_size(*event, values);
  return to_c(instance->inst->emit_fill(
      *event->desc, size, [&](std::span<std::byte> rec) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
        write_values(*event, rec.data(), values);
      }));
}

}  // extern "C"
