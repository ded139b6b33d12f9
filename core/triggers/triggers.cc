// Event triggers: the trigger-file syntax, the per-event trigger list the
// write path runs (detail::TriggerHook), and the readback. Hist triggers'
// map and text are in hist.cc.
#include "tracepipe/core/triggers/triggers.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "tracepipe/core/triggers/hist.h"
#include "tracepipe/core/triggers/stack_trace.h"
#include "tracepipe/core/triggers/synthetic.h"
#include "tracepipe/filters/compile.h"
#include "tracepipe/filters/parser.h"

namespace tracepipe {

std::string TriggerError::render() const {
  if (message.empty()) return fmt::format("{}\n", std::strerror(err));
  std::string out = fmt::format("{}: error: {}\n  Command: {}\n", location, message, command);
  out.append(sizeof("  Command: ") - 1 + static_cast<size_t>(pos < 0 ? 0 : pos), ' ');
  out += "^\n";
  return out;
}

namespace triggers {
namespace {

constexpr uint64_t kUnlimited = UINT64_MAX;
constexpr size_t kMaxTriggers = 32;  // bits of TriggersFired::mask

enum class Kind : uint8_t {
  traceon,
  traceoff,
  snapshot,
  stacktrace,
  enable_event,
  disable_event,
  hist,
  enable_hist,
  disable_hist
};
constexpr std::string_view kNames[] = {"traceon",    "traceoff",     "snapshot",
                                       "stacktrace", "enable_event", "disable_event",
                                       "hist",       "enable_hist",  "disable_hist"};
constexpr int kNumKinds = 9;

// The kernel's trigger types: traceon and traceoff are one (ETT_TRACE_ONOFF).
// enable_event and disable_event are one (ETT_EVENT_ENABLE), per target.
int type_of(Kind k) {
  if (k == Kind::traceoff) k = Kind::traceon;
  if (k == Kind::disable_event) k = Kind::enable_event;
  if (k == Kind::disable_hist) k = Kind::enable_hist;
  return static_cast<int>(k);
}
bool is_post(Kind k) {
  return k == Kind::traceon || k == Kind::traceoff || k == Kind::snapshot || k == Kind::stacktrace;
}

struct Trigger {
  Kind kind{};
  std::atomic<uint64_t> count{kUnlimited};
  std::shared_ptr<const filters::Program> filter;  // null: none
  std::string filter_text;                         // as the trigger file shows it
  // enable_event / disable_event
  const EventDesc* target = nullptr;
  detail::EventState* target_state = nullptr;
  // hist
  std::shared_ptr<HistMap> map;
  HistSpec spec;  // this event's fields (offsets); map->spec() holds the layout
  std::atomic<bool> paused{false};
  bool needs_ts = false;
  bool needs_cpu = false;
  bool needs_stack = false;  // a stacktrace key: the CFA of this frame for the unwinder
  bool full = false;         // variables, references or handlers: hist_update_full
  bool vars_only = false;    // ... only plain variables: HistMap::update_vars
  // stacktrace
  const EventDesc* stack_event = nullptr;
  std::atomic<uint64_t> fired{0};  // snapshots taken / stacks written

  // Takes one from the count; false when it is spent. Exact under
  // concurrency: each success is one decrement of a positive count.
  bool take() noexcept {
    uint64_t c = count.load(std::memory_order_relaxed);
    for (;;) {
      if (c == kUnlimited) return true;
      if (c == 0) return false;
      if (count.compare_exchange_weak(c, c - 1, std::memory_order_relaxed)) return true;
    }
  }
  bool spent() const noexcept { return count.load(std::memory_order_relaxed) == 0; }

  std::string print() const {
    std::string s;
    if (kind == Kind::hist) {
      s = spec.info();
      if (filter) s += " if " + filter_text;
      s += paused.load() ? " [paused]" : " [active]";
      return s;
    }
    s = std::string(kNames[static_cast<int>(kind)]);
    if (target != nullptr) s += fmt::format(":{}:{}", target->system(), target->name());
    const uint64_t c = count.load(std::memory_order_relaxed);
    s += c == kUnlimited ? std::string(":unlimited") : fmt::format(":count={}", c);
    if (filter) s += " if " + filter_text;
    return s;
  }
};

class TriggerList final : public detail::TriggerHook {
 public:
  Instance* instance = nullptr;
  const EventDesc* event = nullptr;
  std::vector<std::shared_ptr<Trigger>> list;  // newest first (hists last); owns the triggers
  std::vector<Trigger*> raw;                   // the same, one load each on the write path
  ClockFn clock = nullptr;                     // for common_timestamp (null: the recorded stamp)

  uint32_t call(const detail::TriggerCall& c) noexcept override {
    uint32_t due = 0;
    const size_t n = raw.size();
    for (size_t i = 0; i < n; ++i) {
      Trigger& t = *raw[i];
      if (t.kind == Kind::hist && t.paused.load(std::memory_order_relaxed)) continue;
      if (t.filter && !t.filter->match_lazy(c.record, [&] { return context(c); })) continue;
      if (t.kind == Kind::hist) {  // the common trigger, inline: no second call
        update_hist(t, c);
        continue;
      }
      if (is_post(t.kind)) {
        due |= 1u << i;
        continue;
      }
      run(t, c);
    }
    return due;
  }

