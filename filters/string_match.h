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
// read str through a CString bounded by the record: bytes the kernel would
// read beyond the record read as NUL here.
#include <memory>
#include <string>
#include <string_view>

#include "filters/glob.h"

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
  bool match(CString str, int len) const noexcept;

  MatchMode mode() const noexcept { return mode_; }
  /// The pattern after filter_parse_regex (leading '!' and the '*'s removed).
  const std::string& pattern() const noexcept { return pattern_; }
  /// True if the "~" pattern started with '!' (the kernel sets pred->not).
  bool inverted() const noexcept { return inverted_; }

 private:
  StringMatcher() = default;
  MatchMode mode_ = MatchMode::full;
  bool inverted_ = false;
  std::string pattern_;
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace tracepipe::filters
