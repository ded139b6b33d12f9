#pragma once
// The kernel's CPU list text ("0-3,8,10-11\n"), as in
// /sys/devices/system/cpu/{possible,online,present}. Parsed without
// allocation, so that pause()'s fence fallback (ring_buffer.cc) may use it.
// Mirrors lib/bitmap.c: bitmap_parselist (the format) and
// Documentation/ABI/testing/sysfs-devices-system-cpu (the files).
#include <cstdint>
#include <optional>
#include <string_view>

namespace tracepipe::buffers {

/// The highest CPU number in `list` ("0-3,8" -> 8); nullopt if the text is
/// empty or malformed (a range that goes down, a stray character, a number
/// above 2^31). Trailing newline and spaces are ignored.
std::optional<uint32_t> cpu_list_max(std::string_view list) noexcept;

/// True if `cpu` is in `list`; nullopt if the text is malformed.
std::optional<bool> cpu_list_contains(std::string_view list, uint32_t cpu) noexcept;

/// Reads a sysfs CPU list file into `buf` (at most buf_size bytes) and
/// returns the text; nullopt if it cannot be read. No allocation.
std::optional<std::string_view> read_cpu_list_file(const char* path, char* buf, size_t buf_size) noexcept;

/// The kernel's nr_cpu_ids: the highest possible CPU number + 1, from
/// /sys/devices/system/cpu/possible. Every CPU id the kernel hands out
/// (getcpu, the rseq area's cpu_id) is below it, also on machines whose
/// CPU numbers have holes or that can bring more CPUs online later; which
/// get_nprocs_conf() (a count) does not promise. nullopt if the file cannot
/// be read or parsed.
std::optional<uint32_t> nr_cpu_ids_from_sysfs() noexcept;

}  // namespace tracepipe::buffers
