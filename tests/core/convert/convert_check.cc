#include "convert_check.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "test_support.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tp_convert_test {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "0x1f" -> "31"; decimal text as it is.
std::string canon_num(std::string_view s) {
  s = trim(s);
  if (s == "(nil)") return "0";  // %p of a null pointer
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    return std::to_string(std::stoull(std::string(s.substr(2)), nullptr, 16));
  return std::string(s);
}

std::vector<std::string_view> lines_of(const std::string& text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    out.emplace_back(text.data() + i, j - i);
    i = j + 1;
  }
  return out;
}

std::string run_or_throw(const std::vector<std::string>& argv,
                         const std::filesystem::path& scratch) {
  const auto r = tp_test::run_command(argv, scratch, 300);
  if (r.status != 0)
    throw std::runtime_error(
        fmt::format("{} exited {}: {}", argv[0], r.status, r.err.substr(0, 2000)));
  return r.out;
}

// C/protobuf text escapes: \n \t \" \' \\ \NNN (octal) \xNN.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'x': {
        int v = 0, k = 0;
        while (k < 2 && i + 1 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1]))) {
          v = v * 16 + std::stoi(std::string(1, s[++i]), nullptr, 16);
          ++k;
        }
        out += static_cast<char>(v);
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          int v = c - '0', k = 1;
          while (k < 3 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7') {
            v = v * 8 + (s[++i] - '0');
            ++k;
          }
          out += static_cast<char>(v);
        } else {
          out += c;
        }
    }
  }
  return out;
}

// ---- babeltrace2's pretty text: { a = 1, b = "x", c = [ [0] = 1, [1] = 2 ] }
struct BtParser {
  std::string_view s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && s[i] == ' ') ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  std::string value() {
    ws();
    if (i < s.size() && s[i] == '"') {
      ++i;
      std::string raw;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) raw += s[i++];
        raw += s[i++];
      }
      ++i;
      return unescape(raw);
    }
    if (i < s.size() && s[i] == '[') {  // array: [ [0] = v, ... ]
      ++i;
      std::string out = "LIST:";
      bool first = true;
      while (!eat(']')) {
        eat('[');
        while (i < s.size() && s[i] != ']') ++i;
        ++i;
        eat('=');
        if (!first) out += ',';
        out += value();
        first = false;
        eat(',');
      }
      return out;
    }
    size_t j = i;
    while (j < s.size() && s[j] != ',' && s[j] != ' ' && s[j] != '}' && s[j] != ']') ++j;
    const auto tok = s.substr(i, j - i);
    i = j;
    return canon_num(tok);
  }
  std::vector<std::pair<std::string, std::string>> fields() {
    std::vector<std::pair<std::string, std::string>> out;
    if (!eat('{')) throw std::runtime_error("babeltrace2 text: expected '{'");
    while (!eat('}')) {
      ws();
      size_t j = i;
      while (j < s.size() && s[j] != ' ' && s[j] != '=') ++j;
      std::string name(s.substr(i, j - i));
      i = j;
      eat('=');
      out.emplace_back(std::move(name), value());
      eat(',');
    }
    return out;
  }
};

bool list_equals_array(std::string_view array, std::string_view list) {
  // array: ARRAY[04, 00, ...] bytes; list: LIST:v0,v1,... elements (decimal).
  std::vector<uint8_t> bytes;
  std::string_view a = array.substr(6, array.size() - 7);
  while (!a.empty()) {
    a = trim(a);
    bytes.push_back(static_cast<uint8_t>(std::stoul(std::string(a.substr(0, 2)), nullptr, 16)));
    a.remove_prefix(std::min<size_t>(a.size(), 2));
    if (!a.empty() && a.front() == ',') a.remove_prefix(1);
  }
  std::vector<std::string> elems;
  std::string_view l = list.substr(5);
  while (!l.empty()) {
    const size_t c = l.find(',');
    elems.emplace_back(l.substr(0, c));
    if (c == std::string_view::npos) break;
    l.remove_prefix(c + 1);
  }
  if (elems.empty()) return bytes.empty();
  if (bytes.size() % elems.size()) return false;
  const size_t es = bytes.size() / elems.size();
  for (size_t k = 0; k < elems.size(); ++k) {
    uint64_t v = 0;
    for (size_t b = 0; b < es; ++b) v |= static_cast<uint64_t>(bytes[k * es + b]) << (8 * b);
    const int64_t sv = es < 8 && (v >> (8 * es - 1)) ? static_cast<int64_t>(v | (~0ull << (8 * es)))
                                                     : static_cast<int64_t>(v);
    if (elems[k] != std::to_string(v) && elems[k] != std::to_string(sv)) return false;
  }
  return true;
}

