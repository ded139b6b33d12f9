#pragma once
// What a replayed filter needs beyond the record bytes, rebuilt from the
// trace.dat (or files given on the command line):
//
//   SymbolRanges   kallsyms text -> [start, start + size) per symbol, for
//                  `FIELD.function == SYM` (the kernel resolves SYM with
//                  kallsyms when the filter is set; a symbol's size is the
//                  distance to the next symbol, as kallsyms_lookup_size_offset
//                  computes it).
//   comm_of()      the comm the kernel's COMM/comm generic field would have
//                  read (current->comm at the time of the event).
//
// Immutable after construction; const methods are thread-safe.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/filters/compile.h"

namespace tracepipe::replay {

/// Symbol name -> address range, from /proc/kallsyms-style text
/// ("ffffffff81e3d520 T __alloc_skb", optional "\t[module]"). Malformed
/// lines are skipped.
class SymbolRanges {
 public:
  SymbolRanges() = default;
  explicit SymbolRanges(std::string_view kallsyms_text);

  /// The range of the first symbol named `name` (text symbols, t/T, are
  /// preferred over data symbols of the same name). The last symbol of the
  /// table has no successor and is given size 1.
  std::optional<filters::SymbolRange> by_name(std::string_view name) const;
  /// The symbol whose range contains `address`.
  std::optional<filters::SymbolRange> by_address(uint64_t address) const;
  size_t size() const noexcept { return syms_.size(); }
  bool empty() const noexcept { return syms_.empty(); }

 private:
  struct Sym {
    uint64_t addr;
    std::string name;
    bool text;
  };
  filters::SymbolRange range_at(size_t i) const;
  std::vector<Sym> syms_;  // sorted by address
};

/// Where the COMM generic field of one event comes from in a recorded file.
/// Mirrors kernel/trace/trace_events_filter.c: filter_pred_comm, which reads
/// current->comm: for sched_switch the task switching out (prev_comm), for
/// every other event the task whose pid is common_pid.
struct CommSource {
  /// Offset and size of a char[N] field holding current's comm in the record
  /// (sched_switch's prev_comm); size 0 = look common_pid up in saved_cmdlines.
  uint32_t field_offset = 0;
  uint32_t field_size = 0;
};
CommSource comm_source(const EventFormat& format);

}  // namespace tracepipe::replay
