#include "tracepipe/filters/glob.h"

namespace tracepipe::filters {

namespace {

// Outcome of matching one character class at pattern position p (just after '[').
struct ClassResult {
  bool malformed = false;  // no closing ']' (or a range to the end): treat '[' literally
  bool matched = false;
  size_t next = 0;  // pattern position after the closing ']'
};

ClassResult match_class(std::string_view pat, size_t p, unsigned char c) {
  auto at = [&](size_t k) -> unsigned char {
    return k < pat.size() ? static_cast<unsigned char>(pat[k]) : 0;
  };
  ClassResult r;
  const bool inverted = at(p) == '!';
  size_t k = p + (inverted ? 1 : 0);
  bool hit = false;
  unsigned char lo = at(k++);
  // Spans are "a" or "a-b"; the first span may start with ']'.
  for (;;) {
    if (lo == 0) {
      r.malformed = true;
      return r;
    }
    unsigned char hi = lo;
    if (at(k) == '-' && at(k + 1) != ']') {
      hi = at(k + 1);
      if (hi == 0) {
        r.malformed = true;
        return r;
      }
      k += 2;
    }
    if (lo <= c && c <= hi) hit = true;
    lo = at(k++);
    if (lo == ']') break;
  }
  r.matched = hit != inverted;
  r.next = k;
  return r;
}

}  // namespace

bool glob_match(std::string_view pat, CString str) noexcept {
  auto pc = [&](size_t k) -> unsigned char {
    return k < pat.size() ? static_cast<unsigned char>(pat[k]) : 0;
  };
  size_t p = 0, s = 0;
  bool have_star = false;
  size_t star_p = 0, star_s = 0;  // where to resume after the last '*'
  for (;;) {
    const unsigned char c = str.at(s++);
    unsigned char d = pc(p++);
    bool literal = false;
    bool ok = true;
    switch (d) {
      case '?':
        ok = c != 0;
        break;
      case '*':
        if (pc(p) == 0) return true;  // a trailing '*' matches the rest
        have_star = true;
        star_p = p;
        star_s = --s;  // the star may match nothing
        continue;
      case '[': {
        const ClassResult r = match_class(pat, p, c);
        if (r.malformed) {
          literal = true;  // compare '[' itself; the pattern resumes after it
        } else {
          ok = r.matched;
          if (ok) p = r.next;
        }
        break;
      }
      case '\\':
        d = pc(p++);
        literal = true;
        break;
      default:
        literal = true;
        break;
    }
    if (literal) {
      if (c == d) {
        if (d == 0) return true;
        continue;
      }
      ok = false;
    }
    if (ok) continue;
    // Mismatch: retry from the last '*', one character further in the string.
    if (c == 0 || !have_star) return false;
    p = star_p;
    s = ++star_s;
  }
}

}  // namespace tracepipe::filters
