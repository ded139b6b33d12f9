#pragma once
// Per-thread state of the write path: who the writer is (pid, comm), how deep
// it is nested, its read-side section for safe reclamation, and its private
// slice of the per-event counters.
//
//   thread_local ThreadContext* tl  ──▶  ThreadContext (heap, one per thread)
//                                          tid, comm[16]              (cached: gettid and
//                                                                      PR_GET_NAME are syscalls)
//                                          read_section               (one word: the epoch the
//                                          outermost
//                                                                      emit began in, and how many
//                                                                      emits are in flight; 0 =
//                                                                      none)
//                                          in_signal                  (SignalScope depth)
//                                          groups ──▶ counter window  (this thread's counter
//                                          slices:
//                                                                      kMaxGroups x 128 bytes of
//                                                                      reserved address space,
//                                                                      pages backed on first touch)
//   global list of contexts  (mutex; walked by synchronize() and by counter sums)
//
// Invariants
//   * A context is written only by its own thread (and that thread's signal
//     handlers); other threads read its atomics. read_section and in_signal
//     are updated by a plain relaxed load + store, never a locked read-modify-
//     write: a signal handler that interrupts the pair restores the value
//     before it returns. Counters cannot use the pair (a handler's increment
//     between the load and the store would be lost): counter_add is one
//     non-locked `add` to memory, which a signal cannot split (signals are
//     delivered between instructions), as the kernel's local_t / this_cpu_add.
//   * Counters are exact: each (thread, counter) has one writer; a sum reads
//     every live thread's slice plus the totals folded in by exited threads.
//   * A thread's slice of group g is groups[g]: one load of the window's base
//     and an indexed add, no test (the window is mapped whole at
//     registration; MAP_NORESERVE, so only touched pages cost memory). Pages
//     are touched off the write path: registration touches those of every
//     group handed out so far, allocate_counter_group() zeroes the new
//     group's slice in every context (which touches its page).
//   * The first emit of a thread registers it: one allocation, one mutex, an
//     mmap and two more system calls (gettid, prctl), all on a [[gnu::cold]]
//     path. Call prepare_thread() beforehand to keep even that off the first
//     event.
//   * Thread exit folds the thread's counters into the global totals and
//     unlinks the context under the mutex, so sums never lose counts.
//
// Thread-safety: thread_context() is for the calling thread only. Counter
// reads (counter_sum) and synchronize() (core/instance/grace_period.h) may run on any
// thread. Nothing here is async-signal-safe except the inline accessors on an
// already registered thread.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/buffers/sanitizers.h"
#include "tracepipe/core/events/cmdline.h"

// The TLS model of the thread-locals the write path reads. Initial-exec
// where a consumer's code inlines the fast path: one load off the thread
// pointer, in a consumer's shared object too (PIC code would call
// __tls_get_addr instead). The library's own sources are built with
// TRACEPIPE_TLS_DESCRIPTORS and TLS descriptors (-mtls-dialect=gnu2 on
// x86-64; the default on arm64): none of their accesses is initial-exec,
// so a shared library made of them (libtracepipe_c) loads with dlopen()
// however little static TLS the loader has left. In an executable the
// linker turns both kinds into the same local-exec access.
#if defined(TRACEPIPE_TLS_DESCRIPTORS)
#define TRACEPIPE_TLS_MODEL
#else
#define TRACEPIPE_TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

