// Instances through the C API: options, config files, enable, filters,
// triggers and hist, exports (trace.dat snapshots, `trace` text), counters.
// Each function is the C++ call of the same name (core/instance/instance.h,
// core/triggers/triggers.h, core/export/instance_export.h) behind guarded().
#include <cmath>
#include <string>

#include "tracepipe/core/capi/capi_internal.h"
#include "tracepipe/core/clock/trace_clock.h"
#include "tracepipe/core/config/config.h"
#include "tracepipe/core/export/instance_export.h"
#include "tracepipe/core/triggers/triggers.h"

namespace tracepipe::capi {
namespace {

/// The options a C caller gave, as InstanceOptions; throws std::invalid_argument.
InstanceOptions to_options(const tracepipe_instance_options* user) {
  InstanceOptions o;
  if (user == nullptr) return o;
  tracepipe_instance_options c;
  if (user->struct_size < sizeof(size_t) || !copy_struct_in(&c, sizeof c, user, user->struct_size))
    throw std::invalid_argument("tracepipe_instance_options: struct_size unknown to this library");
  if (c.name != nullptr) {
    if (*c.name == '\0') throw std::invalid_argument("name: empty");
    o.name = c.name;
  }
  if (c.buffer_size_kb != 0) {
    if (c.buffer_size_kb > kMaxBufferSizeKb)
      throw std::invalid_argument("buffer_size_kb: over 1 GiB per CPU");
    o.buffer_size_kb = c.buffer_size_kb;
  }
  if (c.subbuf_size_kb != 0) {
    if (c.subbuf_size_kb < kMinSubbufSizeKb || c.subbuf_size_kb > kMaxSubbufSizeKb ||
        (c.subbuf_size_kb & (c.subbuf_size_kb - 1)) != 0)
      throw std::invalid_argument("subbuf_size_kb: a power of two in 4..1024");
    o.subbuf_size_kb = c.subbuf_size_kb;
  }
  switch (c.mode) {
    case TRACEPIPE_MODE_OVERWRITE:
      o.mode = BufferMode::overwrite;
      break;
    case TRACEPIPE_MODE_DROP_NEWEST:
      o.mode = BufferMode::drop_newest;
      break;
    default:
      throw std::invalid_argument("mode: not a tracepipe_buffer_mode");
  }
  if (c.clock != nullptr) {
    const auto id = parse_trace_clock(c.clock);
    if (!id)
      throw std::invalid_argument(std::string("clock: unknown trace clock '") + c.clock + "'");
    o.clock = *id;
  }
  switch (c.staging) {
    case TRACEPIPE_STAGING_DEFAULT:
    case TRACEPIPE_STAGING_PER_THREAD:
      o.staging = Staging::per_thread;
      break;
    case TRACEPIPE_STAGING_OFF:
      o.staging = Staging::off;
      break;
    case TRACEPIPE_STAGING_PER_CPU:
      o.staging = Staging::per_cpu;
      break;
    case TRACEPIPE_STAGING_ADAPTIVE:
      o.staging = Staging::adaptive;
      break;
    default:
      throw std::invalid_argument("staging: not a tracepipe_staging");
  }
  if (c.adaptive_threshold != 0) {
    if (!(c.adaptive_threshold > 0 && c.adaptive_threshold <= 1))
      throw std::invalid_argument("adaptive_threshold: must be in (0, 1]");
    o.adaptive_threshold = c.adaptive_threshold;
  }
  if (c.cpus > kMaxCpus) throw std::invalid_argument("cpus: over 4096");
  o.cpus = c.cpus;
  o.flight_recorder = c.flight_recorder != 0;
  if (c.flight_dir != nullptr) o.flight_dir = c.flight_dir;
  return o;
}

const InstanceConfig& find_section(const Config& cfg, const char* name, const char* path) {
  const std::string want = name != nullptr ? name : "main";
  for (const InstanceConfig& ic : cfg.instances)
    if (ic.options.name == want) return ic;
  throw std::invalid_argument(std::string(path) + ": no instance named '" + want + "'");
}

bool bad(const tracepipe_instance* i, const tracepipe_event* e) {
  return i == nullptr || e == nullptr;
}

}  // namespace
}  // namespace tracepipe::capi

using namespace tracepipe;
using namespace tracepipe::capi;

