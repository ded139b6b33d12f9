#include "tracepipe/core/tracedat/trace_report.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>

namespace tracepipe {
namespace {

// Clocks trace-cmd 3.1 prints as seconds; any other name prints raw counts.
bool is_ns_clock(std::string_view clock) {
  if (clock.empty()) return true;  // no clock recorded: trace-cmd assumes ns
  for (std::string_view c : {"local", "global", "uptime", "perf", "mono", "mono_raw", "tai"})
    if (clock == c) return true;
  return false;
}

std::optional<uint64_t> read_field(const EventFormat& f, std::span<const std::byte> p,
                                   std::string_view name, bool sign = false) {
  const FormatField* fld = f.find_field(name);
  if (!fld || fld->is_array() || fld->size == 0 || fld->size > 8 ||
      uint64_t{fld->offset} + fld->size > p.size())
    return std::nullopt;
  uint64_t v = 0;
  std::memcpy(&v, p.data() + fld->offset, fld->size);
  if (sign && fld->is_signed && fld->size < 8) {
    const uint64_t m = uint64_t{1} << (fld->size * 8 - 1);
    v = (v ^ m) - m;
  }
  return v;
}

std::optional<std::string_view> read_comm(const EventFormat& f, std::span<const std::byte> p,
                                          std::string_view name) {
  const FormatField* fld = f.find_field(name);
  if (!fld || !fld->is_array() || fld->is_dynamic() || uint64_t{fld->offset} + fld->size > p.size())
    return std::nullopt;
  const auto* s = reinterpret_cast<const char*>(p.data() + fld->offset);
  return std::string_view(s, strnlen(s, fld->size));
}

// plugin_sched_switch's task state letters: one per bit, '|' between,
// "R" when no bit is set (its own table, which predates the kernel's
// current one: 0x10 prints 'Z', 0x20 'X', 0x40 'x', 0x80 'W').
void write_state(fmt::memory_buffer& out, uint64_t state) {
  static constexpr std::string_view kStates = "SDTtZXxW";
  bool found = false;
  for (size_t i = 0; i < kStates.size(); ++i) {
    if (!(state & (uint64_t{1} << i))) continue;
    if (found) out.push_back('|');
    out.push_back(kStates[i]);
    found = true;
  }
  if (!found) out.push_back('R');
}

}  // namespace

TraceReport::TraceReport(const TraceDatReader& reader, ReportOptions options)
    : reader_(reader),
      opt_(options),
      ns_clock_(is_ns_clock(reader.clock_name())),
      kallsyms_(reader.kallsyms_text()),
      printk_(reader.printk_text()) {
  // trace-cmd registers saved_cmdlines in file order.
  std::string_view text = reader.cmdlines_text();
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const auto sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    int32_t pid = 0;
    const auto [p, ec] = std::from_chars(line.data(), line.data() + sp, pid);
    if (ec == std::errc{} && p == line.data() + sp) comms_.register_comm(pid, line.substr(sp + 1));
  }
  printers_.reserve(reader.formats().size());
  for (const auto& f : reader.formats()) printers_.push_back(std::make_unique<PrintFmt>(f));
}

std::string TraceReport::header() const { return fmt::format("cpus={}\n", reader_.cpu_count()); }

void CommTable::register_comm(int32_t pid, std::string_view comm) {
  if (!init_) {
    entries_.emplace_back(pid, comm);  // any pid, duplicates included
    return;
  }
  if (pid == 0 || search(pid)) return;  // never overrides
  const auto at = std::upper_bound(entries_.begin(), entries_.end(), pid,
                                   [](int32_t p, const auto& e) { return p < e.first; });
  entries_.emplace(at, pid, comm);
}