bool all_of_set(std::string_view s, std::string_view set) {
  return !s.empty() && s.find_first_not_of(set) == std::string_view::npos;
}

bool value_equals(const std::string& want, const std::string& got) {
  if (want == got) return true;
  if (want.starts_with("ARRAY[") && got.starts_with("LIST:")) return list_equals_array(want, got);
  // trace-cmd -R prints a field with its print fmt's conversion when it has
  // one: "%02x" gives "fe" for 254, "%x" of -1 gives "ffffffff".
  if (all_of_set(want, "0123456789abcdef") && all_of_set(got, "-0123456789") && want.size() <= 16) {
    const uint64_t h = std::stoull(want, nullptr, 16);
    const uint64_t g = got[0] == '-' ? static_cast<uint64_t>(std::stoll(got)) : std::stoull(got);
    if (h == g) return true;
    for (const unsigned bits : {8u, 16u, 32u})
      if (want.size() * 4 <= bits && h == (g & ((1ull << bits) - 1))) return true;
  }
  // libtraceevent prints an s8/s16 field through "%d" without sign
  // extension (-127 as 129): the same bits.
  if (all_of_set(want, "0123456789") && got.starts_with("-") &&
      all_of_set(got.substr(1), "0123456789")) {
    const uint64_t w = std::stoull(want);
    const int64_t g = std::stoll(got);
    for (const unsigned bits : {8u, 16u})
      if (w < (1ull << bits) && g >= -(1ll << (bits - 1)) &&
          w == (static_cast<uint64_t>(g) & ((1ull << bits) - 1)))
        return true;
  }
  return false;
}

}  // namespace

std::vector<Rec> tracecmd_records(const std::filesystem::path& dat,
                                  const std::filesystem::path& scratch) {
  const auto reader = tracepipe::TraceDatReader::open(dat);
  std::unordered_map<std::string, const tracepipe::EventFormat*> by_name;
  for (const auto& f : reader.formats()) by_name.emplace(f.name, &f);
  const std::string out = run_or_throw({"trace-cmd", "report", "-R", "-t", dat.string()}, scratch);
  std::vector<Rec> recs;
  for (std::string_view line : lines_of(out)) {
    const size_t br = line.find(" [");
    if (br == std::string_view::npos || line.starts_with("cpus=") || line.starts_with("CPU:"))
      continue;
    const size_t close = line.find("] ", br);
    if (close == std::string_view::npos) continue;
    Rec r;
    const std::string_view who = trim(line.substr(0, br));
    r.pid = std::stoll(std::string(who.substr(who.rfind('-') + 1)));
    r.cpu = static_cast<uint32_t>(std::stoul(std::string(line.substr(br + 2, close - br - 2))));
    std::string_view rest = trim(line.substr(close + 1));
    const size_t colon = rest.find(": ");
    const std::string_view ts = rest.substr(0, colon);
    const size_t dot = ts.find('.');
    r.ts = std::stoull(std::string(ts.substr(0, dot))) * 1000000000ull +
           std::stoull(std::string(ts.substr(dot + 1)));
    rest = rest.substr(colon + 2);
    const size_t ec = rest.find(':');
    r.event = std::string(rest.substr(0, ec));
    rest = trim(rest.substr(ec + 1));
    const auto it = by_name.find(r.event);
    if (it == by_name.end())
      throw std::runtime_error("trace-cmd printed an event without a format: " + r.event);
    const auto& fs = it->second->fields;
    size_t pos = 0;
    for (size_t k = 0; k < fs.size(); ++k) {
      const std::string key = fs[k].name + "=";
      if (rest.compare(pos, key.size(), key) != 0)
        throw std::runtime_error(
            fmt::format("trace-cmd -R line: expected '{}' at {}: {}", key, pos, line));
      const size_t vb = pos + key.size();
      size_t ve = rest.size();
      if (k + 1 < fs.size()) ve = rest.find(" " + fs[k + 1].name + "=", vb);
      if (ve == std::string_view::npos)
        throw std::runtime_error("trace-cmd -R line: " + std::string(line));
      const std::string_view v = rest.substr(vb, ve - vb);
      const bool text = fs[k].is_string();
      r.fields.emplace_back(
          fs[k].name,
          text ? std::string(v) : (v.starts_with("ARRAY[") ? std::string(v) : canon_num(v)));
      pos = ve + 1;
    }
    recs.push_back(std::move(r));
  }
  return recs;
}

