#include "tracepipe/core/tracedat/trace_symbols.h"

#include <algorithm>
#include <charconv>

namespace tracepipe {
namespace {

template <typename F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    const auto nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

std::optional<uint64_t> hex(std::string_view s) {
  if (s.substr(0, 2) == "0x" || s.substr(0, 2) == "0X") s.remove_prefix(2);
  uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

KallsymsTable::KallsymsTable(std::string_view text) {
  for_each_line(text, [&](std::string_view line) {
    // "<addr> <type> <name>[\t[module]]"
    const auto a = line.find(' ');
    if (a == std::string_view::npos) return;
    const auto addr = hex(line.substr(0, a));
    const auto t = line.find(' ', a + 1);
    if (!addr || t == std::string_view::npos) return;
    std::string_view name = line.substr(t + 1);
    name = name.substr(0, name.find_first_of("\t \r"));
    if (name.empty()) return;
    syms_.push_back({*addr, std::string(name)});
  });
  std::stable_sort(syms_.begin(), syms_.end(),
                   [](const Sym& x, const Sym& y) { return x.addr < y.addr; });
}

std::optional<SymbolHit> KallsymsTable::lookup(uint64_t addr) const noexcept {
  auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                             [](uint64_t a, const Sym& s) { return a < s.addr; });
  if (it == syms_.begin()) return std::nullopt;
  --it;
  return SymbolHit{it->name, addr - it->addr};
}

PrintkTable::PrintkTable(std::string_view text) {
  for_each_line(text, [&](std::string_view line) {
    // "0x<addr> : \"<string>\""
    const auto colon = line.find(" : ");
    if (colon == std::string_view::npos) return;
    const auto addr = hex(line.substr(0, colon));
    std::string_view s = line.substr(colon + 3);
    if (!addr || s.size() < 2 || s.front() != '"' || s.back() != '"') return;
    strings_.emplace(*addr, std::string(s.substr(1, s.size() - 2)));
  });
}

std::optional<std::string_view> PrintkTable::lookup(uint64_t addr) const noexcept {
  const auto it = strings_.find(addr);
  if (it == strings_.end()) return std::nullopt;
  return std::string_view(it->second);
}

}  // namespace tracepipe