extern "C" {

tracepipe_status tracepipe_instance_create(const tracepipe_instance_options* options,
                                           tracepipe_instance** out) {
  return guarded([&] {
    if (out == nullptr) return fail(TRACEPIPE_EINVAL, "out must not be NULL");
    auto h = std::make_unique<tracepipe_instance>();
    h->inst = std::make_unique<Instance>(to_options(options));
    *out = h.release();
    return TRACEPIPE_OK;
  });
}

tracepipe_status tracepipe_instance_from_config(const char* path, const char* instance_name,
                                                tracepipe_instance** out) {
  return guarded([&] {
    if (path == nullptr || out == nullptr)
      return fail(TRACEPIPE_EINVAL, "path and out must not be NULL");
    const Config cfg = load_config(path);
    auto h = std::make_unique<tracepipe_instance>();
    h->inst = Instance::from_config(find_section(cfg, instance_name, path));
    *out = h.release();
    return TRACEPIPE_OK;
  });
}

tracepipe_status tracepipe_instance_apply_config(tracepipe_instance* instance, const char* path,
                                                 const char* instance_name) {
  return guarded([&] {
    if (instance == nullptr || path == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance and path must not be NULL");
    const Config cfg = load_config(path);
    instance->inst->apply(find_section(cfg, instance_name, path));
    return TRACEPIPE_OK;
  });
}

void tracepipe_instance_destroy(tracepipe_instance* instance) {
  try {
    delete instance;
  } catch (...) {
  }
}

tracepipe_status tracepipe_instance_enable(tracepipe_instance* instance,
                                           const tracepipe_event* event, int on) {
  return guarded([&] {
    if (bad(instance, event)) return fail(TRACEPIPE_EINVAL, "instance and event must not be NULL");
    instance->inst->enable(*event->desc, on != 0);
    return TRACEPIPE_OK;
  });
}

tracepipe_status tracepipe_instance_enable_pattern(tracepipe_instance* instance,
                                                   const char* pattern, int on, size_t* matched) {
  return guarded([&] {
    if (instance == nullptr || pattern == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance and pattern must not be NULL");
    const size_t n = instance->inst->enable(std::string_view(pattern), on != 0);
    if (matched != nullptr) *matched = n;
    if (n == 0) return fail(TRACEPIPE_ENOENT, std::string("no event matches '") + pattern + "'");
    return TRACEPIPE_OK;
  });
}

tracepipe_status tracepipe_instance_set_filter(tracepipe_instance* instance,
                                               const tracepipe_event* event, const char* expr) {
  return guarded([&] {
    if (bad(instance, event) || expr == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance, event and expr must not be NULL");
    const FilterStatus st = instance->inst->set_filter(*event->desc, expr);
    if (!st) return fail(TRACEPIPE_EFILTER, st.render());
    return TRACEPIPE_OK;
  });
}

tracepipe_status tracepipe_instance_set_system_filter(tracepipe_instance* instance,
                                                      const char* system, const char* expr) {
  return guarded([&] {
    if (instance == nullptr || system == nullptr || expr == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance, system and expr must not be NULL");
    if (instance->inst->registry().system_events(system).empty())
      return fail(TRACEPIPE_ENOENT, std::string("no event in system '") + system + "'");
    const SystemFilterResult r = instance->inst->set_system_filter(system, expr);
    if (r.rejected.empty()) return TRACEPIPE_OK;
    std::string msg;
    for (const auto& [desc, err] : r.rejected) msg += desc->full_name() + ":\n" + err.render(expr);
    return fail(TRACEPIPE_EFILTER, msg);
  });
}

size_t tracepipe_instance_filter(const tracepipe_instance* instance, const tracepipe_event* event,
                                 char* buf, size_t cap) {
  try {
    return copy_out(bad(instance, event) ? std::string() : instance->inst->filter(*event->desc),
                    buf, cap);
  } catch (...) {
    return copy_out("", buf, cap);
  }
}

tracepipe_status tracepipe_instance_set_soft_disabled(tracepipe_instance* instance,
                                                      const tracepipe_event* event, int soft) {
  return guarded([&] {
    if (bad(instance, event)) return fail(TRACEPIPE_EINVAL, "instance and event must not be NULL");
    instance->inst->set_soft_disabled(*event->desc, soft != 0);
    return TRACEPIPE_OK;
  });
}

tracepipe_status tracepipe_instance_set_trigger(tracepipe_instance* instance,
                                                const tracepipe_event* event, const char* command) {
  return guarded([&] {
    if (bad(instance, event) || command == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance, event and command must not be NULL");
    const TriggerStatus st = set_trigger(*instance->inst, *event->desc, command);
    if (!st) return fail(TRACEPIPE_ETRIGGER, st.render());
    return TRACEPIPE_OK;
  });
}

size_t tracepipe_instance_trigger_text(const tracepipe_instance* instance,
                                       const tracepipe_event* event, char* buf, size_t cap) {
  try {
    return copy_out(
        bad(instance, event) ? std::string() : trigger_file(*instance->inst, *event->desc), buf,
        cap);
  } catch (...) {
    return copy_out("", buf, cap);
  }
}

size_t tracepipe_instance_hist_text(const tracepipe_instance* instance,
                                    const tracepipe_event* event, char* buf, size_t cap) {
  try {
    return copy_out(bad(instance, event) ? std::string() : hist_file(*instance->inst, *event->desc),
                    buf, cap);
  } catch (...) {
    return copy_out("", buf, cap);
  }
}

void tracepipe_instance_pause(tracepipe_instance* instance) {
  if (instance != nullptr) (void)instance->inst->pause();
}

void tracepipe_instance_resume(tracepipe_instance* instance) {
  if (instance != nullptr) instance->inst->resume();
}

int tracepipe_instance_paused(const tracepipe_instance* instance) {
  return instance != nullptr && instance->inst->paused() ? 1 : 0;
}

tracepipe_status tracepipe_instance_write_trace_dat(tracepipe_instance* instance, const char* path,
                                                    unsigned flags) {
  return guarded([&] {
    if (instance == nullptr || path == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance and path must not be NULL");
    if ((flags & ~(TRACEPIPE_SNAPSHOT_CONSUME | TRACEPIPE_SNAPSHOT_PAUSE)) != 0)
      return fail(TRACEPIPE_EINVAL, "flags: unknown bits");
    Instance& inst = *instance->inst;
    const bool pause = (flags & TRACEPIPE_SNAPSHOT_PAUSE) != 0 && !inst.paused();
    if (pause) (void)inst.pause();
    struct Resume {
      Instance& i;
      bool on;
      ~Resume() {
        if (on) i.resume();
      }
    } resume{inst, pause};
    ExportOptions o;
    o.consume = (flags & TRACEPIPE_SNAPSHOT_CONSUME) != 0;
    write_trace_dat(inst, path, o);
    return TRACEPIPE_OK;
  });
}

size_t tracepipe_instance_trace_text(const tracepipe_instance* instance, char* buf, size_t cap) {
  try {
    return copy_out(instance == nullptr ? std::string() : trace_text(*instance->inst), buf, cap);
  } catch (...) {
    return copy_out("", buf, cap);
  }
}

tracepipe_status tracepipe_instance_event_stats(const tracepipe_instance* instance,
                                                const tracepipe_event* event,
                                                tracepipe_event_stats* out) {
  return guarded([&] {
    if (bad(instance, event) || out == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance, event and out must not be NULL");
    const EventStats s = instance->inst->event_stats(*event->desc);
    tracepipe_event_stats c{};
    c.struct_size = sizeof c;
    c.kept = s.kept;
    c.discarded = s.discarded;
    c.lost = s.lost;
    c.staged = s.staged;
    c.direct = s.direct;
    copy_struct_out(out, out->struct_size, &c, sizeof c);
    return TRACEPIPE_OK;
  });
}

tracepipe_status tracepipe_instance_buffer_stats(const tracepipe_instance* instance,
                                                 tracepipe_buffer_stats* out) {
  return guarded([&] {
    if (instance == nullptr || out == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance and out must not be NULL");
    tracepipe_buffer_stats c{};
    c.struct_size = sizeof c;
    for (const buffers::CpuStats& s : instance->inst->cpu_stats()) {
      c.entries += s.entries;
      c.overrun += s.overrun;
      c.lost += s.lost();
      c.read += s.read;
      c.bytes += s.bytes;
    }
    c.cpus = instance->inst->cpus();
    copy_struct_out(out, out->struct_size, &c, sizeof c);
    return TRACEPIPE_OK;
  });
}

size_t tracepipe_instance_flight_path(const tracepipe_instance* instance, char* buf, size_t cap) {
  try {
    return copy_out(instance == nullptr ? std::string() : instance->inst->flight_path().string(),
                    buf, cap);
  } catch (...) {
    return copy_out("", buf, cap);
  }
}

}  // extern "C"