std::vector<Rec> babeltrace_records(const std::filesystem::path& dir,
                                    const std::filesystem::path& scratch,
                                    std::vector<std::pair<uint32_t, uint64_t>>* lost) {
  const auto r = tp_test::run_command({"babeltrace2", "--clock-cycles", "--no-delta", dir.string()},
                                      scratch, 300);
  if (r.status != 0)
    throw std::runtime_error(
        fmt::format("babeltrace2 exited {}: {}", r.status, r.err.substr(0, 3000)));
  if (lost) {
    // "WARNING: Tracer discarded 3 events between [...] and [...] in trace ... (CPU 1)": parse
    // count and CPU.
    for (std::string_view line : lines_of(r.err)) {
      const size_t d = line.find("discarded ");
      // "may have discarded events": a count the reader could not tell (none here).
      if (d == std::string_view::npos || line.find("may have discarded") != std::string_view::npos)
        continue;
      const uint64_t n = std::stoull(std::string(line.substr(d + 10)));
      uint32_t cpu = UINT32_MAX;
      if (const size_t c = line.find("CPU "); c != std::string_view::npos)
        cpu = static_cast<uint32_t>(std::stoul(std::string(line.substr(c + 4))));
      if (const size_t c = line.find("cpu_id = "); c != std::string_view::npos)
        cpu = static_cast<uint32_t>(std::stoul(std::string(line.substr(c + 9))));
      // babeltrace2 2.0 names the stream only: "within stream \".../channel0_1\"".
      if (const size_t c = line.find("/channel0_");
          cpu == UINT32_MAX && c != std::string_view::npos)
        cpu = static_cast<uint32_t>(std::stoul(std::string(line.substr(c + 10))));
      lost->emplace_back(cpu, n);
    }
  }
  std::vector<Rec> recs;
  for (std::string_view line : lines_of(r.out)) {
    if (line.empty() || line[0] != '[') continue;
    Rec rec;
    const size_t cb = line.find(']');
    rec.ts = std::stoull(std::string(line.substr(1, cb - 1)));
    const size_t nb = cb + 2;
    const size_t ne = line.find(": {", nb);
    rec.event = std::string(line.substr(nb, ne - nb));
    if (const size_t colon = rec.event.find(':'); colon != std::string::npos)
      rec.event = rec.event.substr(colon + 1);
    BtParser p{line, ne + 2};
    const auto ctx = p.fields();
    for (const auto& [k, v] : ctx)
      if (k == "cpu_id") rec.cpu = static_cast<uint32_t>(std::stoul(v));
    p.eat(',');
    const auto payload = p.fields();
    for (const auto& [k, v] : payload) {
      if (k == "common_pid") rec.pid = std::stoll(v);
      if (k.starts_with("common_")) continue;
      // A sequence's element count, `_NAME_length` before NAME: not a field of the format.
      if (k.starts_with("_") && k.ends_with("_length")) {
        const std::string of = k.substr(1, k.size() - 8);
        bool seq = false;
        for (const auto& f : payload)
          seq |= f.first == of && (f.second.starts_with("LIST:") || f.second.empty());
        if (seq) continue;
      }
      rec.fields.emplace_back(k, v);
    }
    recs.push_back(std::move(rec));
  }
  return recs;
}

