#include "tracepipe/core/config/ring_memory.h"

#include <unistd.h>

#include <algorithm>

#include "tracepipe/buffers/current_cpu.h"
#include "tracepipe/buffers/ring_buffer.h"

namespace tracepipe::detail {

namespace {
// The spares of an overwrite ring: RingBufferConfig's default, which Instance keeps.
constexpr uint64_t kSpares = buffers::RingBufferConfig{}.spare_subbufs;
}  // namespace

uint64_t ring_memory_bytes(const InstanceOptions& o) noexcept {
  const uint64_t cpus = o.cpus != 0 ? o.cpus : buffers::possible_cpus();
  // In 128 bits, saturated: InstanceOptions takes any buffer_size_kb.
  const unsigned __int128 subbuf = uint64_t{std::max<uint32_t>(o.subbuf_size_kb, 1)} * 1024;
  const unsigned __int128 n = std::max<unsigned __int128>(
      2, (static_cast<unsigned __int128>(o.buffer_size_kb) * 1024 + subbuf - 1) / subbuf);
  const unsigned __int128 total =
      cpus * (n + 1 + (o.mode == BufferMode::overwrite ? kSpares : 0)) * subbuf;
  return total > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(total);
}

uint64_t physical_memory_bytes() noexcept {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

std::string ring_memory_refusal(const InstanceOptions& o) {
  const uint64_t phys = physical_memory_bytes();
  const uint64_t need = ring_memory_bytes(o);
  if (phys == 0 || need <= phys) return {};
  const uint64_t cpus = o.cpus != 0 ? o.cpus : buffers::possible_cpus();
  return std::to_string(cpus) + " CPUs x " + std::to_string(o.buffer_size_kb) + " KiB: rings of " +
         std::to_string(need >> 20) + " MiB, more than this machine's physical memory (" +
         std::to_string(phys >> 20) + " MiB); lower buffer_size_kb or cpus";
}

}  // namespace tracepipe::detail
