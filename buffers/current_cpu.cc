#include "tracepipe/core/instance/current_cpu.h"

#include <sys/sysinfo.h>

#include "tracepipe/buffers/cpu_list.h"

namespace tracepipe {

uint32_t detail::current_cpu_slow() noexcept {
  const int cpu = sched_getcpu();
  return cpu < 0 ? 0u : static_cast<uint32_t>(cpu);
}

bool current_cpu_uses_rseq() noexcept {
#if defined(__x86_64__) || defined(__aarch64__)
  if (__rseq_size == 0) return false;
  const auto* area = reinterpret_cast<const volatile struct rseq*>(
      static_cast<const char*>(__builtin_thread_pointer()) + __rseq_offset);
  return static_cast<int32_t>(area->cpu_id) >= 0;
#else
  return false;
#endif
}

uint32_t possible_cpus() noexcept {
  static const uint32_t n = detail::cpu_slots(buffers::nr_cpu_ids_from_sysfs(), get_nprocs_conf());
  return n;
}

}  // namespace tracepipe
