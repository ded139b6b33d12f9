// Hist triggers: parsing, the lock-free map, the hist file's text.
#include "tracepipe/core/triggers/hist.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>

#include "tracepipe/buffers/current_cpu.h"
#include "tracepipe/buffers/rseq.h"
#include "tracepipe/core/export/process_symbols.h"
#include "tracepipe/core/triggers/hist_expr.h"
#include "tracepipe/core/triggers/stack_trace.h"
#include "tracepipe/core/triggers/synthetic.h"

namespace tracepipe::triggers {

thread_local constinit uintptr_t tl_hist_stack_cfa TRACEPIPE_TLS_MODEL = 0;

namespace {

constexpr const char* kSyscallNames[] = {
#include "tracepipe/core/triggers/syscall_names_x86_64.inc"
};

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t k = s.find(sep);
    out.push_back(s.substr(0, k));
    if (k == std::string_view::npos) return out;
    s.remove_prefix(k + 1);
  }
}

std::string_view strip(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool plain_einval(TriggerError& e) {
  e.err = EINVAL;
  return false;
}

}  // namespace

// kstrtoull with base 0 (0x.., 0.., decimal), whole string.
std::optional<uint64_t> parse_ull(std::string_view s) {
  if (s.empty()) return std::nullopt;
  int base = 10;
  if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    base = 16, s.remove_prefix(2);
  else if (s.size() > 1 && s[0] == '0')
    base = 8, s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      d = c - 'A' + 10;
    else
      return std::nullopt;
    if (d >= base) return std::nullopt;
    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base))
      return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  return v;
}

int HistParser::errpos(std::string_view what) const {
  const size_t at = what.empty() ? std::string_view::npos : e.command.find(what);
  return at == std::string_view::npos ? 0 : static_cast<int>(at);
}
bool HistParser::fail_pos(HistErr code, int pos) {
  e.err = code == HistErr::division_by_zero ? EDOM : EINVAL;
  e.message = std::string(hist_err_text(code));
  e.pos = pos;
  return false;
}
bool HistParser::fail(HistErr code, std::string_view at) { return fail_pos(code, errpos(at)); }

uint32_t HistSpec::map_vars() const noexcept {
  uint32_t n = static_cast<uint32_t>(vars.size());
  for (const HistAction& a : actions)
    if (a.handler != HistHandler::onmatch) ++n;
  return n;
}

bool parse_hist_field(HistParser& p, std::string_view str, bool is_key, HistField& f) {
  const size_t dot = str.find('.');
  const std::string_view name = str.substr(0, dot);
  f.name = std::string(name);
  if (dot != std::string_view::npos) {
    const std::string_view mod = str.substr(dot + 1);
    if (mod == "hex")
      f.flags |= kHex;
    else if (mod == "sym")
      f.flags |= kSym;
    else if (mod == "symXoffset" || mod == "sym-offset")
      f.flags |= kSymOffset;
    else if (mod == "execname" && is_key)
      f.flags |= kExecname;
    else if (mod == "syscall")
      f.flags |= kSyscall;
    else if (mod == "log2")
      f.flags |= kLog2;
    else if (mod == "usecs")
      f.flags |= kUsecs;
    else if (mod.starts_with("bucket")) {
      std::string_view m = mod.substr(6);
      if (!m.empty() && m[0] == 's') m.remove_prefix(1);
      const auto n = !m.empty() && m[0] == '=' ? parse_ull(m.substr(1)) : std::nullopt;
      if (!n || *n == 0) return p.fail(HistErr::bad_field_modifier, mod);
      f.flags |= kBuckets;
      f.buckets = *n;
    } else if (mod.starts_with("percent") || mod.starts_with("graph")) {
      // parse_field: values only (strncmp: "percentage" is .percent too).
      const bool top = str == p.use_text;
      if (top && (p.use == HistParser::Use::key || p.use == HistParser::Use::var))
        return p.fail(HistErr::bad_field_modifier, mod);
      f.flags |= mod[0] == 'p' ? kPercent : kGraph;
    } else {
      return p.fail(HistErr::bad_field_modifier, mod);
    }
    (void)is_key;
  }
  if (name == "hitcount") {  // a counter val: `vals=hitcount.percent`
    f.source = HistSource::hitcount;
    f.size = 8;
    f.type = "u64";
    return true;
  }
  if (name == "common_stacktrace" || name == "stacktrace" || name == "STACKTRACE") {
    f.source = HistSource::stacktrace;
    f.name = "common_stacktrace";
    f.size = kHistStackDepth * 8;
    f.type = "unsigned long[]";
    return true;
  }
  if (name == "common_timestamp") {
    f.source = HistSource::timestamp;
    f.size = 8;
    f.type = "u64";
    p.spec.timestamps = true;
    return true;
  }
  if (name == "common_cpu" || name == "cpu" || name == "CPU") {
    f.source = HistSource::cpu;
    f.size = 4;
    f.type = "unsigned int";
    f.name = "common_cpu";
    return true;
  }
  const filters::FieldDesc* fd = nullptr;
  for (const auto& x : p.event.filter_fields())
    if (x.name == name) fd = &x;
  if (fd == nullptr) return p.fail(HistErr::field_not_found, name);
  f.offset = fd->offset;
  f.size = fd->size;
  f.is_signed = fd->is_signed;
  f.type = fd->type;
  switch (fd->kind) {
    case filters::FieldKind::integer:
      if (fd->size != 1 && fd->size != 2 && fd->size != 4 && fd->size != 8)
        return p.fail(HistErr::field_not_found, name);
      f.source = HistSource::field;
      return true;
    case filters::FieldKind::char_array:
    case filters::FieldKind::data_loc_string:
    case filters::FieldKind::rel_loc_string:
      f.source = fd->kind == filters::FieldKind::char_array ? HistSource::string_field
                                                            : HistSource::dyn_string;
      if (fd->kind == filters::FieldKind::rel_loc_string) f.is_signed = true;  // marks __rel_loc
      return true;
    default:
      return plain_einval(p.e);
  }
}

std::string HistField::print() const {
  std::string s = name;
  if (flags & kHex)
    s += ".hex";
  else if (flags & kSym)
    s += ".sym";
  else if (flags & kSymOffset)
    s += ".sym-offset";
  else if (flags & kExecname)
    s += ".execname";
  else if (flags & kSyscall)
    s += ".syscall";
  else if (flags & kLog2)
    s += ".log2";
  else if (flags & kBuckets)
    s += ".buckets";
  else if (flags & kUsecs)
    s += ".usecs";
  else if (flags & kPercent)
    s += ".percent";
  else if (flags & kGraph)
    s += ".graph";
  if (flags & kBuckets) s += fmt::format("={}", buckets);
  return s;
}

