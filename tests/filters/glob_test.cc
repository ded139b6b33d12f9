// The kernel's glob_match (lib/glob.c), on bounded strings.
#include "tracepipe/filters/glob.h"

#include <catch2/catch.hpp>
#include <cstring>

using namespace tracepipe::filters;

namespace {
bool g(std::string_view pat, std::string_view s) {
  return glob_match(pat, CString{reinterpret_cast<const unsigned char*>(s.data()), s.size()});
}
}  // namespace

TEST_CASE("glob: wildcards and classes", "[filters][glob]") {
  CHECK(g("abc", "abc"));
  CHECK_FALSE(g("abc", "abcd"));
  CHECK(g("a*", "abc"));
  CHECK(g("*c", "abc"));
  CHECK(g("*", ""));
  CHECK(g("a*b*c", "axxbyyc"));
  CHECK_FALSE(g("a*b*c", "axxbyyd"));
  CHECK(g("h?ckbench", "hackbench"));
  CHECK_FALSE(g("h?ckbench", "hckbench"));
  CHECK_FALSE(g("abc?", "abc"));  // '?' never matches the end
  CHECK(g("[hs]*", "sh"));
  CHECK_FALSE(g("[hs]*", "bash"));
  CHECK(g("[a-e]x", "cx"));
  CHECK(g("[!a-e]x", "fx"));
  CHECK_FALSE(g("[!a-e]x", "ax"));
  CHECK(g("[]]", "]"));          // ']' first in a class is literal
  CHECK(g("[a-]", "-"));         // '-' before ']' is literal
  CHECK_FALSE(g("[z-a]", "m"));  // an empty range
  CHECK(g("\\*", "*"));
  CHECK_FALSE(g("\\*", "a"));
  CHECK(g("*\\?", "what?"));
}

TEST_CASE("glob: malformed classes are literal text, as in the kernel", "[filters][glob]") {
  CHECK(g("[a", "[a"));
  CHECK_FALSE(g("[a", "a"));
  CHECK(g("x[a-", "x[a-"));
  CHECK(g("*[ab", "zz[ab"));
}

TEST_CASE("glob: reads past the terminator like the kernel, within bounds", "[filters][glob]") {
  // "[!a]" matches the NUL; the next pattern NUL then matches the (virtual) NUL after it.
  CHECK(g("x[!a]", "x"));
  const char buf[4] = {'x', 0, 'q', 0};
  CHECK_FALSE(glob_match("x[!a]", CString{reinterpret_cast<const unsigned char*>(buf), 4}));
  CHECK(glob_match("x[!a]q", CString{reinterpret_cast<const unsigned char*>(buf), 4}));
  CHECK(g("", ""));
  CHECK_FALSE(g("", "a"));
  CHECK(g("a", std::string_view("a\0b", 3)));  // the string ends at its NUL
}

TEST_CASE("glob: backtracking is single-level and terminates fast", "[filters][glob]") {
  const std::string s(4000, 'a');
  CHECK_FALSE(g("*a*a*a*a*a*a*a*a*b", s));
  CHECK(g("*a*a*a*a*a*a*a*a*a", s));
}
