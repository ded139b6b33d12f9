// rseq_usable / rseq_fence (see buffers/rseq.h).
#include "buffers/rseq.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tracepipe::buffers::detail {

namespace {

long membarrier(int cmd) noexcept { return syscall(__NR_membarrier, cmd, 0, 0); }

bool register_fence() noexcept {
  const long cmds = membarrier(MEMBARRIER_CMD_QUERY);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0;
}

}  // namespace

bool rseq_usable() noexcept {
#if TP_TSAN || !defined(__x86_64__)
  return false;
#else
  static const bool fence_ok = register_fence();  // once per process
  return fence_ok && __rseq_size > 0 && rseq_cpu() >= 0;
#endif
}

bool rseq_fence() noexcept { return membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) == 0; }

}  // namespace tracepipe::buffers::detail