void babeltrace_or_skip() {
  if (std::system("command -v babeltrace2 >/dev/null 2>&1") != 0)
    tp_test::skip("babeltrace2 is not installed (scripts/setup.sh installs it)");
}

std::filesystem::path perfetto_proto_or_skip() {
  const auto p = std::filesystem::path(TP_SHARED_DATA) / ".." / "reference" / "perfetto" /
                 "perfetto_trace.proto";
  if (!std::filesystem::exists(p)) tp_test::skip("Perfetto's schema is absent: " + p.string());
  if (std::system("command -v protoc >/dev/null 2>&1") != 0)
    tp_test::skip("protoc is not installed (protobuf-compiler)");
  return p;
}

std::vector<Rec> protoc_records(const std::filesystem::path& trace,
                                const std::filesystem::path& scratch, PerfettoExtras* extras) {
  const auto proto = perfetto_proto_or_skip();
  const std::string cmd = fmt::format(
      "protoc --proto_path={} --decode=perfetto.protos.Trace perfetto_trace.proto < {}",
      tp_test::shell_quote(proto.parent_path().string()), tp_test::shell_quote(trace.string()));
  const std::string out = run_or_throw({"sh", "-c", cmd}, scratch);
  PerfettoExtras local;
  PerfettoExtras& ex = extras ? *extras : local;
  std::vector<Rec> recs;
  std::vector<std::string> stack;
  uint32_t bundle_cpu = 0;
  Rec* cur = nullptr;
  std::string field_name, field_value;
  bool end_stats = false;
  uint64_t stats_cpu = 0;
  int64_t tid = 0, tgid = -1;
  std::string tname;
  for (std::string_view line : lines_of(out)) {
    line = trim(line);
    if (line.empty()) continue;
    if (line == "}") {
      const std::string closed = stack.back();
      stack.pop_back();
      if (closed == "event" && stack.size() >= 1 && stack.back() == "ftrace_events") cur = nullptr;
      if (closed == "field" && cur) cur->fields.emplace_back(field_name, field_value);
      if (closed == "threads") {
        ex.threads.emplace_back(tid, tname);
        ex.thread_tgids.push_back(tgid);
      }
      continue;
    }
    if (line.back() == '{') {
      std::string name(trim(line.substr(0, line.size() - 1)));
      if (name == "packet") ++ex.packets;
      if (name == "event" && !stack.empty() && stack.back() == "ftrace_events") {
        recs.emplace_back();
        cur = &recs.back();
        cur->cpu = bundle_cpu;
      } else if (cur && stack.back() == "event" && name != "generic") {
        cur->event = name;  // a typed message
      }
      if (name == "threads") {
        tid = 0;
        tgid = -1;
        tname.clear();
      }
      stack.push_back(std::move(name));
      continue;
    }
    const size_t colon = line.find(": ");
    if (colon == std::string_view::npos) continue;
    const std::string key(line.substr(0, colon));
    std::string_view val = line.substr(colon + 2);
    const std::string value =
        val.starts_with("\"") ? unescape(val.substr(1, val.size() - 2)) : std::string(val);
    const std::string& where = stack.empty() ? std::string() : stack.back();
    if (where == "ftrace_events") {
      if (key == "cpu") bundle_cpu = static_cast<uint32_t>(std::stoul(value));
      if (key == "lost_events" && value == "true") ex.lost_bundles.push_back(bundle_cpu);
      if (key == "ftrace_clock") ex.clocks.push_back(value);
    } else if (where == "event" && cur) {
      if (key == "timestamp") cur->ts = std::stoull(value);
      if (key == "pid") cur->pid = std::stoll(value);
    } else if (where == "generic" && cur) {
      if (key == "event_name") cur->event = value;
    } else if (where == "field" && cur) {
      if (key == "name")
        field_name = value;
      else
        field_value = value;
    } else if (cur && stack.size() >= 2 && stack[stack.size() - 2] == "event") {
      // A typed message's field: repeated ones become a list.
      if (!cur->fields.empty() && cur->fields.back().first == key) {
        std::string& v = cur->fields.back().second;
        if (!v.starts_with("LIST:")) v = "LIST:" + v;
        v += "," + value;
      } else {
        cur->fields.emplace_back(key, value);
      }
      if (key == "args" && !cur->fields.back().second.starts_with("LIST:"))
        cur->fields.back().second = "LIST:" + cur->fields.back().second;
    } else if (where == "ftrace_stats") {
      if (key == "phase") end_stats = value == "END_OF_TRACE";
    } else if (where == "cpu_stats" && end_stats) {
      if (key == "cpu") stats_cpu = std::stoull(value);
      if (key == "overrun")
        ex.overrun.emplace_back(static_cast<uint32_t>(stats_cpu), std::stoull(value));
    } else if (where == "threads") {
      if (key == "tid") tid = std::stoll(value);
      if (key == "tgid") tgid = std::stoll(value);
      if (key == "name") tname = value;
    }
  }
  return recs;
}

