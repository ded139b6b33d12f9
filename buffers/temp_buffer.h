#pragma once
// buffers/temp_buffer.h — staging for filtered events (design.md "The fast
// path"). Mirrors kernel/trace/trace.c: trace_buffered_event (one page per
// CPU, claimed with trace_buffered_event_cnt; used only when not nested and
// when the record fits; otherwise the caller reserves in the ring buffer).
//
// ══ Design ═══════════════════════════════════════════════════════════════════
//   per CPU:  ┌ line 0: busy flag, fallback counters ┐   ┌ slot: [u32 hdr][u32 len][payload ...] ┐
//             └──────────────────────────────────────┘──▶└────────── slot_size bytes ─────────────┘
//   try_claim(cpu, len) / try_claim_local(len) (the CPU the caller runs on):
//     len > capacity()          → empty, too_big (counted), nothing claimed
//     busy was 1                → empty, busy (counted): nested or another
//                                 thread holds this CPU's slot
//     otherwise                 → StagedRecord owning the slot; busy = 1
//   How busy goes 0 → 1 is fixed per TempBuffer (TempBufferConfig::writers):
//     any_cpu    busy.exchange(1): a locked instruction; any
//                thread may claim any CPU's slot.
//     cpu_local  a restartable sequence on the slot of the CPU the caller
//                runs on (buffers/rseq.h: claim_local): "if busy == 0 then
//                busy = 1", restarted if the thread is preempted, migrated or
//                signalled inside it; a load and a store. This is the
//                kernel's own claim (trace_buffered_event_cnt, a per-CPU
//                increment with preemption disabled) in user space. A claim
//                of another CPU's slot is refused (bad_cpu): that store would
//                race with a section already past its compare.
//   release(h): h's slot.busy = 0 (release store). The handle names the slot
//   it claimed, so a thread that migrated to another CPU between claim and
//   release still releases its own slot (the kernel had to disable preemption
//   for this: "tracing: Disable preemption when using the filter buffer").
//
//  Invariants: at most one live StagedRecord per slot (the exchange, or the
//  section: only threads running on CPU c store 1 into slot c, one at a time,
//  since a thread switched in on c aborts the section of the one switched
//  out); only the owner stores 0, from any CPU; a nested claimer never
//  changes the flag, so it needs no undo. capacity() = slot_size - 8: the kernel's slot also holds
//  an event header and a length word, and its two off-by-header bugs were at
//  exactly this boundary (tested at capacity() and capacity() + 1).
//
//  The per-thread variant (PerThreadTempBuffer) uses one slot per thread in
//  static thread-local storage: claim is a load and a store (no locked
//  instruction), safe against signal handlers on the same thread, immune to
//  migration. The slot is shared by all PerThreadTempBuffer instances of the
//  thread (claims are non-recursive anyway: a nested claim on any instance
//  falls back).
//
//  Cost: per-CPU claim = one xchg with any_cpu, one rseq section with
//  cpu_local; release = one store. Per-thread claim: a load and a store.
//  No allocation, lock or system call.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "tracepipe/buffers/current_cpu.h"
#include "tracepipe/buffers/ring_buffer.h"  // ConfigError, Writers
#include "tracepipe/buffers/rseq.h"

namespace tracepipe::buffers {

/// Why try_claim() returned nothing (the caller then reserves directly).
enum class StageError : uint8_t {
  none,
  busy,     ///< slot in use (nested event, or another thread on that CPU)
  too_big,  ///< record larger than capacity()
  bad_cpu,  ///< cpu >= cpus(), or (cpu_local) not the CPU the caller runs on
};

/// Fallback counters of one slot (per CPU) or of a PerThreadTempBuffer.
struct TempStats {
  uint64_t busy_fallbacks = 0;
  uint64_t too_big_fallbacks = 0;
};

struct TempBufferConfig {
  uint32_t cpus = 1;
  size_t slot_size = 4096;  ///< bytes per slot incl. the 8-byte header; in [64, 1 MiB]
  /// How a slot is claimed (see the design comment): any_cpu = locked
  /// exchange, any slot from anywhere; cpu_local = restartable sequence, only
  /// the slot of the CPU the caller runs on. cpu_local needs
  /// detail::rseq_usable() (the constructor throws ConfigError otherwise).
  Writers writers = Writers::any_cpu;
};

/// A claimed staging slot: write the record into data(), then release it
/// exactly once (TempBuffer::release). Empty (false) when the claim failed;
/// error() says why.
class StagedRecord {
 public:
  StagedRecord() noexcept = default;
  explicit operator bool() const noexcept { return flag_ != nullptr; }
  /// The record's bytes: exactly the length claimed.
  std::span<std::byte> data() const noexcept { return {data_, len_}; }
  /// The CPU whose slot was claimed (0 for the per-thread variant).
  uint32_t cpu() const noexcept { return cpu_; }
  StageError error() const noexcept { return err_; }

