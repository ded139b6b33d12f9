#pragma once
// Safe reclamation for the write path: a user-space RCU whose readers pay one
// thread-local load and two thread-local stores, and whose updaters pay one
// membarrier(2).
//
// Readers are emits. Each emit runs inside a WriterScope, whose one word
// (ThreadContext::read_section) is both the read-side section and the
// thread's nesting depth: epoch << 16 | depth, 0 outside.
//
//   enter:  prev = ctx.read_section                                          (A)
//           if prev == 0: ctx.read_section = global_section   (epoch<<16 | 1)
//           else:         ctx.read_section = prev + 1         (nested: a signal
//                                                              handler's emit)
//           ... load filter/subscriber pointers, use them ...               (C)
//   leave:  ctx.read_section = (prev == 0 ? 0 : prev)                        (D)
//
// Updaters (set_filter, enable, instance teardown) publish the new pointer
// with a release store, then call synchronize() before freeing the old one:
//
//   target = (global_section += 1 << 16) >> 16                               (E)
//   membarrier(PRIVATE_EXPEDITED)    // every running thread of the process (F)
//                                    // executes a full barrier
//   for each registered thread: wait while s != 0 && s >> 16 < target       (G)
//                               (s = ctx.read_section)
//
// Why it is safe: (A)'s store is a plain store that may sit in a store buffer
// while (C) loads the old pointer; (F) drains it, so (G) sees the reader's
// epoch (< target) and waits for (D). A reader whose (A) comes after (F)
// loads the pointer after (F), so it sees the new pointer. A signal handler
// that interrupts between the load and the store of (A) leaves the word as it
// found it; one that interrupts after (A) sees prev != 0, keeps the epoch and
// restores the word when it leaves. This is the "memb" flavour of liburcu in
// our own words; the kernel gets the same effect from disabling preemption
// (tasks-trace RCU for filters), whose preempt_count is likewise both the
// nesting depth and the read-side section.
//
// Why one word and constant stores: an emit's loads of its thread's words
// otherwise wait on the previous emit's stores to them. The outermost leave
// stores the constant 0 and the enter stores the global word, never a value
// derived from the load, so one emit's section is not a chain of store-to-
// load forwards through the one before, which is what made the two-word
// scope it replaced a large part of a staged discard.
//
// Without membarrier (very old kernels or a seccomp filter), synchronize()
// forces the barrier with an mprotect() TLB shootdown, which interrupts every
// CPU running this process just as well.
#include <atomic>
#include <cassert>
#include <cstdint>

#include "tracepipe/core/instance/thread_context.h"

namespace tracepipe {

namespace detail {
/// The word an outermost emit stores: the current epoch << 16 | depth 1. The
/// epoch starts at 1 and grows by one per synchronize() (48 bits: never wraps).
extern constinit std::atomic<uint64_t> gp_global_section;
/// A fresh 0 made by an instruction of its own (`xor`), whose output the
/// compiler cannot derive from anything else: the outermost leave's store
/// then never reuses the register or stack slot holding the word loaded at
/// entry (equal to 0 on that path). An empty asm with "+r" still let GCC 12
/// feed it that register, which brought the store-to-load chain back (found
/// in review, seen in trace_slow_path's code).
[[gnu::always_inline]] inline uint64_t opaque_zero() noexcept {
  uint64_t z;
#if defined(__x86_64__)
  asm("xorl %k0, %k0" : "=r"(z));
#elif defined(__aarch64__)
  asm("mov %0, xzr" : "=r"(z));
#else
  z = 0;
#endif
  return z;
}
}  // namespace detail

/// RAII: one emit on the calling thread (or one tracepoint-style fan-out,
/// whose emits into each instance run inside it). Opens a read-side section
/// and counts nesting, in one word. Cost: two loads and one store to
/// thread-local memory on entry, one store on exit; no atomic
/// read-modify-write, no fence instruction. Async-signal-safe. Nesting
/// deeper than 65535 emits on one thread (each one a signal handler inside
/// the one before) is not supported. Precondition: the calling thread is
/// registered and `c` is its context (what thread_context() returned); the
/// scope works on the calling thread's context whatever `c` is (checked by
/// assert). Mirrors include/linux/preempt.h: preempt_disable/preempt_enable
/// as the read side of RCU-sched.
class WriterScope {
 public:
  [[gnu::always_inline]] explicit WriterScope([[maybe_unused]] ThreadContext& c) noexcept {
    ThreadContext& t = *detail::context_word();
    assert(&c == &t);
    prev_ = t.read_section.load(std::memory_order_relaxed);
    // acquire: the section's own loads (C) must not be performed before
    // this one, or a reader could load the old pointer yet record the new
    // epoch and not be waited for (arm64; a plain load on x86).
    if (prev_ == 0) [[likely]]
      t.read_section.store(detail::gp_global_section.load(std::memory_order_acquire),
                           std::memory_order_relaxed);  // (A)
    else
      t.read_section.store(prev_ + 1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  [[gnu::always_inline]] ~WriterScope() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    // The context is re-read from thread-local storage rather than kept in
    // the scope: inside an inlined emit GCC spills a kept pointer to the
    // stack, and this store then gets its address only after a reload,
    // late. The next emit's load of the same word waits for that address; a
    // %fs-relative address is ready at once.
    ThreadContext& t = *detail::context_word();
    // (D) The outermost scope stores the constant 0 (see the top of this
    // file); an inner one restores the word its opener left, which every
    // handler that ran meanwhile restored too.
    if (prev_ == 0) [[likely]]
      t.read_section.store(detail::opaque_zero(), std::memory_order_release);
    else
      t.read_section.store(prev_, std::memory_order_release);
  }
  WriterScope(const WriterScope&) = delete;
  WriterScope& operator=(const WriterScope&) = delete;

  /// Emits that were already in flight on this thread when this one began
  /// (0 = not nested; > 0 = this emit runs in a signal handler).
  uint32_t depth() const noexcept {
    return static_cast<uint32_t>(prev_ & detail::kSectionDepthMask);
  }

 private:
  uint64_t prev_;
};

namespace detail {
/// WriterScope's two steps, outermost only, for a caller that leaves nested
/// emits to another path (EventDecl::trace's lane): nothing to remember
/// between them, so no register is held across the section for `prev_`.
/// enter_outermost_section() returns false, and changes nothing, when an
/// emit is already in flight on this thread (the caller then takes a path
/// with a WriterScope); after true, leave_outermost_section() must follow
/// on the same thread. Same protocol, steps (A) and (D), as WriterScope.
[[gnu::always_inline]] inline bool enter_outermost_section(ThreadContext& t) noexcept {
  if (t.read_section.load(std::memory_order_relaxed) != 0) [[unlikely]]
    return false;
  t.read_section.store(gp_global_section.load(std::memory_order_acquire),
                       std::memory_order_relaxed);  // (A)
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return true;
}
[[gnu::always_inline]] inline void leave_outermost_section() noexcept {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  context_word()->read_section.store(opaque_zero(), std::memory_order_release);  // (D)
}
}  // namespace detail

/// Waits until every WriterScope that was open when synchronize() began has
/// closed. Afterwards, objects unpublished before the call may be freed.
/// Blocks (sleeps/yields); takes locks; never call it on the write path or
/// from inside a WriterScope (throws std::logic_error if the calling thread
/// is inside one, which would wait for itself).
/// Mirrors kernel/rcu: synchronize_rcu (here for user-space writers).
void synchronize();

/// Number of synchronize() calls that completed (for tests).
uint64_t synchronize_count() noexcept;

}  // namespace tracepipe