namespace tracepipe {

namespace detail {

/// Slots in one counter group (two cache lines of u64).
inline constexpr uint32_t kGroupSlots = 16;
/// Counter groups that can exist at once (group 0 is never handed out). Each
/// thread reserves kMaxGroups * 128 bytes (8 MiB) of address space for them.
inline constexpr uint32_t kMaxGroups = 65536;

/// ThreadContext::read_section's layout: the epoch above this shift, the
/// nesting depth in the bits below it.
inline constexpr unsigned kSectionEpochShift = 16;
inline constexpr uint64_t kSectionDepthMask = (uint64_t{1} << kSectionEpochShift) - 1;

struct alignas(128) CounterGroup {
  std::atomic<uint64_t> v[kGroupSlots];
};
static_assert(sizeof(CounterGroup) == 128);

}  // namespace detail

/// One writer thread's state. Created on the thread's first emit (or by
/// prepare_thread()), destroyed at thread exit.
struct ThreadContext {
  int32_t tid = 0;     ///< gettid(): the kernel's task pid, stored in common_pid
  char comm[16] = {};  ///< PR_GET_NAME at registration, NUL-terminated
  uint8_t comm_len = 0;
  /// The read-side section and the nesting depth in one word (see
  /// core/instance/grace_period.h): 0 outside any emit; inside, bits 16..63 hold the
  /// epoch the outermost emit began in and bits 0..15 the number of emits in
  /// flight on this thread. An emit that finds it non-zero interrupted
  /// another one: it runs in a signal handler. Read by synchronize().
  std::atomic<uint64_t> read_section{0};
  /// Depth of SignalScope objects alive on this thread.
  std::atomic<uint32_t> in_signal{0};
  /// This thread's counter window: its slice of group g is groups[g]
  /// (kMaxGroups entries, mapped at registration, kept with the context).
  detail::CounterGroup* groups = nullptr;
  /// The thread's stack, [stack_lo, stack_hi) (pthread_getattr_np at
  /// registration; both 0 if unknown): the stacktrace trigger walks frames
  /// only inside it (core/triggers/user_stack.h).
  uintptr_t stack_lo = 0, stack_hi = 0;

  std::string_view comm_view() const noexcept { return {comm, comm_len}; }
  /// Emits in flight on this thread (read_section's low 16 bits).
  uint32_t nesting() const noexcept {
    return static_cast<uint32_t>(read_section.load(std::memory_order_relaxed) &
                                 detail::kSectionDepthMask);
  }
  /// Epoch of the open read section, 0 outside one (read_section's high bits).
  uint64_t section_epoch() const noexcept {
    return read_section.load(std::memory_order_relaxed) >> detail::kSectionEpochShift;
  }
};

namespace detail {
extern thread_local constinit ThreadContext* tl_context TRACEPIPE_TLS_MODEL;
#if defined(TRACEPIPE_TLS_CACHED_OFFSET) && defined(__x86_64__)
/// libtracepipe_c's sources only (core/capi/capi_tls.cc): tl_context's
/// offset from the thread pointer when the library's thread-locals sit in
/// static TLS (the same offset in every thread), found once as the library
/// loads; 0 when they are dynamic (dlopen() found no static room).
extern constinit std::ptrdiff_t tl_context_offset;
/// tl_context through its TLS descriptor (out of line: no call, so no
/// frame, on the static path).
[[gnu::cold, gnu::noinline]] ThreadContext* context_word_dynamic() noexcept;
/// tl_context's value: with the offset known, one %fs-relative load, as an
/// initial-exec access; else through its TLS descriptor.
[[gnu::always_inline]] inline ThreadContext* context_word() noexcept {
  if (const std::ptrdiff_t off = tl_context_offset; off != 0) [[likely]] {
    ThreadContext* c;
    // volatile: read again at each use, never merged with a read made
    // before a call that may have set tl_context (register_thread()).
    asm volatile("movq %%fs:(%1), %0" : "=r"(c) : "r"(off));
    return c;
  }
  return context_word_dynamic();
}
#else
/// tl_context's value (the reads on the write path go through here).
[[gnu::always_inline]] inline ThreadContext* context_word() noexcept { return tl_context; }
#endif
/// Registers the calling thread; nullptr if that is impossible right now (a
/// signal handler interrupted the registration, or the thread is exiting).
[[gnu::cold, gnu::noinline]] ThreadContext* register_thread();
}  // namespace detail

namespace detail {
/// Who is told when a thread registers or exits: a layer above the instance
/// (sideband, core/sideband/sideband.cc) sets it at run time, so the write
/// path knows nothing of it. `registered` runs after the context is published
/// (thread_context() returns it), `exiting` while it is still the thread's;
/// both outside the registry mutex, on the thread itself. A null member is
/// skipped. The observer must outlive every thread (a static object).
struct ThreadObserver {
  void (*registered)(ThreadContext&) noexcept = nullptr;
  void (*exiting)(ThreadContext&) noexcept = nullptr;
};

/// Installs `observer` (nullptr removes it). Any thread; a thread that
/// registers after the call sees it (release/acquire). Not for signal handlers.
void set_thread_observer(const ThreadObserver* observer) noexcept;
}  // namespace detail

/// The calling thread's context, registering the thread on first use.
/// nullptr only in a signal handler that interrupted this thread's
/// registration, or during thread exit: the caller then drops its event
/// (counted in unregistered_drops()).
[[gnu::always_inline]] inline ThreadContext* thread_context() {
  ThreadContext* c = detail::context_word();
  if (c != nullptr) [[likely]]
    return c;
  return detail::register_thread();
}

/// Events dropped because their thread had no context (see thread_context()).
uint64_t unregistered_drops() noexcept;
/// Counts one such drop (cold).
[[gnu::cold]] void count_unregistered_drop() noexcept;

/// Registers the calling thread now (pid, comm, its counter window with the
/// pages of every counter group currently allocated touched), so that its
/// first event does not.
void prepare_thread();

/// Re-reads the calling thread's name (after pthread_setname_np/prctl) into
/// its context and into the pid -> comm table (see cmdlines()).
void refresh_thread_comm();

/// Marks the scope of a signal handler: events emitted inside get the
/// hardirq flag ('h' in the trace layout), as the kernel marks events
/// recorded in interrupt context. Events that interrupt another emit on the
/// same thread are marked anyway. Async-signal-safe. Inside a SignalScope a
/// thread that is not registered yet does not register (that allocates and
/// locks): its events are dropped and counted in unregistered_drops(). Call
/// prepare_thread() in threads whose signal handlers emit.
class SignalScope {
 public:
  SignalScope() noexcept;
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