 private:
  friend class TempBuffer;
  friend class PerThreadTempBuffer;
  StagedRecord(std::atomic<uint32_t>* flag, std::byte* data, uint32_t len, uint32_t cpu) noexcept
      : flag_(flag), data_(data), len_(len), cpu_(cpu) {}
  explicit StagedRecord(StageError e, uint32_t cpu) noexcept : cpu_(cpu), err_(e) {}

  std::atomic<uint32_t>* flag_ = nullptr;
  std::byte* data_ = nullptr;
  uint32_t len_ = 0;
  uint32_t cpu_ = 0;
  StageError err_ = StageError::none;
};

namespace detail {
struct alignas(64) TempSlot {
  std::atomic<uint32_t> busy{0};
  std::byte* mem = nullptr;  // slot_size bytes: [u32 hdr][u32 len][payload]
  std::atomic<uint64_t> busy_fallbacks{0};
  std::atomic<uint64_t> too_big_fallbacks{0};
};
static_assert(sizeof(TempSlot) == 64);
inline constexpr size_t kTempHeader = 8;  // mirrors ring_buffer_event header + array[0] length word
}  // namespace detail

/// Per-CPU staging slots. Thread-safety: try_claim/release from any thread
/// or signal handler; lock-free.
class TempBuffer {
 public:
  explicit TempBuffer(const TempBufferConfig& cfg);  // throws ConfigError
  ~TempBuffer();
  TempBuffer(const TempBuffer&) = delete;
  TempBuffer& operator=(const TempBuffer&) = delete;

  /// Claims CPU `cpu`'s slot for a record of `len` bytes. Empty when the
  /// slot is busy, the record is larger than capacity(), or cpu is unknown
  /// (each counted: busy and too_big per CPU, bad_cpu in bad_cpu_fallbacks()). Mirrors the claim in
  /// kernel/trace/trace.c: trace_event_buffer_lock_reserve.
  /// With cpu_local writers only the caller's own CPU can be claimed: any
  /// other `cpu` is refused with bad_cpu (use try_claim_local()).
  [[nodiscard, gnu::always_inline]] StagedRecord try_claim(uint32_t cpu, uint32_t len) noexcept {
    if (cpu >= ncpu_ || len > capacity_) [[unlikely]]
      return claim_failed(cpu, len);
    if (cpu_local_) return claim_local_loop(cpu, len, false);
    detail::TempSlot& s = slots_[cpu];
    if (s.busy.exchange(1, std::memory_order_acquire) != 0) [[unlikely]]
      return claim_failed(cpu, len);
    return claimed(s, len, cpu);
  }
  /// Claims the slot of the CPU the caller runs on now (the staging claim of
  /// the fast path). cpu_local: one restartable sequence, retried with the
  /// new CPU if the thread migrated inside it. any_cpu: the exchange on the
  /// CPU read by current_cpu() (buffers/current_cpu.h).
  /// The record's cpu() says which slot was claimed. Same errors as
  /// try_claim; bad_cpu when the CPU is >= cpus().
  [[nodiscard, gnu::always_inline]] StagedRecord try_claim_local(uint32_t len) noexcept {
    if (cpu_local_) [[likely]] {
      const auto cpu = static_cast<uint32_t>(detail::rseq_cpu());  // -1 (no area) is >= ncpu_
      if (cpu >= ncpu_ || len > capacity_) [[unlikely]]
        return claim_failed(cpu, len);
      return claim_local_loop(cpu, len, true);
    }
    return try_claim(current_cpu(), len);
  }
  /// Releases the slot `h` claimed (whatever CPU the caller runs on now).
  /// No-op for an empty handle. Mirrors __trace_event_discard_commit /
  /// trace_buffered_event_cnt decrement.
  [[gnu::always_inline]] static void release(const StagedRecord& h) noexcept {
    if (h.flag_ != nullptr) h.flag_->store(0, std::memory_order_release);
  }
  /// release() of a handle known to hold a slot (not empty).
  [[gnu::always_inline]] static void release_claimed(const StagedRecord& h) noexcept {
    h.flag_->store(0, std::memory_order_release);
  }

  /// Largest record a slot holds: slot_size - 8.
  uint32_t capacity() const noexcept { return capacity_; }
  uint32_t cpus() const noexcept { return ncpu_; }
  Writers writers() const noexcept { return cpu_local_ ? Writers::cpu_local : Writers::any_cpu; }
  TempStats stats(uint32_t cpu) const noexcept;
  /// Claims refused because cpu >= cpus() (a CPU id above the configured
  /// count), the CPU could not be read, or (cpu_local) try_claim named a CPU
  /// the caller does not run on: the caller then reserves directly.
  uint64_t bad_cpu_fallbacks() const noexcept {
    return bad_cpu_fallbacks_.load(std::memory_order_relaxed);
  }
  bool busy_for_testing(uint32_t cpu) const noexcept { return slots_[cpu].busy.load() != 0; }

