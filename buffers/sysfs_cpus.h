#pragma once
// What the ring buffer needs to know of the machine's CPUs, from sysfs
// (Documentation/ABI/testing/sysfs-devices-system-cpu), read without
// allocation so that pause()'s fence fallback (ring_buffer.cc) may use it.
// No CPU-list parser here: the kernel prints /sys/devices/system/cpu/possible
// in ascending order (bitmap_print_to_pagebuf, "%*pbl"), so nr_cpu_ids is its
// last number + 1, and a CPU's state has a file of its own (cpuN/online).
// The kernel's CPU-list syntax has one parser, filters/cpulist.h.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tracepipe::buffers {

/// The last CPU number of a CPU list as the kernel prints it ("0-3,8,10-11\n"
/// -> 11): the digits at its end, after trailing newline and spaces. nullopt
/// if it does not end in a number or the number is above 2^31.
std::optional<uint32_t> last_cpu_in_list(std::string_view list) noexcept;

/// Reads a small sysfs file into `buf` (at most buf_size - 1 bytes) and
/// returns the text; nullopt if it cannot be read or is longer. No allocation.
std::optional<std::string_view> read_sysfs_file(const char* path, char* buf,
                                                size_t buf_size) noexcept;

/// The kernel's nr_cpu_ids: the highest possible CPU number + 1, from
/// /sys/devices/system/cpu/possible. Every CPU id the kernel hands out
/// (getcpu, the rseq area's cpu_id) is below it, also on machines whose
/// CPU numbers have holes or that can bring more CPUs online later; which
/// get_nprocs_conf() (a count) does not promise. nullopt if the file cannot
/// be read.
std::optional<uint32_t> nr_cpu_ids_from_sysfs() noexcept;

/// True if CPU `cpu` exists and is online: /sys/devices/system/cpu/cpuN/online
/// reads "1", or the CPU's folder has no such file (a CPU that cannot be
/// taken offline, often cpu0), or sysfs cannot be read (the safe answer for
/// pause()'s fence: an online CPU may hold an rseq section). False if the
/// CPU's folder is absent or the file reads "0". No allocation.
bool cpu_online(uint32_t cpu) noexcept;

}  // namespace tracepipe::buffers
