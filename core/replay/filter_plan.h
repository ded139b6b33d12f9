#pragma once
// Which recorded events `tracepipe replay` feeds to its instance, and with
// which filter: the -F arguments and the --config file resolved against the
// events of the trace.dat.
//
// -F syntax (trace-cmd report -F, plus the kernel's own names):
//   'sched:sched_switch: prev_pid == 0'   system:event
//   'sched/sched_switch: prev_pid == 0'   system/event (libtraceevent's spelling)
//   'sched_switch: prev_pid == 0'         event name, any system
//   'sched: prev_pid == 0'                a whole system, as events/sched/filter:
//                                         events without the fields stay unfiltered
//   'sched_switch,sched_wakeup: ...'      a list; each item may be a glob ("sched_wak*")
// A word that names an event is an event; otherwise a system.
//
// Semantics: those of a kernel instance. Every recorded event is replayed;
// an event without a filter keeps all its records (the kernel's "none").
// --only-filtered instead drops the events that have no filter in force, as
// `trace-cmd report -F` does (libtraceevent's filter rejects events it has no
// filter for). Later settings override earlier ones: config [systems], then
// config [events], then each -F in command-line order.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/config/config.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/filters/filter.h"

namespace tracepipe::replay {

/// A user error (bad -F, rejected filter, unreadable file): what() is the
/// whole message, ready to print. The command exits non-zero.
class ReplayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One -F argument, split.
struct FilterArg {
  std::string events;  ///< "sched:sched_switch", "kmalloc", "sched", "a,b"
  std::string expr;    ///< the filter expression, as given (whitespace kept)
  std::string origin;  ///< for messages: "-F 'sched_switch: prev_pid == 0'"
};

/// Splits "EVENTS: EXPR". Throws ReplayError when there is no ':', the
/// event part is empty, or an item of the event list is empty (",,: EXPR",
/// "a,,b: EXPR", "a,: EXPR"); the message quotes the argument.
FilterArg parse_filter_arg(std::string_view arg);

/// What replay does with one recorded event.
struct EventPlan {
  const EventDesc* event = nullptr;
  bool replayed = true;        ///< false: not fed to the instance (disabled, or --only-filtered)
  bool soft_disabled = false;  ///< config soft_disable: every record discarded
  std::string filter;          ///< the expression in force, trimmed; empty = none
  /// `filter` compiled with the file's options (nr_cpu_ids, kallsyms);
  /// null when there is no filter.
  std::shared_ptr<const filters::Program> program;
  std::string origin;  ///< where the filter came from (for the report)
  /// Why a system filter left this event unfiltered (the kernel's
  /// "Couldn't find or set field..." in its filter file), or empty.
  std::string note;
};

struct PlanInput {
  std::vector<FilterArg> filters;          ///< in command-line order
  const InstanceConfig* config = nullptr;  ///< --config: its main instance
  bool only_filtered = false;              ///< mirror trace-cmd report -F
  filters::CompileOptions compile;         ///< nr_cpu_ids, kallsyms of the file
};

/// One EventPlan per registry index. Throws ReplayError on an unknown event
/// or system, on a filter the kernel would reject (message: the kernel's
/// error_log entry with its caret), and on a system filter that no event of
/// the system accepts.
std::vector<EventPlan> make_plan(const Registry& registry, const PlanInput& input);

}  // namespace tracepipe::replay
