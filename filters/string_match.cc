#include "filters/string_match.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstring>

#include "filters/ctype.h"

namespace tracepipe::filters {

StringMatcher::~StringMatcher() = default;

std::unique_ptr<StringMatcher> StringMatcher::kernel(std::string_view pat, bool op_glob) {
  std::unique_ptr<StringMatcher> m(new StringMatcher());
  if (!op_glob) {
    m->mode_ = MatchMode::full;
    m->pattern_.assign(pat);
    return m;
  }
  // filter_parse_regex: '!' inverts; a leading digit means "compare whole"
  // (MATCH_INDEX, taken as MATCH_FULL); '*' first = end, last = front, both =
  // middle; '*' elsewhere or any of "[?\\" = glob.
  if (!pat.empty() && pat.front() == '!') {
    m->inverted_ = true;
    pat.remove_prefix(1);
  }
  MatchMode mode = MatchMode::full;
  std::string_view search = pat;
  if (!pat.empty() && kctype::is_digit(static_cast<unsigned char>(pat.front()))) {
    m->mode_ = MatchMode::full;
    m->pattern_.assign(pat);
    return m;
  }
  for (size_t i = 0; i < pat.size(); ++i) {
    const char c = pat[i];
    if (c == '*') {
      if (i == 0) {
        mode = MatchMode::end;
      } else if (i == pat.size() - 1) {
        mode = mode == MatchMode::end ? MatchMode::middle : MatchMode::front;
        search = pat.substr(0, i);
        break;
      } else {
        mode = MatchMode::glob;
        break;
      }
    } else if (c == '[' || c == '?' || c == '\\') {
      mode = MatchMode::glob;
      break;
    }
  }
  if (mode != MatchMode::glob && !search.empty() && search.front() == '*') search.remove_prefix(1);
  m->mode_ = mode;
  m->pattern_.assign(mode == MatchMode::glob ? pat : search);
  return m;
}

std::unique_ptr<StringMatcher> StringMatcher::regex(std::string_view pat, std::string& error) {
  RE2::Options opt;
  opt.set_encoding(RE2::Options::EncodingLatin1);  // bytes, as the kernel's strings
  opt.set_log_errors(false);
  opt.set_dot_nl(true);
  auto re = std::make_unique<re2::RE2>(re2::StringPiece(pat.data(), pat.size()), opt);
  if (!re->ok()) {
    error = re->error();
    return nullptr;
  }
  std::unique_ptr<StringMatcher> m(new StringMatcher());
  m->mode_ = MatchMode::regex;
  m->pattern_.assign(pat);
  m->re_ = std::move(re);
  return m;
}

namespace {

// strncmp(str, pat, n) == 0 with pat NUL-terminated at its size (pat holds
// no NUL). Within the first min(n, |pat|) bytes every byte must equal pat's
// (a NUL in str would differ); past |pat|, pat's terminator must meet a NUL.
bool strn_equal(CString s, std::string_view pat, size_t n) noexcept {
  const size_t m = std::min(n, pat.size());
  if (m > s.avail || (m && std::memcmp(s.base, pat.data(), m) != 0)) return false;
  return n <= pat.size() || s.at(pat.size()) == 0;
}

// Number of bytes before the first NUL, at most limit.
size_t bounded_strlen(CString s, size_t limit) noexcept {
  const size_t n = std::min(s.avail, limit);
  const void* z = n ? std::memchr(s.base, 0, n) : nullptr;
  return z ? static_cast<size_t>(static_cast<const unsigned char*>(z) - s.base) : n;
}

// memmem over the first n readable bytes (the virtual NULs cannot match a
// pattern without NULs).
bool contains(CString s, size_t n, std::string_view pat) noexcept {
  if (pat.empty()) return true;
  n = std::min(n, s.avail);
  if (n < pat.size()) return false;
  return ::memmem(s.base, n, pat.data(), pat.size()) != nullptr;
}

}  // namespace

bool StringMatcher::match(CString s, int len) const noexcept {
  const std::string_view pat = pattern_;
  switch (mode_) {
    case MatchMode::full:  // regex_match_full
      return strn_equal(s, pat, len == 0 ? SIZE_MAX : static_cast<size_t>(len));
    case MatchMode::front:  // regex_match_front
      if (len && static_cast<size_t>(len) < pat.size()) return false;
      return strn_equal(s, pat, pat.size());
    case MatchMode::middle:  // regex_match_middle: strnstr ignores NULs, strstr stops at one
      if (len == 0) return contains(s, bounded_strlen(s, SIZE_MAX), pat);
      return contains(s, static_cast<size_t>(len), pat);
    case MatchMode::end: {  // regex_match_end: the len - 1 bytes before the "terminator"
      const long str_len = static_cast<long>(len) - 1;
      if (str_len < static_cast<long>(pat.size())) return false;
      const size_t from = static_cast<size_t>(str_len) - pat.size();
      if (pat.empty()) return true;
      if (from + pat.size() > s.avail) return false;  // virtual NULs never match
      return std::memcmp(s.base + from, pat.data(), pat.size()) == 0;
    }
    case MatchMode::glob:  // regex_match_glob
      return glob_match(pat, s);
    case MatchMode::regex: {
      const size_t n = bounded_strlen(s, len == 0 ? SIZE_MAX : static_cast<size_t>(len));
      return RE2::PartialMatch(re2::StringPiece(reinterpret_cast<const char*>(s.base), n), *re_);
    }
  }
  return false;
}

}  // namespace tracepipe::filters
