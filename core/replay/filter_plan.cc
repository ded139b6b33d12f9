#include "tracepipe/core/replay/filter_plan.h"

#include <fmt/core.h>
#include <fnmatch.h>

#include <algorithm>

#include "tracepipe/filters/parser.h"

namespace tracepipe::replay {
namespace {

constexpr std::string_view kSpace = " \t\n\r\f\v";

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '*' || c == '?' || c == '[' || c == ']' || c == '-' || c == '.' || c == ',';
}

bool glob(std::string_view pattern, std::string_view name) {
  return fnmatch(std::string(pattern).c_str(), std::string(name).c_str(), 0) == 0;
}

class Planner {
 public:
  Planner(const Registry& reg, const PlanInput& in) : reg_(reg), in_(in), events_(reg.events()) {
    plan_.resize(reg.size());
    for (const EventDesc* d : events_) plan_[d->index()].event = d;
  }

  std::vector<EventPlan> run() {
    if (in_.config != nullptr) {
      for (const EventSettings& s : in_.config->systems) apply_config(s, /*system=*/true);
      for (const EventSettings& s : in_.config->events) apply_config(s, /*system=*/false);
    }
    for (const FilterArg& f : in_.filters) apply_arg(f);
    if (in_.only_filtered)
      for (EventPlan& p : plan_)
        if (p.filter.empty() && !p.soft_disabled) p.replayed = false;
    return std::move(plan_);
  }

 private:
  // Events named by one item of an -F event list: event names (or
  // system:event) first; a bare word naming no event is a system.
  struct Target {
    std::vector<const EventDesc*> events;
    bool system = false;
    std::string system_name;
  };

  Target resolve(std::string_view item, std::string_view origin) const {
    std::string pat(trim(item));
    std::replace(pat.begin(), pat.end(), '/', ':');
    Target t;
    const size_t colon = pat.find(':');
    if (colon != std::string::npos) {
      const std::string_view sys = std::string_view(pat).substr(0, colon);
      const std::string_view name = std::string_view(pat).substr(colon + 1);
      for (const EventDesc* d : events_)
        if (glob(sys, d->system()) && glob(name.empty() ? "*" : name, d->name()))
          t.events.push_back(d);
    } else {
      for (const EventDesc* d : events_)
        if (glob(pat, d->name())) t.events.push_back(d);
      if (t.events.empty()) {
        for (const EventDesc* d : events_)
          if (glob(pat, d->system())) t.events.push_back(d);
        t.system = !t.events.empty();
        t.system_name = pat;
      }
    }
    if (t.events.empty())
      throw ReplayError(fmt::format("{}: no event or system '{}' in the trace file", origin, pat));
    return t;
  }

  void set(EventPlan& p, std::string_view expr, std::shared_ptr<const filters::Program> prog,
           std::string_view origin) {
    p.filter = std::string(filters::kernel_command(expr));  // as the kernel's filter file shows it
    p.program = std::move(prog);
    p.origin = std::string(origin);
    p.note.clear();
  }
  void clear(EventPlan& p, std::string_view origin) {
    p.filter.clear();
    p.program.reset();
    p.origin = std::string(origin);
    p.note.clear();
  }

