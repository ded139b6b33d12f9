#pragma once
// The kernel's shell-style glob: '*', '?', '[a-z]', '[!a-z]', '\x'.
// Mirrors lib/glob.c: glob_match (single-level backtracking: O(|pattern| x
// |string|), no recursion, no allocation).
#include <cstddef>
#include <string_view>

namespace tracepipe::filters {

/// A bounded view of a C string: bytes [0, avail) of base, then NUL bytes
/// forever. Callers bound avail by the field's length as well as the record,
/// so nothing after the field is read. A glob may look past a string's end
/// (an inverted class "[!x]" matches the terminator); the virtual NULs make
/// that defined: the end of the field reads as a terminator.
struct CString {
  const unsigned char* base = nullptr;
  size_t avail = 0;
  unsigned char at(size_t k) const noexcept { return k < avail ? base[k] : 0; }
};

/// glob_match(pattern, str). pattern must not contain NUL bytes (it is the
/// text between quotes of a filter, which cannot). A malformed class such as
/// "[a" is matched as the literal characters, as the kernel does.
bool glob_match(std::string_view pattern, CString str) noexcept;

}  // namespace tracepipe::filters
