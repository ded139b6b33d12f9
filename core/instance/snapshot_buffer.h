#pragma once
// An instance's ring buffer and its snapshot spare: the kernel's
// tr->array_buffer and tr->max_buffer. Writers reach the live ring through
// one pointer (LiveRing: `*ring_` and `ring_->` in the write path); a
// snapshot swaps which of the two rings is live, so tracing goes on in the
// other one while the snapshot keeps what the live ring held.
//
//   live_ ─▶ ring A (writers reserve here)        snap_ ─▶ ring B (frozen: paused)
//                     swap():  live_ ─▶ B (takes A's tracing_on state), snap_ ─▶ A (paused)
//
// - The spare is allocated on request (allocate(): `echo 1 > snapshot`, or
//   the first snapshot trigger), empty and paused, with the live ring's
//   geometry, mode, writers and clock; free() (`echo 0`) releases it,
//   clear() (`echo 2`) empties it by putting a fresh one in its place.
// - swap() runs on the write path (the snapshot trigger): lock-free, no
//   allocation or system call. Two swaps at once are not serialised by a
//   lock: one takes `busy_` and swaps, the other finds it taken and skips
//   (counted in busy_skips()); the kernel spins on tr->max_lock instead.
// - A writer that loaded the old live pointer before a swap may still
//   reserve in it: its record lands in the snapshot, or is dropped and
//   counted lost_paused once the snapshot is paused, as in the kernel, where
//   a writer on another CPU may still commit into the buffer swapped out.
//   Reserve and discard may resolve the pointer twice: both rings have the
//   same type, and a discard uses only its reservation's CPU buffer.
// - A ring leaves (free, clear) only after a grace period (synchronize()):
//   no writer still holds it.
// - Readers (trace_text, the recorder, buffers::Snapshot) take ring() at the
//   time they start: a reader that runs across a swap keeps reading the ring
//   it started with (then the snapshot).
//
// Mirrors kernel/trace/trace.c: update_max_tr, tracing_alloc_snapshot_instance,
// free_snapshot, tracing_snapshot_write.
//
// Thread-safety: ring access and swap(): any thread, lock-free. allocate(),
// free(), clear(), take(): control plane (one at a time: the caller holds
// a mutex; they may block in a grace period).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "tracepipe/buffers/ring_buffer.h"

namespace tracepipe::detail {

class LiveRing {
 public:
  LiveRing() = default;
  LiveRing(const LiveRing&) = delete;
  LiveRing& operator=(const LiveRing&) = delete;
  ~LiveRing();

  /// Installs the instance's ring (its constructor does this once). R is
  /// the concrete RingBuffer<M, FunctionClock, NoHooks, W>: the spare is
  /// made as another R with the same geometry and clock, in private memory.
  template <class R>
  LiveRing& operator=(std::unique_ptr<R> ring) {
    R* r = ring.get();
    buffers::RingBufferConfig c;
    c.cpus = r->cpus();
    c.subbuf_size = r->subbuf_size();
    c.size_per_cpu =
        (r->nr_subbufs() - 1) * r->subbuf_size();  // nr_subbufs counts the spare position
    make_spare_ = [c, clk = r->clock()] {
      return std::unique_ptr<buffers::RingBufferBase>(new R(c, clk));
    };
    own_[0] = std::move(ring);
    live_.store(r, std::memory_order_release);
    return *this;
  }

  // The live ring (write path: one load).
  [[gnu::always_inline]] buffers::RingBufferBase& operator*() const noexcept {
    return *live_.load(std::memory_order_acquire);
  }
  [[gnu::always_inline]] buffers::RingBufferBase* operator->() const noexcept {
    return live_.load(std::memory_order_acquire);
  }

  /// The snapshot ring, paused (readable with buffers::Snapshot, Iterator),
  /// or nullptr when no spare is allocated.
  const buffers::RingBufferBase* snapshot() const noexcept {
    return snap_.load(std::memory_order_acquire);
  }
  bool allocated() const noexcept { return snapshot() != nullptr; }

  /// Allocates the spare (empty, paused) if there is none. Throws
  /// std::bad_alloc. Control plane.
  void allocate();
  /// Frees the spare (the snapshot ring), after a grace period. Control plane.
  void free();
  /// Empties the snapshot: a fresh spare replaces it (no-op without one).
  /// Control plane.
  void clear();
  /// Swaps live and snapshot from the control plane (`echo 1 > snapshot`),
  /// allocating the spare first if needed. Waits for a racing swap().
  void take();

  /// Swaps the live ring with the snapshot: the live ring becomes the
  /// snapshot (paused), the spare becomes live with the live ring's
  /// tracing_on state. False (nothing done) when no spare is allocated or
  /// another swap is running. Write path: lock-free, no allocation or
  /// system call. Mirrors kernel/trace/trace.c: update_max_tr.
  bool swap() noexcept;

  /// Swaps done (trigger or take()), and trigger swaps skipped because
  /// another swap was running.
  uint64_t swaps() const noexcept { return swaps_.load(std::memory_order_relaxed); }
  uint64_t busy_skips() const noexcept { return busy_skips_.load(std::memory_order_relaxed); }

 private:
  void lock_swaps() noexcept;  // control plane: spins (yielding) until busy_ is ours
  void unlock_swaps() noexcept { busy_.store(false, std::memory_order_release); }
  void swap_locked() noexcept;
  /// Frees own_[i] after a grace period.
  void retire(std::unique_ptr<buffers::RingBufferBase> ring);

  std::atomic<buffers::RingBufferBase*> live_{nullptr};
  std::atomic<buffers::RingBufferBase*> snap_{nullptr};
  std::atomic<bool> busy_{false};
  std::atomic<uint64_t> swaps_{0}, busy_skips_{0};
  std::unique_ptr<buffers::RingBufferBase> own_[2];  // the rings, live and snapshot in either slot
  std::function<std::unique_ptr<buffers::RingBufferBase>()> make_spare_;
};

}  // namespace tracepipe::detail
