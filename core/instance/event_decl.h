#pragma once
// Declaring an event in C++: named fields, a packed record laid out like the
// kernel's, a format file, and a cheap emit call.
//
//   using RequestDone = tracepipe::EventDecl<"app", "request_done",
//       tracepipe::Int<"id", uint32_t>,
//       tracepipe::Int<"latency_ns", int64_t>,
//       tracepipe::Chars<"method", 8>,        // char method[8]
//       tracepipe::Str<"path">>;              // __data_loc char[] path
//
//   RequestDone::emit(instance, 42, 1500, "GET", "/index.html");  // one instance
//   RequestDone::trace(42, 1500, "GET", "/index.html");           // every instance
//                                                                 // that enabled it
//   TRACEPIPE_TRACE(RequestDone, id, now() - t0, m, path());      // same, and the
//                                        // arguments are evaluated only if listened to
//
// Disabled cost (trace() and TRACEPIPE_TRACE): one relaxed load of the
// declaration's class-scope subscriber word (a link-time address, constant-
// initialised to nullptr: no guard variable) and one branch predicted not
// taken; everything else (registration check, WriterScope, record) is in the
// out-of-line trace_slow_path(). Invariants:
//   (D1) The word registered_ points at is the EventDesc's subscriber word
//        (Registry::add_declared(format, &listeners_)), so Instance::enable()
//        publishes straight into it; no copy can go stale.
//   (D2) If the registry already held the event (same schema registered by
//        another declaration type or by a format file), the descriptor keeps
//        its own word and listeners_ holds a non-null sentinel for good:
//        enabled() is always true and trace_slow_path() reads the
//        descriptor's word (correct, a call when disabled).
//   (D3) trace_slow_path() re-reads the descriptor's word with acquire inside
//        a read-side section (a WriterScope, or the reject-first step's
//        outermost section): enabled() is only a hint; a list, state and
//        program seen there stay alive until the section ends (Instance
//        frees them after synchronize()). The fan-out's WriterScope is the
//        nesting level of the emits into each listed instance, which run one
//        after the other.
//   (D4) The reject-first step (trace_rejects_first) decides a reject on the
//        argument values, without a record, only where the record's filter
//        would give the same verdict (one compare of a 4-byte Int field, one
//        string match on a Chars field: exactly the library's Int and Chars,
//        whose put() stores the argument as given; any other field type's
//        put() may transform it), and counts it as the stack lane
//        does. An integer compare's accept is committed in the same
//        section, the record built once in the ring (the verdict is the
//        record's); any other event enabled in that one instance goes on
//        in the section (trace_in_section), where the program is loaded
//        again and decides on the record; anything else leaves its
//        section and goes to the fan-out.
// Registration: at static initialisation (registered_at_startup, which
// desc() and enabled() odr-use) or by the first desc() call. Before it, the word is
// nullptr and no instance can subscribe through this declaration; only in
// case (D2), during static initialisation, could a call made before the
// registration miss an instance that enabled the other declaration's event.
// The word has static storage; g++ marks such template statics
// STB_GNU_UNIQUE, so a shared library holding one is never unloaded while
// the registry points into it.
//
// Record layout and field values: core/instance/event_fields.h.
//
// The generated print fmt prints every field as name=value:
//   "id=%u latency_ns=%lld method=%s path=%s", REC->id, REC->latency_ns,
//   REC->method, __get_str(path)
//
// An EventDecl registers itself in Registry::global() the first time desc()
// is called, and at static initialisation, so configuration files applied in
// main() can name it. Its ID is assigned then (>= Registry::kFirstDeclaredId).
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "tracepipe/core/events/event.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/instance/event_fields.h"
#include "tracepipe/core/instance/instance.h"

