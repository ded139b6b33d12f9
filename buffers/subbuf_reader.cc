// SubbufReader: whole-sub-buffer consuming reader (see subbuf_reader.h).
#include "tracepipe/buffers/subbuf_reader.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tracepipe::buffers {

using namespace detail;

SubbufReader::SubbufReader(const RingBufferBase& rb, uint32_t cpu) : cpu_(cpu) {
  if (cpu >= rb.cpus())
    throw std::out_of_range("sub-buffer reader: cpu " + std::to_string(cpu) + " >= cpus() " +
                            std::to_string(rb.cpus()));
  cb_ = &rb.cpu_buffer(cpu);
  cur_.lap = cb_->read_lap.load(std::memory_order_relaxed);
  cur_.idx = cb_->read_idx.load(std::memory_order_relaxed);
}

bool SubbufReader::advance_read_off(uint64_t from, uint64_t to) noexcept {
  std::atomic<uint64_t>& slot = cb_->positions[cur_.idx];
  uint64_t w = slot.load(std::memory_order_acquire);
  for (;;) {
    if (pw_phase(w) != Phase::live || pw_lap(w) != cur_.lap || pw_read_off(w) != from) return false;
    if (slot.compare_exchange_weak(w, pw_with_read_off(w, to), std::memory_order_acq_rel,
                                   std::memory_order_acquire))
      return true;
  }
}

LossCounts SubbufReader::losses() noexcept {
  (void)reclaim_set_aside(*cb_);
  const CpuBuffer& cb = *cb_;
  return {cb.overrun.load(std::memory_order_relaxed),
          cb.lost_full.load(std::memory_order_relaxed),
          cb.lost_busy.load(std::memory_order_relaxed),
          cb.commit_overrun.load(std::memory_order_relaxed),
          cb.lost_set_aside.load(std::memory_order_relaxed),
          cb.lost_too_big.load(std::memory_order_relaxed)};
}

void SubbufReader::publish() noexcept {
  cb_->read_lap.store(cur_.lap, std::memory_order_relaxed);
  cb_->read_idx.store(cur_.idx, std::memory_order_relaxed);
}

uint64_t SubbufReader::tail_seq() const noexcept {
  const uint64_t t = tail();
  return tail_lap(t) * cb_->nr_pos + tail_idx(t);
}

uint64_t SubbufReader::closed_unread() const noexcept {
  const uint64_t P = cb_->nr_pos;
  const uint64_t M = (kLapMask + 1) * P;
  return std::min<uint64_t>((tail_seq() + M - read_seq()) % M, P - 1);
}

}  // namespace tracepipe::buffers