 private:
  ThreadContext* ctx_;
};

// ---- per-thread counters ----------------------------------------------------

/// A group of kGroupSlots u64 counters with one slice per thread. Allocated
/// for each (instance, event) state; freed when the state dies. New groups
/// read zero. Group 0 is never handed out.
uint32_t allocate_counter_group();
/// Returns a group; its values are discarded. The caller guarantees no
/// thread still writes it (a grace period has passed since it was unpublished).
void free_counter_group(uint32_t group);

/// This thread's slice of `group` (< kMaxGroups, as allocate_counter_group()
/// returns): an address in the thread's window, no test. An indexed load
/// instead of the block table it replaced (pointer, null test, block, group:
/// six instructions and a branch on every emit).
[[gnu::always_inline]] inline detail::CounterGroup& thread_counters(ThreadContext& ctx,
                                                                    uint32_t group) noexcept {
  return ctx.groups[group];
}

/// Adds `n` to this thread's slice of a counter: one instruction, so a
/// signal handler's own increments are never lost (see the invariants above),
/// and no lock prefix (only this thread writes it). Async-signal-safe.
/// Mirrors the kernel's local_add (arch/x86/include/asm/local.h).
[[gnu::always_inline]] inline void counter_add(std::atomic<uint64_t>& c, uint64_t n = 1) noexcept {
#if defined(__x86_64__) && !TRACEPIPE_TSAN
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));
  asm volatile("addq %1, %0" : "+m"(*reinterpret_cast<uint64_t*>(&c)) : "er"(n));
#else
  c.fetch_add(n, std::memory_order_relaxed);
#endif
}

/// Sum of one slot of `group` over every thread, live or exited. Takes the
/// registry mutex; exact once the writers are quiet, never torn.
uint64_t counter_sum(uint32_t group, uint32_t slot);

/// Sums of every slot of `group` (one lock, one walk).
std::array<uint64_t, detail::kGroupSlots> counter_sums(uint32_t group);

// ---- pid -> comm table ------------------------------------------------------

/// (Cmdline: core/events/cmdline.h)

/// Every thread that ever registered (pid -> comm at registration or last
/// refresh_thread_comm()), sorted by pid. Mirrors kernel/trace/trace.c:
/// saved_cmdlines (which keeps the comm of every pid that recorded an event).
std::vector<Cmdline> cmdlines();

/// Number of threads registered right now (for tests and stats).
size_t registered_thread_count();

}  // namespace tracepipe