namespace {

// hist_field_print of a val or variable: "$x" for a reference, the
// expression's text, or the field with its modifier.
std::string print_value(const HistSpec& spec, const HistField& f) {
  if (f.source == HistSource::expr) return expr_text(spec, f.expr);
  return f.print();
}

std::string print_action(const HistAction& a) {
  std::string s;
  if (a.handler == HistHandler::onmatch)
    s = fmt::format(":onmatch({}.{}).", a.match_system, a.match_event);
  else
    s = fmt::format(":{}({}).", a.handler == HistHandler::onmax ? "onmax" : "onchange", a.var_str);
  s += a.action_name + "(";
  if (a.kind == HistActionKind::save) {
    for (size_t i = 0; i < a.save.size(); ++i) s += (i ? "," : "") + a.save[i].name;
  } else if (a.kind == HistActionKind::trace) {
    if (a.use_trace_keyword) s += a.synth_name;
    for (size_t i = 0; i < a.params.size(); ++i)
      s += (i || a.use_trace_keyword ? "," : "") + a.params[i];
  }
  return s + ")";
}

}  // namespace

std::string HistSpec::info() const {
  std::string s = "hist:";
  if (!name.empty()) s += name + ":";
  s += "keys=";
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? "," : "") + print_value(*this, keys[i]);
  s += nohitcount ? ":vals=" : ":vals=hitcount";
  for (size_t i = 0; i < vals.size(); ++i)
    s += (i || !nohitcount ? "," : "") + print_value(*this, vals[i]);
  if (!vars.empty()) {
    s += ":";
    for (size_t i = 0; i < vars.size(); ++i) {
      const ExprNode& n = nodes[static_cast<size_t>(vars[i].expr)];
      s += (i ? "," : "") + vars[i].name + "=" +
           (n.op == ExprOp::value ? n.leaf.print() : expr_text(*this, vars[i].expr));
    }
  }
  s += ":sort=";
  for (size_t i = 0; i < sort.size(); ++i) {
    if (i) s += ",";
    const int f = sort[i].field;
    s += f == 0  ? std::string("hitcount")
         : f > 0 ? print_value(*this, vals[f - 1])
                 : print_value(*this, keys[-1 - f]);
    if (sort[i].descending) s += ".descending";
  }
  s += fmt::format(":size={}", 1u << map_bits);
  if (timestamps) s += ":clock=" + clock;
  if (nohitcount) s += ":nohitcount";
  for (const HistAction& a : actions) s += print_action(a);
  return s;
}

bool HistSpec::same_shape(const HistSpec& o) const {
  auto fields = [](const HistSpec& sp, const std::vector<HistField>& v) {
    std::string s;
    for (const auto& f : v) s += print_value(sp, f) + ",";
    return s;
  };
  if (fields(*this, keys) != fields(o, o.keys) || fields(*this, vals) != fields(o, o.vals) ||
      sort.size() != o.sort.size())
    return false;
  for (size_t i = 0; i < sort.size(); ++i)
    if (sort[i].field != o.sort[i].field || sort[i].descending != o.sort[i].descending)
      return false;
  if (vars.size() != o.vars.size() || actions.size() != o.actions.size()) return false;
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i].name != o.vars[i].name) return false;
  for (size_t i = 0; i < actions.size(); ++i)
    if (print_action(actions[i]) != print_action(o.actions[i])) return false;
  return true;
}

namespace {

// ── actions (parse_actions / create_actions) ─────────────────────────────────

// onmatch(sys.event).ACTION(...), onmax($v).ACTION(...), onchange($v).ACTION(...)
bool parse_action(HistParser& p, std::string_view str, HistAction& a) {
  std::string_view rest;
  if (str.starts_with("onmatch(")) {
    a.handler = HistHandler::onmatch;
    rest = str.substr(8);
    const size_t close = rest.find(')');
    const std::string_view match = rest.substr(0, close);
    if (close == std::string_view::npos) return p.fail(HistErr::no_closing_paren, match);
    const size_t dot = match.find('.');
    if (dot == std::string_view::npos) return p.fail(HistErr::subsys_not_found, match);
    a.match_system = std::string(match.substr(0, dot));
    a.match_event = std::string(match.substr(dot + 1));
    if (p.env == nullptr || p.env->find_event == nullptr ||
        p.env->find_event(a.match_system, a.match_event) == nullptr)
      return p.fail(HistErr::invalid_subsys_event, a.match_event);
    rest = rest.substr(close + 1);
  } else {
    a.handler = str.starts_with("onmax(") ? HistHandler::onmax : HistHandler::onchange;
    rest = str.substr(a.handler == HistHandler::onmax ? 6 : 9);
    const size_t close = rest.find(')');
    if (close == std::string_view::npos) return plain_einval(p.e);
    a.var_str = std::string(rest.substr(0, close));
    rest = rest.substr(close + 1);
  }
  // action_parse: ".NAME(params)"
  if (rest.empty() || rest[0] != '.') return p.fail_pos(HistErr::action_not_found, 0);
  rest.remove_prefix(1);
  const size_t open = rest.find('(');
  if (open == std::string_view::npos) return p.fail_pos(HistErr::action_not_found, 0);
  const std::string_view name = rest.substr(0, open);
  std::string_view params = rest.substr(open + 1);
  const size_t close = params.find(')');
  const bool closed = close != std::string_view::npos;
  params = params.substr(0, close);
  a.action_name = std::string(name);
  if (name.starts_with("save") || name.starts_with("snapshot")) {
    const bool save = name.starts_with("save");
    if (!closed)
      return save ? p.fail_pos(HistErr::no_save_params, 0)
                  : p.fail(HistErr::no_closing_paren, params);
    if (a.handler == HistHandler::onmatch) return p.fail(HistErr::action_mismatch, name);
    a.kind = save ? HistActionKind::save : HistActionKind::snapshot;
  } else {
    a.kind = HistActionKind::trace;
    a.use_trace_keyword = name.starts_with("trace");
  }
  if (a.kind != HistActionKind::snapshot && closed) {
    bool first = true;
    for (std::string_view prm : split(params, ',')) {
      if (a.params.size() >= kMaxSynthFields) return p.fail_pos(HistErr::too_many_params, 0);
      prm = strip(prm);
      if (prm.size() < 2) return p.fail(HistErr::invalid_param, prm);
      if (first && a.use_trace_keyword) {
        a.synth_name = std::string(prm);
        first = false;
        continue;
      }
      first = false;
      a.params.emplace_back(prm);
    }
  }
  if (a.kind == HistActionKind::trace && !a.use_trace_keyword) a.synth_name = a.action_name;
  return true;
}

// A reference to variable `name` of another hist (or `self`), deduplicated
// as the kernel's create_var_ref: one ref per variable, shared by its uses.
uint32_t add_ref(HistSpec& spec, VarRef r) {
  for (uint32_t i = 0; i < spec.refs.size(); ++i) {
    const VarRef& x = spec.refs[i];
    if (x.self == r.self && x.map == r.map && x.var == r.var) return i;
  }
  spec.refs.push_back(std::move(r));
  return static_cast<uint32_t>(spec.refs.size() - 1);
}

}  // namespace

