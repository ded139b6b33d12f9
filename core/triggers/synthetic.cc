// Synthetic events: the synthetic_events file (definitions, listing,
// removal) and their formats.
#include "tracepipe/core/triggers/synthetic.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <map>
#include <mutex>

#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/triggers/hist.h"

namespace tracepipe::triggers {

namespace {

// kernel/trace/trace_events_synth.c: the ERRORS list.
enum class SynthErr : uint8_t {
  bad_name,
  invalid_cmd,
  invalid_dyn_cmd,
  event_exists,
  too_many_fields,
  incomplete_type,
  invalid_type,
  invalid_field,
  invalid_array_spec,
  count_,
};
constexpr std::array<std::string_view, static_cast<size_t>(SynthErr::count_)> kSynthErrText = {
    "Illegal name",
    "Command must be of the form: <name> field[;field] ...",
    "Command must be of the form: s or -:[synthetic/]<name> field[;field] ...",
    "Event already exists",
    "Too many fields",
    "Incomplete type",
    "Invalid type",
    "Invalid field",
    "Invalid array specification",
};

struct Def {
  std::shared_ptr<SynthEvent> event;
  std::shared_ptr<std::atomic<uint32_t>> refs;
};

struct State {
  std::mutex mu;
  // registry -> name -> definition (removed definitions are gone from here;
  // their EventDesc stays in the registry)
  std::map<const Registry*, std::map<std::string, Def, std::less<>>> defs;
};
State& state() {
  static State s;
  return s;
}

// The definitions of `registry`, without those of a destroyed registry that
// lived at the same address (their events are not in this one). Under mu.
std::map<std::string, Def, std::less<>>& defs_of(State& st, const Registry& registry) {
  auto& defs = st.defs[&registry];
  std::erase_if(defs, [&](const auto& kv) {
    return registry.find("synthetic", kv.first) != kv.second.event->desc;
  });
  return defs;
}

bool good_name(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// synth_field_size(): 0 for a dynamic string or stack, -1 invalid.
int field_size(std::string_view type) {
  static constexpr std::pair<std::string_view, int> kSizes[] = {
      {"s64", 8},   {"u64", 8},          {"s32", 4},  {"u32", 4},           {"s16", 2},
      {"u16", 2},   {"s8", 1},           {"u8", 1},   {"char", 1},          {"unsigned char", 1},
      {"int", 4},   {"unsigned int", 4}, {"long", 8}, {"unsigned long", 8}, {"bool", 1},
      {"pid_t", 4}, {"gfp_t", 4},
  };
  for (const auto& [t, n] : kSizes)
    if (type == t) return n;
  if (const size_t at = type.find("char["); at != std::string_view::npos) {
    const size_t end = type.find(']', at);
    if (end == std::string_view::npos || end + 1 != type.size()) return -1;
    const std::string_view n = type.substr(at + 5, end - at - 5);
    if (n.size() > 3) return -1;
    if (n.empty()) return 0;
    uint32_t v = 0;
    for (char c : n) {
      if (c < '0' || c > '9') return -1;
      v = v * 10 + static_cast<uint32_t>(c - '0');
    }
    return v > kStrVarLenMax ? -1 : static_cast<int>(v);
  }
  if (type.find("long[") != std::string_view::npos) return 0;
  return -2;  // unknown type
}

// synth_field_fmt()
std::string_view field_fmt(std::string_view type) {
  static constexpr std::pair<std::string_view, std::string_view> kFmts[] = {
      {"s64", "%lld"}, {"u64", "%llu"},
      {"s32", "%d"},   {"u32", "%u"},
      {"s16", "%d"},   {"u16", "%u"},
      {"s8", "%d"},    {"u8", "%u"},
      {"char", "%d"},  {"unsigned char", "%u"},
      {"int", "%d"},   {"unsigned int", "%u"},
      {"long", "%ld"}, {"unsigned long", "%lu"},
      {"bool", "%d"},  {"pid_t", "%d"},
      {"gfp_t", "%x"},
  };
  for (const auto& [t, f] : kFmts)
    if (type == t) return f;
  // The kernel prints strings with "%.*s" and one argument, which
  // libtraceevent (trace-cmd report) cannot parse: "%s" reads the same.
  if (type.find("char[") != std::string_view::npos) return "%s";
  if (type.find("long[") != std::string_view::npos) return "%s";
  return "%llu";
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t b = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

TriggerError synth_error(const std::string& cmd, SynthErr code, std::string_view at,
                         int err = EINVAL) {
  TriggerError e;
  e.err = err;
  e.location = "synthetic_events";
  e.command = cmd;
  e.message = std::string(kSynthErrText[static_cast<size_t>(code)]);
  const size_t pos = at.empty() ? std::string::npos : cmd.find(at);
  e.pos = pos == std::string::npos ? 0 : static_cast<int>(pos);
  return e;
}

EventFormat make_format(const SynthEvent& se) {
  EventFormat f;
  f.system = "synthetic";
  f.name = se.name;
  f.common_fields = kernel_common_fields();
  std::string fmt_str = "\"", args;
  for (size_t i = 0; i < se.fields.size(); ++i) {
    const SynthField& sf = se.fields[i];
    f.fields.push_back({sf.type, sf.name, sf.offset, sf.size, sf.is_signed});
    fmt_str +=
        fmt::format("{}={}{}", sf.name,
                    field_fmt(sf.type.starts_with("__data_loc ") ? sf.type.substr(11) : sf.type),
                    i + 1 == se.fields.size() ? "" : ", ");
    if (sf.is_string && sf.is_dynamic)
      args += fmt::format(", __get_str({})", sf.name);
    else if (sf.is_stack)
      args += fmt::format(", __get_stacktrace({})", sf.name);
    else
      args += fmt::format(", REC->{}", sf.name);
  }
  f.print_fmt = fmt_str + "\"" + args;
  return f;
}

// The command without blanks around it.
std::string trim_command(std::string_view command_in) {
  std::string cmd(command_in);
  while (!cmd.empty() && std::isspace(static_cast<unsigned char>(cmd.back()))) cmd.pop_back();
  size_t b = 0;
  while (b < cmd.size() && std::isspace(static_cast<unsigned char>(cmd[b]))) ++b;
  cmd.erase(0, b);
  return cmd;
}

// "!name": the definition goes, unless a trigger still uses it (EBUSY).
TriggerStatus remove_synthetic(Instance& instance, std::map<std::string, Def, std::less<>>& defs,
                               std::string_view name) {
  const auto it = defs.find(name);
  if (it == defs.end()) {
    TriggerError e;
    e.err = ENOENT;
    return TriggerStatus(std::move(e));
  }
  if (it->second.refs->load() != 0) {
    TriggerError e;
    e.err = EBUSY;
    return TriggerStatus(std::move(e));
  }
  if (it->second.event->desc != nullptr) instance.enable(*it->second.event->desc, false);
  defs.erase(it);
  return {};
}

// One field, "[unsigned] TYPE NAME[N]", at record offset `offset`, which it
// advances. Mirrors kernel/trace/trace_events_synth.c: parse_synth_field.
std::optional<TriggerError> parse_synth_field(const std::string& cmd, std::string_view prefix,
                                              std::string_view ftype, std::string_view fname,
                                              uint32_t& offset, SynthField& f) {
  const size_t bracket = fname.find('[');
  const std::string_view array =
      bracket == std::string_view::npos ? std::string_view() : fname.substr(bracket);
  f.name = std::string(fname.substr(0, bracket));
  if (!good_name(f.name)) return synth_error(cmd, SynthErr::bad_name, fname);
  f.type = std::string(prefix) + std::string(ftype) + std::string(array);
  const int size = field_size(f.type);
  if (size < 0)
    return synth_error(cmd, !array.empty() ? SynthErr::invalid_array_spec : SynthErr::invalid_type,
                       !array.empty() ? fname : ftype);
  f.is_string = f.type.find("char[") != std::string::npos;
  f.is_stack = !f.is_string && f.type.find("long[") != std::string::npos;
  if (size == 0) {
    f.is_dynamic = true;
    f.type = "__data_loc " + f.type;
    f.size = 8;
  } else {
    f.size = static_cast<uint32_t>(size);
  }
  f.is_signed = !(f.type.starts_with("u") || f.type == "gfp_t");
  if (f.is_string && !f.is_dynamic)
    f.is_signed = true;  // as synth_field_signed() says of "char[..]"
  f.offset = offset;
  offset += f.is_string && !f.is_dynamic ? kStrVarLenMax : 8;
  return std::nullopt;
}

// The fields after the event's name, ';'-separated, into se.fields, and
// se.fixed_size. Mirrors kernel/trace/trace_events_synth.c:
// __create_synth_event (its field loop).
std::optional<TriggerError> parse_synth_fields(const std::string& cmd, std::string_view rest,
                                               SynthEvent& se) {
  uint32_t offset = 8;  // after the common fields
  for (;;) {
    const size_t semi = rest.find(';');
    const std::vector<std::string_view> argv = words(rest.substr(0, semi));
    size_t consumed = 0;
    while (consumed < argv.size()) {
      std::string_view prefix, ftype = argv[consumed], fname;
      if (ftype == "unsigned") {
        if (argv.size() - consumed < 3) return synth_error(cmd, SynthErr::incomplete_type, ftype);
        prefix = "unsigned ";
        ftype = argv[consumed + 1];
        fname = argv[consumed + 2];
        consumed += 3;
      } else {
        if (argv.size() - consumed < 2) return synth_error(cmd, SynthErr::invalid_field, ftype);
        fname = argv[consumed + 1];
        consumed += 2;
      }
      if (se.fields.size() == kMaxSynthFields)
        return synth_error(cmd, SynthErr::too_many_fields, {});
      SynthField f;
      if (auto err = parse_synth_field(cmd, prefix, ftype, fname, offset, f)) return err;
      se.fields.push_back(std::move(f));
    }
    if (semi == std::string_view::npos) break;
    rest.remove_prefix(semi + 1);
  }
  if (se.fields.empty()) return synth_error(cmd, SynthErr::invalid_cmd, {});
  if (offset > kSynthMaxRecord - kStrVarLenMax)
    return synth_error(cmd, SynthErr::too_many_fields, {});
  se.fixed_size = offset;
  return std::nullopt;
}

}  // namespace

std::string SynthEvent::definition() const {
  std::string s = name + "\t";
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string_view t = fields[i].type;
    if (t.starts_with("__data_loc ")) t.remove_prefix(11);
    // The kernel keeps the array suffix on the type: "char[16] comm".
    s += fmt::format("{} {}{}", t, fields[i].name, i + 1 == fields.size() ? "" : "; ");
  }
  return s;
}

bool synth_param_fits(const SynthEvent& se, size_t pos, const ActionParam& p) {
  if (pos >= se.fields.size()) return false;
  const SynthField& f = se.fields[pos];
  if (f.is_stack) return false;  // stacktrace variables are not supported
  if (f.is_string)
    return p.is_string && !p.is_ref;  // strings come from a string field of the event
  if (p.is_string) return false;
  std::string_view ft = f.type;
  if (ft == p.type) return true;
  return f.size == p.size && f.is_signed == p.is_signed;
}

std::shared_ptr<const SynthEvent> find_synthetic_event(const Registry& registry,
                                                       std::string_view name) {
  State& st = state();
  const std::lock_guard lk(st.mu);
  auto& defs = defs_of(st, registry);
  const auto it = defs.find(name);
  return it == defs.end() ? nullptr : it->second.event;
}

void synthetic_event_ref(const SynthEvent& se, bool get) {
  State& st = state();
  const std::lock_guard lk(st.mu);
  for (auto& [reg, m] : st.defs)
    for (auto& [n, d] : m)
      if (d.event.get() == &se) d.refs->fetch_add(get ? 1u : UINT32_MAX, std::memory_order_relaxed);
}

}  // namespace tracepipe::triggers

namespace tracepipe {

using triggers::SynthErr;

TriggerStatus set_synthetic_event(Instance& instance, std::string_view command_in) {
  using namespace triggers;
  const std::string cmd = trim_command(command_in);
  if (cmd.empty()) return {};
  const bool remove = cmd[0] == '!';
  std::string_view body = std::string_view(cmd).substr(remove ? 1 : 0);
  size_t name_end = 0;
  while (name_end < body.size() && !std::isspace(static_cast<unsigned char>(body[name_end])))
    ++name_end;
  const std::string_view name = body.substr(0, name_end);
  Registry& registry = instance.registry();
  State& st = state();
  const std::lock_guard lk(st.mu);
  auto& defs = defs_of(st, registry);
  if (remove) return remove_synthetic(instance, defs, name);
  if (name.empty()) return TriggerStatus(synth_error(cmd, SynthErr::invalid_cmd, {}));
  if (!good_name(name)) return TriggerStatus(synth_error(cmd, SynthErr::bad_name, name));
  if (defs.count(name) != 0)
    return TriggerStatus(synth_error(cmd, SynthErr::event_exists, name, EEXIST));

  auto se = std::make_shared<SynthEvent>();
  se->name = std::string(name);
  if (auto err = parse_synth_fields(cmd, body.substr(name_end), *se))
    return TriggerStatus(std::move(*err));
  try {
    se->desc = &registry.add_declared(make_format(*se));
  } catch (const RegistryError&) {
    // A removed definition of the same name with other fields: the
    // registry keeps events for good.
    return TriggerStatus(synth_error(cmd, SynthErr::event_exists, name, EEXIST));
  }
  defs.emplace(std::string(name), Def{std::move(se), std::make_shared<std::atomic<uint32_t>>(0)});
  return {};
}

std::string synthetic_events(const Instance& instance) {
  triggers::State& st = triggers::state();
  const std::lock_guard lk(st.mu);
  std::string out;
  for (const auto& [n, d] : triggers::defs_of(st, instance.registry()))
    out += d.event->definition() + "\n";
  return out;
}

const EventDesc* synthetic_event(const Instance& instance, std::string_view name) {
  const auto se = triggers::find_synthetic_event(instance.registry(), name);
  return se ? se->desc : nullptr;
}

}  // namespace tracepipe
