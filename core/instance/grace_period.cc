#include "tracepipe/core/instance/grace_period.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tracepipe {

namespace detail {
constinit std::atomic<uint64_t> gp_global_section{(uint64_t{1} << kSectionEpochShift) | 1};
std::vector<ThreadContext*> snapshot_threads();  // thread_context.cc
}  // namespace detail

namespace {

std::atomic<uint64_t> g_sync_count{0};

enum class Barrier { membarrier_private, membarrier_global, mprotect };

Barrier pick_barrier() {
  const long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0 &&
      syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
    return Barrier::membarrier_private;
  if (cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL) != 0) return Barrier::membarrier_global;
  return Barrier::mprotect;
}

// A full memory barrier on every CPU that runs a thread of this process.
void process_wide_barrier() {
  static const Barrier kind = pick_barrier();
  switch (kind) {
    case Barrier::membarrier_private:
      if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return;
      break;
    case Barrier::membarrier_global:
      if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0) return;
      break;
    case Barrier::mprotect:
      break;
  }
  // Changing a touched page's protection shoots down its TLB entry on every
  // CPU in this mm's CPU mask: each one takes an interrupt, which is a full
  // barrier on x86 and arm64.
  static std::mutex mu;
  static void* page =
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  std::lock_guard lk(mu);
  if (page == MAP_FAILED) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  mprotect(page, 4096, PROT_READ | PROT_WRITE);
  static_cast<volatile char*>(page)[0] = 1;
  mprotect(page, 4096, PROT_NONE);
}

}  // namespace

void synchronize() {
  if (ThreadContext* self = detail::tl_context;
      self != nullptr && self->read_section.load(std::memory_order_relaxed) != 0)
    throw std::logic_error(
        "tracepipe::synchronize() called inside an emit (would wait for itself)");
  using detail::kSectionEpochShift;
  constexpr uint64_t kEpochStep = uint64_t{1} << kSectionEpochShift;
  const uint64_t target =
      (detail::gp_global_section.fetch_add(kEpochStep, std::memory_order_acq_rel) + kEpochStep) >>
      kSectionEpochShift;                                // (E)
  process_wide_barrier();                                // (F)
  for (ThreadContext* c : detail::snapshot_threads()) {  // (G)
    for (unsigned spins = 0;; ++spins) {
      const uint64_t s = c->read_section.load(std::memory_order_acquire);
      if (s == 0 || (s >> kSectionEpochShift) >= target) break;
      if (spins < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }
  g_sync_count.fetch_add(1, std::memory_order_relaxed);
}

uint64_t synchronize_count() noexcept { return g_sync_count.load(std::memory_order_relaxed); }

}  // namespace tracepipe