int find_own_var(const HistSpec& spec, std::string_view name) {
  for (size_t i = 0; i < spec.vars.size(); ++i)
    if (spec.vars[i].name == name) return static_cast<int>(i);
  return -1;
}

// The variable $name for an expression or a param: this hist's own
// (`own_ok`), the onmatch event's, or any hist's if unique. -1 and the
// error set when not found.
int resolve_var_ref(HistParser& p, std::string_view system, std::string_view event,
                    std::string_view name, bool own_ok) {
  HistSpec& spec = p.spec;
  if (own_ok && (system.empty() || (system == p.event.system() && event == p.event.name()))) {
    const int v = find_own_var(spec, name);
    if (v >= 0) {
      VarRef r;
      r.name = std::string(name);
      r.self = true;
      r.var = static_cast<uint32_t>(v);
      return static_cast<int>(add_ref(spec, std::move(r)));
    }
  }
  VarRef found;
  if (p.env != nullptr && p.env->find_var) {
    if (system.empty()) {  // find_match_var: the onmatch events first
      for (const HistAction& a : spec.actions) {
        if (a.handler != HistHandler::onmatch) continue;
        VarRef r = p.env->find_var(a.match_system, a.match_event, name, p.e);
        if (r.map == nullptr) continue;
        if (found.map != nullptr && found.map != r.map)
          return p.fail(HistErr::var_not_unique, name), -1;
        found = std::move(r);
      }
    }
    if (found.map == nullptr) {
      TriggerError probe = p.e;
      found = p.env->find_var(system, event, name, probe);
      if (found.map == nullptr && !probe.message.empty()) {
        p.e = probe;
        return -1;
      }
    }
  }
  if (found.map == nullptr) return p.fail(HistErr::var_not_found, name), -1;
  found.name = std::string(name);
  found.system = std::string(system);
  found.event = std::string(event);
  return static_cast<int>(add_ref(spec, std::move(found)));
}

