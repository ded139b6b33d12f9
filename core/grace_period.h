#pragma once
// Safe reclamation for the write path: a user-space RCU whose readers pay two
// thread-local stores, and whose updaters pay one membarrier(2).
//
// Readers are emits. Each emit runs inside a WriterScope, which also counts
// the thread's nesting depth (see thread_context.h):
//
//   enter:  prev = ctx.gp_epoch; if prev == 0: ctx.gp_epoch = global_epoch  (A)
//           nesting = nesting + 1                                           (B)
//           ... load filter/subscriber pointers, use them ...               (C)
//   leave:  nesting = nesting - 1; ctx.gp_epoch = prev                      (D)
//
// Updaters (set_filter, enable, instance teardown) publish the new pointer
// with a release store, then call synchronize() before freeing the old one:
//
//   target = ++global_epoch                                                 (E)
//   membarrier(PRIVATE_EXPEDITED)    // every running thread of the process (F)
//                                    // executes a full barrier
//   for each registered thread: wait while 0 < ctx.gp_epoch < target       (G)
//
// Why it is safe: (A) is a plain store that may sit in a store buffer while
// (C) loads the old pointer; (F) drains it, so (G) sees the reader's epoch
// (< target) and waits for (D). A reader whose (A) comes after (F) loads the
// pointer after (F), so it sees the new pointer. A signal handler that
// interrupts between the load and the store of (A) leaves gp_epoch as it found
// it; a handler that interrupts after (A) sees prev != 0 and changes nothing.
// This is the "memb" flavour of liburcu in our own words; the kernel gets the
// same effect from disabling preemption (tasks-trace RCU for filters).
//
// Without membarrier (very old kernels or a seccomp filter), synchronize()
// forces the barrier with an mprotect() TLB shootdown, which interrupts every
// CPU running this process just as well.
#include <atomic>
#include <cassert>
#include <cstdint>

#include "core/thread_context.h"

namespace tracepipe {

namespace detail {
/// Epoch readers record on entry; starts at 1 (0 means "outside").
extern constinit std::atomic<uint64_t> gp_global_epoch;
}  // namespace detail

/// RAII: one emit on the calling thread (or one tracepoint-style fan-out,
/// whose emits into each instance run inside it). Opens a read-side section
/// and counts nesting. Cost: two loads and two stores to thread-local memory on entry,
/// one or two stores on exit; no atomic read-modify-write, no fence instruction.
/// Async-signal-safe. Precondition: the calling thread is registered and
/// `c` is its context (what thread_context() returned); the scope works on
/// the calling thread's context whatever `c` is (checked by assert).
class WriterScope {
 public:
  [[gnu::always_inline]] explicit WriterScope([[maybe_unused]] ThreadContext& c) noexcept {
    ThreadContext& t = *detail::tl_context;
    assert(&c == &t);
    prev_epoch_ = t.gp_epoch.load(std::memory_order_relaxed);
    if (prev_epoch_ == 0) t.gp_epoch.store(detail::gp_global_epoch.load(std::memory_order_relaxed),
                                           std::memory_order_relaxed);  // (A)
    depth_ = t.nesting.load(std::memory_order_relaxed);
    t.nesting.store(depth_ + 1, std::memory_order_relaxed);  // (B)
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  [[gnu::always_inline]] ~WriterScope() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    // The context is re-read from thread-local storage rather than kept in
    // the scope: inside an inlined emit GCC spills a kept pointer (or
    // &nesting) to the stack, and these two stores then get their address
    // only after a reload, late. The next emit's loads of the same two words
    // wait for that address; a %fs-relative address is ready at once (a loop
    // of staged discards, A/B in one sitting: 6.5 -> 6.1 ns).
    ThreadContext& t = *detail::tl_context;
    t.nesting.store(depth_, std::memory_order_relaxed);
    // (D) Only the scope that opened the section (it saw 0) closes it; an
    // inner one found the word as its opener left it, and every handler
    // that ran meanwhile restored it. Storing the constant 0, not the value
    // loaded on entry, keeps the next emit's load of this word off a chain
    // of store-to-load forwards through this one.
    if (prev_epoch_ == 0) [[likely]]
      t.gp_epoch.store(0, std::memory_order_release);
  }
  WriterScope(const WriterScope&) = delete;
  WriterScope& operator=(const WriterScope&) = delete;

  /// Emits that were already in flight on this thread when this one began
  /// (0 = not nested; > 0 = this emit runs in a signal handler).
  uint32_t depth() const noexcept { return depth_; }

 private:
  uint64_t prev_epoch_;
  uint32_t depth_;
};

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
