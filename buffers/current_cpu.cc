#include "tracepipe/buffers/current_cpu.h"

#include <sched.h>
#include <sys/sysinfo.h>

#include "tracepipe/buffers/sysfs_cpus.h"

namespace tracepipe::buffers {

uint32_t detail::current_cpu_slow() noexcept {
  const int cpu = sched_getcpu();
  return cpu < 0 ? 0u : static_cast<uint32_t>(cpu);
}

bool current_cpu_uses_rseq() noexcept { return detail::rseq_registered(); }

uint32_t possible_cpus() noexcept {
  static const uint32_t n = detail::cpu_slots(nr_cpu_ids_from_sysfs(), get_nprocs_conf());
  return n;
}

}  // namespace tracepipe::buffers