namespace {

// The type of a variable (own or another hist's) for the synthetic check.
void var_type(const HistSpec& spec, const VarRef& r, ActionParam& out) {
  const HistSpec& def = r.self ? spec : r.map->spec();
  const ExprNode& n = def.nodes[static_cast<size_t>(def.vars[r.var].expr)];
  out.type = n.type;
  out.size = n.size;
  out.is_signed = n.is_signed;
  out.is_string = n.is_string;
}

// A param that names a field (trace_action_create_field_var): first a field
// variable of this event (create_target_field_var: unqualified, or qualified
// with this event's name, and no variable of that name on this event yet);
// else the field of the onmatch event, or of the event the param names,
// through the variable `synthetic_FIELD` of a hist there whose keys match
// this hist's (create_field_var_hist, which adds that hist when missing).
// The error is the last one the kernel logs for the param.
bool create_field_param(HistParser& p, const HistAction& a, std::string_view system,
                        std::string_view event, std::string_view field, ActionParam& ap) {
  const TriggerError saved = p.e;
  const bool target = system.empty() || (system == p.event.system() && event == p.event.name());
  if (target) {
    bool taken = find_own_var(p.spec, field) >= 0;
    if (!taken && p.env != nullptr && p.env->find_var && !p.env->remove) {
      TriggerError probe = p.e;
      taken = p.env->find_var(p.event.system(), p.event.name(), field, probe).map != nullptr;
    }
    if (!taken && parse_hist_field(p, field, false, ap.field)) {
      ap.type = ap.field.type;
      ap.size = ap.field.size;
      ap.is_signed = ap.field.is_signed;
      ap.is_string =
          ap.field.source == HistSource::string_field || ap.field.source == HistSource::dyn_string;
      return true;
    }
    p.e = saved;
    if (taken)
      p.fail(HistErr::var_create_find_fail, field);
    else
      p.fail(HistErr::field_var_parse_fail, field);
  }
  if (system.empty() && a.handler == HistHandler::onmatch) {
    system = a.match_system;
    event = a.match_event;
  }
  if (event.empty()) return false;  // onmax/onchange: this event's fields only
  if (p.env != nullptr && p.env->remove) return p.e = saved, true;
  if (p.env == nullptr || !p.env->field_var_hist)
    return p.fail(HistErr::event_file_not_found, field);
  FieldVarHist created;
  VarRef r = p.env->field_var_hist(system, event, field, p.spec, p.e, created);
  if (r.map == nullptr) return false;
  p.e = saved;
  if (!created.cmd.empty()) p.spec.field_var_hists.push_back(std::move(created));
  r.name = "synthetic_" + std::string(field);
  r.system = std::string(system);
  r.event = std::string(event);
  ap.is_ref = true;
  ap.ref = add_ref(p.spec, std::move(r));
  var_type(p.spec, p.spec.refs[ap.ref], ap);
  return true;
}

bool create_trace_action(HistParser& p, HistAction& a) {
  const std::shared_ptr<const SynthEvent> se =
      p.env != nullptr && p.env->find_synth ? p.env->find_synth(a.synth_name) : nullptr;
  if (se == nullptr) return p.fail(HistErr::synth_event_not_found, a.synth_name);
  a.synth = se;
  size_t pos = 0;
  for (const std::string& prm : a.params) {
    std::string_view s = prm, system, event;
    const size_t d1 = s.find('.');
    if (d1 != std::string_view::npos) {
      system = s.substr(0, d1);
      const std::string_view rest = s.substr(d1 + 1);
      const size_t d2 = rest.find('.');
      if (d2 == std::string_view::npos) return plain_einval(p.e);
      event = rest.substr(0, d2);
      s = rest.substr(d2 + 1);
    }
    ActionParam ap;
    if (!s.empty() && s[0] == '$') {
      const int r = resolve_var_ref(p, system, event, s.substr(1), true);
      if (r < 0) return p.fail(HistErr::param_not_found, s.substr(1));
      ap.is_ref = true;
      ap.ref = static_cast<uint32_t>(r);
      var_type(p.spec, p.spec.refs[ap.ref], ap);
    } else if (!create_field_param(p, a, system, event, s, ap)) {
      return false;
    } else if (p.env != nullptr && p.env->remove) {
      a.args.push_back(std::move(ap));  // '!hist': the params are compared as written
      ++pos;
      continue;
    }
    if (!synth_param_fits(*se, pos, ap)) return p.fail(HistErr::synth_type_mismatch, s);
    a.args.push_back(std::move(ap));
    ++pos;
  }
  if (pos != se->fields.size()) return p.fail(HistErr::synth_count_mismatch, se->name);
  return true;
}

bool create_actions(HistParser& p) {
  HistSpec& spec = p.spec;
  uint32_t track_var = static_cast<uint32_t>(spec.vars.size());
  bool have_save = false;
  for (HistAction& a : spec.actions) {
    if (a.handler != HistHandler::onmatch) {
      if (a.var_str.empty() || a.var_str[0] != '$') return p.fail(HistErr::onx_not_var, a.var_str);
      const std::string_view vname = std::string_view(a.var_str).substr(1);
      const int v = find_own_var(spec, vname);
      if (v < 0) return p.fail(HistErr::onx_var_not_found, vname);
      VarRef r;
      r.name = std::string(vname);
      r.self = true;
      r.var = static_cast<uint32_t>(v);
      a.track_ref = add_ref(spec, std::move(r));
      a.track_var = track_var++;
    }
    if (a.kind == HistActionKind::trace) {
      if (!create_trace_action(p, a)) return false;
    } else if (a.kind == HistActionKind::save) {
      if (have_save) return p.fail_pos(HistErr::too_many_save_actions, 0);
      have_save = true;
      for (const std::string& prm : a.params) {
        HistField f;
        TriggerError saved = p.e;
        if (!parse_hist_field(p, prm, false, f) || f.source == HistSource::timestamp ||
            f.source == HistSource::stacktrace) {  // stacktrace variables: not here
          p.e = saved;
          return p.fail(HistErr::field_var_create_fail, prm);
        }
        const bool str = f.source == HistSource::string_field || f.source == HistSource::dyn_string;
        const uint32_t bytes =
            str ? (std::min(f.size == 0 ? kStrVarLenMax : f.size + 1, kStrVarLenMax) + 7) & ~7u : 8;
        a.save_offset.push_back(spec.save_bytes);
        spec.save_bytes += bytes;
        a.save.push_back(std::move(f));
      }
      if (a.params.empty()) return p.fail_pos(HistErr::no_save_params, 0);
    }
  }
  return true;
}

// The attributes of a hist trigger's text, sorted by kind, as the kernel's
// parse_hist_trigger_attrs leaves them; views into that text.
struct HistAttrs {
  std::optional<std::string_view> keys, vals, sort;
  std::vector<std::string_view> assignments, actions;
};

// Mirrors kernel/trace/trace_events_hist.c: parse_hist_trigger_attrs (with
// parse_assignment): the flags and name/clock/size go to the spec at once.
bool parse_hist_attrs(HistParser& p, std::string_view text, HistAttrs& a) {
  HistSpec& spec = p.spec;
  for (std::string_view attr : split(text, ':')) {
    const size_t eq = attr.find('=');
    if (eq != std::string_view::npos) {
      if (eq + 1 == attr.size()) return p.fail(HistErr::empty_assignment, attr);
      if (attr.starts_with("keys=") || attr.starts_with("key="))
        a.keys = attr.substr(eq + 1);
      else if (attr.starts_with("vals=") || attr.starts_with("values=") || attr.starts_with("val="))
        a.vals = attr.substr(eq + 1);
      else if (attr.starts_with("sort="))
        a.sort = attr.substr(5);
      else if (attr.starts_with("name="))
        spec.name = std::string(attr.substr(5));
      else if (attr.starts_with("clock=")) {
        const std::string_view c = strip(attr.substr(6));
        if (p.env != nullptr && c != p.env->clock_name) return p.fail(HistErr::set_clock_fail, c);
        spec.clock = std::string(c);
      } else if (attr.starts_with("size=")) {
        const auto n = parse_ull(attr.substr(5));
        if (!n || *n == 0 || *n > UINT32_MAX) return p.e.err = EINVAL, false;
        spec.map_bits = ilog2_roundup(*n);
        if (spec.map_bits < kMapBitsMin || spec.map_bits > kMapBitsMax)
          return p.e.err = EINVAL, false;
      } else {
        if (a.assignments.size() == kMaxVars) return p.fail(HistErr::too_many_vars, attr);
        a.assignments.push_back(attr);
      }
    } else if (attr == "pause")
      spec.pause = true;
    else if (attr == "cont" || attr == "continue")
      spec.cont = true;
    else if (attr == "clear")
      spec.clear = true;
    else if (attr == "nohitcount" || attr == "NOHC")
      spec.nohitcount = true;
    else if (attr.starts_with("onmatch(") || attr.starts_with("onmax(") ||
             attr.starts_with("onchange(")) {
      if (a.actions.size() == kMaxActions) return p.e.err = EINVAL, false;
      a.actions.push_back(attr);
    } else if (attr.empty())
      continue;
    else
      return p.e.err = EINVAL, false;
  }
  if (!a.keys) return p.e.err = EINVAL, false;
  return true;
}

// Mirrors kernel/trace/trace_events_hist.c: parse_var_defs (the names and
// expressions into p.var_defs; create_var_fields parses them).
bool parse_var_defs(HistParser& p, const std::vector<std::string_view>& assignments) {
  for (std::string_view as : assignments) {
    for (std::string_view def : split(as, ',')) {
      const size_t eq = def.find('=');
      if (eq == std::string_view::npos) return p.fail(HistErr::malformed_assignment, def);
      if (p.var_defs.size() == kMaxVars) return p.fail(HistErr::too_many_vars, def.substr(0, eq));
      p.var_defs.emplace_back(std::string(def.substr(0, eq)), std::string(def.substr(eq + 1)));
    }
  }
  return true;
}

// Parses one field expression of `use` (the kind of field, for the kernel's
// per-use refusals); returns its root node, < 0 on error.
int parse_field_expr(HistParser& p, HistParser::Use use, std::string_view text) {
  int sub = 0;
  p.use = use;
  p.use_text = text;
  const int root = parse_hist_expr(p, text, sub);
  p.use = HistParser::Use::other;
  return root;
}

// Mirrors kernel/trace/trace_events_hist.c: create_val_fields: hitcount,
// then up to kMaxVals - 1 more vals; nohitcount needs another value to show.
bool create_val_fields(HistParser& p, std::optional<std::string_view> vals) {
  HistSpec& spec = p.spec;
  if (vals) {
    uint32_t n = 0;
    for (std::string_view v : split(*vals, ',')) {
      if (++n > kMaxVals) break;  // the kernel reads at most TRACING_MAP_VALS_MAX items
      if (v == "hitcount") continue;
      HistField f;
      const int root = parse_field_expr(p, HistParser::Use::val, v);
      if (root < 0) return false;
      const ExprNode& node = spec.nodes[static_cast<size_t>(root)];
      // __create_val_field: these modifiers are for keys.
      if (node.op == ExprOp::value &&
          ((node.leaf.flags & (kLog2 | kBuckets | kSym | kSymOffset | kSyscall)) ||
           node.leaf.source == HistSource::stacktrace))
        return p.fail(HistErr::bad_field_modifier, v);
      if (node.is_string) return p.e.err = EINVAL, false;  // strings are keys only
      if (node.op == ExprOp::value) {
        f = node.leaf;
      } else {
        f.source = HistSource::expr;
        f.expr = root;
        f.name = node.op == ExprOp::ref ? spec.refs[node.ref].name : expr_text(spec, root);
        spec.has_expr_vals = true;
      }
      spec.vals.push_back(std::move(f));
    }
  }
  if (spec.nohitcount && spec.vals.empty()) {
    p.fail_pos(HistErr::need_nohc_val, 0);
    p.e.err = ENOENT;
    return false;
  }
  return true;
}

// Mirrors kernel/trace/trace_events_hist.c: create_var_fields. A name
// already defined on this event, here or by another live trigger, is a
// duplicate.
bool create_var_fields(HistParser& p) {
  HistSpec& spec = p.spec;
  const HistEnv* env = p.env;
  for (const auto& def : p.var_defs) {
    // Named references, not a structured binding: clang before 16 cannot
    // capture a binding in the lambda below.
    const auto& name = def.first;
    const auto& expr = def.second;
    if (find_own_var(spec, name) >= 0 || (env != nullptr && !env->remove && env->find_var && [&] {
          TriggerError probe = p.e;
          return env->find_var(p.event.system(), p.event.name(), name, probe).map != nullptr;
        }()))
      return p.fail(HistErr::duplicate_var, name);
    const int root = parse_field_expr(p, HistParser::Use::var, expr);
    if (root < 0) return false;
    const ExprNode& vn = spec.nodes[static_cast<size_t>(root)];
    if (vn.op == ExprOp::value && (vn.leaf.flags & (kLog2 | kBuckets)))  // __create_val_field
      return p.fail(HistErr::bad_field_modifier, expr);
    if (vn.op == ExprOp::value &&
        vn.leaf.source == HistSource::stacktrace)  // stacktrace variables: not here
      return p.e.err = EINVAL, false;
    spec.vars.push_back({name, root, expr});
  }
  return true;
}

// The stacktrace key at `off` in the compound key. Mirrors
// kernel/trace/trace_events_hist.c: create_key_field (its stacktrace case).
HistField stacktrace_key(uint32_t off) {
  HistField f;
  f.name = "common_stacktrace";
  f.source = HistSource::stacktrace;
  f.size = f.key_size = kHistStackDepth * 8;
  f.type = "unsigned long[]";
  f.key_offset = off;
  return f;
}

// Mirrors kernel/trace/trace_events_hist.c: create_key_fields: the keys laid
// out one after the other in the compound key (spec.key_bytes in all).
bool create_key_fields(HistParser& p, std::string_view keys) {
  HistSpec& spec = p.spec;
  const auto key_list = split(keys, ',');
  if (key_list.size() > kMaxKeys) return p.e.err = EINVAL, false;
  uint32_t off = 0;
  for (std::string_view k : key_list) {
    if (k == "hitcount") return p.e.err = EINVAL, false;
    if (k == "stacktrace" || k == "common_stacktrace" || k == "STACKTRACE") {
      spec.keys.push_back(stacktrace_key(off));
      off += spec.keys.back().key_size;
      spec.stack_key = true;
      continue;
    }
    const size_t nrefs = spec.refs.size();
    const int root = parse_field_expr(p, HistParser::Use::key, k);
    if (root < 0) return false;
    const ExprNode& node = spec.nodes[static_cast<size_t>(root)];
    if (node.op == ExprOp::value &&
        (node.leaf.source == HistSource::hitcount || node.leaf.source == HistSource::stacktrace))
      return p.e.err = EINVAL, false;
    if (spec.refs.size() != nrefs || node.op == ExprOp::ref)
      return p.fail(HistErr::invalid_ref_key, k);
    HistField f;
    if (node.op == ExprOp::value) {
      f = node.leaf;
    } else {
      f.source = HistSource::expr;
      f.expr = root;
      f.name = expr_text(spec, root);
      f.size = 8;
      spec.has_expr_vals = true;
    }
    f.key_offset = off;
    if (f.source == HistSource::string_field)
      f.key_size = (std::min(f.size + 1, kMaxStringKey) + 7) & ~7u;
    else if (f.source == HistSource::dyn_string)
      f.key_size = kMaxStringKey;
    else
      f.key_size = 8;
    off += f.key_size;
    spec.keys.push_back(std::move(f));
  }
  spec.key_bytes = off;
  return true;
}

// A .usecs time stamp anywhere puts every time stamp of the hist in usecs.
void apply_ts_usecs(HistSpec& spec) {
  bool usecs = false;
  for (const ExprNode& n : spec.nodes)
    usecs |=
        n.op == ExprOp::value && n.leaf.source == HistSource::timestamp && (n.leaf.flags & kUsecs);
  for (const auto& f : spec.keys) usecs |= f.source == HistSource::timestamp && (f.flags & kUsecs);
  if (!usecs) return;
  for (ExprNode& n : spec.nodes)
    if (n.op == ExprOp::value && n.leaf.source == HistSource::timestamp) n.leaf.flags |= kTsInUsecs;
  for (auto* fs : {&spec.keys, &spec.vals})
    for (HistField& f : *fs)
      if (f.source == HistSource::timestamp) f.flags |= kTsInUsecs;
}

// Mirrors kernel/trace/trace_events_hist.c: create_sort_keys; hitcount
// ascending when none is given.
bool create_sort_keys(HistParser& p, std::optional<std::string_view> sort) {
  HistSpec& spec = p.spec;
  if (sort) {
    const auto list = split(*sort, ',');
    if (list.size() > kMaxSortKeys) return p.fail(HistErr::too_many_sort_fields, "sort=");
    for (std::string_view s : list) {
      if (s.empty()) return p.fail(HistErr::empty_sort_field, "sort=");
      const size_t dot = s.find('.');
      const std::string_view name = s.substr(0, dot);
      if (name.empty()) return p.fail(HistErr::empty_sort_field, "sort=");
      HistSortKey sk;
      const std::string_view mod =
          dot == std::string_view::npos ? std::string_view() : s.substr(dot + 1);
      auto descending = [&](std::string_view m) -> int {
        if (m.empty()) return 0;
        if (m == "descending") return 1;
        if (m == "ascending") return 0;
        return -1;
      };
      // The kernel compares the name before the first '.', and reads the
      // rest as the direction ("lat.log2" names the key lat; the doc's
      // sort=lat).
      bool found = name == "hitcount";
      for (size_t i = 0; !found && i < spec.vals.size(); ++i)
        if (spec.vals[i].name == name) sk.field = static_cast<int>(i) + 1, found = true;
      for (size_t i = 0; !found && i < spec.keys.size(); ++i)
        if (spec.keys[i].name == name) sk.field = -1 - static_cast<int>(i), found = true;
      if (!found) return p.fail(HistErr::invalid_sort_field, name);
      const int d = descending(mod);
      if (d < 0) return p.fail(HistErr::invalid_sort_modifier, mod);
      sk.descending = d == 1;
      spec.sort.push_back(sk);
    }
  }
  if (spec.sort.empty()) spec.sort.push_back({0, false});
  return true;
}

// The variables' leaves when every variable is a plain numeric field (none
// otherwise).
void collect_var_leaves(HistSpec& spec) {
  for (const HistVar& v : spec.vars) {
    const ExprNode& n = spec.nodes[static_cast<size_t>(v.expr)];
    if (n.op != ExprOp::value || n.is_string) {
      spec.var_leaves.clear();
      return;
    }
    spec.var_leaves.push_back(n.leaf);
  }
}

}  // namespace

