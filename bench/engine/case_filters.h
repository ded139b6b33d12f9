#pragma once
// The filter expressions of the bench's filtered cases, per event, and the
// TOML file (--filters FILE) that overrides them.
//
// Defaults:
//   reject  every event: common_preempt_count==20   (the kernel patch's
//   accept  every event: common_preempt_count!=20    experiment; the field is
//                                                    always 0 here)
//   half    every event: CPU >= M, M = the middle allowed CPU
//           (allowed CPUs c[0] < ... < c[n-1], M = c[n/2]; "CPU >= 1" on a
//           machine with CPUs 0 and 1); with a single CPU: common_pid & 1
//
// Why `CPU >= M` splits the events exactly in half: the workload pins sender
// and receiver pair p to allowed CPU c[p mod n], and every thread emits the
// same number of events (3 per message); so when the number of pairs is a
// multiple of an even n, CPUs c[n/2] .. c[n-1] emit exactly half of all
// events. (`CPU & 1` would not do: the kernel evaluates `&` on the CPU
// generic field as always false, and tracepipe's filters do the same.) The
// bench reports the measured acceptance and warns when it is not near 50%
// (odd CPU count, --no-pin, an odd number of pairs, a filter file).
//
// File format (TOML). One table per case, a key per event ("sched_switch",
// "sched:sched_switch", ...) or "*" for the four events; a per-event key wins
// over "*". An empty string means no filter for that event.
//
//   [half]
//   "*" = "common_pid & 1"
//   sys_enter = "id == 1"        # writes pass, reads are rejected
//
//   [reject]
//   "*" = "common_pid == 0"
#include <array>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tracepipe/bench/engine/model.h"
#include "tracepipe/bench/engine/records.h"

namespace tracepipe::bench {

/// Expression per event (indexed by EventKind) for one case; "" = no filter.
using EventFilters = std::array<std::string, kEventKinds>;

struct FilterSet {
  EventFilters reject;
  EventFilters accept;
  EventFilters half;

  /// The filters of case `c`: all empty for off and all.
  EventFilters for_case(Case c) const;
};

/// The defaults above, for threads pinned to `allowed_cpus` (ascending;
/// empty = unknown, treated as one CPU).
FilterSet default_filters(const std::vector<int>& allowed_cpus);

/// The default half filter for `allowed_cpus` (see above).
std::string default_half_filter(const std::vector<int>& allowed_cpus);

/// Applies the overrides of a TOML file to `set`. Throws std::runtime_error
/// naming the file (and line, for syntax errors) on an unreadable file, bad
/// TOML, an unknown case table, an unknown event key or a non-string value.
/// The expressions are not compiled here (the engine compiles them and
/// reports the kernel's error).
void load_filter_file(const std::filesystem::path& path, FilterSet& set);

/// (event name, expression) pairs of `f`, in EventKind order, for the report.
std::vector<std::pair<std::string, std::string>> describe(const EventFilters& f);

}  // namespace tracepipe::bench
