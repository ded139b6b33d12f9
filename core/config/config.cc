#include "tracepipe/core/config/config.h"

#include <sched.h>
#include <toml++/toml.h>

#include <algorithm>
#include <iterator>
#include <span>
#include <tuple>

#include "tracepipe/buffers/rseq.h"
#include "tracepipe/core/config/key_suggest.h"
#include "tracepipe/core/config/ring_memory.h"
#include "tracepipe/core/files/input_file.h"

namespace tracepipe {

ConfigError::ConfigError(std::string file, uint32_t line, std::string key, std::string message)
    : std::runtime_error([&] {
        std::string w = file;
        if (line != 0) w += ":" + std::to_string(line);
        w += ": ";
        if (!key.empty()) w += key + ": ";
        return w + message;
      }()),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)),
      message_(std::move(message)) {}

std::string_view to_string(BufferMode m) noexcept {
  return m == BufferMode::overwrite ? "overwrite" : "drop_newest";
}

std::string_view to_string(Staging s) noexcept {
  switch (s) {
    case Staging::off:
      return "off";
    case Staging::per_cpu:
      return "per_cpu";
    case Staging::per_thread:
      return "per_thread";
    case Staging::adaptive:
      return "adaptive";
  }
  return "?";
}

namespace {

std::string normalise(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

}  // namespace

std::optional<BufferMode> parse_buffer_mode(std::string_view s) noexcept {
  const std::string n = normalise(s);
  if (n == "overwrite") return BufferMode::overwrite;
  if (n == "drop_newest" || n == "discard") return BufferMode::drop_newest;
  return std::nullopt;
}

std::string_view to_string(WriterMode w) noexcept {
  switch (w) {
    case WriterMode::automatic:
      return "auto";
    case WriterMode::any_cpu:
      return "any_cpu";
    case WriterMode::cpu_local:
      return "cpu_local";
  }
  return "?";
}

std::optional<WriterMode> parse_writer_mode(std::string_view s) noexcept {
  const std::string n = normalise(s);
  if (n == "auto" || n == "automatic") return WriterMode::automatic;
  if (n == "any_cpu") return WriterMode::any_cpu;
  if (n == "cpu_local") return WriterMode::cpu_local;
  return std::nullopt;
}

std::optional<Staging> parse_staging(std::string_view s) noexcept {
  const std::string n = normalise(s);
  if (n == "off") return Staging::off;
  if (n == "on" || n == "per_cpu") return Staging::per_cpu;
  if (n == "per_thread") return Staging::per_thread;
  if (n == "adaptive") return Staging::adaptive;
  return std::nullopt;
}

namespace {

// Quotes a TOML key segment when it is not a bare key.
std::string key_segment(std::string_view k) {
  const bool bare = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
  if (bare) return std::string(k);
  std::string q = "\"";
  for (char c : k) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string join(std::string_view prefix, std::string_view key) {
  return prefix.empty() ? key_segment(key) : std::string(prefix) + "." + key_segment(key);
}

// A table's entries in file order (toml++ keeps them sorted by key).
std::vector<std::pair<std::string_view, const toml::node*>> in_file_order(const toml::table& t) {
  std::vector<std::tuple<uint64_t, uint64_t, std::string_view, const toml::node*>> items;
  for (auto&& [k, v] : t) {
    const auto& pos = k.source().begin;
    items.emplace_back(pos.line, pos.column, k.str(), &v);
  }
  std::sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  std::vector<std::pair<std::string_view, const toml::node*>> out;
  for (auto& [l, c, k, v] : items) out.emplace_back(k, v);
  return out;
}

// The keys each kind of table accepts, in the order core/config/config.h documents
// them: unknown-key errors list them (key_suggest.h).
constexpr std::string_view kInstanceKeys[] = {
    "buffer_size_kb",
    "subbuf_size_kb",
    "mode",
    "clock",
    "staging",
    "writers",
    "adaptive_threshold",
    "cpus",
    "flight_recorder",
    "flight_dir",
    "synthetic_events",
    "systems",
    "events",
    "recording",
    "instances",
};
static_assert(kInstanceKeys[std::size(kInstanceKeys) - 1] == "instances");
// [instances.NAME]: the same but "recording" and "instances" (top level only).
constexpr std::span<const std::string_view> kNestedInstanceKeys(kInstanceKeys,
                                                                std::size(kInstanceKeys) - 2);
constexpr std::string_view kRecordingKeys[] = {"output",
                                               "collector",
                                               "mode",
                                               "watermark_percent",
                                               "flush_interval_ms",
                                               "max_poll_interval_us",
                                               "max_file_kb",
                                               "max_files",
                                               "file_version",
                                               "compression",
                                               "realtime_priority",
                                               "cpu",
                                               "block_timeout_us",
                                               "print_hist",
                                               "format"};

// "HOST:PORT" or "PORT" (trace-cmd record -N), port 1..65535; the recorder
// parses it again (core/record/net_sink.h).
bool collector_spelling(std::string_view s) {
  const size_t colon = s.rfind(':');
  const std::string_view port = colon == std::string_view::npos ? s : s.substr(colon + 1);
  if (colon == 0 || port.empty() || port.size() > 5) return false;
  unsigned v = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  return v >= 1 && v <= 65535;
}
constexpr std::string_view kEventKeys[] = {"enable", "filter", "soft_disable", "trigger"};
// [systems.NAME]: no soft_disable or trigger (the kernel has no system-wide ones).
constexpr std::span<const std::string_view> kSystemKeys(kEventKeys, 2);

struct Ctx {
  std::string file;

  uint32_t line_of(const toml::node& n) const {
    return static_cast<uint32_t>(n.source().begin.line);
  }

  [[noreturn]] void fail(const toml::node& n, const std::string& key,
                         const std::string& msg) const {
    throw ConfigError(file, line_of(n), key, msg);
  }

  ConfigSource where(const toml::node& n, const std::string& key) const {
    return {file, line_of(n), key};
  }

  bool get_bool(const toml::node& n, const std::string& key) const {
    if (auto v = n.value_exact<bool>()) return *v;
    fail(n, key, "expected a boolean (true or false)");
  }

  std::string get_string(const toml::node& n, const std::string& key) const {
    if (auto v = n.value_exact<std::string>()) return *v;
    fail(n, key, "expected a string");
  }

  int64_t get_int(const toml::node& n, const std::string& key, int64_t lo, int64_t hi) const {
    auto v = n.value_exact<int64_t>();
    if (!v) fail(n, key, "expected an integer");
    if (*v < lo || *v > hi)
      fail(n, key,
           "value " + std::to_string(*v) + " is outside " + std::to_string(lo) + ".." +
               std::to_string(hi));
    return *v;
  }

  double get_fraction(const toml::node& n, const std::string& key) const {
    std::optional<double> v = n.value_exact<double>();
    if (!v) {
      if (auto i = n.value_exact<int64_t>()) v = static_cast<double>(*i);
    }
    if (!v) fail(n, key, "expected a number between 0 and 1");
    if (!(*v >= 0.0 && *v <= 1.0)) fail(n, key, "expected a number between 0 and 1");
    return *v;
  }

  const toml::table& get_table(const toml::node& n, const std::string& key) const {
    if (const auto* t = n.as_table()) return *t;
    fail(n, key, "expected a table");
  }

  EventSettings parse_settings(const toml::table& t, const std::string& pattern,
                               const std::string& prefix, bool is_system) const {
    EventSettings s;
    s.pattern = pattern;
    s.where = where(t, prefix);
    for (auto [ks, vp] : in_file_order(t)) {
      const toml::node& v = *vp;
      const std::string key = join(prefix, ks);
      if (ks == "enable") {
        s.enable = get_bool(v, key);
        s.enable_where = where(v, key);
      } else if (ks == "filter") {
        s.filter = get_string(v, key);
        s.filter_where = where(v, key);
      } else if (ks == "soft_disable" && !is_system) {
        s.soft_disable = get_bool(v, key);
        s.soft_disable_where = where(v, key);
      } else if (ks == "trigger" && !is_system) {
        if (const auto* arr = v.as_array()) {
          for (const toml::node& e : *arr) s.triggers.push_back(get_string(e, key));
        } else {
          s.triggers.push_back(get_string(v, key));
        }
        s.trigger_where = where(v, key);
      } else {
        fail(v, key,
             unknown_key_message(
                 ks, is_system ? kSystemKeys : std::span<const std::string_view>(kEventKeys)));
      }
    }
    return s;
  }

  // What the Instance constructor would refuse about `writers`, reported
  // here at the writers key's line instead of as a bare std::invalid_argument
  // from Instance::from_config.
  void check_writers(const InstanceConfig& ic, const toml::node& writers,
                     const toml::node* cpus) const {
    if (ic.options.writers != WriterMode::cpu_local) return;
    const std::string& key = ic.writers_where.key;
    if (cpus != nullptr && ic.options.cpus != 0)
      fail(writers, key,
           "cpu_local needs one buffer per possible CPU, but cpus = " +
               std::to_string(ic.options.cpus) + " is set at line " +
               std::to_string(line_of(*cpus)) + " (remove cpus, or use writers = \"any_cpu\")");
    if (!buffers::detail::rseq_usable())
      fail(writers, key,
           "cpu_local needs rseq and membarrier RSEQ, unavailable in this process "
           "(use writers = \"auto\" or \"any_cpu\")");
  }

  // Rings larger than the machine are refused here, naming the key that
  // sized them (buffer_size_kb, else cpus), rather than zeroed for tens of
  // seconds when the instance is built (core/config/ring_memory.h).
  void check_ring_memory(const InstanceConfig& ic, const toml::node& table,
                         const std::string& prefix, const toml::node* size,
                         const toml::node* cpus) const {
    const std::string why = detail::ring_memory_refusal(ic.options);
    if (why.empty()) return;
    if (size != nullptr) fail(*size, join(prefix, "buffer_size_kb"), why);
    if (cpus != nullptr) fail(*cpus, join(prefix, "cpus"), why);
    fail(table, join(prefix, "buffer_size_kb"), why);
  }

  RecordingConfig parse_recording(const toml::table& t, const std::string& prefix) const {
    RecordingConfig r;
    r.where = where(t, prefix);
    for (auto [ks, vp] : in_file_order(t)) {
      const toml::node& v = *vp;
      const std::string key = join(prefix, ks);
      if (ks == "output") {
        r.output = get_string(v, key);
        if (r.output.empty()) fail(v, key, "expected a file name");
        if (!r.collector.empty()) fail(v, key, "output and collector both given (choose one)");
      } else if (ks == "collector") {
        r.collector = get_string(v, key);
        if (!collector_spelling(r.collector))
          fail(v, key, "expected HOST:PORT (as trace-cmd record -N takes it)");
        if (r.format != "tracedat")
          fail(v, key,
               "a collector with format " + r.format + ": trace-cmd listen takes trace.dat only");
        if (!r.output.empty()) fail(v, key, "output and collector both given (choose one)");
      } else if (ks == "file_version") {
        r.file_version = static_cast<uint32_t>(get_int(v, key, 6, 7));
      } else if (ks == "compression") {
        r.compression = get_string(v, key);
        if (r.compression != "zstd" && r.compression != "zlib" && r.compression != "none")
          fail(v, key, "unknown compression '" + r.compression + "' (expected zstd, zlib or none)");
      } else if (ks == "mode") {
        const std::string m = get_string(v, key);
        if (m != "stream" && m != "flight_recorder")
          fail(v, key, "unknown recording mode '" + m + "' (expected stream or flight_recorder)");
        r.flight_recorder = m == "flight_recorder";
      } else if (ks == "watermark_percent") {
        r.watermark_percent = static_cast<uint32_t>(get_int(v, key, 0, 100));
      } else if (ks == "flush_interval_ms") {
        r.flush_interval_ms = static_cast<uint32_t>(get_int(v, key, 1, 3'600'000));
      } else if (ks == "max_poll_interval_us") {
        r.max_poll_interval_us = static_cast<uint32_t>(get_int(v, key, 20, 1'000'000));
      } else if (ks == "max_file_kb") {
        r.max_file_kb = static_cast<uint64_t>(get_int(v, key, 0, int64_t{1} << 32));
      } else if (ks == "max_files") {
        r.max_files = static_cast<uint32_t>(get_int(v, key, 0, 1'000'000));
      } else if (ks == "realtime_priority") {
        r.realtime_priority = static_cast<uint32_t>(get_int(v, key, 0, 99));
      } else if (ks == "cpu") {
        r.cpu = static_cast<int32_t>(get_int(v, key, -1, 4095));
        // The recorder pins itself with pthread_setaffinity_np, whose failure
        // it cannot report: a CPU this process may not run on is refused here.
        cpu_set_t allowed;
        CPU_ZERO(&allowed);
        if (r.cpu >= 0 && ::sched_getaffinity(0, sizeof allowed, &allowed) == 0 &&
            (r.cpu >= CPU_SETSIZE || !CPU_ISSET(r.cpu, &allowed)))
          fail(v, key,
               "CPU " + std::to_string(r.cpu) +
                   " is not one this process may run on (see taskset -p, nproc); -1 pins nothing");
      } else if (ks == "block_timeout_us") {
        if (v.is_string()) {
          if (get_string(v, key) != "inf") fail(v, key, "expected microseconds or \"inf\"");
          r.block_timeout_us = -1;
        } else {
          r.block_timeout_us = get_int(v, key, 0, int64_t{1} << 40);
        }
      } else if (ks == "print_hist") {
        r.print_hist = get_bool(v, key);
      } else if (ks == "format") {
        r.format = get_string(v, key);
        if (r.format != "tracedat" && r.format != "perfetto" && r.format != "ctf")
          fail(v, key, "unknown format '" + r.format + "' (expected tracedat, perfetto or ctf)");
        if (r.format != "tracedat" && !r.collector.empty())
          fail(v, key,
               "format " + r.format + " with a collector: trace-cmd listen takes trace.dat only");
      } else {
        fail(v, key, unknown_key_message(ks, kRecordingKeys));
      }
    }
    return r;
  }

  InstanceConfig parse_instance(const toml::table& t, const std::string& name,
                                const std::string& prefix, bool top,
                                std::vector<const toml::table*>* nested,
                                std::vector<std::string>* nested_names,
                                std::optional<RecordingConfig>* recording = nullptr) const {
    InstanceConfig ic;
    ic.file = file;
    ic.options.name = name;
    const toml::node* writers_node = nullptr;
    const toml::node* cpus_node = nullptr;
    const toml::node* size_node = nullptr;
    for (auto [ksv, vp] : in_file_order(t)) {
      const toml::node& v = *vp;
      const std::string ks(ksv);
      const std::string key = join(prefix, ks);
      if (ks == "buffer_size_kb") {
        ic.options.buffer_size_kb =
            static_cast<uint64_t>(get_int(v, key, 1, int64_t{kMaxBufferSizeKb}));
        size_node = &v;
      } else if (ks == "subbuf_size_kb") {
        const auto kb = get_int(v, key, kMinSubbufSizeKb, kMaxSubbufSizeKb);
        if ((kb & (kb - 1)) != 0) fail(v, key, "must be a power of two (4, 8, 16, ...)");
        ic.options.subbuf_size_kb = static_cast<uint32_t>(kb);
      } else if (ks == "mode") {
        const std::string s = get_string(v, key);
        auto m = parse_buffer_mode(s);
        if (!m) fail(v, key, "unknown mode '" + s + "' (expected overwrite or drop_newest)");
        ic.options.mode = *m;
      } else if (ks == "clock") {
        const std::string s = get_string(v, key);
        auto c = parse_trace_clock(s);
        if (!c)
          fail(v, key,
               "unknown clock '" + s + "' (expected one of: " + trace_clock_list(ClockId::local) +
                   ")");
        ic.options.clock = *c;
      } else if (ks == "staging") {
        const std::string s = get_string(v, key);
        auto st = parse_staging(s);
        if (!st)
          fail(v, key,
               "unknown staging '" + s + "' (expected on, off, per_cpu, per_thread or adaptive)");
        ic.options.staging = *st;
      } else if (ks == "writers") {
        const std::string s = get_string(v, key);
        auto w = parse_writer_mode(s);
        if (!w) fail(v, key, "unknown writers '" + s + "' (expected auto, any_cpu or cpu_local)");
        ic.options.writers = *w;
        ic.writers_where = where(v, key);
        writers_node = &v;
      } else if (ks == "adaptive_threshold") {
        ic.options.adaptive_threshold = get_fraction(v, key);
      } else if (ks == "cpus") {
        ic.options.cpus = static_cast<uint32_t>(get_int(v, key, 0, kMaxCpus));
        cpus_node = &v;
      } else if (ks == "flight_recorder") {
        ic.options.flight_recorder = get_bool(v, key);
      } else if (ks == "flight_dir") {
        ic.options.flight_dir = get_string(v, key);
        if (ic.options.flight_dir.empty()) fail(v, key, "must name a directory");
      } else if (ks == "synthetic_events") {
        if (const toml::array* arr = v.as_array())
          for (const toml::node& e : *arr) ic.synthetic_events.push_back(get_string(e, key));
        else
          ic.synthetic_events.push_back(get_string(v, key));
        ic.synthetic_where = where(v, key);
      } else if (ks == "systems") {
        for (auto [sk, sv] : in_file_order(get_table(v, key))) {
          const std::string skey = join(key, sk);
          ic.systems.push_back(parse_settings(get_table(*sv, skey), std::string(sk), skey, true));
        }
      } else if (ks == "events") {
        for (auto [ek, ev] : in_file_order(get_table(v, key))) {
          const std::string ekey = join(key, ek);
          ic.events.push_back(parse_settings(get_table(*ev, ekey), std::string(ek), ekey, false));
        }
      } else if (ks == "recording" && top && recording != nullptr) {
        *recording = parse_recording(get_table(v, key), key);
      } else if (ks == "instances" && top) {
        for (auto [ik, iv] : in_file_order(get_table(v, key))) {
          const std::string ikey = join(key, ik);
          if (ik == "main")
            fail(*iv, ikey, "'main' is the top level of the file; choose another name");
          nested->push_back(&get_table(*iv, ikey));
          nested_names->push_back(std::string(ik));
        }
      } else {
        fail(v, key,
             unknown_key_message(
                 ks, top ? std::span<const std::string_view>(kInstanceKeys) : kNestedInstanceKeys));
      }
    }
    if (writers_node != nullptr) check_writers(ic, *writers_node, cpus_node);
    check_ring_memory(ic, t, prefix, size_node, cpus_node);
    return ic;
  }
};

}  // namespace

namespace {

// Line `line` (1-based) of `text`, without its newline; empty past the end.
std::string_view line_at(std::string_view text, uint64_t line) {
  for (uint64_t l = 1; l < line; ++l) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return {};
    text.remove_prefix(nl + 1);
  }
  return text.substr(0, text.find('\n'));
}

// The key of a `[a."b c".d]` table header on `line`, as our error keys spell
// it (key_segment quoting), or nullopt if the line holds no such header.
// Bare, "basic" (with \" and \\ escapes) and 'literal' segments.
std::optional<std::string> table_header_key(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line[i] != '[' || line.substr(i, 2) == "[[")
    return std::nullopt;
  ++i;
  std::string key;
  while (true) {
    i = line.find_first_not_of(" \t", i);
    if (i == std::string_view::npos) return std::nullopt;
    std::string seg;
    if (line[i] == '"' || line[i] == '\'') {
      const char q = line[i++];
      while (i < line.size() && line[i] != q) {
        if (q == '"' && line[i] == '\\' && i + 1 < line.size()) ++i;
        seg += line[i++];
      }
      if (i == line.size()) return std::nullopt;
      ++i;
    } else {
      while (i < line.size() && line[i] != '.' && line[i] != ']' && line[i] != ' ' &&
             line[i] != '\t')
        seg += line[i++];
      if (seg.empty()) return std::nullopt;
    }
    key = key.empty() ? key_segment(seg) : key + "." + key_segment(seg);
    i = line.find_first_not_of(" \t", i);
    if (i == std::string_view::npos) return std::nullopt;
    if (line[i] == ']') return key;
    if (line[i] != '.') return std::nullopt;
    ++i;
  }
}

// toml++ reports a table defined twice as "cannot redefine existing table
// 'KEY'", and may garble KEY (quoted segments lose or repeat characters).
// Rebuilt from the header line itself: "FILE:LINE: KEY: table defined twice
// (first at line N)". nullopt for any other parse error.
std::optional<ConfigError> duplicate_table_error(std::string_view text, const std::string& file,
                                                 const toml::parse_error& e) {
  if (e.description().find("cannot redefine existing table") == std::string_view::npos)
    return std::nullopt;
  const uint64_t line = e.source().begin.line;
  const std::optional<std::string> key = table_header_key(line_at(text, line));
  if (!key) return std::nullopt;
  std::string msg = "table defined twice";
  for (uint64_t l = 1; l < line; ++l) {
    if (table_header_key(line_at(text, l)) == key) {
      msg += " (first at line " + std::to_string(l) + ")";
      break;
    }
  }
  return ConfigError(file, static_cast<uint32_t>(line), *key, msg);
}

}  // namespace