namespace tracepipe {

namespace detail {
struct DeclAccess;
/// Stands in EventDecl::listeners_ when the declaration's descriptor
/// publishes into another word ((D2) above): non-null, never read.
inline constexpr Subscribers kCheckDescriptorWord{};
}  // namespace detail

/// An event declared in C++ (see the top of this file).
template <FixedString System, FixedString Name, class... Fields>
struct EventDecl {
  static constexpr std::string_view system = System.view();
  static constexpr std::string_view name = Name.view();
  static constexpr size_t field_count = sizeof...(Fields);

  /// Byte offset of each field in the record.
  static constexpr std::array<uint32_t, sizeof...(Fields)> offsets = [] {
    std::array<uint32_t, sizeof...(Fields)> o{};
    uint32_t off = sizeof(CommonHeader);
    size_t i = 0;
    ((off = detail::align_up(off, Fields::align), o[i++] = off, off += Fields::size), ...);
    return o;
  }();
  /// Size of the fixed part: the C struct's sizeof (tail-padded).
  static constexpr uint32_t fixed_size = [] {
    uint32_t off = sizeof(CommonHeader);
    uint32_t max_align = alignof(CommonHeader);
    ((off = detail::align_up(off, Fields::align), off += Fields::size,
      max_align = std::max(max_align, Fields::align)),
     ...);
    return detail::align_up(off, max_align);
  }();
  static constexpr bool has_dynamic = (Fields::dynamic || ...);

  /// The arguments of trace() / TRACEPIPE_TRACE, converted to the field
  /// types, as trace_slow_path() receives them.
  using Args = std::tuple<typename Fields::arg_type...>;

 private:
  // Bytes of the fixed part no field covers (alignment gaps, tail padding).
  struct Gaps {
    uint32_t count = 0;
    std::array<uint32_t, sizeof...(Fields) + 1> at{}, len{};
  };
  static constexpr Gaps kGaps = [] {
    Gaps g;
    uint32_t end = sizeof(CommonHeader);
    size_t i = 0;
    const auto note = [&](uint32_t from, uint32_t to) {
      if (to > from) {
        g.at[g.count] = from;
        g.len[g.count] = to - from;
        ++g.count;
      }
    };
    ((note(end, offsets[i]), end = offsets[i] + Fields::size, ++i), ...);
    note(end, fixed_size);
    return g;
  }();

  // Program::read_chunks() bits (8-byte chunks of the record; bit 63 for
  // byte 504 on) that bytes [begin, end) overlap.
  static constexpr uint64_t chunks_of(uint32_t begin, uint32_t end) {
    uint64_t m = 0;
    for (uint32_t b = begin / 8; end > begin && b <= (end - 1) / 8; ++b)
      m |= uint64_t{1} << (b < 63 ? b : 63);
    return m;
  }
  static constexpr std::array<uint64_t, sizeof...(Fields)> kFieldChunks = [] {
    std::array<uint64_t, sizeof...(Fields)> c{};
    size_t i = 0;
    ((c[i] = chunks_of(offsets[i], offsets[i] + Fields::size), ++i), ...);
    return c;
  }();
  static constexpr std::array<uint64_t, sizeof...(Fields) + 1> kGapChunks = [] {
    std::array<uint64_t, sizeof...(Fields) + 1> c{};
    for (uint32_t g = 0; g < kGaps.count; ++g)
      c[g] = chunks_of(kGaps.at[g], kGaps.at[g] + kGaps.len[g]);
    return c;
  }();

