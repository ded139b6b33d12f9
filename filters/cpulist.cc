#include "tracepipe/filters/cpulist.h"

#include <algorithm>
#include <bit>

#include "tracepipe/filters/ctype.h"
#include "tracepipe/filters/number.h"

namespace tracepipe::filters {

uint32_t CpuList::weight() const noexcept {
  uint32_t n = 0;
  for (uint64_t w : words) n += static_cast<uint32_t>(std::popcount(w));
  return n;
}

uint32_t CpuList::first() const noexcept {
  for (size_t i = 0; i < words.size(); ++i)
    if (words[i]) return static_cast<uint32_t>(i * 64 + std::countr_zero(words[i]));
  return nbits;
}

namespace {

// A region "start-end:used/group" (see lib/bitmap-str.c: struct region).
struct Region {
  uint32_t start = 0, used = 0, group = 0, end = 0;
};

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  unsigned char peek(size_t k = 0) const noexcept {
    return pos_ + k < s_.size() ? static_cast<unsigned char>(s_[pos_ + k]) : 0;
  }
  void skip(size_t k = 1) noexcept { pos_ += k; }
  std::string_view rest() const noexcept { return s_.substr(std::min(pos_, s_.size())); }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

bool end_of_str(unsigned char c) { return c == 0 || c == '\n'; }
bool region_separator(unsigned char c) { return kctype::is_space(c) || c == ','; }
bool end_of_region(unsigned char c) { return region_separator(c) || end_of_str(c); }

// bitmap_getnum: "N" = last bit, else a decimal that fits 32 bits.
bool get_number(Cursor& c, uint32_t last_bit, uint32_t& out) {
  if (c.peek() == 'N') {
    out = last_bit;
    c.skip();
    return true;
  }
  const ParsedInt p = parse_integer(c.rest(), 10);
  if (p.chars == 0 || p.overflow || p.value > UINT32_MAX) return false;
  out = static_cast<uint32_t>(p.value);
  c.skip(p.chars);
  return true;
}

// bitmap_parse_region. Returns false on a syntax error; sets `last` when the
// list ends right after this region (a region without ":used/group" followed
// by '\0' or '\n').
bool parse_region(Cursor& c, uint32_t nbits, Region& r, bool& ends_list) {
  const uint32_t last = nbits - 1;  // nbits >= 1 (checked by the caller)
  auto lower = [](unsigned char ch) {
    return static_cast<unsigned char>(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
  };
  bool have_end = false;
  if (lower(c.peek(0)) == 'a' && lower(c.peek(1)) == 'l' && lower(c.peek(2)) == 'l') {
    r.start = 0;
    r.end = last;
    c.skip(3);
    have_end = true;
  } else {
    if (!get_number(c, last, r.start)) return false;
    if (!end_of_region(c.peek())) {
      if (c.peek() != '-') return false;
      c.skip();
      if (!get_number(c, last, r.end)) return false;
      have_end = true;
    }
  }
  if (!have_end) {
    r.end = r.start;
  } else if (!end_of_region(c.peek())) {
    if (c.peek() != ':') return false;
    c.skip();
    if (!get_number(c, last, r.used)) return false;
    if (c.peek() != '/') return false;
    c.skip();
    return get_number(c, last, r.group);
  }
  r.used = r.end + 1;
  r.group = r.end + 1;
  ends_list = end_of_str(c.peek());
  return true;
}

}  // namespace

std::optional<CpuList> parse_cpulist(std::string_view text, uint32_t nbits) {
  if (nbits == 0) return std::nullopt;
  CpuList out;
  out.nbits = nbits;
  out.words.assign((nbits + 63) / 64, 0);
  Cursor c(text);
  for (;;) {
    while (region_separator(c.peek())) c.skip();  // bitmap_find_region
    if (end_of_str(c.peek())) return out;
    Region r;
    bool last = false;
    if (!parse_region(c, nbits, r, last)) return std::nullopt;
    // bitmap_check_region
    if (r.start > r.end || r.group == 0 || r.used > r.group) return std::nullopt;
    if (r.end >= nbits) return std::nullopt;
    // bitmap_set_region
    for (uint64_t s = r.start; s <= r.end; s += r.group) {
      const uint64_t n = std::min<uint64_t>(r.end - s + 1, r.used);
      for (uint64_t b = s; b < s + n; ++b) out.words[b / 64] |= uint64_t{1} << (b % 64);
    }
    if (last) return out;
  }
}

}  // namespace tracepipe::filters
