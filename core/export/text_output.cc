#include "tracepipe/core/export/text_output.h"

#include <cstring>

namespace tracepipe {

namespace {

// 6.12+ flag bits (include/linux/trace_events.h: enum trace_flag_type); bit
// 0x02 was IRQS_NOSUPPORT before NEED_RESCHED_LAZY took it.
constexpr uint8_t kIrqsOff = 0x01, kLazy = 0x02, kNeedResched = 0x04, kHardirq = 0x08,
                  kSoftirq = 0x10, kPreemptResched = 0x20, kNmi = 0x40, kBhOff = 0x80;

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t load_uint(const std::byte* p, uint32_t size) {
  switch (size) {
    case 1:
      return load<uint8_t>(p);
    case 2:
      return load<uint16_t>(p);
    case 4:
      return load<uint32_t>(p);
    default:
      return load<uint64_t>(p);
  }
}

int64_t sign_extend(uint64_t v, uint32_t size) {
  switch (size) {
    case 1:
      return static_cast<int8_t>(v);
    case 2:
      return static_cast<int16_t>(v);
    case 4:
      return static_cast<int32_t>(v);
    default:
      return static_cast<int64_t>(v);
  }
}

// Text of a char field: up to the first NUL, never past `limit` bytes.
std::string_view c_text(const std::byte* p, size_t limit) {
  const auto* c = reinterpret_cast<const char*>(p);
  return {c, strnlen(c, limit)};
}

void append_bytes(fmt::memory_buffer& out, const std::byte* p, size_t n) {
  out.push_back('[');
  for (size_t i = 0; i < n; ++i)
    fmt::format_to(std::back_inserter(out), "{}{:02x}", i ? " " : "", static_cast<unsigned>(p[i]));
  out.push_back(']');
}

}  // namespace

std::string latency_columns(uint8_t f, uint8_t pc) {
  std::string s(5, '.');
  const bool irqs_off = f & kIrqsOff, bh_off = f & kBhOff;
  s[0] = irqs_off && bh_off ? 'D' : irqs_off ? 'd' : bh_off ? 'b' : '.';
  const bool nr = f & kNeedResched, lazy = f & kLazy, pr = f & kPreemptResched;
  s[1] = nr && lazy && pr ? 'B'
         : nr && pr       ? 'N'
         : lazy && pr     ? 'L'
         : nr && lazy     ? 'b'
         : nr             ? 'n'
         : pr             ? 'p'
         : lazy           ? 'l'
                          : '.';
  const bool nmi = f & kNmi, hard = f & kHardirq, soft = f & kSoftirq;
  s[2] = nmi && hard ? 'Z' : nmi ? 'z' : hard && soft ? 'H' : hard ? 'h' : soft ? 's' : '.';
  constexpr char kHex[] = "0123456789abcdef";
  if (pc & 0x0f) s[3] = kHex[pc & 0x0f];
  if (pc & 0xf0) s[4] = kHex[pc >> 4];
  return s;
}

std::string trace_header(uint64_t entries, uint64_t written, uint32_t cpus) {
  return fmt::format(
      "# tracer: nop\n"
      "#\n"
      "# entries-in-buffer/entries-written: {}/{}   #P:{}\n"
      "#\n"
      "#                                _-----=> irqs-off/BH-disabled\n"
      "#                               / _----=> need-resched\n"
      "#                              | / _---=> hardirq/softirq\n"
      "#                              || / _--=> preempt-depth\n"
      "#                              ||| / _-=> migrate-disable\n"
      "#                              |||| /     delay\n"
      "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
      "#              | |         |   |||||     |         |\n",
      entries, written, cpus);
}

void format_fields_raw(const EventDesc& event, std::span<const std::byte> payload,
                       fmt::memory_buffer& out) {
  const auto it = std::back_inserter(out);
  bool first = true;
  for (const FormatField& f : event.format().fields) {
    if (!first) out.push_back(' ');
    first = false;
    fmt::format_to(it, "{}=", f.name);
    if (static_cast<uint64_t>(f.offset) + f.size > payload.size()) {
      fmt::format_to(it, "<truncated>");
      continue;
    }
    const std::byte* p = payload.data() + f.offset;
    if (f.is_dynamic()) {
      const uint32_t word = load<uint32_t>(p);
      uint64_t off = word & 0xffff;
      const uint64_t len = word >> 16;
      if (f.is_rel_loc()) off += f.offset + f.size;
      if (off + len > payload.size()) {
        fmt::format_to(it, "<bad location>");
        continue;
      }
      if (f.is_string())
        out.append(c_text(payload.data() + off, len));
      else
        append_bytes(out, payload.data() + off, len);
    } else if (f.is_string()) {
      out.append(c_text(p, f.size));
    } else if (!f.is_array() && (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8)) {
      const uint64_t v = load_uint(p, f.size);
      fmt::format_to(it, "0x{:x} ({})", v, sign_extend(v, f.size));
    } else {
      append_bytes(out, p, f.size);
    }
  }
}

TextFormatter::TextFormatter(const Registry& registry, FieldStyle style, bool ts_in_ns)
    : registry_(registry), style_(style), ts_in_ns_(ts_in_ns) {}

void TextFormatter::set_cmdlines(const std::vector<Cmdline>& cmdlines) {
  for (const Cmdline& c : cmdlines) comms_[c.pid] = c.comm;
}

void TextFormatter::set_comm(int32_t pid, std::string_view comm) {
  comms_[pid] = std::string(comm);
}

const PrintFmt& TextFormatter::print_fmt(const EventDesc& event) const {
  std::lock_guard lk(mu_);
  auto& slot = fmts_[&event];
  if (!slot) slot = std::make_unique<PrintFmt>(event.format());
  return *slot;
}

void TextFormatter::format_fields(const EventDesc& event, std::span<const std::byte> payload,
                                  fmt::memory_buffer& out) const {
  if (style_ == FieldStyle::print_fmt) {
    const PrintFmt& pf = print_fmt(event);
    if (pf.ok() && payload.size() >= event.fixed_size()) {
      pf.render(payload, out);
      return;
    }
  }
  format_fields_raw(event, payload, out);
}

void TextFormatter::format(uint32_t cpu, uint64_t ts, std::span<const std::byte> payload,
                           fmt::memory_buffer& out) const {
  const auto it = std::back_inserter(out);
  if (payload.size() < sizeof(CommonHeader)) {
    fmt::format_to(it, "{:>16}-{:<7} [{:03}] .....", "<...>", 0, cpu);
  } else {
    CommonHeader h;
    std::memcpy(&h, payload.data(), sizeof h);
    std::string_view comm = "<...>";
    if (h.common_pid == 0) {
      comm = "<idle>";
    } else if (auto c = comms_.find(h.common_pid); c != comms_.end()) {
      comm = c->second;
    }
    fmt::format_to(it, "{:>16}-{:<7} [{:03}] {}", comm, h.common_pid, cpu,
                   latency_columns(h.common_flags, h.common_preempt_count));
  }
  if (ts_in_ns_) {
    // Rounded to the microsecond like the kernel's trace_print_time (ns2usecs adds 500
    // before dividing by 1000).
    const uint64_t us = (ts + 500u) / 1000u;
    fmt::format_to(it, " {:>5}.{:06}: ", us / 1000000u, us % 1000000u);
  } else
    fmt::format_to(it, " {:>12}: ", ts);
  if (payload.size() < 2) {
    fmt::format_to(it, "<record of {} bytes>\n", payload.size());
    return;
  }
  const EventDesc* d = registry_.by_id(load<uint16_t>(payload.data()));
  if (d == nullptr) {
    fmt::format_to(it, "Unknown type {}\n", load<uint16_t>(payload.data()));
    return;
  }
  if (d->system() == "ftrace" && d->name() == "kernel_stack" && payload.size() >= 16) {
    // kernel/trace/trace_output.c: trace_stack_print: frames up to the
    // record's end or the first ~0.
    out.append(std::string_view("<stack trace>"));
    for (size_t off = 16; off + 8 <= payload.size(); off += 8) {
      const uint64_t ip = load<uint64_t>(payload.data() + off);
      if (ip == ~uint64_t{0}) break;
      out.append(std::string_view("\n => "));
      if (symbolize_)
        out.append(symbolize_(ip));
      else
        fmt::format_to(it, "0x{:x}", ip);
    }
    out.push_back('\n');
    return;
  }
  fmt::format_to(it, "{}: ", d->name());
  format_fields(*d, payload, out);
  out.push_back('\n');
}

std::string TextFormatter::format(uint32_t cpu, uint64_t ts,
                                  std::span<const std::byte> payload) const {
  fmt::memory_buffer b;
  format(cpu, ts, payload, b);
  return fmt::to_string(b);
}

}  // namespace tracepipe