  /// write_fields() for the fields and gaps that overlap `chunks` only (the
  /// common header is not written). Unrolled at compile time: one test of
  /// `chunks` per field and gap. Fixed-size events only.
  [[gnu::always_inline]] static void write_fields_in(std::byte* rec, uint64_t chunks,
                                                     typename Fields::arg_type... v) noexcept {
    static_assert(!has_dynamic);
    [&]<size_t... G>(std::index_sequence<G...>) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
      ((void)((kGapChunks[G] & chunks) != 0 &&
              (std::memset(rec + kGaps.at[G], 0, kGaps.len[G]), true)),
       ...);
    }
    (std::make_index_sequence<kGaps.count>{});
    uint32_t dyn = fixed_size;
    [&]<size_t... I>(std::index_sequence<I...>) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
      ((void)((kFieldChunks[I] & chunks) != 0 && (Fields::put(rec, offsets[I], dyn, v), true)),
       ...);
    }
    (std::index_sequence_for<Fields...>{});
  }

  /// Fixed-size records of at most 512 bytes take the stack lane of
  /// trace() (Instance::stage_on_stack, core/instance/fast_path.h).
  static constexpr bool kStackStaged = !has_dynamic && fixed_size <= 512;

 public:
  /// The schema (common fields, fields, generated print fmt), ID 0 (the
  /// registry assigns one).
  static EventFormat make_format() {
    EventFormat f;
    f.system = std::string(system);
    f.name = std::string(name);
    f.common_fields = kernel_common_fields();
    size_t i = 0;
    ((f.fields.push_back(FormatField{Fields::type(), std::string(Fields::name), offsets[i++],
                                     Fields::size, Fields::is_signed})),
     ...);
    std::string fmt = "\"";
    std::string args;
    bool first = true;
    (([&] {
       if (!first) fmt += ' ';
       fmt += std::string(Fields::name) + "=" + std::string(Fields::conv());
       args += ", " + Fields::print_arg();
       first = false;
     }()),
     ...);
    f.print_fmt = fmt + "\"" + args;
    return f;
  }

  /// This event's descriptor in Registry::global() (registered on first call;
  /// thread-safe). Inline: one load once registered.
  [[gnu::always_inline]] static const EventDesc& desc() {
    (void)&registered_at_startup;  // a program that names the event registers it at startup
    const EventDesc* d = registered_.load(std::memory_order_acquire);
    if (d != nullptr) [[likely]]
      return *d;
    return register_slow();
  }

  /// Record size in bytes for these values (fixed part + dynamic strings).
  [[gnu::always_inline]] static uint32_t record_size(typename Fields::arg_type... v) noexcept {
    return fixed_size + (0u + ... + Fields::dyn_len(v));
  }

  /// Writes the event fields (not the common header) into `rec`, which holds
  /// record_size(v...) bytes. Alignment gaps and tail padding are zeroed.
  [[gnu::always_inline]] static void write_fields(std::byte* rec,
                                                  typename Fields::arg_type... v) noexcept {
    if constexpr (kGaps.count != 0)
      for (uint32_t g = 0; g < kGaps.count; ++g) std::memset(rec + kGaps.at[g], 0, kGaps.len[g]);
    uint32_t dyn = fixed_size;
    size_t i = 0;
    (Fields::put(rec, offsets[i++], dyn, v), ...);
  }

  /// Emits into one instance (if it has the event enabled there): the
  /// stage → filter → commit path of core/instance/instance.h. No allocation, lock or
  /// system call. Any thread or signal handler.
  [[gnu::always_inline]] static EmitResult emit(Instance& instance,
                                                typename Fields::arg_type... v) noexcept {
    (void)&registered_at_startup;
    // Always inlined: the emit calls it from two places (staged and direct),
    // and GCC kept it out of line there, the arguments going through memory.
    // GCC and clang want the attribute in different places.
    auto fill = [&](std::span<std::byte> rec)
                    TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) { write_fields(rec.data(), v...); };
    return instance.emit_fill(desc(), record_size(v...), fill);
  }

  /// True when some instance may have this event enabled: one relaxed load
  /// of a word at a fixed address, no registration check (see (D1)-(D3) at
  /// the top of this file). A hint: trace_slow_path() re-checks. Any thread,
  /// signal handler included. The kernel's trace_<name>_enabled().
  [[gnu::always_inline]] static bool enabled() noexcept {
    (void)&registered_at_startup;
    return listeners_.load(std::memory_order_relaxed) != nullptr;
  }

  /// Emits into every instance that has the event enabled, each with its
  /// own filter (the kernel's tracepoint with one probe per instance).
  /// Costs one load and a branch when no instance listens; the arguments are
  /// still converted to the field types at the call site (a `const char*`
  /// for a Str field is strlen()ed) unless the compiler can drop that: use
  /// TRACEPIPE_TRACE to skip argument evaluation for sure.
  [[gnu::always_inline]] static void trace(typename Fields::arg_type... v) noexcept {
    if (enabled()) [[unlikely]]
      trace_slow_path(Args{v...});
  }

 private:
  friend struct detail::DeclAccess;

  /// TRACEPIPE_TRACE's call once enabled() said yes (through
  /// detail::DeclAccess). Its parameters are the field types, as trace()'s
  /// and emit()'s are, so the macro accepts exactly the arguments they do:
  /// one per field, each converted implicitly (copy-initialisation) to the
  /// field's arg_type. Building Args from the raw arguments instead
  /// (`Args{a...}`, a tuple's constructor) also took no arguments at all
  /// (zeros), a std::pair or a tuple for several fields, and explicit
  /// conversions (std::optional to a bool field).
  struct TraceCall {
    [[gnu::always_inline]] static void run(typename Fields::arg_type... v) noexcept {
      trace_slow_path(Args{v...});
    }
  };

  /// The part of trace() that runs once enabled() said yes: registers the
  /// event if needed, then, inside one WriterScope, emits into each subscribed
  /// instance (stage -> filter -> commit, as emit()). No allocation, lock or
  /// system call; an unregistered thread's event is counted as a drop.
  /// Out of line so that the disabled check inlines to two instructions; not
  /// [[gnu::cold]], because when tracing is on this is the hot path and GCC
  /// optimises cold functions for size. Called by TRACEPIPE_TRACE.
  /// Mirrors include/linux/tracepoint.h: __DO_TRACE (the probe iteration).
  ///
  /// (D4) The reject-first step (trace_rejects_first): a fixed-size event
  /// enabled in one instance, filtered, staged per thread, without triggers
  /// or soft-disable (the commonest filtered tracepoint), emitted outside
  /// any other emit of the thread, whose filter is one compare of a 4-byte
  /// Int field or one string match on a Chars field, is rejected on the
  /// argument's value, with no record built; its integer compare's accept
  /// is committed without a filter run (trace_in_section(), by a tail
  /// call, in the step's section). Any other event enabled in one instance
  /// goes on in that section too: such an event is staged on the stack
  /// (Instance::stage_on_stack) and filtered on the record, and an
  /// unfiltered one takes the emit's path. Everything else goes to
  /// trace_fan_out(), by a tail call.
  ///
  /// The arguments come as one object on the caller's stack (Args): stores
  /// at the call site, and loads here of only the fields a step reads. Passed
  /// one by one, a sched_switch's nine words took six registers and three
  /// stack slots, and GCC gave this function a frame (six callee-saved
  /// registers pushed and popped, the stack arguments loaded and stored
  /// back for the tail call) on every reject.
  ///
  /// A string match continues in trace_chars_first(), by a tail call with
  /// the section still open: its words take more registers than the
  /// caller-saved ones left here, and inline, GCC pushed and popped two
  /// callee-saved registers on every integer reject too (two stores and
  /// two loads of about a dozen per event).
  [[gnu::noinline]] static void trace_slow_path(const Args& a) noexcept {
    if constexpr (kStackStaged) {
      const FirstStep f = trace_rejects_first(a);
      if constexpr (kCharsFirst) {
        if (f.chars_prog != nullptr) return trace_chars_first(a, *f.chars_prog, *f.count);
      }
      if (f.open != nullptr) return trace_in_section(a, *f.open, f.flags, f.accepted);
      if (f.done) return;
    }
    trace_fan_out(a);
  }

  /// Int fields of 4 bytes: the reject-first step reads their values.
  /// Exactly the library's Int (detail::kIsLibraryInt), whose put() stores
  /// the argument's bytes: a field type of its own (one derived from Int
  /// included) may store something else (a byte swap, a mask), so the
  /// record, not the argument, decides its verdict.
  template <class F>
  static constexpr bool kWord32 = detail::kIsLibraryInt<F> && sizeof(typename F::arg_type) == 4;
  static constexpr bool kAnyWord32 = (kWord32<Fields> || ...);

  /// The 4 bytes the record would hold at `pos`, if a 4-byte Int field
  /// starts there: one compare per such field against its constant offset
  /// (a position no field has, UINT32_MAX included, finds none).
  template <size_t... I>
  [[gnu::always_inline]] static bool word32_at(std::index_sequence<I...>, uint32_t pos,
                                               uint32_t& out,
                                               const typename Fields::arg_type&... v) noexcept {
    const auto one = [&]<class F, size_t K>(const typename F::arg_type& x)
                         TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
                           if constexpr (kWord32<F>) {
                             if (pos == offsets[K]) {
                               std::memcpy(&out, &x, 4);  // the bytes Int::put stores
                               return true;
                             }
                           }
                           return false;
                         };
    return (one.template operator()<Fields, I>(v) || ...);
  }

  /// Chars fields: the reject-first step reads their first 16 bytes.
  /// Exactly the library's Chars, for the reason kWord32 gives.
  template <class F>
  static constexpr bool kChars = detail::kIsLibraryChars<F>;
  static constexpr bool kAnyChars = (kChars<Fields> || ...);

  /// The record's 16 bytes at `pos` as two words (what Chars::put stores
  /// there from its first 16 bytes, zero-filled; the filter masks out bytes
  /// past the field), if a Chars field starts there. Little-endian only
  /// (put builds the words so there).
  template <size_t... I>
  [[gnu::always_inline]] static bool chars_at(std::index_sequence<I...>, uint32_t pos,
                                              uint64_t (&w)[2],
                                              const typename Fields::arg_type&... v) noexcept {
    const auto one = [&]<class F, size_t K>(
                         const typename F::arg_type& x) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
      if constexpr (kChars<F>) {
        if (pos == offsets[K]) {
          detail::load_short(x.data(), std::min<size_t>({x.size(), F::size, 16}), w);
          return true;
        }
      }
      return false;
    };
    return (one.template operator()<Fields, I>(v) || ...);
  }

  /// String matches take the reject-first step (little-endian only: put
  /// builds the words so there).
  static constexpr bool kCharsFirst = kAnyChars && std::endian::native == std::endian::little;

  /// What trace_rejects_first() decided. chars_prog non-null: the program
  /// is a string match, to be decided by trace_chars_first() inside the
  /// read-side section still open, with `count` its reject counter. open
  /// non-null: the event is enabled in that one state only (whose `flags`
  /// were loaded), not rejected, and goes on in trace_in_section() inside
  /// the section still open; `accepted`: the integer compare accepted it.
  /// Else the section is closed, and `done` says the event was rejected (or
  /// is disabled since enabled() looked).
  struct FirstStep {
    const filters::Program* chars_prog = nullptr;
    std::atomic<uint64_t>* count = nullptr;
    detail::EventState* open = nullptr;
    uint32_t flags = 0;
    bool accepted = false;
    bool done = false;
  };

  /// (D4), up to the verdict of an integer compare. (E8') The program is
  /// one compare of a 4-byte Int field (Program::single32_pos): its verdict
  /// on the argument's value is the one on the built record; a reject is
  /// counted rejected_staged, as the staged path's reject. A reject stores
  /// nothing but the count and the read-side section's two words, (A) and
  /// (D). A string match on a Chars field (single_string_pos) goes on to
  /// trace_chars_first(). An event not rejected here, enabled in this one
  /// state, goes on to trace_in_section() with the section open (the
  /// integer compare's accept as `accepted`); every other way out returns
  /// with the section closed. trace_slow_path() then has no call but tail
  /// calls, holds no value across a call, and its integer reject needs no
  /// frame and no callee-saved register.
  [[gnu::always_inline]] static FirstStep trace_rejects_first(const Args& a) noexcept {
    ThreadContext* ctx = detail::tl_context;
    if (ctx == nullptr) [[unlikely]]
      return {};
    if (!detail::enter_outermost_section(*ctx)) [[unlikely]]
      return {};  // nested: trace_fan_out's WriterScope
    // (D3) read inside the section. The (D2) sentinel has count 0.
    const detail::Subscribers* subs = listeners_.load(std::memory_order_acquire);
    bool done = subs == nullptr;  // disabled since enabled() looked
    if (!done && subs->count == 1) [[likely]] {
      detail::EventState& st = *subs->states[0];
      const uint32_t flags = st.flags.load(std::memory_order_acquire);
      int verdict = -1;  // -1: no integer compare of an Int field; 0: reject; 1: accept
      if (detail::InstanceAccess::stages_on_stack(flags)) [[likely]] {
        [[maybe_unused]] std::atomic<uint64_t>& reject_count =
            thread_counters(*ctx, st.counters).v[detail::slot::rejected_staged];
        [[maybe_unused]] const filters::Program* prog =
            st.program.load(std::memory_order_acquire);  // once per emit (F5)
        if constexpr (kAnyWord32) {
          verdict = std::apply(
              [&](const typename Fields::arg_type&... v) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
                uint32_t x;
                if (!word32_at(std::index_sequence_for<Fields...>{}, prog->single32_pos(fixed_size),
                               x, v...))
                  return -1;
                return prog->match_u32(x) ? 1 : 0;
              },
              a);
          if (verdict == 0) {           // (E8')
            counter_add(reject_count);  // (E10)
            done = true;
          }
        }
        if constexpr (kCharsFirst) {
          if (verdict < 0 && prog->single_string_pos(fixed_size) != UINT32_MAX)
            return {prog, &reject_count, nullptr, 0, false, false};  // the section stays open
        }
      }
      if (!done) return {nullptr, nullptr, &st, flags, verdict == 1, false};  // stays open
    }
    detail::leave_outermost_section();
    return {nullptr, nullptr, nullptr, 0, false, done};
  }

  /// The emit of an event enabled in one state, `st`, not rejected by the
  /// reject-first step, in the read-side section that step opened (an
  /// outermost one: depth 0), which this closes: the event is not looked up
  /// again. `accepted`: the step's integer compare accepted it (its verdict
  /// is the record's, (D4)), so the record is built once, in the ring, with
  /// no filter run again (Instance::commit_decided; counted kept_staged, as
  /// the stack lane's accept); else the lane `flags` pick (the stack lane, or the
  /// emit's for an unfiltered or triggered event). Out of line, tail-called:
  /// see trace_slow_path().
  [[gnu::noinline]] static void trace_in_section(const Args& a, detail::EventState& st,
                                                 uint32_t flags, bool accepted) noexcept {
    ThreadContext& ctx = *detail::tl_context;  // non-null: the first step read it
    std::apply(
        [&](const typename Fields::arg_type&... v) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
          if (accepted) {
            const auto build = [&](std::byte* rec) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
              uint64_t hdr = detail::header_word(st.type, ctx.tid);
              if (ctx.in_signal.load(std::memory_order_relaxed) != 0) [[unlikely]]
                hdr |= detail::nested_header_bits(0);
              std::memcpy(rec, &hdr, sizeof hdr);
              write_fields(rec, v...);
            };
            detail::InstanceAccess::commit_decided(st, flags, ctx, fixed_size, build);
          } else {
            emit_one(st, ctx, 0, v...);
          }
        },
        a);
    detail::leave_outermost_section();
  }

  /// (D4) for a string match, in the read-side section trace_rejects_first()
  /// opened: (E8') if a Chars field starts at the program's position, the
  /// verdict on its argument's first 16 bytes (zero-filled, as Chars::put
  /// stores them) is the one on the record; a reject is counted (E10) and
  /// closes the section here. Anything else goes on in the section to
  /// trace_chars_passed(), by a tail call. Out of line, tail-called: see
  /// trace_slow_path().
  [[gnu::noinline]] static void trace_chars_first(const Args& a, const filters::Program& prog,
                                                  std::atomic<uint64_t>& count) noexcept {
    const bool rejected = std::apply(
        [&](const typename Fields::arg_type&... v) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
          uint64_t w[2];
          return chars_at(std::index_sequence_for<Fields...>{}, prog.single_string_pos(fixed_size),
                          w, v...) &&
                 !prog.match_words(w);
        },
        a);
    if (rejected) {
      counter_add(count);  // (E10)
      detail::leave_outermost_section();
      return;
    }
    trace_chars_passed(a, prog);
  }

  /// A string match that trace_chars_first() did not reject, in its
  /// section. If a Chars field stands at `prog`'s position (found again
  /// here, off the reject's path: a compare of constants), the match
  /// accepted it, and that verdict is the record's: committed as decided,
  /// the record built once in the ring (trace_in_section()); else the stack
  /// lane filters the record. The event's one state is read again here; if
  /// its subscribers changed since the first step (enabled in a second
  /// instance, or its staging), the fan-out takes it. Out of line,
  /// tail-called: see trace_slow_path().
  [[gnu::noinline]] static void trace_chars_passed(const Args& a,
                                                   const filters::Program& prog) noexcept {
    const detail::Subscribers* subs = listeners_.load(std::memory_order_acquire);
    if (subs != nullptr && subs->count == 1) [[likely]] {
      detail::EventState& st = *subs->states[0];
      const uint32_t flags = st.flags.load(std::memory_order_acquire);
      if (detail::InstanceAccess::stages_on_stack(flags)) [[likely]] {
        const bool accepted = std::apply(
            [&](const typename Fields::arg_type&... v) TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) {
              uint64_t w[2];
              return chars_at(std::index_sequence_for<Fields...>{},
                              prog.single_string_pos(fixed_size), w, v...);
            },
            a);
        return trace_in_section(a, st, flags, accepted);
      }
    }
    detail::leave_outermost_section();
    trace_fan_out(a);
  }

  /// The general fan-out: every subscribed instance in one WriterScope
  /// (the stack lane per instance where (D4) holds, else the emit's path).
  [[gnu::noinline]] static void trace_fan_out(const Args& a) noexcept {
    std::apply([](const typename Fields::arg_type&... v)
                   TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) { fan_out(v...); },
               a);
  }
  [[gnu::always_inline]] static void fan_out(const typename Fields::arg_type&... v) noexcept {
    // (D1) listeners_ is the descriptor's own word: read it directly, without
    // the registered_ -> descriptor -> word chain (two dependent loads).
    // Only in case (D2) does the descriptor hold another word.
    std::atomic<const detail::Subscribers*>* word = &listeners_;
    const detail::Subscribers* hint = listeners_.load(std::memory_order_relaxed);
    if (hint == &detail::kCheckDescriptorWord) [[unlikely]] {
      word = &desc().subscribers_for_fast_path();
      hint = word->load(std::memory_order_relaxed);
    }
    if (hint == nullptr) return;  // disabled since enabled() looked
    ThreadContext* ctx = thread_context();
    if (ctx == nullptr) [[unlikely]] {
      count_unregistered_drop();
      return;
    }
    // (D3) One WriterScope keeps the subscriber list alive and is the
    // nesting level of every emit below (they run one after the other).
    WriterScope scope(*ctx);
    const detail::Subscribers* subs = word->load(std::memory_order_acquire);
    if (subs == nullptr) return;
    const uint32_t depth = scope.depth();
    if (subs->count == 1) [[likely]] {  // one listening instance: no loop around the emit
      emit_one(*subs->states[0], *ctx, depth, v...);
      return;
    }
    for (uint32_t i = 0; i < subs->count; ++i) emit_one(*subs->states[i], *ctx, depth, v...);
  }

  /// The emit into one subscribed state, inside the caller's read-side
  /// section of nesting `depth`: the stack lane where (D4) holds, else the
  /// emit's path.
  [[gnu::always_inline]] static void emit_one(detail::EventState& st, ThreadContext& ctx,
                                              uint32_t depth,
                                              const typename Fields::arg_type&... v) noexcept {
    if constexpr (kStackStaged) {
      const uint32_t flags = st.flags.load(std::memory_order_acquire);
      if (detail::InstanceAccess::stages_on_stack(flags)) {
        const auto build = [&](std::byte* rec, uint64_t chunks) TRACEPIPE_ALWAYS_INLINE_LAMBDA(
                               noexcept) { write_fields_in(rec, chunks, v...); };
        const filters::Program* prog =
            st.program.load(std::memory_order_acquire);  // once per emit (F5)
        detail::InstanceAccess::stage_on_stack<fixed_size>(st, flags, ctx, depth, *prog, build);
        return;
      }
    }
    // Always inlined: the emit calls it from two places (staged and direct),
    // and GCC kept it out of line there, the arguments going through memory.
    // GCC and clang want the attribute in different places.
    auto fill = [&](std::span<std::byte> rec)
                    TRACEPIPE_ALWAYS_INLINE_LAMBDA(noexcept) { write_fields(rec.data(), v...); };
    detail::InstanceAccess::emit_to_state_in_scope(st, ctx, depth, record_size(v...), fill);
  }

  /// Instantiated by desc() (and so by emit(), trace(), enabled() and
  /// TRACEPIPE_TRACE): registers the event during static initialisation of
  /// any program that uses it in any of these ways, so that a config file or
  /// Instance::enable("sys:name") in main() finds it before its first use.
  static inline const EventDesc& registered_at_startup = desc();

  static inline std::atomic<const EventDesc*> registered_{nullptr};
  // (D1) The subscriber word of the descriptor registered_ points at, unless
  // (D2). Constant-initialised: reading it needs no guard.
  static inline std::atomic<const detail::Subscribers*> listeners_{nullptr};

  [[gnu::cold, gnu::noinline]] static const EventDesc& register_slow() {
    static const EventDesc& d = []() -> const EventDesc& {  // once, thread-safe
      const EventDesc& r = Registry::global().add_declared(make_format(), &listeners_);
      if (&r.subscribers_for_fast_path() != &listeners_)  // (D2)
        listeners_.store(&detail::kCheckDescriptorWord, std::memory_order_relaxed);
      return r;
    }();
    registered_.store(&d, std::memory_order_release);
    return d;
  }
};

