#pragma once
// Staging for the fast path: where a filtered event's record is built before
// the filter decides on it (the kernel's trace_buffered_event). A thin policy
// layer over buffers/temp_buffer.h:
//
//   per_cpu                 one process-wide buffers::TempBuffer, a slot per
//                           CPU (claimed by the CPU the thread runs on)
//   per_thread, adaptive    buffers::PerThreadTempBuffer, a slot per thread
//
//   slot:  [ u32 header | u32 length | record ........................ ]
//          <------------------------- 4096 bytes ---------------------->
//   A record is staged when size <= kMaxStagedRecord (4088); larger records
//   go direct (the kernel's two bugs were at exactly this boundary;
//   tests/core/instance/fast_path_test.cc pins both sides of it).
//
// Invariants (buffers/temp_buffer.h has the details)
//  S1 Non-recursive: a slot is claimed by at most one emit at a time; a
//     nested emit (signal handler; per CPU also another thread on that CPU)
//     finds it busy and goes direct. Per CPU, the claim is a restartable
//     sequence on the caller's CPU when the process has rseq (no locked
//     instruction), a locked exchange otherwise (buffers/temp_buffer.h).
//  S2 A claim remembers its slot, so release() frees exactly what was
//     claimed, even after the thread migrated.
//  S3 The slots are shared by every instance, like the kernel's per-CPU temp
//     buffer: one staged emit at a time per CPU (or thread).
//
// Thread-safety: try_claim/release are lock-free and async-signal-safe.
#include <cstdint>
#include <span>

#include "tracepipe/buffers/current_cpu.h"
#include "tracepipe/buffers/temp_buffer.h"
#include "tracepipe/core/config/instance_options.h"

namespace tracepipe {

/// Bytes per staging slot (the kernel uses one page).
inline constexpr uint32_t kSlotSize = 4096;
/// Largest record that is staged: the slot minus its header and length word.
inline constexpr uint32_t kMaxStagedRecord = kSlotSize - 8;
// The emit's per-thread lane claims the thread's slot without a capacity
// test (PerThreadTempBuffer::claim_own): the slot must be this size.
static_assert(kSlotSize == buffers::PerThreadTempBuffer::kMaxSlotSize);

/// A claimed slot (falsy when the claim failed; why() says why).
class Claim {
 public:
  explicit operator bool() const noexcept { return static_cast<bool>(rec_); }
  /// Why the claim failed: the temp buffer's own StageError (none when it
  /// held; busy, too_big, or bad_cpu, which the write path counts as busy).
  buffers::StageError why() const noexcept { return rec_.error(); }
  /// The record area, exactly the size asked for.
  std::span<std::byte> payload() const noexcept { return rec_.data(); }

 private:
  friend class Stager;
  explicit Claim(buffers::StagedRecord r) noexcept : rec_(r) {}
  buffers::StagedRecord rec_;
};

namespace detail {
/// The process-wide slots (created on first use, never freed).
buffers::TempBuffer& cpu_temp_buffer();
buffers::PerThreadTempBuffer& thread_temp_buffer();
}  // namespace detail

/// Claims and releases staging slots for one staging policy.
class Stager {
 public:
  explicit Stager(Staging policy);

  Staging policy() const noexcept { return policy_; }
  bool per_cpu() const noexcept { return per_cpu_; }

  /// Claims the slot of the CPU the caller runs on now (per-CPU policy: a restartable
  /// sequence when the process has rseq, TempBuffer::try_claim_local) or the
  /// calling thread. Fails with too_big when size > kMaxStagedRecord, busy
  /// when the slot is in use (S1).
  [[gnu::always_inline]] Claim try_claim(uint32_t size) noexcept {
    if (!per_cpu_) return Claim(thread_->try_claim(0, size));
    return Claim(cpu_->try_claim_local(size));
  }

  /// Frees a slot that try_claim() claimed (c is true) (S2).
  [[gnu::always_inline]] void release(const Claim& c) noexcept {
    if (!per_cpu_)
      buffers::PerThreadTempBuffer::release_own();  // c holds this thread's slot
    else
      buffers::TempBuffer::release_claimed(c.rec_);
  }

  /// The buffers behind this stager (tests force a slot busy through them).
  buffers::TempBuffer& cpu_slots() noexcept { return detail::cpu_temp_buffer(); }
  buffers::PerThreadTempBuffer& thread_slots() noexcept { return detail::thread_temp_buffer(); }

 private:
  Staging policy_;
  bool per_cpu_;
  buffers::TempBuffer* cpu_ = nullptr;
  buffers::PerThreadTempBuffer* thread_ = nullptr;
};

}  // namespace tracepipe
