// TempBuffer / PerThreadTempBuffer: construction and the cold paths.
#include "tracepipe/buffers/temp_buffer.h"

#include <sched.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace tracepipe::buffers {

namespace {
void check_slot_size(size_t slot_size, size_t max) {
  if (slot_size < 64 || slot_size > max)
    throw ConfigError("temp buffer: slot_size must be in [64, " + std::to_string(max) + "], got " +
                      std::to_string(slot_size));
}
}  // namespace

TempBuffer::TempBuffer(const TempBufferConfig& cfg) {
  if (cfg.cpus == 0 || cfg.cpus > 65536)
    throw ConfigError("temp buffer: cpus must be in [1, 65536], got " + std::to_string(cfg.cpus));
  check_slot_size(cfg.slot_size, size_t{1} << 20);
  if (cfg.writers == Writers::cpu_local && !detail::rseq_usable())
    throw ConfigError(
        "temp buffer: writers = cpu_local needs rseq and membarrier RSEQ, unavailable in this "
        "process");
  const size_t slot = (cfg.slot_size + 63) / 64 * 64;  // each slot starts on its own cache line
  mem_ = static_cast<std::byte*>(std::aligned_alloc(64, slot * cfg.cpus));
  if (mem_ == nullptr) throw std::bad_alloc();
  std::memset(mem_, 0, slot * cfg.cpus);
  slots_ = new detail::TempSlot[cfg.cpus];
  for (uint32_t c = 0; c < cfg.cpus; ++c) slots_[c].mem = mem_ + slot * c;
  ncpu_ = cfg.cpus;
  cpu_local_ = cfg.writers == Writers::cpu_local;
  capacity_ = static_cast<uint32_t>(cfg.slot_size - detail::kTempHeader);
}

TempBuffer::~TempBuffer() {
  delete[] slots_;
  std::free(mem_);
}

StagedRecord TempBuffer::claim_failed(uint32_t cpu, uint32_t len) noexcept {
  if (cpu >= ncpu_) {
    bad_cpu_fallbacks_.fetch_add(1, std::memory_order_relaxed);
    return StagedRecord(StageError::bad_cpu, cpu);
  }
  if (len > capacity_) {
    slots_[cpu].too_big_fallbacks.fetch_add(1, std::memory_order_relaxed);
    return StagedRecord(StageError::too_big, cpu);
  }
  slots_[cpu].busy_fallbacks.fetch_add(1, std::memory_order_relaxed);
  return StagedRecord(StageError::busy, cpu);
}

StagedRecord TempBuffer::refused_not_here(uint32_t cpu) noexcept {
  bad_cpu_fallbacks_.fetch_add(1, std::memory_order_relaxed);
  return StagedRecord(StageError::bad_cpu, cpu);
}

TempStats TempBuffer::stats(uint32_t cpu) const noexcept {
  if (cpu >= ncpu_) return {};
  return {slots_[cpu].busy_fallbacks.load(std::memory_order_relaxed),
          slots_[cpu].too_big_fallbacks.load(std::memory_order_relaxed)};
}

constinit thread_local PerThreadTempBuffer::ThreadSlot PerThreadTempBuffer::tls_;

PerThreadTempBuffer::PerThreadTempBuffer(size_t slot_size) {
  check_slot_size(slot_size, kMaxSlotSize);
  capacity_ = static_cast<uint32_t>(slot_size - detail::kTempHeader);
}

StagedRecord PerThreadTempBuffer::claim_failed(uint32_t len) noexcept {
  if (len > capacity_) {
    too_big_fallbacks_.fetch_add(1, std::memory_order_relaxed);
    return StagedRecord(StageError::too_big, 0);
  }
  busy_fallbacks_.fetch_add(1, std::memory_order_relaxed);
  return StagedRecord(StageError::busy, 0);
}

}  // namespace tracepipe::buffers
