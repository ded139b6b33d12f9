#include "tracepipe/filters/string_match.h"

#include <re2/re2.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "tracepipe/filters/ctype.h"

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
// RE2 takes locks, may allocate and runs std::call_once: it must not be
// re-entered by a signal handler that interrupted it on the same thread (a
// nested emit evaluating another =~ filter): that aborted or hung. The
// nested evaluation is refused instead: "no match", counted.
constinit thread_local int t_in_regex = 0;
std::atomic<uint64_t> g_regex_reentries{0};
}  // namespace

uint64_t regex_reentries() noexcept { return g_regex_reentries.load(std::memory_order_relaxed); }

bool StringMatcher::match_slow(CString s, int len) const noexcept {
  if (mode_ == MatchMode::glob) {  // regex_match_glob, bounded by len as every other mode
    if (len > 0 && s.avail > static_cast<size_t>(len)) s.avail = static_cast<size_t>(len);
    return glob_match(pattern_, s);
  }
  if (t_in_regex != 0) [[unlikely]] {
    g_regex_reentries.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const size_t n = smatch::bounded_strlen(s, len == 0 ? SIZE_MAX : static_cast<size_t>(len));
  t_in_regex = 1;
  std::atomic_signal_fence(
      std::memory_order_seq_cst);  // a handler that runs from here sees the flag
  const bool r =
      RE2::PartialMatch(re2::StringPiece(reinterpret_cast<const char*>(s.base), n), *re_);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_in_regex = 0;
  return r;
}

}  // namespace tracepipe::filters
