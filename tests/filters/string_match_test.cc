// Pattern classification (filter_parse_regex) and the regex_match_* functions.
#include <catch2/catch.hpp>

#include "tracepipe/filters/string_match.h"

using namespace tracepipe::filters;
using namespace std::literals;

namespace {
CString cs(std::string_view s) { return CString{reinterpret_cast<const unsigned char*>(s.data()), s.size()}; }
}  // namespace

TEST_CASE("string match: '~' patterns pick the kernel's match mode", "[filters][string]") {
  struct Row {
    const char* pat;
    MatchMode mode;
    const char* search;
    bool inverted;
  };
  const Row rows[] = {
      {"abc", MatchMode::full, "abc", false},     {"abc*", MatchMode::front, "abc", false},
      {"*abc", MatchMode::end, "abc", false},     {"*abc*", MatchMode::middle, "abc", false},
      {"*", MatchMode::end, "", false},           {"**", MatchMode::middle, "", false},
      {"a*c", MatchMode::glob, "a*c", false},     {"*a*c", MatchMode::glob, "*a*c", false},
      {"a?c", MatchMode::glob, "a?c", false},     {"[ab]", MatchMode::glob, "[ab]", false},
      {"a\\*", MatchMode::glob, "a\\*", false},   {"!abc*", MatchMode::front, "abc", true},
      {"1*", MatchMode::full, "1*", false},       {"!1a?", MatchMode::full, "1a?", true},
      {"", MatchMode::full, "", false},           {"!", MatchMode::full, "", true},
  };
  for (const Row& r : rows) {
    INFO(r.pat);
    const auto m = StringMatcher::kernel(r.pat, true);
    CHECK(m->mode() == r.mode);
    CHECK(m->pattern() == r.search);
    CHECK(m->inverted() == r.inverted);
  }
  const auto eq = StringMatcher::kernel("a*", false);  // == / != never glob
  CHECK(eq->mode() == MatchMode::full);
  CHECK(eq->pattern() == "a*");
}

TEST_CASE("string match: len semantics of each mode", "[filters][string]") {
  const auto full = StringMatcher::kernel("abc", false);
  CHECK(full->match(cs("abc\0\0"sv), 5));
  CHECK(full->match(cs("abcdef"), 3));  // strncmp stops after len bytes
  CHECK_FALSE(full->match(cs("abcdef"), 4));
  CHECK(full->match(cs("abc"), 0));  // len 0: strcmp, the view's end reads as NUL
  const auto front = StringMatcher::kernel("abc*", true);
  CHECK(front->match(cs("abcd"), 5));
  CHECK_FALSE(front->match(cs("abcd"), 2));  // len < pattern length
  const auto mid = StringMatcher::kernel("*cd*", true);
  CHECK(mid->match(cs("ab\0cd"sv), 5));  // strnstr looks past NULs
  CHECK_FALSE(mid->match(cs("ab\0cd"sv), 0));  // strstr stops at the NUL
  CHECK_FALSE(mid->match(cs("abcd"), 3));
  const auto end = StringMatcher::kernel("*cd", true);
  CHECK(end->match(cs("abcd\0"sv), 5));
  CHECK_FALSE(end->match(cs("abcd\0\0"sv), 6));  // looks at [len-1-2, len-1)
  CHECK_FALSE(end->match(cs("abcd"), 0));
}

TEST_CASE("string match: RE2 extension", "[filters][string]") {
  std::string err;
  const auto re = StringMatcher::regex("^a.c$", err);
  REQUIRE(re);
  CHECK(re->match(cs("abc\0junk"sv), 8));  // the string ends at its NUL
  CHECK_FALSE(re->match(cs("abcd"), 4));
  CHECK(re->match(cs("abcd"), 3));  // ... or after len bytes
  CHECK_FALSE(StringMatcher::regex("(", err));
  CHECK_FALSE(err.empty());
}
