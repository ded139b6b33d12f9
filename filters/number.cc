#include "tracepipe/filters/number.h"

#include "tracepipe/filters/ctype.h"

namespace tracepipe::filters {

ParsedInt parse_integer(std::string_view s, unsigned base) noexcept {
  ParsedInt r;
  for (unsigned char c : s) {
    unsigned digit;
    const unsigned char lc = kctype::fold(c);
    if (kctype::is_digit(c)) {
      digit = c - '0';
    } else if (lc >= 'a' && lc <= 'f') {
      digit = lc - 'a' + 10;
    } else {
      break;
    }
    if (digit >= base) break;
    // Same overflow rule as the kernel: only checked once the top nibble is in use.
    if (r.value >> 60 && r.value > (UINT64_MAX - digit) / base) r.overflow = true;
    r.value = r.value * base + digit;
    ++r.chars;
  }
  return r;
}

namespace {

// _kstrtoull: radix from the prefix, digits, optional '\n', nothing else.
std::optional<uint64_t> kstrtoull_unsigned_body(std::string_view s) noexcept {
  unsigned base = 10;
  auto at = [&](size_t i) -> unsigned char {
    return i < s.size() ? static_cast<unsigned char>(s[i]) : 0;
  };
  if (at(0) == '0') {
    if (kctype::fold(at(1)) == 'x' && kctype::is_xdigit(at(2))) {
      base = 16;
      s.remove_prefix(2);
    } else {
      base = 8;
    }
  }
  const ParsedInt p = parse_integer(s, base);
  if (p.overflow || p.chars == 0) return std::nullopt;
  s.remove_prefix(p.chars);
  if (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  if (!s.empty()) return std::nullopt;
  return p.value;
}

}  // namespace

std::optional<uint64_t> kstrtoull(std::string_view s) noexcept {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  return kstrtoull_unsigned_body(s);
}

std::optional<uint64_t> kstrtoll(std::string_view s) noexcept {
  if (!s.empty() && s.front() == '-') {
    auto v = kstrtoull_unsigned_body(s.substr(1));
    if (!v) return std::nullopt;
    const uint64_t neg = 0 - *v;
    if (static_cast<int64_t>(neg) > 0) return std::nullopt;
    return neg;
  }
  auto v = kstrtoull(s);
  if (!v || static_cast<int64_t>(*v) < 0) return std::nullopt;
  return v;
}

}  // namespace tracepipe::filters