std::optional<HistSpec> parse_hist(std::string_view text_in, const EventDesc& event,
                                   TriggerError& e, size_t /*text_pos_in_command*/,
                                   const HistEnv* env) {
  HistSpec spec;
  HistParser p{spec, event, e, env, {}, HistParser::Use::other, {}};
  spec.clock = env != nullptr ? env->clock_name : std::string("global");
  // The kernel turns ".sym-offset" into ".symXoffset" so that its '-' is no
  // operator; the text keeps its length, so caret positions are unchanged.
  std::string text(text_in);
  for (size_t at = 0; (at = text.find(".sym-offset", at)) != std::string::npos; at += 11)
    text[at + 4] = 'X';

  HistAttrs attrs;
  if (!parse_hist_attrs(p, text, attrs)) return std::nullopt;
  // parse_actions: before the fields (a variable is looked up on the
  // onmatch event first).
  for (std::string_view a : attrs.actions) {
    HistAction act;
    if (!parse_action(p, a, act)) return std::nullopt;
    spec.actions.push_back(std::move(act));
  }
  if (!parse_var_defs(p, attrs.assignments) || !create_val_fields(p, attrs.vals) ||
      !create_var_fields(p) || !create_key_fields(p, *attrs.keys))
    return std::nullopt;
  apply_ts_usecs(spec);
  if (!create_sort_keys(p, attrs.sort) || !create_actions(p)) return std::nullopt;
  collect_var_leaves(spec);
  if (spec.refs.size() > kMaxVars * 2 + kMaxSynthFields)
    return p.fail_pos(HistErr::too_many_vars, 0), std::nullopt;
  return spec;
}