  void post_call(uint32_t fired, const detail::TriggerCall& c) noexcept override {
    // This frame's CFA: the stacktrace records only the frames above it,
    // the emitting code's (stack_trace.h).
    const auto cfa = reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa());
    for (size_t i = 0; i < raw.size(); ++i)
      if ((fired >> i) & 1u) run(*raw[i], c, cfa);
  }

 private:
  static filters::EvalContext context(const detail::TriggerCall& c) noexcept {
    return {c.cpu_unknown ? current_cpu() : c.cpu,
            c.thread != nullptr ? c.thread->comm_view() : std::string_view()};
  }

  // The kernel_stack record: the call chain above `cfa`, with the emitting
  // context's flags and preempt depth (the triggering emit's: this one runs
  // nested inside it, one level deeper), as __ftrace_trace_stack takes the
  // trace_ctx of the event that fired.
  void write_stack(Trigger& t, const ThreadContext& thread, uintptr_t cfa) noexcept {
    uint64_t callers[kStackFrames];
    const uint32_t n = capture_stack(cfa, callers);
    const uint32_t entries = n < kStackMinEntries ? kStackMinEntries : n;
    const uint32_t outer = thread.nesting() > 0 ? thread.nesting() - 1 : 0;
    uint8_t flags = 0, preempt = 0;
    if ((outer | thread.in_signal.load(std::memory_order_relaxed)) != 0) {
      flags = TraceFlag::hardirq;
      preempt = static_cast<uint8_t>(outer < 15 ? outer : 15);
    }
    instance->emit_fill(*t.stack_event, 16 + entries * 8, [&](std::span<std::byte> rec) {
      rec[2] = std::byte{flags};
      rec[3] = std::byte{preempt};
      const int32_t size = static_cast<int32_t>(n);
      std::memcpy(rec.data() + 8, &size, 4);
      std::memset(rec.data() + 12, 0, 4);
      std::memcpy(rec.data() + 16, callers, n * 8);
      std::memset(rec.data() + 16 + n * 8, 0xff, (entries - n) * 8);  // the kernel's end mark
    });
  }

  [[gnu::always_inline]] void update_hist(Trigger& t, const detail::TriggerCall& c) noexcept {
    const uint64_t ts = t.needs_ts ? (clock != nullptr ? clock() : detail::tl_external_ts) : 0;
    const uint32_t cpu = !t.needs_cpu ? 0 : c.cpu_unknown ? current_cpu() : c.cpu;
    if (t.needs_stack)
        [[unlikely]]  // inlined into call(): the frames above are the emitting code's
      tl_hist_stack_cfa = reinterpret_cast<uintptr_t>(__builtin_dwarf_cfa());
    if (t.full) [[unlikely]] {
      if (t.vars_only) return t.map->update_vars(t.spec, c.record, cpu, ts);
      return hist_update_full(t.spec, *t.map, *instance, c.record, cpu, ts);
    }
    t.map->update(t.spec, c.record, cpu, ts);
  }

