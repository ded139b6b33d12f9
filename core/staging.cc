#include "core/staging.h"

#include "core/current_cpu.h"

namespace tracepipe {

buffers::TempBuffer& detail::cpu_temp_buffer() {
  static auto* t = new buffers::TempBuffer(buffers::TempBufferConfig{possible_cpus(), kSlotSize});
  return *t;
}

buffers::PerThreadTempBuffer& detail::thread_temp_buffer() {
  static auto* t = new buffers::PerThreadTempBuffer(kSlotSize);
  return *t;
}

Stager::Stager(Staging policy) : policy_(policy), per_cpu_(policy == Staging::per_cpu) {
  if (per_cpu_)
    cpu_ = &detail::cpu_temp_buffer();
  else
    thread_ = &detail::thread_temp_buffer();
}

}  // namespace tracepipe
