#include "tracepipe/core/replay/symbols.h"

#include <algorithm>
#include <charconv>

namespace tracepipe::replay {

SymbolRanges::SymbolRanges(std::string_view text) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    // "ADDR TYPE NAME[\t[module]]"
    const size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 + 3 > line.size() || line[sp1 + 2] != ' ') continue;
    uint64_t addr = 0;
    const auto [p, ec] = std::from_chars(line.data(), line.data() + sp1, addr, 16);
    if (ec != std::errc() || p != line.data() + sp1) continue;
    const char type = line[sp1 + 1];
    std::string_view name = line.substr(sp1 + 3);
    name = name.substr(0, name.find_first_of("\t "));
    if (name.empty()) continue;
    syms_.push_back(Sym{addr, std::string(name), type == 't' || type == 'T'});
  }
  std::stable_sort(syms_.begin(), syms_.end(),
                   [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
}

filters::SymbolRange SymbolRanges::range_at(size_t i) const {
  // The next symbol with a greater address ends this one.
  size_t j = i + 1;
  while (j < syms_.size() && syms_[j].addr == syms_[i].addr) ++j;
  const uint64_t size = j < syms_.size() ? syms_[j].addr - syms_[i].addr : 1;
  return {syms_[i].addr, size};
}

std::optional<filters::SymbolRange> SymbolRanges::by_name(std::string_view name) const {
  std::optional<size_t> data;
  for (size_t i = 0; i < syms_.size(); ++i) {
    if (syms_[i].name != name) continue;
    if (syms_[i].text) return range_at(i);
    if (!data) data = i;
  }
  if (data) return range_at(*data);
  return std::nullopt;
}

std::optional<filters::SymbolRange> SymbolRanges::by_address(uint64_t address) const {
  auto it = std::upper_bound(syms_.begin(), syms_.end(), address,
                             [](uint64_t a, const Sym& s) { return a < s.addr; });
  if (it == syms_.begin()) return std::nullopt;
  const size_t i = static_cast<size_t>(it - syms_.begin()) - 1;
  // The first of several symbols at the same address.
  size_t first = i;
  while (first > 0 && syms_[first - 1].addr == syms_[i].addr) --first;
  const filters::SymbolRange r = range_at(first);
  if (address - r.start >= r.size) return std::nullopt;
  return r;
}

CommSource comm_source(const EventFormat& format) {
  if (format.name == "sched_switch") {
    if (const FormatField* f = format.find_field("prev_comm");
        f != nullptr && f->is_string() && !f->is_dynamic())
      return {f->offset, f->size};
  }
  return {};
}

}  // namespace tracepipe::replay