namespace detail {
/// What TRACEPIPE_TRACE calls once enabled() said yes: EventDecl's
/// out-of-line fan-out, not part of the API.
struct DeclAccess {
  /// `trace_call<Decl>::run(args...)`: the arguments converted to the field
  /// types as trace() converts them (EventDecl::TraceCall).
  template <class Decl>
  using trace_call = typename Decl::TraceCall;
};
}  // namespace detail

/// Tracepoint-style emission that evaluates no argument unless some instance
/// listens: `TRACEPIPE_TRACE(RequestDone, id, expensive(), ...)` is
/// `if (RequestDone::enabled())` then the fan-out of trace(`id, expensive(), ...`),
/// the disabled cost one load and a not-taken branch. `Decl` is an EventDecl
/// type named without top-level commas (a `using` alias). A statement.
/// Mirrors the kernel's trace_<name>() (include/linux/tracepoint.h:
/// __DECLARE_TRACE), whose arguments are likewise evaluated only when
/// the static key is on.
#define TRACEPIPE_TRACE(Decl, ...)                                         \
  do {                                                                     \
    if (Decl::enabled()) [[unlikely]]                                      \
      ::tracepipe::detail::DeclAccess::trace_call<Decl>::run(__VA_ARGS__); \
  } while (0)

}  // namespace tracepipe