 private:
  [[gnu::noinline, gnu::cold]] StagedRecord claim_failed(uint32_t cpu, uint32_t len) noexcept;
  [[gnu::always_inline]] static StagedRecord claimed(detail::TempSlot& s, uint32_t len,
                                                     uint32_t cpu) noexcept {
    std::byte* mem = s.mem;
    reinterpret_cast<uint32_t*>(mem)[1] = len;
    return StagedRecord(&s.busy, mem + detail::kTempHeader, len, cpu);
  }
  /// cpu_local claim of `cpu`'s slot (cpu < ncpu_, len <= capacity_). A
  /// section aborted by preemption or a signal is retried on the same CPU;
  /// after a migration, `follow` retries on the new CPU (try_claim_local),
  /// else the claim is refused with bad_cpu (try_claim of a foreign CPU).
  [[gnu::always_inline]] StagedRecord claim_local_loop(uint32_t cpu, uint32_t len,
                                                       bool follow) noexcept {
    for (;;) {
      detail::TempSlot& s = slots_[cpu];
      const detail::LocalCas r = detail::claim_local(&s.busy, cpu);
      if (r == detail::LocalCas::ok) [[likely]]
        return claimed(s, len, cpu);
      if (r == detail::LocalCas::changed) return claim_failed(cpu, len);  // busy
      const auto now = static_cast<uint32_t>(detail::rseq_cpu());
      if (now != cpu && !follow) return refused_not_here(cpu);
      if (now >= ncpu_) [[unlikely]]
        return claim_failed(now, len);
      cpu = now;
    }
  }
  [[gnu::noinline, gnu::cold]] StagedRecord refused_not_here(uint32_t cpu) noexcept;

  detail::TempSlot* slots_ = nullptr;
  std::byte* mem_ = nullptr;
  uint32_t ncpu_ = 0;
  uint32_t capacity_ = 0;
  bool cpu_local_ = false;
  std::atomic<uint64_t> bad_cpu_fallbacks_{0};
};

/// Staging with one slot per thread (the option of design.md). Same
/// contract as TempBuffer; `cpu` is ignored. slot_size <= kMaxSlotSize.
class PerThreadTempBuffer {
 public:
  static constexpr size_t kMaxSlotSize = 4096;
  explicit PerThreadTempBuffer(size_t slot_size = kMaxSlotSize);  // throws ConfigError

  [[nodiscard, gnu::always_inline]] StagedRecord try_claim(uint32_t /*cpu*/,
                                                           uint32_t len) noexcept {
    if (len > capacity_ || !claim_own()) [[unlikely]]
      return claim_failed(len);
    return StagedRecord(&tls_.busy, own_data(), len, 0);
  }
  [[gnu::always_inline]] static void release(const StagedRecord& h) noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (h.flag_ != nullptr) h.flag_->store(0, std::memory_order_relaxed);
  }
  /// The calling thread's slot without a handle, for a caller that keeps
  /// its own state (the fast path's per-thread staging): claim_own() is
  /// try_claim() minus the size test and the counting (a caller whose claim
  /// fails calls try_claim(), which fails the same way and counts why);
  /// own_data() is the payload (kMaxSlotSize - 8 bytes); release_own() frees
  /// the slot. Same thread, same contract as try_claim/release. release_own()
  /// stores to the thread's own slot, an address known at once, not through a
  /// pointer kept in a handle: the next claim's load of the flag then never
  /// waits on a store whose address came late (see WriterScope's destructor,
  /// core/instance/grace_period.h).
  [[nodiscard, gnu::always_inline]] static bool claim_own() noexcept {
    ThreadSlot& t = tls_;
    if (t.busy.load(std::memory_order_relaxed) != 0) [[unlikely]]
      return false;
    t.busy.store(1, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // a handler that runs now sees busy
    return true;
  }
  [[gnu::always_inline]] static std::byte* own_data() noexcept {
    return tls_.mem + detail::kTempHeader;
  }
  [[gnu::always_inline]] static void release_own() noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    tls_.busy.store(0, std::memory_order_relaxed);
  }
  uint32_t capacity() const noexcept { return capacity_; }
  TempStats stats() const noexcept {
    return {busy_fallbacks_.load(std::memory_order_relaxed),
            too_big_fallbacks_.load(std::memory_order_relaxed)};
  }
  /// True while the calling thread holds its slot.
  static bool busy_for_testing() noexcept { return tls_.busy.load(std::memory_order_relaxed) != 0; }

 private:
  struct ThreadSlot {
    std::atomic<uint32_t> busy{0};
    alignas(64) std::byte mem[kMaxSlotSize]{};
  };
  [[gnu::noinline, gnu::cold]] StagedRecord claim_failed(uint32_t len) noexcept;

  static constinit thread_local ThreadSlot tls_;
  uint32_t capacity_ = 0;
  std::atomic<uint64_t> busy_fallbacks_{0};
  std::atomic<uint64_t> too_big_fallbacks_{0};
};

}  // namespace tracepipe::buffers