  void run(Trigger& t, const detail::TriggerCall& c, uintptr_t cfa = 0) noexcept {
    switch (t.kind) {
      case Kind::hist:
        update_hist(t, c);
        return;
      case Kind::traceon:
      case Kind::traceoff: {
        const bool on = t.kind == Kind::traceon;
        if (instance->paused() != on) return;  // already in that state: the count is kept
        if (!t.take()) return;
        instance->set_tracing_on_from_writer(on);
        return;
      }
      case Kind::snapshot:
        // The live ring becomes the snapshot and the spare (allocated when
        // the trigger was added) takes its place: tracing goes on.
        if (!t.take()) return;
        if (detail::InstanceAccess::live_ring(*instance).swap())
          t.fired.fetch_add(1, std::memory_order_relaxed);
        return;
      case Kind::stacktrace: {
        if (!t.take() || c.thread == nullptr) return;
        write_stack(t, *c.thread, cfa);
        t.fired.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      case Kind::enable_hist:
      case Kind::disable_hist: {
        // The target's hist triggers pause or continue (hist_enable_trigger).
        const bool enable = t.kind == Kind::enable_hist;
        auto* list =
            static_cast<TriggerList*>(t.target_state->triggers.load(std::memory_order_acquire));
        if (list == nullptr || !t.take()) return;
        for (Trigger* x : list->raw)
          if (x->kind == Kind::hist) x->paused.store(!enable, std::memory_order_relaxed);
        return;
      }
      case Kind::enable_event:
      case Kind::disable_event: {
        const bool enable = t.kind == Kind::enable_event;
        auto& flags = t.target_state->flags;
        const bool soft =
            (flags.load(std::memory_order_relaxed) & detail::EventState::kSoftDisabled) != 0;
        if (enable == !soft) return;  // already so: the count is kept, as the kernel
        if (!t.take()) return;
        if (enable)
          flags.fetch_and(~detail::EventState::kSoftDisabled, std::memory_order_release);
        else
          flags.fetch_or(detail::EventState::kSoftDisabled, std::memory_order_release);
        return;
      }
    }
  }
};

// ── control plane ────────────────────────────────────────────────────────────

}  // namespace

// Serialises the control plane of triggers and the snapshot file (snapshot.cc).
std::mutex& control_mutex() {
  static std::mutex mu;
  return mu;
}
TriggerStatus snapshot_allocate_locked(Instance& instance);  // snapshot.cc

namespace {

// Named hists: name -> map, per instance.
std::map<std::pair<const Instance*, std::string>, std::weak_ptr<HistMap>>& named_maps() {
  static std::map<std::pair<const Instance*, std::string>, std::weak_ptr<HistMap>> m;
  return m;
}

std::shared_ptr<TriggerList> current(const Instance& inst, const EventDesc& ev) {
  return std::static_pointer_cast<TriggerList>(detail::InstanceAccess::triggers(inst, ev));
}

TriggerError plain(int err) {
  TriggerError e;
  e.err = err;
  return e;
}

std::string_view skip_spaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}
std::string_view strim(std::string_view s) {
  s = skip_spaces(s);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// kstrtoul(s, 0): EINVAL, or ERANGE on overflow.
int parse_count(std::string_view s, uint64_t& out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return EINVAL;
  int base = 10;
  if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    base = 16, s.remove_prefix(2);
  else if (s.size() > 1 && s[0] == '0')
    base = 8, s.remove_prefix(1);
  if (s.empty()) return EINVAL;
  unsigned __int128 v = 0;
  bool range = false;
  for (char ch : s) {
    int d;
    if (ch >= '0' && ch <= '9')
      d = ch - '0';
    else if (ch >= 'a' && ch <= 'f')
      d = ch - 'a' + 10;
    else if (ch >= 'A' && ch <= 'F')
      d = ch - 'A' + 10;
    else
      return EINVAL;
    if (d >= base) return EINVAL;
    v = v * static_cast<unsigned>(base) + static_cast<unsigned>(d);
    if (v > UINT64_MAX) range = true, v = UINT64_MAX;
  }
  if (range) return ERANGE;
  out = static_cast<uint64_t>(v);
  return 0;
}

// set_trigger_filter: "if EXPR" -> compiled program, or the error.
bool set_filter(std::string_view filter, const EventDesc& ev, Trigger& t, TriggerError& e) {
  const size_t sp = filter.find_first_of(" \t");
  if (filter.substr(0, sp) != "if" || sp == std::string_view::npos) return e = plain(EINVAL), false;
  const std::string_view expr = filter.substr(sp + 1);
  filters::CompileResult res = filters::compile(expr, ev.filter_fields());
  if (!res.ok()) {
    const filters::FilterError& fe = res.error();
    e.err = fe.err != 0 ? fe.err : EINVAL;
    e.message = std::string(fe.message());
    if (!fe.detail.empty()) e.message += ": " + fe.detail;
    e.location = "event filter parse error";
    e.command = std::string(filters::kernel_command(expr));
    e.pos = fe.caret();
    return false;
  }
  t.filter = res.program();
  t.filter_text = std::string(filters::kernel_command(expr));
  return true;
}

// Publishes `next` (or removes the list when empty) and keeps soft mode: an
// event with triggers, or the target of an enable/disable_event, is held in
// soft mode by the instance (Instance::soft_mode, the kernel's sm_ref).
void publish(Instance& inst, const EventDesc& ev, const std::shared_ptr<TriggerList>& old,
             std::vector<std::shared_ptr<Trigger>> next) {
  const bool had = old && !old->list.empty();
  if (next.empty()) {
    detail::InstanceAccess::set_triggers(inst, ev, nullptr);
    if (had) inst.soft_mode(ev, false);
    return;
  }
  auto list = std::make_shared<TriggerList>();
  list->instance = &inst;
  list->event = &ev;
  list->list = std::move(next);
  for (const auto& t : list->list) list->raw.push_back(t.get());
  list->clock = inst.options().external_time ? nullptr : inst.clock().read;
  if (!had) inst.soft_mode(ev, true);
  detail::InstanceAccess::set_triggers(inst, ev, std::move(list));
}

TriggerStatus process_hist(Instance& inst, const EventDesc& ev, bool remove, std::string_view rest);

// Undoes what registering `t` did to other events: the hists it added for
// field params go too (destroy_field_var_hists; one still referenced by
// another hist stays, EBUSY, as in the kernel).
void release(Instance& inst, const Trigger& t) {
  if (t.target != nullptr) inst.soft_mode(*t.target, false);
  for (const HistAction& a : t.spec.actions)
    if (a.synth) synthetic_event_ref(*a.synth, false);
  for (const FieldVarHist& h : t.spec.field_var_hists)
    if (const EventDesc* d = inst.registry().find(h.system, h.event))
      (void)process_hist(inst, *d, true, h.cmd);
}

// Every hist trigger of the instance, with its event.
template <class F>
void for_each_hist(const Instance& inst, F&& f) {
  for (const EventDesc* d : inst.registry().events()) {
    const auto cur = current(inst, *d);
    if (!cur) continue;
    for (const auto& t : cur->list)
      if (t->kind == Kind::hist) f(*d, *t);
  }
}

// find_var_file / find_file_var: variable `name` of a hist on
// system:event, or on the one event that defines it.
VarRef find_hist_var(const Instance& inst, std::string_view system, std::string_view event,
                     std::string_view name, TriggerError& e) {
  VarRef found;
  const EventDesc* where = nullptr;
  bool not_unique = false;
  for_each_hist(inst, [&](const EventDesc& d, const Trigger& t) {
    if (!system.empty() && (d.system() != system || d.name() != event)) return;
    for (size_t i = 0; i < t.spec.vars.size(); ++i) {
      if (t.spec.vars[i].name != name) continue;
      if (where != nullptr && where != &d) {
        not_unique = true;
        return;
      }
      if (where == &d) return;  // the first hist of the event that has it
      where = &d;
      found.map = t.map;
      found.var = static_cast<uint32_t>(i);
    }
  });
  if (not_unique) {
    e.err = EINVAL;
    e.message = std::string(hist_err_text(HistErr::var_not_unique));
    const size_t at = e.command.find(name);
    e.pos = at == std::string::npos ? 0 : static_cast<int>(at);
    return {};
  }
  return found;
}

// check_var_refs(): another hist refers to a variable of `t`.
bool hist_vars_referenced(const Instance& inst, const Trigger& t) {
  bool used = false;
  for_each_hist(inst, [&](const EventDesc&, const Trigger& x) {
    if (&x == &t) return;
    for (const VarRef& r : x.spec.refs) used |= !r.self && r.map == t.map;
  });
  return used;
}

// compatible_keys(): as many keys, each of the same type, size and sign.
bool compatible_keys(const HistSpec& target, const HistSpec& h) {
  if (h.keys.size() != target.keys.size()) return false;
  for (size_t i = 0; i < h.keys.size(); ++i) {
    const HistField &a = target.keys[i], &b = h.keys[i];
    if (a.type != b.type || a.size != b.size || a.is_signed != b.is_signed) return false;
  }
  return true;
}

// create_field_var_hist(): see HistEnv::field_var_hist. The errors and their
// carets are the kernel's, placed in the command being parsed.
VarRef field_var_hist(Instance& inst, std::string_view system, std::string_view event,
                      std::string_view field, const HistSpec& target, TriggerError& e,
                      FieldVarHist& created) {
  auto fail = [&](HistErr code) {
    e.err = EINVAL;
    e.message = std::string(hist_err_text(code));
    const size_t at = e.command.find(field);
    e.pos = at == std::string::npos ? 0 : static_cast<int>(at);
    return VarRef{};
  };
  const EventDesc* d = inst.registry().find(system, event);
  if (d == nullptr) return fail(HistErr::event_file_not_found);
  const auto cur = current(inst, *d);
  const Trigger* compat = nullptr;  // find_compatible_hist: the first in list order
  for (size_t i = 0; cur && compat == nullptr && i < cur->list.size(); ++i)
    if (cur->list[i]->kind == Kind::hist && compatible_keys(target, cur->list[i]->spec))
      compat = cur->list[i].get();
  if (compat == nullptr) return fail(HistErr::hist_not_found);
  const std::string var = "synthetic_" + std::string(field);
  TriggerError probe = e;
  if (VarRef r = find_hist_var(inst, system, event, var, probe); r.map != nullptr) return r;
  std::string cmd = "keys=";
  for (size_t i = 0; i < compat->spec.keys.size(); ++i)
    cmd += (i ? "," : "") + compat->spec.keys[i].name;
  cmd += fmt::format(":{}={}", var, field);
  if (compat->filter) cmd += " if " + compat->filter_text;
  if (!process_hist(inst, *d, false, cmd)) return fail(HistErr::hist_create_fail);
  VarRef r = find_hist_var(inst, system, event, var, probe);
  if (r.map == nullptr) return fail(HistErr::synth_var_not_found);
  created = {std::string(system), std::string(event), std::move(cmd)};
  return r;
}

HistEnv hist_env(Instance& inst) {
  HistEnv env;
  env.field_var_hist = [&inst](std::string_view sys, std::string_view ev, std::string_view field,
                               const HistSpec& target, TriggerError& e, FieldVarHist& created) {
    return field_var_hist(inst, sys, ev, field, target, e, created);
  };
  env.find_var = [&inst](std::string_view sys, std::string_view ev, std::string_view name,
                         TriggerError& e) { return find_hist_var(inst, sys, ev, name, e); };
  env.find_synth = [&inst](std::string_view name) {
    return find_synthetic_event(inst.registry(), name);
  };
  env.find_event = [&inst](std::string_view sys, std::string_view ev) {
    return inst.registry().find(sys, ev);
  };
  env.clock_name = std::string(inst.clock().name);
  return env;
}

// A hist command's text split at its filter: "SPEC [if FILTER]", the "if"
// between blanks. Empty when the "if" has nothing around it (EINVAL).
struct HistText {
  std::string_view spec, filter;
};
std::optional<HistText> separate_hist_filter(std::string_view rest) {
  HistText h{rest, {}};
  for (size_t p = 0; (p = rest.find("if", p)) != std::string_view::npos; ++p) {
    if (p == 0) return std::nullopt;
    if (rest[p - 1] != ' ' && rest[p - 1] != '\t') continue;
    if (p + 2 >= rest.size()) return std::nullopt;
    if (rest[p + 2] != ' ' && rest[p + 2] != '\t') continue;
    h.spec = strim(rest.substr(0, p - 1));
    h.filter = strim(rest.substr(p));
    break;
  }
  return h;
}

// What the write path must capture for `spec` before the trigger runs.
void set_hist_needs(Trigger& t, const HistSpec& spec) {
  t.full = !spec.simple();
  t.needs_ts = spec.timestamps;
  t.needs_stack = spec.stack_key;
  if (t.needs_stack) warm_up_stack_capture();
  t.needs_cpu = t.full;
  for (const auto* fs : {&spec.keys, &spec.vals})
    for (const auto& f : *fs) t.needs_cpu |= f.source == HistSource::cpu;
}

// The hist trigger `x` with a fresh, empty map (clear): published in place
// of the old one, so that no writer updates the map being cleared.
std::shared_ptr<Trigger> cleared_hist(Instance& inst, const Trigger& x) {
  auto n = std::make_shared<Trigger>();
  n->kind = Kind::hist;
  n->filter = x.filter;
  n->filter_text = x.filter_text;
  n->spec = x.spec;
  n->needs_ts = x.needs_ts;
  n->needs_cpu = x.needs_cpu;
  n->needs_stack = x.needs_stack;
  n->full = x.full;
  n->vars_only = x.vars_only;
  n->paused.store(x.paused.load());
  n->map = std::make_shared<HistMap>(x.map->spec());
  if (!x.spec.name.empty()) named_maps()[{&inst, x.spec.name}] = n->map;
  return n;
}

// snapshot(): tracing_snapshot_cond_enable. One conditional snapshot per
// instance (EBUSY), and the spare allocated now, so the handler only swaps.
TriggerStatus enable_cond_snapshot(Instance& inst, const HistSpec& spec) {
  if (std::none_of(spec.actions.begin(), spec.actions.end(),
                   [](const HistAction& a) { return a.kind == HistActionKind::snapshot; }))
    return {};
  bool busy = false;
  for_each_hist(inst, [&](const EventDesc&, const Trigger& x) {
    for (const HistAction& a : x.spec.actions) busy |= a.kind == HistActionKind::snapshot;
  });
  if (busy) return TriggerStatus(plain(EBUSY));
  return snapshot_allocate_locked(inst);
}

// The new trigger's map: the instance's map of that name when the spec
// names one (it must have the same shape), else a map of its own.
bool attach_hist_map(Instance& inst, const HistSpec& spec, Trigger& t, TriggerError& e) {
  if (spec.name.empty()) {
    t.map = std::make_shared<HistMap>(spec);
    return true;
  }
  // Entries of destroyed instances (or removed triggers) have expired: drop
  // them, so an instance allocated at a freed one's address starts clean.
  std::erase_if(named_maps(), [](const auto& kv) { return kv.second.expired(); });
  auto& slot = named_maps()[{&inst, spec.name}];
  if (auto m = slot.lock()) {
    bool ok = m->spec().same_shape(spec) && m->spec().key_bytes == spec.key_bytes;
    for (size_t i = 0; ok && i < spec.keys.size(); ++i)
      ok = m->spec().keys[i].key_size == spec.keys[i].key_size &&
           m->spec().keys[i].is_signed == spec.keys[i].is_signed;
    if (!ok) {
      e.message = "Named hist trigger doesn't match existing named trigger (includes variables)";
      e.err = EINVAL;
      e.pos = 0;
      return false;
    }
    t.map = m;
  } else {
    t.map = std::make_shared<HistMap>(spec);
    slot = t.map;
  }
  return true;
}

// A hist command for a hist that exists (same keys, values, name): pause,
// cont or clear it; adding it again is EEXIST.
TriggerStatus update_existing_hist(Instance& inst, const EventDesc& ev,
                                   const std::shared_ptr<TriggerList>& old,
                                   std::vector<std::shared_ptr<Trigger>>& list,
                                   std::shared_ptr<Trigger>& x, const HistSpec& spec,
                                   TriggerError& e) {
  if (spec.pause)
    x->paused.store(true);
  else if (spec.cont)
    x->paused.store(false);
  if (spec.clear) {
    x = cleared_hist(inst, *x);
    publish(inst, ev, old, std::move(list));
    return {};
  }
  if (spec.pause || spec.cont) return {};
  e.err = EEXIST;
  e.message = "Hist trigger already exists";
  e.pos = 0;
  return TriggerStatus(std::move(e));
}

TriggerStatus process_hist(Instance& inst, const EventDesc& ev, bool remove,
                           std::string_view rest) {
  TriggerError e;
  e.location = fmt::format("hist:{}:{}", ev.system(), ev.name());
  e.command = fmt::format("hist:{}", rest);
  const std::optional<HistText> text = separate_hist_filter(rest);
  if (!text) return TriggerStatus(plain(EINVAL));
  auto t = std::make_shared<Trigger>();
  t->kind = Kind::hist;
  HistEnv env = hist_env(inst);
  env.remove = remove;
  // The hists added for field params go again if this one is not added
  // (destroy_hist_data -> destroy_field_var_hists).
  std::vector<FieldVarHist> made;
  struct Rollback {
    Instance& inst;
    std::vector<FieldVarHist>& made;
    bool keep = false;
    ~Rollback() {
      for (auto it = made.rbegin(); !keep && it != made.rend(); ++it)
        if (const EventDesc* d = inst.registry().find(it->system, it->event))
          (void)process_hist(inst, *d, true, it->cmd);
    }
  } rollback{inst, made};
  env.field_var_hist = [&inst, &made](std::string_view sys, std::string_view evn,
                                      std::string_view field, const HistSpec& target,
                                      TriggerError& err, FieldVarHist& created) {
    VarRef r = field_var_hist(inst, sys, evn, field, target, err, created);
    if (!created.cmd.empty()) made.push_back(created);
    return r;
  };
  std::optional<HistSpec> spec = parse_hist(text->spec, ev, e, 5, &env);
  if (!spec) return TriggerStatus(std::move(e));
  if (!text->filter.empty() && !set_filter(text->filter, ev, *t, e))
    return TriggerStatus(std::move(e));
  t->spec = *spec;
  set_hist_needs(*t, *spec);

  const auto old = current(inst, ev);
  std::vector<std::shared_ptr<Trigger>> list =
      old ? old->list : std::vector<std::shared_ptr<Trigger>>{};
  auto same = [&](const Trigger& x, bool with_filter) {
    return x.kind == Kind::hist && x.spec.same_shape(*spec) && x.spec.name == spec->name &&
           (!with_filter || x.filter_text == t->filter_text);
  };
  if (remove) {
    for (auto it = list.begin(); it != list.end(); ++it)
      if (same(**it, true)) {
        if (hist_vars_referenced(inst, **it)) return TriggerStatus(plain(EBUSY));
        const std::shared_ptr<Trigger> gone = *it;
        list.erase(it);
        publish(inst, ev, old, std::move(list));
        release(inst, *gone);
        return {};
      }
    return {};
  }
  for (auto& x : list)
    if (same(*x, false)) return update_existing_hist(inst, ev, old, list, x, *spec, e);
  if (spec->cont || spec->clear) {
    e.err = ENOENT;
    e.message = "Can't clear or continue a nonexistent hist trigger";
    e.pos = 0;
    return TriggerStatus(std::move(e));
  }
  if (list.size() >= kMaxTriggers) return TriggerStatus(plain(ENOSPC));
  if (TriggerStatus st = enable_cond_snapshot(inst, *spec); !st) return st;
  if (!attach_hist_map(inst, *spec, *t, e)) return TriggerStatus(std::move(e));
  t->paused.store(spec->pause);
  t->vars_only = t->full && t->map->vars_only() && t->map->spec().key_bytes == spec->key_bytes;
  for (const HistAction& a : spec->actions)
    if (a.synth) synthetic_event_ref(*a.synth, true);
  list.push_back(t);  // hist triggers go to the tail (hist_register_trigger), others to the head
  publish(inst, ev, old, std::move(list));
  rollback.keep = true;
  return {};
}

// The parameter and filter after a (non-hist) trigger's command.
struct TriggerArgs {
  std::optional<std::string_view> param, filter;
};

// Mirrors kernel/trace/trace_events_trigger.c: event_trigger_separate_filter:
// an optional count (digits first) or, for enable/disable_event and
// enable/disable_hist (`needs_param`), the required SYS:EVENT[:count]; then
// the filter. Empty when the required parameter is missing (EINVAL).
std::optional<TriggerArgs> separate_filter(std::optional<std::string_view> next, bool needs_param) {
  TriggerArgs a;
  if (!next) {
    if (needs_param) return std::nullopt;
  } else if (!needs_param && !std::isdigit(static_cast<unsigned char>((*next)[0]))) {
    a.filter = *next;
  } else {
    const size_t sp = next->find_first_of(" \t");
    a.param = next->substr(0, sp);
    if (sp != std::string_view::npos) {
      const std::string_view f = skip_spaces(next->substr(sp + 1));
      if (!f.empty()) a.filter = f;
    }
  }
  return a;
}

// The SYS:EVENT[:count] parameter of enable/disable_event and _hist: sets
// t.target and leaves the count (or nothing) in `param`. False (EINVAL)
// when the event is not in the registry.
bool parse_target(Instance& inst, std::optional<std::string_view>& param, Trigger& t) {
  std::string_view p = *param;
  const size_t c1 = p.find(':');
  if (c1 == std::string_view::npos) return false;
  const std::string_view sys = p.substr(0, c1);
  p.remove_prefix(c1 + 1);
  const size_t c2 = p.find(':');
  const std::string_view name = p.substr(0, c2);
  param = c2 == std::string_view::npos ? std::nullopt
                                       : std::optional<std::string_view>(p.substr(c2 + 1));
  t.target = sys.empty() || name.empty() ? nullptr : inst.registry().find(sys, name);
  return t.target != nullptr;
}

// What the new trigger needs before it can fire: the snapshot's spare, the
// kernel_stack event, its target's soft mode.
TriggerStatus arm_trigger(Instance& inst, Trigger& t, TriggerError& e) {
  if (t.kind == Kind::snapshot) {
    // tracing_arm_snapshot: the spare exists before the trigger can fire.
    if (TriggerStatus st = snapshot_allocate_locked(inst); !st) return st;
  }
  if (t.kind == Kind::stacktrace) {
    try {
      t.stack_event = &kernel_stack_event(inst.registry());
      warm_up_stack_capture();
    } catch (const std::exception& ex) {
      e.err = EINVAL;
      e.message = ex.what();
      e.location = "stacktrace";
      return TriggerStatus(std::move(e));
    }
    inst.enable(*t.stack_event);
  }
  if (t.target != nullptr) {
    t.target_state = &detail::InstanceAccess::state(inst, *t.target);
    inst.soft_mode(*t.target, true);
  }
  return {};
}

TriggerStatus process_line(Instance& inst, const EventDesc& ev, std::string_view line) {
  std::string_view buf = strim(line);
  if (buf.empty()) return {};
  const size_t sep = buf.find_first_of(": \t");
  std::string_view command = buf.substr(0, sep);
  std::optional<std::string_view> next;
  if (sep != std::string_view::npos) {
    const std::string_view rest = skip_spaces(buf.substr(sep + 1));
    if (!rest.empty()) next = rest;
  }
  const bool remove = !command.empty() && command[0] == '!';
  if (remove) command.remove_prefix(1);
  int k = -1;
  for (int i = 0; i < kNumKinds; ++i)
    if (command == kNames[i]) k = i;
  if (k < 0) return TriggerStatus(plain(EINVAL));
  const Kind kind = static_cast<Kind>(k);
  if (kind == Kind::hist) {
    if (!next) return TriggerStatus(plain(EINVAL));
    return process_hist(inst, ev, remove, *next);
  }

  const bool needs_param = kind == Kind::enable_event || kind == Kind::disable_event ||
                           kind == Kind::enable_hist || kind == Kind::disable_hist;
  std::optional<TriggerArgs> args = separate_filter(next, needs_param);
  if (!args) return TriggerStatus(plain(EINVAL));
  auto t = std::make_shared<Trigger>();
  t->kind = kind;
  if (needs_param && !parse_target(inst, args->param, *t)) return TriggerStatus(plain(EINVAL));

  const auto old = current(inst, ev);
  std::vector<std::shared_ptr<Trigger>> list =
      old ? old->list : std::vector<std::shared_ptr<Trigger>>{};
  auto same = [&](const Trigger& x) {
    return type_of(x.kind) == type_of(kind) && x.target == t->target;
  };
  if (remove) {
    for (auto it = list.begin(); it != list.end(); ++it)
      if (same(**it)) {
        const std::shared_ptr<Trigger> gone = *it;
        list.erase(it);
        publish(inst, ev, old, std::move(list));
        release(inst, *gone);
        break;
      }
    return {};
  }
  if (args->param) {
    const std::string_view number = args->param->substr(0, args->param->find(':'));
    uint64_t n = 0;
    if (number.empty()) return TriggerStatus(plain(EINVAL));
    if (const int err = parse_count(number, n); err != 0) return TriggerStatus(plain(err));
    t->count.store(n);
  }
  TriggerError e;
  if (args->filter && !set_filter(*args->filter, ev, *t, e)) return TriggerStatus(std::move(e));
  for (const auto& x : list)
    if (same(*x)) return TriggerStatus(plain(EEXIST));
  if (list.size() >= kMaxTriggers) return TriggerStatus(plain(ENOSPC));
  if (TriggerStatus st = arm_trigger(inst, *t, e); !st) return st;
  list.insert(list.begin(), t);
  publish(inst, ev, old, std::move(list));
  return {};
}

}  // namespace
}  // namespace triggers

TriggerStatus set_trigger(Instance& instance, const EventDesc& event, std::string_view command) {
  const std::lock_guard lk(triggers::control_mutex());
  while (!command.empty()) {
    const size_t nl = command.find('\n');
    TriggerStatus st = triggers::process_line(instance, event, command.substr(0, nl));
    if (!st) return st;
    if (nl == std::string_view::npos) break;
    command.remove_prefix(nl + 1);
  }
  return {};
}

TriggerStatus set_trigger(Instance& instance, std::string_view event, std::string_view command) {
  const EventDesc* d = instance.registry().find(event);
  if (d == nullptr) return TriggerStatus(triggers::plain(ENOENT));
  return set_trigger(instance, *d, command);
}

void clear_triggers(Instance& instance, const EventDesc& event) {
  const std::lock_guard lk(triggers::control_mutex());
  const auto old = triggers::current(instance, event);
  if (!old || old->list.empty()) return;
  triggers::publish(instance, event, old, {});
  for (const auto& t : old->list) triggers::release(instance, *t);
}

std::string trigger_file(const Instance& instance, const EventDesc& event) {
  const std::lock_guard lk(triggers::control_mutex());
  const auto cur = triggers::current(instance, event);
  if (!cur || cur->list.empty())
    return "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event "
           "disable_event enable_hist "
           "disable_hist hist\n";
  std::string out;
  for (const auto& t : cur->list) out += t->print() + "\n";
  return out;
}

std::string hist_file(const Instance& instance, const EventDesc& event, const HistNames& names) {
  HistNames n = names;
  if (!n.comm) {
    std::map<int32_t, std::string> comms;
    for (const Cmdline& c : instance.cmdlines()) comms[c.pid] = c.comm;
    n.comm = [comms = std::move(comms)](int32_t pid) {
      if (pid == 0) return std::string("<idle>");
      const auto it = comms.find(pid);
      return it == comms.end() ? std::string("<...>") : it->second;
    };
  }
  std::shared_ptr<triggers::TriggerList> cur;
  {
    const std::lock_guard lk(triggers::control_mutex());
    cur = triggers::current(instance, event);
  }
  std::string out;
  if (!cur) return out;
  int shown = 0;
  for (const auto& tp : cur->list) {
    const triggers::Trigger& t = *tp;
    if (t.kind != triggers::Kind::hist) continue;
    if (shown++ > 0) out += "\n\n";
    out += triggers::format_hist(*t.map, t.print(), n);
  }
  return out;
}

void apply_triggers(Instance& instance, const InstanceConfig& config) {
  for (const std::string& def : config.synthetic_events) {
    if (const auto* w = &config.synthetic_where;
        synthetic_event(instance, def.substr(0, def.find_first_of(" \t"))) == nullptr)
      if (const TriggerStatus st = set_synthetic_event(instance, def); !st)
        throw ConfigError(w->file, w->line, w->key,
                          fmt::format("synthetic event '{}' rejected: {}", def, st.render()));
  }
  // The instance enabled and filtered the events before they existed:
  // apply those keys to the synthetic events now.
  if (!config.synthetic_events.empty())
    for (const EventSettings& s : config.events) {
      const auto events = instance.registry().match(s.pattern);
      if (events.empty() && split_event_name(s.pattern).system == "synthetic")
        throw ConfigError(s.where.file, s.where.line, s.where.key,
                          "no event matches '" + s.pattern + "'");
      for (const EventDesc* d : events) {
        if (d->system() != "synthetic") continue;
        if (s.filter) {
          const auto st = instance.set_filter(*d, *s.filter);
          if (!st.ok())
            throw ConfigError(s.filter_where.file, s.filter_where.line, s.filter_where.key,
                              fmt::format("filter rejected for {}", d->full_name()));
        }
        if (s.enable) instance.enable(*d, *s.enable);
      }
    }
  for (const EventSettings& s : config.events) {
    for (const std::string& cmd : s.triggers) {
      for (const EventDesc* d : instance.registry().match(s.pattern)) {
        const TriggerStatus st = set_trigger(instance, *d, cmd);
        if (!st)
          throw ConfigError(
              s.trigger_where.file, s.trigger_where.line, s.trigger_where.key,
              fmt::format("trigger '{}' rejected for {}: {}", cmd, d->full_name(), st.render()));
      }
    }
  }
}

namespace {
// Instance::apply reaches apply_triggers through this hook (the instance
// does not depend on this library).
[[maybe_unused]] const bool kConfigHook = (detail::set_config_triggers_hook(&apply_triggers), true);
}  // namespace

TriggerCounts trigger_counts(const Instance& instance, const EventDesc& event) {
  TriggerCounts c;
  const std::lock_guard lk(triggers::control_mutex());
  const auto cur = triggers::current(instance, event);
  if (!cur) return c;
  for (const auto& t : cur->list) {
    if (t->kind == triggers::Kind::snapshot) c.snapshots += t->fired.load();
    if (t->kind == triggers::Kind::stacktrace) c.stacktraces += t->fired.load();
  }
  return c;
}

}  // namespace tracepipe
