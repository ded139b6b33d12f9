#include "tracepipe/bench/engine/case_filters.h"

#include <fmt/core.h>
#include <toml++/toml.h>

#include <stdexcept>

namespace tracepipe::bench {

EventFilters FilterSet::for_case(Case c) const {
  switch (c) {
    case Case::reject:
      return reject;
    case Case::accept:
      return accept;
    case Case::half:
      return half;
    case Case::off:
    case Case::all:
      break;
  }
  return {};
}

std::string default_half_filter(const std::vector<int>& cpus) {
  if (cpus.size() < 2) return "common_pid & 1";
  return fmt::format("CPU >= {}", cpus[cpus.size() / 2]);
}

FilterSet default_filters(const std::vector<int>& allowed_cpus) {
  FilterSet s;
  s.reject.fill("common_preempt_count==20");
  s.accept.fill("common_preempt_count!=20");
  s.half.fill(default_half_filter(allowed_cpus));
  return s;
}

void load_filter_file(const std::filesystem::path& path, FilterSet& set) {
  toml::table doc;
  try {
    doc = toml::parse_file(path.string());
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(fmt::format("filters file {}:{}:{}: {}", path.string(),
                                         e.source().begin.line, e.source().begin.column,
                                         e.description()));
  }
  for (const auto& [key, node] : doc) {
    EventFilters* target = nullptr;
    if (key == "reject")
      target = &set.reject;
    else if (key == "accept")
      target = &set.accept;
    else if (key == "half")
      target = &set.half;
    else
      throw std::runtime_error(
          fmt::format("filters file {}: unknown table [{}] (expected reject, accept or half)",
                      path.string(), key.str()));
    const toml::table* tbl = node.as_table();
    if (!tbl)
      throw std::runtime_error(
          fmt::format("filters file {}: '{}' must be a table", path.string(), key.str()));
    // "*" first, so per-event keys win whatever their order in the file.
    if (const auto* all = tbl->get("*")) {
      auto v = all->value<std::string>();
      if (!v)
        throw std::runtime_error(
            fmt::format("filters file {}: [{}] \"*\" must be a string", path.string(), key.str()));
      target->fill(*v);
    }
    for (const auto& [ev, val] : *tbl) {
      if (ev == "*") continue;
      const EventInfo* info = find_event(ev.str());
      if (!info)
        throw std::runtime_error(fmt::format(
            "filters file {}: [{}] unknown event '{}' (expected sched_switch, sched_wakeup, "
            "sys_enter, sys_exit or \"*\")",
            path.string(), key.str(), ev.str()));
      auto v = val.value<std::string>();
      if (!v)
        throw std::runtime_error(fmt::format("filters file {}: [{}] {} must be a string",
                                             path.string(), key.str(), ev.str()));
      (*target)[static_cast<size_t>(info->kind)] = *v;
    }
  }
}

std::vector<std::pair<std::string, std::string>> describe(const EventFilters& f) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const EventInfo& e : kEventInfo)
    out.emplace_back(std::string(e.name), f[static_cast<size_t>(e.kind)]);
  return out;
}

}  // namespace tracepipe::bench
