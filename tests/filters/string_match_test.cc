// Pattern classification (filter_parse_regex) and the regex_match_* functions.
#include "tracepipe/filters/string_match.h"

#include <catch2/catch.hpp>

#include "test_events.h"

using namespace tracepipe::filters;
using namespace std::literals;

namespace {
CString cs(std::string_view s) {
  return CString{reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}
}  // namespace

TEST_CASE("string match: '~' patterns pick the kernel's match mode", "[filters][string]") {
  struct Row {
    const char* pat;
    MatchMode mode;
    const char* search;
    bool inverted;
  };
  const Row rows[] = {
      {"abc", MatchMode::full, "abc", false},   {"abc*", MatchMode::front, "abc", false},
      {"*abc", MatchMode::end, "abc", false},   {"*abc*", MatchMode::middle, "abc", false},
      {"*", MatchMode::end, "", false},         {"**", MatchMode::middle, "", false},
      {"a*c", MatchMode::glob, "a*c", false},   {"*a*c", MatchMode::glob, "*a*c", false},
      {"a?c", MatchMode::glob, "a?c", false},   {"[ab]", MatchMode::glob, "[ab]", false},
      {"a\\*", MatchMode::glob, "a\\*", false}, {"!abc*", MatchMode::front, "abc", true},
      {"1*", MatchMode::full, "1*", false},     {"!1a?", MatchMode::full, "1a?", true},
      {"", MatchMode::full, "", false},         {"!", MatchMode::full, "", true},
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
  CHECK(mid->match(cs("ab\0cd"sv), 5));        // strnstr looks past NULs
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

// Every string operator stays inside its field: the same string, "abcd", in
// each string kind, once followed by other bytes ("XYZ" and a NUL: the next
// field, the next dynamic string, the rest of a buffer) and once by NULs.
// The verdict must not change, and must be the expected one. The __data_loc
// and __rel_loc words say 4 bytes (no terminator inside the length), the
// char[4] field is full, char * and COMM end after 4 characters.

namespace {

enum Kind { kStatic, kDataLoc, kRelLoc, kPtr, kComm, kKinds };
const char* const kKindName[kKinds] = {"s4 (char[4])", "dstr (__data_loc)", "rstr (__rel_loc)",
                                       "pstr (char *)", "COMM"};
const char* const kField[kKinds] = {"s4", "dstr", "rstr", "pstr", "COMM"};

std::vector<FieldDesc> bounds_fields() {
  auto f = tp_test::common_fields();
  f.push_back(tracepipe::filters::make_field("char[4]", "s4", 8, 4, false));
  f.push_back(tracepipe::filters::make_field("char[4]", "tail", 12, 4, false));
  f.push_back(tracepipe::filters::make_field("__data_loc char[]", "dstr", 16, 4, false));
  f.push_back(tracepipe::filters::make_field("__rel_loc char[]", "rstr", 20, 4, false));
  f.push_back(tracepipe::filters::make_field("const char *", "pstr", 24, 8, false));
  return f;
}

// One record and context holding "abcd" then `after` (4 bytes) in every kind.
struct Bounded {
  tp_test::Record rec{32};
  std::string text;  // "abcd" + after: what char * and COMM point into
  explicit Bounded(std::string_view after) : text(std::string("abcd") + std::string(after)) {
    rec.chars(8, "abcd").chars(12, after);
    rec.set<uint32_t>(16, (4u << 16) | 32u);
    rec.set<uint32_t>(20, (4u << 16) | (40u - 24u));  // from the end of the word
    rec.set<uint64_t>(24, 0x1000);
    for (int i = 0; i < 2; ++i)
      for (char c : text) rec.bytes().push_back(static_cast<std::byte>(c));  // 32..40, 40..48
  }
  bool eval(std::string_view expr, const std::vector<FieldDesc>& fields) const {
    tracepipe::filters::CompileOptions opt;
    opt.extensions = true;
    const auto prog = tp_test::must_compile(expr, fields, opt);
    EvalContext ctx;
    ctx.comm = std::string_view(text).substr(0, 4);
    ctx.resolve = [](uint64_t addr, bool, const void* self) noexcept -> ResolvedString {
      if (addr != 0x1000) return {};
      return {std::string_view(*static_cast<const std::string*>(self)).substr(0, 4), true};
    };
    ctx.resolve_user = &text;
    return prog->match(rec.span(), ctx);
  }
};

}  // namespace

TEST_CASE("string match: every operator on every string kind reads only the field's bytes",
          "[filters][string]") {
  const auto fields = bounds_fields();
  const Bounded garbage("XYZ\0"sv), zeros("\0\0\0\0"sv);
  REQUIRE(garbage.text.size() == 8);
  // Expected verdict per kind: s4, dstr, rstr, pstr, COMM. The kernel's own
  // quirks stay: strncmp over the field's length (== "abcdX" on a 4-byte
  // field), and "*suffix" compares the bytes before the last one of the
  // length (char[N], __data_loc without a terminator, TASK_COMM_LEN).
  struct Row {
    const char* op_value;
    bool expect[kKinds];
  };
  const Row rows[] = {
      {"== \"abcd\"", {true, true, true, true, true}},
      {"!= \"abcd\"", {false, false, false, false, false}},
      {"== \"abcdX\"",
       {true, true, true, false, false}},  // strncmp(str, "abcdX", 4) on 4-byte fields
      {"!= \"abcdX\"", {false, false, false, true, true}},
      {"== \"abc\"", {false, false, false, false, false}},
      {"~ \"abcd\"", {true, true, true, true, true}},
      {"~ \"abcd*\"", {true, true, true, true, true}},
      {"~ \"abcdX*\"", {false, false, false, false, false}},
      {"~ \"*bcd*\"", {true, true, true, true, true}},
      {"~ \"*cdX*\"", {false, false, false, false, false}},
      {"~ \"*abc\"", {true, true, true, false, false}},  // bytes [len-1-3, len-1)
      {"~ \"*bcd\"", {false, false, false, true, false}},
      {"~ \"a?c[d]\"", {true, true, true, true, true}},
      {"~ \"[a-c]*d\"", {true, true, true, true, true}},
      {"~ \"abcd?\"", {false, false, false, false, false}},
      {"~ \"abcd[!X]\"", {true, true, true, true, true}},  // the end reads as a terminator
      {"~ \"*d[X]*\"", {false, false, false, false, false}},
      {"~ \"[!b-z]b?[c-d]\"", {true, true, true, true, true}},
      {"~ \"!a?c*\"", {false, false, false, false, false}},
      {"=~ \"^abcd$\"", {true, true, true, true, true}},
      {"=~ \"dX\"", {false, false, false, false, false}},
      {"!~ \"Y\"", {true, true, true, true, true}},
  };
  int cells = 0;
  for (const Row& r : rows) {
    for (int k = 0; k < kKinds; ++k) {
      const std::string expr = std::string(kField[k]) + " " + r.op_value;
      INFO(kKindName[k] << ": " << expr);
      const bool g = garbage.eval(expr, fields), z = zeros.eval(expr, fields);
      CHECK(g == z);  // nothing after the field changes the verdict
      CHECK(g == r.expect[k]);
      ++cells;
    }
  }
  CHECK(cells == 22 * kKinds);
}

TEST_CASE("string match: a glob on a __data_loc string stops at the string's length",
          "[filters][string]") {
  // The example record: dstr says 4 bytes, "abcd", then "XYZ" and a NUL.
  const auto fields = bounds_fields();
  const Bounded r("XYZ\0"sv);
  CHECK(r.eval("dstr ~ \"a?c[d]\"", fields));
  CHECK(r.eval("dstr ~ \"[a-c]*d\"", fields));
  const Bounded x("X\0\0\0"sv);
  CHECK_FALSE(x.eval("dstr ~ \"abcd?\"", fields));
  // The matcher alone, given a view longer than the length.
  const auto m = StringMatcher::kernel("abcd?", true);
  CHECK(m->mode() == MatchMode::glob);
  CHECK_FALSE(m->match(cs("abcdX\0"sv), 4));
  CHECK(m->match(cs("abcdX\0"sv), 6));
}
