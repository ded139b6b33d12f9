#include "tracepipe/core/instance/staging.h"

#include "tracepipe/buffers/current_cpu.h"

namespace tracepipe {

buffers::TempBuffer& detail::cpu_temp_buffer() {
  // cpu_local when the process can (the claim is then a restartable
  // sequence instead of a locked exchange); the same rule as
  // the rings' WriterMode::automatic.
  static auto* t = new buffers::TempBuffer(buffers::TempBufferConfig{
      buffers::possible_cpus(), kSlotSize,
      buffers::detail::rseq_usable() ? buffers::Writers::cpu_local : buffers::Writers::any_cpu});
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
