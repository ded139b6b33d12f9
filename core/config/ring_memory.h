#pragma once
// core/config/ring_memory.h — the memory an instance's rings take, and the
// bound above which an instance is refused before anything is allocated.
//
// The rings are allocated and zeroed up front (buffers/ring_buffer.cc: no
// page fault on the write path later), so rings larger than the machine
// would be zeroed for tens of seconds, then end in std::bad_alloc or the
// OOM killer. The kernel refuses such a buffer_size_kb at once (ENOMEM,
// from the available-memory check in kernel/trace/ring_buffer.c:
// ring_buffer_resize); here the bound is the physical memory, which does
// not change from one run to the next. Shared by the config file
// (core/config/config.cc: FILE:LINE: KEY) and Instance's constructor
// (std::invalid_argument), so both refuse the same options. Not installed.
#include <cstdint>
#include <string>

#include "tracepipe/core/config/instance_options.h"

namespace tracepipe::detail {

/// Bytes of ring pages an instance with `o` allocates: per CPU, its
/// buffer_size_kb rounded up to whole sub-buffers (at least two), one more
/// sub-buffer, and in overwrite mode the 8 spare sub-buffers
/// (buffers::ring_memory_layout; its bookkeeping, a few bytes per
/// sub-buffer, is left out). cpus = 0 counts possible_cpus(). No
/// allocation; never throws.
uint64_t ring_memory_bytes(const InstanceOptions& o) noexcept;

/// The machine's physical memory (sysconf(_SC_PHYS_PAGES) x page size), or
/// 0 when the system does not say.
uint64_t physical_memory_bytes() noexcept;

/// Empty when `o`'s rings fit in the physical memory (or it is unknown);
/// otherwise the refusal, without a prefix: "4096 CPUs x 1048576 KiB:
/// rings of 4198400 MiB, more than this machine's physical memory (23872
/// MiB); lower buffer_size_kb or cpus".
std::string ring_memory_refusal(const InstanceOptions& o);

}  // namespace tracepipe::detail
