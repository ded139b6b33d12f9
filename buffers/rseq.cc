// rseq_usable / rseq_fence (see buffers/rseq.h).
#include "tracepipe/buffers/rseq.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "tracepipe/buffers/current_cpu.h"

namespace tracepipe::buffers::detail {

namespace {

long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }

[[maybe_unused]] bool register_fence() noexcept {  // unused where rseq_usable() is always false
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0;
}

}  // namespace

bool rseq_usable() noexcept {
#if TRACEPIPE_TSAN || !TRACEPIPE_RSEQ_ASM
  return false;
#else
  static const bool fence_ok = register_fence();  // once per process
  return fence_ok && __rseq_size > 0 && rseq_cpu() >= 0;
#endif
}

bool rseq_fence() noexcept { return membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) == 0; }

bool run_on_cpu(uint32_t cpu) noexcept {
  constexpr size_t kBits = 8 * sizeof(unsigned long);
  unsigned long mask[65536 / kBits] = {};
  if (cpu >= 65536) return false;
  mask[cpu / kBits] = 1ul << (cpu % kBits);
  // The raw system call: glibc's wrapper refuses masks larger than its own
  // idea of the kernel's, which we do not need here.
  if (syscall(__NR_sched_setaffinity, 0, sizeof mask, mask) != 0) return false;
  // sched_setaffinity returns once the kernel has moved us (it waits for the
  // migration), so we run on `cpu` now; check it anyway, through the same
  // field the sections compare (rseq_cpu), or getcpu when there is none.
  for (int i = 0; i < 3; ++i) {
    if (current_cpu() == cpu) return true;
    sched_yield();
  }
  return false;
}

SavedAffinity::SavedAffinity() noexcept {
  std::memset(mask_, 0, sizeof mask_);
  ok_ = syscall(__NR_sched_getaffinity, 0, sizeof mask_, mask_) > 0;
}

bool SavedAffinity::restore() noexcept {
  return ok_ && syscall(__NR_sched_setaffinity, 0, sizeof mask_, mask_) == 0;
}

}  // namespace tracepipe::buffers::detail
