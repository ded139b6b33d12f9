#pragma once
// Integer literals as the kernel reads them in filters.
// Mirrors lib/kstrtox.c: kstrtoull, kstrtoll (base 0: "0x" hex, "0" octal).
#include <cstdint>
#include <optional>
#include <string_view>

namespace tracepipe::filters {

/// kstrtoull(s, 0): optional '+', "0x"/"0" prefixes, one optional trailing
/// '\n'; nullopt on an empty number, a stray character or overflow.
std::optional<uint64_t> kstrtoull(std::string_view s) noexcept;

/// kstrtoll(s, 0): like kstrtoull but with an optional leading '-';
/// nullopt outside [INT64_MIN, INT64_MAX]. The value is returned as its
/// two's-complement bits.
std::optional<uint64_t> kstrtoll(std::string_view s) noexcept;

/// Decimal digits at the start of s, as lib/kstrtox.c: _parse_integer(s, 10):
/// number of characters used (0 = none) and whether it overflowed 64 bits.
struct ParsedInt {
  uint64_t value = 0;
  size_t chars = 0;
  bool overflow = false;
};
ParsedInt parse_integer(std::string_view s, unsigned base) noexcept;

}  // namespace tracepipe::filters
