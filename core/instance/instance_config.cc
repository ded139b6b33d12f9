// Instance and configuration: an instance built from a config section, and
// a section applied to an instance (its [systems.*] and [events.*] tables,
// then the events' trigger keys through the triggers library).
#include <map>
#include <optional>
#include <stdexcept>

#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/instance_private.h"

namespace tracepipe {

using namespace instance_impl;

namespace {
std::atomic<detail::ConfigTriggersFn>& config_triggers_hook() {
  static std::atomic<detail::ConfigTriggersFn> fn{nullptr};
  return fn;
}

// One event's settings from a config section, resolved and compiled before
// anything is applied, so that an error leaves the instance as it was.
struct Planned {
  const EventDesc* event;
  const EventSettings* settings;
  std::optional<filters::CompileResult> program;  // nullopt: no filter key; ok() false never kept
  bool clear = false;
};

// A [systems.*] table: its filter on each event of the system, as the
// kernel's subsystem filter file takes it.
void plan_system(Registry& registry, const EventSettings& s, std::vector<Planned>& plan) {
  const auto events = registry.system_events(s.pattern);
  if (events.empty())
    throw ConfigError(s.where.file, s.where.line, s.where.key,
                      "no events in system '" + s.pattern + "'");
  const size_t first = plan.size();
  bool any_accepts = false;
  for (const EventDesc* d : events) {
    Planned p{d, &s, std::nullopt, false};
    if (s.filter) {
      if (clears_filter(*s.filter)) {
        p.clear = true;
        any_accepts = true;
      } else {
        p.program = filters::compile(*s.filter, d->filter_fields());
        // Kernel semantics: events without the fields stay unfiltered.
        if (!p.program->ok()) p.clear = true;
        any_accepts = any_accepts || p.program->ok();
      }
    }
    plan.push_back(std::move(p));
  }
  // The kernel takes such a write and leaves every event of the system
  // unfiltered, the error only in each event's filter file. In a config
  // file that is a typo nobody would see: refuse it, showing the first
  // event's error (as `tracepipe replay -F SYSTEM: ...` does).
  if (s.filter && !any_accepts) {
    const EventDesc& d = *plan[first].event;
    const filters::FilterError& e = plan[first].program->error();
    throw ConfigError(s.filter_where.file, s.filter_where.line, s.filter_where.key,
                      "no event of system '" + s.pattern + "' accepts the filter (first, " +
                          d.full_name() + ": parse_error: " + std::string(e.message()) + ")\n" +
                          e.render(*s.filter));
  }
}

// An [events.*] table: its filter on each event it matches, which must
// accept it.
void plan_events(Registry& registry, const InstanceConfig& config, const EventSettings& s,
                 std::vector<Planned>& plan) {
  const auto events = registry.match(s.pattern);
  if (events.empty()) {
    // Synthetic events are defined by the triggers library, after this pass.
    if (!config.synthetic_events.empty() && split_event_name(s.pattern).system == "synthetic")
      return;
    throw ConfigError(s.where.file, s.where.line, s.where.key,
                      "no event matches '" + s.pattern + "'");
  }
  for (const EventDesc* d : events) {
    Planned p{d, &s, std::nullopt, false};
    if (s.filter) {
      if (clears_filter(*s.filter)) {
        p.clear = true;
      } else {
        p.program = filters::compile(*s.filter, d->filter_fields());
        if (!p.program->ok()) {
          const filters::FilterError& e = p.program->error();
          throw ConfigError(s.filter_where.file, s.filter_where.line, s.filter_where.key,
                            "filter rejected for " + d->full_name() + ": parse_error: " +
                                std::string(e.message()) + "\n" + e.render(*s.filter));
        }
      }
    }
    plan.push_back(std::move(p));
  }
}

// Triggers and synthetic events (core/triggers) come through the hook,
// which the triggers library sets.
void apply_config_triggers(Instance& inst, const InstanceConfig& config) {
  const ConfigSource* needs = config.synthetic_events.empty() ? nullptr : &config.synthetic_where;
  for (const EventSettings& s : config.events)
    if (needs == nullptr && !s.triggers.empty()) needs = &s.trigger_where;
  if (needs == nullptr) return;
  const detail::ConfigTriggersFn fn = config_triggers_hook().load(std::memory_order_acquire);
  if (fn == nullptr)
    throw ConfigError(needs->file, needs->line, needs->key,
                      "triggers need the triggers library (link tracepipe::triggers)");
  fn(inst, config);
}
}  // namespace

void detail::set_config_triggers_hook(ConfigTriggersFn fn) noexcept {
  config_triggers_hook().store(fn, std::memory_order_release);
}

std::unique_ptr<Instance> Instance::from_config(const InstanceConfig& config, Registry& registry) {
  std::unique_ptr<Instance> inst;
  try {
    inst = std::make_unique<Instance>(config.options, registry);
  } catch (const std::invalid_argument& e) {
    // parse_config already refuses what it can see; this names the file for
    // options changed after parsing (e.g. `cpus` set by the caller), at the
    // writers key when that is the option refused.
    if (config.options.writers == WriterMode::cpu_local && config.writers_where.line != 0)
      throw ConfigError(config.file, config.writers_where.line, config.writers_where.key, e.what());
    throw ConfigError(config.file, 0, "", e.what());
  }
  inst->apply(config);
  return inst;
}

void Instance::apply(const InstanceConfig& config) {
  std::vector<Planned> plan;
  for (const EventSettings& s : config.systems) plan_system(registry_, s, plan);
  for (const EventSettings& s : config.events) plan_events(registry_, config, s, plan);
  std::unique_lock lk(mu_);
  Retired retired;
  for (Planned& p : plan) {
    detail::EventState& st = state_locked(*p.event);
    const EventSettings& s = *p.settings;
    if (s.filter) {
      if (p.clear && p.program && !p.program->ok()) {
        install_program_locked(st, nullptr, "", retired);
        st.filter_error = subsystem_error();
      } else if (p.clear) {
        install_program_locked(st, nullptr, "", retired);
        st.filter_error.reset();
      } else {
        install_program_locked(st, p.program->program(), shown(*s.filter), retired);
        st.filter_error.reset();
      }
    }
    if (s.enable)
      enable_locked(*p.event, *s.enable, retired, s.soft_disable);
    else if (s.soft_disable)
      set_flag_locked(st, detail::EventState::kSoftDisabled, *s.soft_disable);
  }
  reclaim(retired);
  lk.unlock();
  apply_config_triggers(*this, config);
}

}  // namespace tracepipe
