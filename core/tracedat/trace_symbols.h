#pragma once
// Address -> name tables a trace.dat carries for rendering: kallsyms (for
// %pS/%ps/%pF) and printk_formats (for "%s" of a kernel string pointer,
// e.g. rcu_utilization's `const char * s`).
//
// Text formats (as in /proc/kallsyms and tracefs printk_formats):
//   kallsyms:  "ffffffff81000000 T _stext\n" (optional "\t[module]")
//   printk:    "0xffffffff828195af : \"thaw_processes\"\n"
// Malformed lines are skipped (these tables only improve rendering).
//
// Immutable after construction; const methods are thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tracepipe {

/// A symbol containing an address: its name and the offset into it.
struct SymbolHit {
  std::string_view name;
  uint64_t offset;  ///< address - symbol start
};

class KallsymsTable {
 public:
  KallsymsTable() = default;
  explicit KallsymsTable(std::string_view text);
  /// The symbol with the greatest start address <= addr, or nullopt if
  /// none (or the table is empty).
  std::optional<SymbolHit> lookup(uint64_t addr) const noexcept;
  size_t size() const noexcept { return syms_.size(); }

 private:
  struct Sym {
    uint64_t addr;
    std::string name;
  };
  std::vector<Sym> syms_;  // sorted by addr
};

class PrintkTable {
 public:
  PrintkTable() = default;
  explicit PrintkTable(std::string_view text);
  /// The string recorded at `addr` (escape sequences kept as written).
  std::optional<std::string_view> lookup(uint64_t addr) const noexcept;
  size_t size() const noexcept { return strings_.size(); }

 private:
  std::unordered_map<uint64_t, std::string> strings_;
};

}  // namespace tracepipe
