#pragma once
// The kernel's <linux/ctype.h> classes, which cover ISO-8859-1 (Latin-1):
// 0xA0 is a space, 0xC0-0xFF (except 0xD7, 0xF7) are letters. The filter
// parser must use these, not <cctype>, to accept exactly what the kernel does
// (e.g. "prev_pid\xA0== 0" is accepted by Linux).
// Mirrors lib/ctype.c: _ctype[].
#include <cstdint>

namespace tracepipe::filters::kctype {

constexpr bool is_space(unsigned char c) noexcept {
  return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xA0;
}
constexpr bool is_digit(unsigned char c) noexcept { return c >= '0' && c <= '9'; }
constexpr bool is_alpha(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xC0 && c != 0xD7 && c != 0xF7);
}
constexpr bool is_alnum(unsigned char c) noexcept { return is_alpha(c) || is_digit(c); }
constexpr bool is_xdigit(unsigned char c) noexcept {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
/// The kernel's _tolower(): OR 0x20, valid only for comparing letters.
constexpr unsigned char fold(unsigned char c) noexcept { return c | 0x20; }

}  // namespace tracepipe::filters::kctype