namespace {

// Per-CPU counter slots: one per possible CPU where rseq sections run and the
// copies stay under kPerCpuBytesMax; otherwise none (the shared row only).
uint32_t per_cpu_slots(uint32_t max_entries, bool wanted) {
  if (!wanted || !buffers::detail::rseq_usable()) return 0;
  const uint32_t n = buffers::possible_cpus();
  if (uint64_t{n} * max_entries * sizeof(std::atomic<uint64_t>) * (1 + kMaxVals) > kPerCpuBytesMax)
    return 0;
  return n;
}

}  // namespace

// ── the map ──────────────────────────────────────────────────────────────────

HistMap::HistMap(const HistSpec& spec, bool per_cpu_counters)
    : spec_(spec),
      max_entries_(1u << spec.map_bits),
      nbuckets_(2u << spec.map_bits),
      ncpu_(per_cpu_slots(max_entries_, per_cpu_counters)),
      buckets_(new Bucket[nbuckets_]),
      keys_(new std::byte[size_t{max_entries_} * spec.key_bytes]()),
      sums_(new Sums[size_t{max_entries_} * (ncpu_ + 1)]) {
  nvars_ = spec.map_vars();
  if (nvars_ != 0) vars_.reset(new VarSlot[size_t{max_entries_} * nvars_]);
  if (spec.save_bytes != 0)
    save_.reset(new std::atomic<uint64_t>[size_t{max_entries_} * (spec.save_bytes / 8)]);
  one_word_ = spec.keys.size() == 1 && spec.key_bytes == 8 &&
              spec.keys[0].source != HistSource::string_field &&
              spec.keys[0].source != HistSource::dyn_string;
  clear();
}

void HistMap::clear() noexcept {
  for (uint32_t i = 0; i < nbuckets_; ++i) {
    buckets_[i].hash.store(0, std::memory_order_relaxed);
    buckets_[i].entry.store(0, std::memory_order_relaxed);
    buckets_[i].key0.store(0, std::memory_order_relaxed);
  }
  for (size_t i = 0; i < size_t{max_entries_} * (ncpu_ + 1); ++i)
    for (auto& v : sums_[i].v) v.store(0, std::memory_order_relaxed);
  std::memset(keys_.get(), 0, size_t{max_entries_} * spec_.key_bytes);
  for (size_t i = 0; i < size_t{max_entries_} * nvars_; ++i) {
    vars_[i].value.store(0, std::memory_order_relaxed);
    vars_[i].set.store(0, std::memory_order_relaxed);
  }
  for (size_t i = 0; save_ && i < size_t{max_entries_} * (spec_.save_bytes / 8); ++i)
    save_[i].store(0, std::memory_order_relaxed);
  snap_.value.store(0, std::memory_order_relaxed);
  snap_.updated.store(false, std::memory_order_relaxed);
  snap_.entry.store(UINT32_MAX, std::memory_order_relaxed);
  next_entry_.store(0, std::memory_order_relaxed);
  drops_.store(0, std::memory_order_release);
}

namespace {
[[gnu::always_inline]] inline uint64_t mix(uint64_t h) noexcept {  // murmur3 finalizer
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}
}  // namespace

