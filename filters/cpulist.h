#pragma once
// CPU list literals of CPUS{...}: "0-3,8", "0-15:2/4", "N", "all".
// Mirrors lib/bitmap-str.c: bitmap_parselist (as cpulist_parse calls it).
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace tracepipe::filters {

/// A parsed CPU list: a bitmap of nbits bits (64 per word, bit k of word k/64).
struct CpuList {
  std::vector<uint64_t> words;
  uint32_t nbits = 0;

  bool test(uint32_t cpu) const noexcept {
    return cpu < nbits && (words[cpu / 64] >> (cpu % 64) & 1) != 0;
  }
  uint32_t weight() const noexcept;
  /// Lowest set CPU, or nbits if none.
  uint32_t first() const noexcept;
};

/// Parses a CPU list for a mask of nbits CPUs (the kernel's nr_cpu_ids).
/// nullopt where the kernel's bitmap_parselist fails (bad syntax, a CPU >=
/// nbits, start > end, bad group, 32-bit overflow). Text stops at '\0' or '\n'.
std::optional<CpuList> parse_cpulist(std::string_view text, uint32_t nbits);

}  // namespace tracepipe::filters
