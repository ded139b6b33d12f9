#pragma once
// String predicates: the kernel's match modes for "==", "!=" and "~", plus the
// RE2 extension for "=~" / "!~".
//
// Mirrors kernel/trace/trace_events_filter.c: filter_parse_regex,
// filter_build_regex, regex_match_full/front/middle/end/glob.
//
// The kernel hands every match function (str, len) where len depends on the
// field kind: N for char[N], the __data_loc length (terminator included),
// strlen + 1 for char * and 16 (TASK_COMM_LEN) for COMM. We keep that len, and
// read str through a CString bounded by the record and by the field: every
// mode, glob included, reads at most len bytes (len 0: up to the view's end),
// and bytes past the view read as NUL. The kernel's glob once read on to a
// NUL past a __data_loc string's length; it now takes the length too
// ("tracing: Prevent out-of-bounds read in glob matching"), as here.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "tracepipe/filters/glob.h"

namespace re2 {
class RE2;
}

namespace tracepipe::filters {

enum class MatchMode : uint8_t {
  full,    ///< strncmp(str, pattern, len) == 0 (strcmp when len == 0)
  front,   ///< "foo*"
  middle,  ///< "*foo*"
  end,     ///< "*foo": compares the bytes just before str[len - 1]
  glob,    ///< anything with '?', '[', '\\' or an inner '*': glob_match
  regex,   ///< extension: RE2 partial match on the string up to its NUL
};

class StringMatcher {
 public:
  /// For "==" / "!=" (op_glob = false) or "~" (op_glob = true, the pattern may
  /// start with '!' to invert and its '*' placement picks the mode).
  /// Mirrors filter_build_regex().
  static std::unique_ptr<StringMatcher> kernel(std::string_view pattern, bool op_glob);
  /// For the RE2 extension; nullptr and an error text if RE2 rejects it.
  static std::unique_ptr<StringMatcher> regex(std::string_view pattern, std::string& error);

  ~StringMatcher();

  /// The kernel's match function for (str, len), before pred->not.
  /// Inline for the memcmp/memmem modes; glob and regex go out of line.
  inline bool match(CString str, int len) const noexcept;

  MatchMode mode() const noexcept { return mode_; }
  /// The pattern after filter_parse_regex (leading '!' and the '*'s removed).
  const std::string& pattern() const noexcept { return pattern_; }
  /// True if the "~" pattern started with '!' (the kernel sets pred->not).
  bool inverted() const noexcept { return inverted_; }

 private:
  StringMatcher() = default;
  [[gnu::noinline]] bool match_slow(CString str, int len) const noexcept;
  MatchMode mode_ = MatchMode::full;
  bool inverted_ = false;
  std::string pattern_;
  std::unique_ptr<re2::RE2> re_;
};

/// =~ / !~ evaluations refused because a signal handler ran them while the
/// same thread was already inside RE2 (not async-signal-safe: it locks and
/// allocates). Such an evaluation reads as "no match" (so !~ matches).
/// Process-wide, since start.
uint64_t regex_reentries() noexcept;

namespace smatch {

// strncmp(str, pat, n) == 0 with pat NUL-terminated at its size (pat holds
// no NUL). Within the first min(n, |pat|) bytes every byte must equal pat's
// (a NUL in str would differ); past |pat|, pat's terminator must meet a NUL.
// Short patterns (comm names, prefixes) are compared inline: a call into
// libc's memcmp costs more than the bytes themselves.
inline bool strn_equal(CString s, std::string_view pat, size_t n) noexcept {
  const size_t m = std::min(n, pat.size());
  if (m > s.avail) return false;
  if (m <= 16) {
    for (size_t i = 0; i < m; ++i)
      if (s.base[i] != static_cast<unsigned char>(pat[i])) return false;
  } else if (std::memcmp(s.base, pat.data(), m) != 0) {
    return false;
  }
  return n <= pat.size() || s.at(pat.size()) == 0;
}

// Number of bytes before the first NUL, at most limit.
inline size_t bounded_strlen(CString s, size_t limit) noexcept {
  const size_t n = std::min(s.avail, limit);
  const void* z = n ? std::memchr(s.base, 0, n) : nullptr;
  return z ? static_cast<size_t>(static_cast<const unsigned char*>(z) - s.base) : n;
}

// memmem over the first n readable bytes (the virtual NULs cannot match a
// pattern without NULs).
inline bool contains(CString s, size_t n, std::string_view pat) noexcept {
  if (pat.empty()) return true;
  n = std::min(n, s.avail);
  if (n < pat.size()) return false;
  return ::memmem(s.base, n, pat.data(), pat.size()) != nullptr;
}

}  // namespace smatch

inline bool StringMatcher::match(CString s, int len) const noexcept {
  const std::string_view pat = pattern_;
  switch (mode_) {
    case MatchMode::full:  // regex_match_full
      return smatch::strn_equal(s, pat, len == 0 ? SIZE_MAX : static_cast<size_t>(len));
    case MatchMode::front:  // regex_match_front
      if (len && static_cast<size_t>(len) < pat.size()) return false;
      return smatch::strn_equal(s, pat, pat.size());
    case MatchMode::middle:  // regex_match_middle: strnstr ignores NULs, strstr stops at one
      if (len == 0) return smatch::contains(s, smatch::bounded_strlen(s, SIZE_MAX), pat);
      return smatch::contains(s, static_cast<size_t>(len), pat);
    case MatchMode::end: {  // regex_match_end: the len - 1 bytes before the "terminator"
      const long str_len = static_cast<long>(len) - 1;
      if (str_len < static_cast<long>(pat.size())) return false;
      const size_t from = static_cast<size_t>(str_len) - pat.size();
      if (pat.empty()) return true;
      if (from + pat.size() > s.avail) return false;  // virtual NULs never match
      return std::memcmp(s.base + from, pat.data(), pat.size()) == 0;
    }
    default:  // glob (regex_match_glob) and the RE2 extension
      return match_slow(s, len);
  }
}

}  // namespace tracepipe::filters
