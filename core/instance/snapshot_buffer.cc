// The snapshot spare and its swap (snapshot_buffer.h).
#include "tracepipe/core/instance/snapshot_buffer.h"

#include <thread>

#include "tracepipe/core/instance/grace_period.h"

namespace tracepipe::detail {

LiveRing::~LiveRing() = default;  // the instance waited for its writers before

void LiveRing::lock_swaps() noexcept {
  bool expected = false;
  while (!busy_.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
    expected = false;
    std::this_thread::yield();
  }
}

void LiveRing::retire(std::unique_ptr<buffers::RingBufferBase> ring) {
  synchronize();  // writers that loaded it have left their emits
  ring.reset();
}

void LiveRing::allocate() {
  if (allocated()) return;
  std::unique_ptr<buffers::RingBufferBase> spare = make_spare_();
  spare->set_paused_nowait(true);
  buffers::RingBufferBase* s = spare.get();
  own_[own_[0] ? 1 : 0] = std::move(spare);
  snap_.store(s, std::memory_order_release);
}

void LiveRing::free() {
  lock_swaps();
  buffers::RingBufferBase* s = snap_.exchange(nullptr, std::memory_order_acq_rel);
  unlock_swaps();
  if (s == nullptr) return;
  const int i = own_[0].get() == s ? 0 : 1;
  std::unique_ptr<buffers::RingBufferBase> gone = std::move(own_[i]);
  if (i == 0) own_[0] = std::move(own_[1]);  // the live ring in slot 0
  retire(std::move(gone));
}

void LiveRing::clear() {
  if (!allocated()) return;
  std::unique_ptr<buffers::RingBufferBase> fresh = make_spare_();
  fresh->set_paused_nowait(true);
  lock_swaps();
  buffers::RingBufferBase* s = snap_.load(std::memory_order_relaxed);
  const int i = own_[0].get() == s ? 0 : 1;
  std::unique_ptr<buffers::RingBufferBase> gone = std::move(own_[i]);
  snap_.store(fresh.get(), std::memory_order_release);
  own_[i] = std::move(fresh);
  unlock_swaps();
  retire(std::move(gone));
}

void LiveRing::take() {
  allocate();
  lock_swaps();
  swap_locked();
  unlock_swaps();
}

bool LiveRing::swap() noexcept {
  if (snap_.load(std::memory_order_acquire) == nullptr) return false;
  if (busy_.exchange(true, std::memory_order_acquire)) {
    busy_skips_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const bool ok =
      snap_.load(std::memory_order_relaxed) != nullptr;  // free() may have run meanwhile
  if (ok) swap_locked();
  unlock_swaps();
  return ok;
}

void LiveRing::swap_locked() noexcept {
  buffers::RingBufferBase* live = live_.load(std::memory_order_relaxed);
  buffers::RingBufferBase* snap = snap_.load(std::memory_order_relaxed);
  // The spare inherits tracing_on (update_max_tr does the same with
  // ring_buffer_record_on/off), then becomes live; the old live ring is
  // frozen for readers.
  snap->set_paused_nowait(live->paused());
  live_.store(snap, std::memory_order_release);
  snap_.store(live, std::memory_order_release);
  live->set_paused_nowait(true);
  swaps_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tracepipe::detail
