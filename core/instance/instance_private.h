#pragma once
// What the control plane's files (instance.cc, instance_config.cc,
// adaptive.cc) share and the header does not show. Not installed.
#include <cerrno>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/instance/instance.h"
#include "tracepipe/filters/parser.h"

namespace tracepipe {

// Objects unpublished under the instance mutex, freed together after one
// grace period (so that a batch of changes costs one synchronize()).
struct Instance::Retired {
  std::vector<std::shared_ptr<const filters::Program>> programs;
  std::vector<const detail::Subscribers*> subscribers;
  std::vector<std::shared_ptr<detail::TriggerHook>> triggers;
  bool empty() const { return programs.empty() && subscribers.empty() && triggers.empty(); }
};

namespace instance_impl {

// "0" clears a filter (filters::clears_filter: the kernel's whitespace and
// its cut at a NUL). A blank string is not a clear: the kernel rejects it
// (EINVAL, "Error" at position 0), and so does filters::compile, so a config
// value that went missing cannot remove filtering silently.
using filters::clears_filter;

// What filter() shows: the text the kernel keeps and shows in its filter file.
inline std::string shown(std::string_view expr) {
  return std::string(filters::kernel_command(expr));
}

// The kernel's error in the filter file of an event a system filter could not
// be set on (process_system_preds): the event's own error is in
// SystemFilterResult::rejected.
inline filters::FilterError subsystem_error() {
  return {filters::FilterErr::bad_subsys_filter, 0, EINVAL, {}};
}

}  // namespace instance_impl

}  // namespace tracepipe