Config parse_config(std::string_view toml_text, std::string_view file) {
  Ctx ctx{std::string(file)};
  toml::table root;
  try {
    root = toml::parse(toml_text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    if (auto dup = duplicate_table_error(toml_text, ctx.file, e)) throw *dup;
    throw ConfigError(ctx.file, static_cast<uint32_t>(e.source().begin.line), "",
                      std::string(e.description()));
  }
  Config cfg;
  std::vector<const toml::table*> nested;
  std::vector<std::string> names;
  cfg.instances.push_back(
      ctx.parse_instance(root, "main", "", true, &nested, &names, &cfg.recording));
  for (size_t i = 0; i < nested.size(); ++i)
    cfg.instances.push_back(ctx.parse_instance(
        *nested[i], names[i], "instances." + key_segment(names[i]), false, nullptr, nullptr));
  return cfg;
}

namespace {

// load_config refuses a larger file (bytes).
constexpr uint64_t kMaxConfigBytes = uint64_t{64} << 20;

// The whole text of a config file: a regular file only, at most
// kMaxConfigBytes (core/files/input_file.h says why and how), with the errors in
// ConfigError's "FILE: message" form.
std::string read_config_text(const std::filesystem::path& file) {
  const std::string name = file.string();
  try {
    return read_regular_file(file, kMaxConfigBytes);
  } catch (const InputFileError& e) {
    const bool size = e.problem().find("limit of") != std::string::npos;
    throw ConfigError(name, 0, "", e.problem() + (size ? " for a config file" : ""));
  }
}

}  // namespace

Config load_config(const std::filesystem::path& file) {
  return parse_config(read_config_text(file), file.string());
}

}  // namespace tracepipe