  [[noreturn]] void reject(std::string_view origin, const EventDesc& d, std::string_view expr,
                           const filters::FilterError& e) const {
    std::string msg = e.render(expr);
    if (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throw ReplayError(fmt::format("{}: filter rejected for {}\n{}", origin, d.full_name(), msg));
  }

  // The kernel's events/SYSTEM/filter: events that have the fields take the
  // filter, the others become unfiltered; an error only if none takes it.
  void apply_system(const std::vector<const EventDesc*>& events, std::string_view sys,
                    std::string_view expr, std::string_view origin) {
    if (filters::clears_filter(expr)) {  // a blank one is compile()'s EINVAL "Error" at 0
      for (const EventDesc* d : events) clear(plan_[d->index()], origin);
      return;
    }
    std::vector<filters::CompileResult> compiled;
    compiled.reserve(events.size());
    bool any = false;
    for (const EventDesc* d : events) {
      compiled.push_back(filters::compile(expr, d->filter_fields(), in_.compile));
      any = any || compiled.back().ok();
    }
    if (!any) {
      // Show the first event's own error: it says what is wrong with the text.
      const filters::FilterError& e = compiled.front().error();
      std::string msg = e.render(expr);
      if (!msg.empty() && msg.back() == '\n') msg.pop_back();
      throw ReplayError(
          fmt::format("{}: no event of system '{}' accepts the filter (first, {}:)\n{}", origin,
                      sys, events.front()->full_name(), msg));
    }
    for (size_t i = 0; i < events.size(); ++i) {
      EventPlan& p = plan_[events[i]->index()];
      if (compiled[i].ok()) {
        set(p, expr, compiled[i].program(), origin);
      } else {
        clear(p, origin);
        p.note = fmt::format("unfiltered: system filter not applicable ({})",
                             compiled[i].error().message());
      }
    }
  }

  void apply_events(const std::vector<const EventDesc*>& events, std::string_view expr,
                    std::string_view origin) {
    if (filters::clears_filter(expr)) {  // a blank one is compile()'s EINVAL "Error" at 0
      for (const EventDesc* d : events) clear(plan_[d->index()], origin);
      return;
    }
    // Compile all first: a rejected filter changes nothing (and is fatal).
    std::vector<std::shared_ptr<const filters::Program>> progs;
    for (const EventDesc* d : events) {
      filters::CompileResult r = filters::compile(expr, d->filter_fields(), in_.compile);
      if (!r.ok()) reject(origin, *d, expr, r.error());
      progs.push_back(r.program());
    }
    for (size_t i = 0; i < events.size(); ++i)
      set(plan_[events[i]->index()], expr, progs[i], origin);
  }

  void apply_arg(const FilterArg& f) {
    std::string_view list = f.events;
    while (true) {
      const size_t comma = list.find(',');
      const std::string_view item = list.substr(0, comma);
      if (!trim(item).empty()) {
        const Target t = resolve(item, f.origin);
        if (t.system)
          apply_system(t.events, t.system_name, f.expr, f.origin);
        else
          apply_events(t.events, f.expr, f.origin);
      }
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }

  void apply_config(const EventSettings& s, bool system) {
    const std::string origin = fmt::format("{}:{}: {}", s.where.file, s.where.line, s.where.key);
    std::vector<const EventDesc*> events;
    if (system) {
      for (const EventDesc* d : events_)
        if (d->system() == s.pattern) events.push_back(d);
    } else {
      events = reg_.match(s.pattern);
    }
    if (events.empty())
      throw ReplayError(fmt::format("{}: no {} '{}' in the trace file", origin,
                                    system ? "system" : "event matches", s.pattern));
    if (s.filter) {
      const std::string forigin =
          fmt::format("{}:{}: {}", s.filter_where.file, s.filter_where.line, s.filter_where.key);
      if (system)
        apply_system(events, s.pattern, *s.filter, forigin);
      else
        apply_events(events, *s.filter, forigin);
    }
    for (const EventDesc* d : events) {
      EventPlan& p = plan_[d->index()];
      if (s.enable) p.replayed = *s.enable;
      if (s.soft_disable) p.soft_disabled = *s.soft_disable;
    }
  }

  const Registry& reg_;
  const PlanInput& in_;
  std::vector<const EventDesc*> events_;
  std::vector<EventPlan> plan_;
};

}  // namespace

FilterArg parse_filter_arg(std::string_view arg) {
  const std::string origin = fmt::format("-F '{}'", arg);
  // The event part is the leading run of name characters, ':', '/' and ','
  // (no blank), up to its last ':' - a filter expression never starts with
  // "word:", so "sched:sched_switch:prev_pid==0" splits after sched_switch.
  size_t run = arg.find_first_not_of(kSpace);
  if (run == std::string_view::npos) run = arg.size();
  size_t end = run;
  while (end < arg.size() && (name_char(arg[end]) || arg[end] == ':' || arg[end] == '/')) ++end;
  size_t c = arg.substr(0, end).rfind(':');
  if (c == std::string_view::npos || c < run) {
    // "kmalloc : expr": blanks before the ':'.
    const size_t next = arg.find_first_not_of(kSpace, end);
    if (end > run && next != std::string_view::npos && arg[next] == ':') c = next;
  }
  if (c == std::string_view::npos || c < run)
    throw ReplayError(origin +
                      ": expected 'EVENT: FILTER' (e.g. 'sched:sched_switch: prev_pid == 0')");
  std::string events(trim(arg.substr(0, c)));
  if (events.empty()) throw ReplayError(origin + ": no event before ':'");
  // Every item of the list names something: ",,", "a,,b" or "a," would
  // otherwise filter fewer events than written, without a word.
  for (std::string_view list = events;;) {
    const size_t comma = list.find(',');
    if (trim(list.substr(0, comma)).empty())
      throw ReplayError(
          fmt::format("{}: {} in the event list '{}'", origin,
                      events.find_first_not_of(std::string(kSpace) + ",") == std::string::npos
                          ? "no event name"
                          : "an empty event name",
                      events));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  std::string_view rest = arg.substr(c + 1);
  const size_t b = rest.find_first_not_of(kSpace);
  return FilterArg{std::move(events),
                   std::string(b == std::string_view::npos ? std::string_view() : rest.substr(b)),
                   origin};
}

std::vector<EventPlan> make_plan(const Registry& registry, const PlanInput& input) {
  return Planner(registry, input).run();
}

}  // namespace tracepipe::replay