void CommTable::init() {
  std::reverse(entries_.begin(), entries_.end());  // the list was built newest first
  std::stable_sort(entries_.begin(), entries_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  init_ = true;
}

const std::pair<int32_t, std::string>* CommTable::search(int32_t pid) const {
  // The classic bisection (glibc bsearch): with duplicate pids, which one it
  // lands on depends on their positions, as in trace-cmd.
  size_t l = 0, u = entries_.size();
  while (l < u) {
    const size_t idx = (l + u) / 2;
    const int32_t p = entries_[idx].first;
    if (pid < p)
      u = idx;
    else if (pid > p)
      l = idx + 1;
    else
      return &entries_[idx];
  }
  return nullptr;
}

std::string_view CommTable::find(int32_t pid) {
  if (pid == 0) return "<idle>";
  if (!init_) init();
  const auto* e = search(pid);
  return e ? std::string_view(e->second) : std::string_view("<...>");
}

bool TraceReport::plugin(const EventFormat& f, std::span<const std::byte> p,
                         fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  if (f.system == "sched" && f.name == "sched_switch") {
    const auto prev_pid = read_field(f, p, "prev_pid", true);
    const auto next_pid = read_field(f, p, "next_pid", true);
    const auto prev_comm = read_comm(f, p, "prev_comm");
    const auto next_comm = read_comm(f, p, "next_comm");
    const auto prev_prio = read_field(f, p, "prev_prio", true);
    const auto next_prio = read_field(f, p, "next_prio", true);
    const auto prev_state = read_field(f, p, "prev_state");
    if (!prev_pid || !next_pid || !prev_comm || !next_comm || !prev_prio || !next_prio ||
        !prev_state)
      return false;
    comms_.register_comm(static_cast<int32_t>(*prev_pid), *prev_comm);
    comms_.register_comm(static_cast<int32_t>(*next_pid), *next_comm);
    fmt::format_to(it, "{}:{} [{}] ", *prev_comm, static_cast<int64_t>(*prev_pid),
                   static_cast<int32_t>(*prev_prio));
    write_state(out, *prev_state);
    fmt::format_to(it, " ==> {}:{} [{}]", *next_comm, static_cast<int64_t>(*next_pid),
                   static_cast<int32_t>(*next_prio));
    return true;
  }
  if (f.system == "sched" && (f.name == "sched_wakeup" || f.name == "sched_wakeup_new")) {
    const auto pid = read_field(f, p, "pid", true);
    const auto c = read_comm(f, p, "comm");
    const auto prio = read_field(f, p, "prio", true);
    const auto cpu = read_field(f, p, "target_cpu", true);
    if (!pid || !c || !prio || !cpu) return false;
    comms_.register_comm(static_cast<int32_t>(*pid), *c);
    fmt::format_to(it, "{}:{} [{}] CPU:{:03}", *c, static_cast<int32_t>(*pid),
                   static_cast<int32_t>(*prio), *cpu);
    return true;
  }
  if (f.system == "ftrace" && f.name == "kernel_stack") {
    // libtraceevent's function plugin: every word from caller[] to the
    // record's end, up to a ~0.
    const FormatField* field = f.find_field("caller");
    if (field == nullptr) return false;
    out.append(std::string_view("<stack trace >"));
    for (size_t off = field->offset; off + 8 <= p.size(); off += 8) {
      uint64_t addr;
      std::memcpy(&addr, p.data() + off, 8);
      if (addr == ~uint64_t{0} || static_cast<uint32_t>(addr) == ~uint32_t{0}) break;
      if (const auto hit = kallsyms_.lookup(addr))
        fmt::format_to(it, "\n=> {} ({:x})", hit->name, addr);
      else
        fmt::format_to(it, "\n=> {:x}", addr);
    }
    return true;
  }
  if (f.system == "timer" && f.name == "hrtimer_start") {
    auto timer = read_field(f, p, "timer");
    if (!timer) timer = read_field(f, p, "hrtimer");
    const auto function = read_field(f, p, "function");
    const auto expires = read_field(f, p, "expires");
    const auto soft = read_field(f, p, "softexpires");
    if (!timer || !function || !expires || !soft) return false;
    fmt::format_to(it, "hrtimer=0x{:x} function=", *timer);
    if (const auto hit = kallsyms_.lookup(*function))
      out.append(hit->name);
    else
      fmt::format_to(it, "0x{:08x}", *function);
    fmt::format_to(it, " expires={} softexpires={}", *expires, *soft);
    return true;
  }
  return false;
}

void TraceReport::format(const TraceRecord& rec, fmt::memory_buffer& out) {
  format_with(rec, ns_clock_, out);
}

void TraceReport::format_with(const TraceRecord& rec, bool ns_clock, fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  if (rec.lost_before > 0)
    fmt::format_to(it, "CPU:{} [{} EVENTS DROPPED]\n", rec.cpu, rec.lost_before);
  else if (rec.lost_before < 0)
    fmt::format_to(it, "CPU:{} [EVENTS DROPPED]\n", rec.cpu);

  int32_t pid = 0;
  if (rec.payload.size() >= 8) std::memcpy(&pid, rec.payload.data() + 4, 4);
  fmt::format_to(it, "{:>16}-{:<5} [{:03}]", comms_.find(pid), pid, rec.cpu);
  if (!ns_clock) {
    fmt::format_to(it, "{:12}: ", rec.ts);
  } else if (opt_.ns_timestamps) {
    fmt::format_to(it, " {:5}.{:09}: ", rec.ts / 1000000000u, rec.ts % 1000000000u);
  } else {
    // libtraceevent rounds to the nearest microsecond (and prints
    // 1000000 when that carries, which we keep).
    fmt::format_to(it, " {:5}.{:06}: ", rec.ts / 1000000000u, (rec.ts % 1000000000u + 500) / 1000u);
  }
  const auto id = rec.event_id();
  const EventFormat* f = id ? reader_.format(*id) : nullptr;
  if (!f) {
    fmt::format_to(it, "[UNKNOWN TYPE {}]\n", id ? static_cast<int>(*id) : -1);
    return;
  }
  fmt::format_to(it, "{}: {:{}}", f->name, "", f->name.size() < 20 ? 20 - f->name.size() : 0);
  if (!opt_.plugins || !plugin(*f, rec.payload, out)) {
    const size_t index = static_cast<size_t>(f - reader_.formats().data());
    const PrintContext ctx{&kallsyms_, &printk_};
    const size_t start = out.size();
    printers_[index]->render(rec.payload, out, ctx);
    // A print fmt ending in a newline (ext4_getfsmap_*: "...0x%llx\n") does
    // not add a blank line: trace-cmd report drops one trailing newline.
    if (out.size() > start && out.data()[out.size() - 1] == '\n') out.resize(out.size() - 1);
  }
  out.push_back('\n');
}

uint64_t TraceReport::print_all(std::FILE* out) {
  const std::string h = header();
  if (std::fwrite(h.data(), 1, h.size(), out) != h.size())
    throw std::system_error(errno, std::generic_category(), "report: write failed");
  // One merged cursor per buffer; the earliest head wins, ties to the
  // earlier buffer (trace-cmd walks its handles in order with a strict <).
  const auto bufs = reader_.buffers();
  std::vector<MergedRecordCursor> cur;
  std::vector<std::optional<TraceRecord>> head;
  std::vector<uint8_t> ns;
  size_t width = 0;
  bool named = false;
  for (size_t i = 0; i < bufs.size(); ++i) {
    cur.push_back(reader_.buffer_records(i));
    ns.push_back(bufs[i].name.empty() ? ns_clock_ : is_ns_clock(bufs[i].clock));
    if (!bufs[i].name.empty()) named = true, width = std::max(width, bufs[i].name.size());
  }
  head.resize(cur.size());
  fmt::memory_buffer buf;
  uint64_t n = 0;
  auto flush = [&] {
    if (buf.size() && std::fwrite(buf.data(), 1, buf.size(), out) != buf.size())
      throw std::system_error(errno, std::generic_category(), "report: write failed");
    buf.clear();
  };
  try {
    for (size_t i = 0; i < cur.size(); ++i) head[i] = cur[i].next();
    for (;;) {
      size_t best = cur.size();
      for (size_t i = 0; i < cur.size(); ++i)
        if (head[i] && (best == cur.size() || head[i]->ts < head[best]->ts)) best = i;
      if (best == cur.size()) break;
      if (named) {
        if (bufs[best].name.empty())
          fmt::format_to(std::back_inserter(buf), "{:{}}  ", "", width);
        else
          fmt::format_to(std::back_inserter(buf), "{:>{}}: ", bufs[best].name, width);
      }
      format_with(*head[best], ns[best], buf);
      ++n;
      if (buf.size() > (1u << 16)) flush();
      head[best] = cur[best].next();
    }
  } catch (...) {
    flush();
    throw;
  }
  flush();
  return n;
}

}  // namespace tracepipe