uint32_t HistMap::insert(Bucket& b, const std::byte* key, uint64_t key0, uint32_t hash) noexcept {
  uint32_t h = 0;
  if (!b.hash.compare_exchange_strong(h, hash, std::memory_order_acq_rel)) return kLost;
  const uint32_t n = next_entry_.fetch_add(1, std::memory_order_relaxed);
  if (n >= max_entries_) {
    b.hash.store(0, std::memory_order_release);
    return kFull;
  }
  std::memcpy(key_at(n), key, spec_.key_bytes);
  b.key0.store(key0, std::memory_order_relaxed);
  b.entry.store(n + 1, std::memory_order_release);
  return n;
}

uint64_t HistMap::sum(uint32_t ent, uint32_t word) const noexcept {
  uint64_t v = 0;
  for (uint32_t s = 0; s <= ncpu_; ++s)
    v += sums_[size_t{s} * max_entries_ + ent].v[word].load(std::memory_order_relaxed);
  return v;
}

void HistMap::make_key(const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu,
                       uint64_t ts, HistKey& k) const noexcept {
  if (one_word_) {
    const HistField& f = fields.keys[0];
    const uint64_t v = f.source == HistSource::expr
                           ? eval_expr(fields, f.expr, rec, cpu, ts, nullptr)
                           : read_hist_value(f, rec, cpu, ts);
    std::memcpy(k.bytes, &v, 8);
    k.key0 = v;
    k.hash = one_word_hash(v);
    return;
  }
  std::byte* key = k.bytes;
  std::memset(key, 0, spec_.key_bytes);
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const HistField& f : fields.keys) {
    std::byte* kp = key + f.key_offset;
    if (f.source == HistSource::string_field || f.source == HistSource::dyn_string) {
      const std::byte* s = nullptr;
      size_t len = 0;
      if (f.source == HistSource::string_field) {
        if (f.offset + f.size <= rec.size()) s = rec.data() + f.offset, len = f.size;
      } else if (f.offset + 4 <= rec.size()) {
        uint32_t loc;
        std::memcpy(&loc, rec.data() + f.offset, 4);
        size_t start = loc & 0xffff;
        len = loc >> 16;
        if (f.is_signed) start += f.offset + 4;  // __rel_loc: from the end of the field
        if (start + len <= rec.size())
          s = rec.data() + start;
        else
          len = 0;
      }
      len = std::min(len, size_t{f.key_size - 1});
      for (size_t i = 0; i < len && s[i] != std::byte{0}; ++i) kp[i] = s[i];
    } else if (f.source == HistSource::stacktrace) {
      // event_hist_trigger: stack_trace_save() into the key, the unused
      // words zero (the key was cleared above).
      uint64_t frames[kHistStackDepth];
      const uint32_t n = capture_stack(tl_hist_stack_cfa, frames, kHistStackDepth);
      std::memcpy(kp, frames, n * sizeof(uint64_t));
    } else {
      const uint64_t v = f.source == HistSource::expr
                             ? eval_expr(fields, f.expr, rec, cpu, ts, nullptr)
                             : read_hist_value(f, rec, cpu, ts);
      std::memcpy(kp, &v, 8);
    }
  }
  for (uint32_t o = 0; o < spec_.key_bytes; o += 8) {
    uint64_t w;
    std::memcpy(&w, key + o, 8);
    h = mix(h ^ w);
  }
  k.hash = static_cast<uint32_t>(h) | 1u;
  std::memcpy(&k.key0, key, 8);
}

uint32_t HistMap::lookup(const HistKey& k) const noexcept {
  const uint32_t mask = nbuckets_ - 1;
  uint32_t i = k.hash & mask;
  for (uint32_t probes = 0; probes < nbuckets_; ++probes, i = (i + 1) & mask) {
    const Bucket& b = buckets_[i];
    const uint32_t h = b.hash.load(std::memory_order_acquire);
    if (h == 0) return UINT32_MAX;
    if (h != k.hash) continue;
    const uint32_t ent = b.entry.load(std::memory_order_acquire);
    if (ent == 0) continue;  // being inserted: not there yet for a reader
    if (b.key0.load(std::memory_order_relaxed) == k.key0 &&
        (one_word_ || std::memcmp(key_at(ent - 1), k.bytes, spec_.key_bytes) == 0))
      return ent - 1;
  }
  return UINT32_MAX;
}

void HistMap::update_compound(const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu,
                              uint64_t ts) noexcept {
  HistKey k;
  make_key(fields, rec, cpu, ts, k);
  const uint32_t ent = find_or_insert<false>(k.bytes, k.key0, k.hash);
  if (ent != UINT32_MAX) [[likely]]
    add(ent, fields, rec, cpu, ts);
}

std::vector<HistMap::Row> HistMap::rows() const {
  std::vector<Row> out;
  for (uint32_t i = 0; i < nbuckets_; ++i) {
    const uint32_t ent = buckets_[i].entry.load(std::memory_order_acquire);
    if (ent == 0) continue;
    Row r{};
    r.key = keys_.get() + size_t{ent - 1} * spec_.key_bytes;
    r.entry = ent - 1;
    r.hitcount = sum(ent - 1, 0);
    for (size_t v = 0; v < spec_.vals.size(); ++v)
      r.vals[v] = sum(ent - 1, static_cast<uint32_t>(1 + v));
    out.push_back(r);
  }
  return out;
}

// ── the hist file ────────────────────────────────────────────────────────────

namespace {

uint64_t key_u64(const std::byte* key, const HistField& f) {
  uint64_t v;
  std::memcpy(&v, key + f.key_offset, 8);
  return v;
}

// <0, 0, >0 as the kernel's tracing_map_cmp_* of the field.
int cmp_key(const std::byte* a, const std::byte* b, const HistField& f) {
  if (f.source ==
      HistSource::stacktrace)  // tracing_map_cmp_none; ties by the words, for a stable text
    return std::memcmp(a + f.key_offset, b + f.key_offset, f.key_size);
  if (f.source == HistSource::string_field || f.source == HistSource::dyn_string)
    return std::strncmp(reinterpret_cast<const char*>(a + f.key_offset),
                        reinterpret_cast<const char*>(b + f.key_offset), f.key_size);
  const uint64_t x = key_u64(a, f), y = key_u64(b, f);
  if (f.is_signed && (f.flags & (kLog2 | kBuckets)) == 0) {
    const auto sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
    return sx < sy ? -1 : sx > sy ? 1 : 0;
  }
  return x < y ? -1 : x > y ? 1 : 0;
}

// __get_percentage(): val / total in hundredths of a percent; UINT32_MAX
// for a non-zero val of a zero total.
uint32_t percentage(uint64_t val, uint64_t total) {
  if (total != 0 && val < UINT64_MAX / 10000) return static_cast<uint32_t>(val * 10000 / total);
  if (total != 0 && total / 10000 != 0) return static_cast<uint32_t>(val / (total / 10000));
  return val != 0 ? UINT32_MAX : 0;
}

}  // namespace

