#pragma once
// The filter expressions of the bench's filtered cases, per event, and the
// TOML file (--filters FILE) that overrides them.
//
// Defaults:
//   reject  every event: common_preempt_count==20   (the kernel patch's
//   accept  every event: common_preempt_count!=20    experiment; the field is
//                                                    always 0 here)
//   half    every event: CPU & 1
//
// Why `CPU & 1` splits the events exactly in half: the workload pins sender
// and receiver pair p to allowed CPU p mod n, every thread emits the same
// number of events (3 per message), so with an even number of pairs spread
// over an even number of CPUs, half of all events are emitted on odd CPUs.
// The bench reports the measured acceptance and warns when it is not near
// 50% (odd CPU count, --no-pin, a filter file that changes it).
//
// File format (TOML). One table per case, a key per event ("sched_switch",
// "sched:sched_switch", ...) or "*" for the four events; a per-event key wins
// over "*". An empty string means no filter for that event.
//
//   [half]
//   "*" = "CPU & 1"
//   sys_enter = "id == 1"        # writes pass, reads are rejected
//
//   [reject]
//   "*" = "common_pid == 0"
#include <array>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tools/bench/model.h"
#include "tools/bench/records.h"

namespace tracepipe::tools::bench {

/// Expression per event (indexed by EventKind) for one case; "" = no filter.
using EventFilters = std::array<std::string, kEventKinds>;

struct FilterSet {
  EventFilters reject;
  EventFilters accept;
  EventFilters half;

  /// The filters of case `c`: all empty for off and all.
  EventFilters for_case(Case c) const;
};

/// The defaults above.
FilterSet default_filters();

/// Applies the overrides of a TOML file to `set`. Throws std::runtime_error
/// naming the file (and line, for syntax errors) on an unreadable file, bad
/// TOML, an unknown case table, an unknown event key or a non-string value.
/// The expressions are not compiled here (the engine compiles them and
/// reports the kernel's error).
void load_filter_file(const std::filesystem::path& path, FilterSet& set);

/// (event name, expression) pairs of `f`, in EventKind order, for the report.
std::vector<std::pair<std::string, std::string>> describe(const EventFilters& f);

}  // namespace tracepipe::tools::bench