std::string compare(const std::vector<Rec>& expected, const std::vector<Rec>& actual,
                    uint64_t* stale_empty) {
  std::map<uint32_t, std::vector<const Rec*>> want, got;
  for (const auto& r : expected) want[r.cpu].push_back(&r);
  for (const auto& r : actual) got[r.cpu].push_back(&r);
  if (expected.size() != actual.size())
    return fmt::format("{} records expected, {} read", expected.size(), actual.size());
  for (const auto& [cpu, w] : want) {
    const auto& g = got[cpu];
    if (w.size() != g.size())
      return fmt::format("cpu {}: {} records expected, {} read", cpu, w.size(), g.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const Rec& a = *w[i];
      const Rec& b = *g[i];
      const auto where = fmt::format("cpu {} record {} ({} at {})", cpu, i, a.event, a.ts);
      if (a.ts != b.ts) return fmt::format("{}: time stamp {} read as {}", where, a.ts, b.ts);
      if (a.event != b.event) return fmt::format("{}: event read as {}", where, b.event);
      if (a.pid >= 0 && b.pid >= 0 && a.pid != b.pid)
        return fmt::format("{}: pid {} read as {}", where, a.pid, b.pid);
      if (a.fields.size() != b.fields.size())
        return fmt::format("{}: {} fields expected, {} read", where, a.fields.size(),
                           b.fields.size());
      for (size_t k = 0; k < a.fields.size(); ++k) {
        // By name: protoc prints a typed message's fields in field-number order.
        const std::pair<std::string, std::string>* m = nullptr;
        for (const auto& f : b.fields)
          if (f.first == a.fields[k].first) m = &f;
        if (!m) return fmt::format("{}: field {} missing", where, a.fields[k].first);
        if (stale_empty && a.fields[k].second.empty() && !m->second.empty() &&
            !m->second.starts_with("LIST:")) {
          ++*stale_empty;  // babeltrace2 2.0's stale empty string (see convert_check.h)
          continue;
        }
        if (!value_equals(a.fields[k].second, m->second))
          return fmt::format("{}: {}={} read as {}", where, a.fields[k].first, a.fields[k].second,
                             m->second);
      }
    }
  }
  return "";
}

}  // namespace tp_convert_test