std::string format_hist_val(std::string_view name, uint32_t flags, uint64_t val, uint64_t total,
                            uint64_t max) {
  if (flags & kPercent) {
    const uint32_t pc = percentage(val, total);
    return pc == UINT32_MAX ? fmt::format(" {} (%):[ERROR]", name)
                            : fmt::format(" {} (%): {:>3}.{:02}", name, pc / 100, pc % 100);
  }
  if (flags & kGraph) {  // __fill_bar_str: 20 columns of '#', scaled to the column's max
    const uint32_t pc = percentage(val, max);
    std::string bar = "[ERROR]";
    if (pc != UINT32_MAX) {
      const uint32_t len = std::min<uint32_t>(static_cast<uint32_t>(uint64_t{pc} * 20 / 10000), 20);
      bar = std::string(len, '#') + std::string(20 - len, ' ');
    }
    return fmt::format(" {}: {:>20}", name, bar);
  }
  if (flags & kHex) return fmt::format(" {}: {:>10x}", name, val);
  return fmt::format(" {}: {:>10}", name, val);
}

std::string format_hist(const HistMap& map, const std::string& info, const HistNames& names) {
  const HistSpec& spec = map.spec();
  std::vector<HistMap::Row> rows = map.rows();
  auto value_of = [&](const HistMap::Row& r, int field) {
    return field == 0 ? r.hitcount : r.vals[field - 1];
  };
  // Sort keys in order; ties by the keys in order, so the output is stable
  // (the kernel's sort leaves ties in map order).
  auto less = [&](const HistMap::Row& a, const HistMap::Row& b) {
    for (const HistSortKey& sk : spec.sort) {
      int c;
      if (sk.field >= 0) {
        const uint64_t x = value_of(a, sk.field), y = value_of(b, sk.field);
        c = x < y ? -1 : x > y ? 1 : 0;
      } else {
        c = cmp_key(a.key, b.key, spec.keys[static_cast<size_t>(-1 - sk.field)]);
      }
      if (c != 0) return sk.descending ? c > 0 : c < 0;
    }
    for (const HistField& f : spec.keys)
      if (const int c = cmp_key(a.key, b.key, f); c != 0) return c < 0;
    return false;
  };
  std::sort(rows.begin(), rows.end(), less);

  // print_entries: each .percent / .graph column's total and max.
  struct Stat {
    uint64_t total = 0, max = 0;
  };
  Stat stats[kMaxVals]{};
  for (size_t v = 0; v < spec.vals.size(); ++v) {
    if (!(spec.vals[v].flags & (kPercent | kGraph))) continue;
    for (const HistMap::Row& r : rows) {
      stats[v].total += r.vals[v];
      stats[v].max = std::max(stats[v].max, r.vals[v]);
    }
  }
  std::string out = "# event histogram\n#\n# trigger info: " + info + "\n#\n\n";
  uint64_t hits = 0;
  for (const HistMap::Row& r : rows) {
    hits += r.hitcount;
    out += format_hist_key(spec, r.key, names);
    if (!spec.nohitcount) out += fmt::format(" hitcount: {:>10}", r.hitcount);
    for (size_t v = 0; v < spec.vals.size(); ++v) {
      const HistField& f = spec.vals[v];
      if (f.source == HistSource::expr && spec.nodes[static_cast<size_t>(f.expr)].op != ExprOp::ref)
        continue;
      out += ' ';
      out += format_hist_val(f.name, f.flags, r.vals[v], stats[v].total, stats[v].max);
    }
    if (!spec.actions.empty()) out += format_hist_actions(map, r.entry);
    out += '\n';
  }
  if (!spec.actions.empty()) out += format_hist_snapshot(map, names);
  out += fmt::format("\nTotals:\n    Hits: {}\n    Entries: {}\n    Dropped: {}\n", hits,
                     rows.size(), map.dropped());
  return out;
}

std::string format_hist_key(const HistSpec& spec, const std::byte* key, const HistNames& names) {
  std::string out = "{ ";
  bool multiline = false;
  for (size_t i = 0; i < spec.keys.size(); ++i) {
    const HistField& f = spec.keys[i];
    if (i) out += ", ";
    const std::string& n = f.name;
    if (f.source == HistSource::stacktrace) {
      // hist_trigger_stacktrace_print: one "%pS" line per frame, 9 blanks in.
      out += "common_stacktrace:\n";
      for (uint32_t w = 0; w < kHistStackDepth; ++w) {
        uint64_t ip;
        std::memcpy(&ip, key + f.key_offset + w * 8, 8);
        if (ip == 0) break;
        std::optional<std::string> sym = names.sym ? names.sym(ip, true) : std::nullopt;
        out += "         " + (sym ? *sym : process_symbol_text(ip)) + "\n";
      }
      multiline = true;
      continue;
    }
    if (f.source == HistSource::string_field || f.source == HistSource::dyn_string) {
      const char* s = reinterpret_cast<const char*>(key + f.key_offset);
      out += fmt::format("{}: {:<50}", n, std::string_view(s, strnlen(s, f.key_size)));
      continue;
    }
    const uint64_t v = key_u64(key, f);
    if (f.flags & kHex) {
      out += fmt::format("{}: {:x}", n, v);
    } else if (f.flags & (kSym | kSymOffset)) {
      const bool off = (f.flags & kSymOffset) != 0;
      std::optional<std::string> s = names.sym ? names.sym(v, off) : std::nullopt;
      const std::string text = s ? *s : fmt::format("0x{:x}", v);
      out += off ? fmt::format("{}: [{:x}] {:<55}", n, v, text)
                 : fmt::format("{}: [{:x}] {:<45}", n, v, text);
    } else if (f.flags & kExecname) {
      const std::string comm =
          names.comm ? names.comm(static_cast<int32_t>(v)) : std::string("<...>");
      out += fmt::format("{}: {:<16}[{:>10}]", n, comm, v);
    } else if (f.flags & kSyscall) {
      const char* sc =
          v < std::size(kSyscallNames) && kSyscallNames[v][0] != '\0' ? kSyscallNames[v] : nullptr;
      const std::string text = sc ? fmt::format("sys_{}", sc) : std::string("unknown_syscall");
      out += fmt::format("{}: {:<30}[{:>3}]", n, text, v);
    } else if (f.flags & kLog2) {
      out += fmt::format("{}: ~ 2^{:<2}", n, v);
    } else if (f.flags & kBuckets) {
      out += fmt::format("{}: ~ {}-{}", n, v, v + f.buckets - 1);
    } else {
      out += fmt::format("{}: {:>10}", n, v);
    }
  }
  return out + (multiline ? "}" : " }");
}

}  // namespace tracepipe::triggers
