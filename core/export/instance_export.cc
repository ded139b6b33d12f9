#include "tracepipe/core/export/instance_export.h"

#include <cstring>
#include <optional>
#include <stdexcept>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/export/process_symbols.h"
#include "tracepipe/core/export/text_output.h"
#include "tracepipe/core/sideband/sideband_state.h"
#include "tracepipe/core/tracedat/cpu_stat_text.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tracepipe {

namespace {

// Visits every record of one CPU in buffer order.
template <class Fn>
void for_each_record(const Instance& inst, uint32_t cpu, bool consume, Fn&& fn) {
  if (consume) {
    buffers::ConsumingReader rd(inst.ring(), cpu);
    while (auto r = rd.next()) fn(*r);
  } else {
    buffers::Iterator it(inst.ring(), cpu);
    while (auto r = it.next()) fn(*r);
  }
}

TraceDatWriter make_writer(const Instance& inst, const ExportOptions& options) {
  TraceDatWriterConfig cfg;
  cfg.cpus = inst.cpus();
  cfg.clock = std::string(trace_clock_name(inst.options().clock));
  TraceDatWriter w(cfg);
  for (const EventDesc* d : inst.registry().events()) w.add_format(d->format());
  for (const Cmdline& c : inst.cmdlines()) w.set_cmdline(c.pid, c.comm);
  // Names written into the trace by sideband records (core/sideband/sideband.h)
  // are the ones in effect in it: they override saved_cmdlines.
  SidebandState sideband(inst.registry());
  // Return addresses of the stacktrace trigger's records: the file's
  // kallsyms names them for trace-cmd report.
  const EventDesc* stack = inst.registry().find("ftrace", "kernel_stack");
  std::vector<uint64_t> frames;
  const TraceClock& clk = inst.clock();
  const uint64_t now = clk.read();
  std::vector<std::string> stat_texts;
  for (uint32_t cpu = 0; cpu < inst.cpus(); ++cpu) {
    const buffers::CpuStats s = inst.cpu_stats(cpu);
    if (s.overrun > 0) w.add_lost(cpu, s.overrun);
    // The kernel's per_cpu stats over the buffer's life, as trace-cmd
    // extract keeps them: --stat then shows what the records cannot (a
    // full buffer's drops, which the kernel marks on no page).
    stat_texts.push_back(cpu_stat_text(cpu, cpu_stat_lines(s, now), clk.in_nanoseconds));
    for_each_record(inst, cpu, options.consume, [&](const buffers::RecordView& r) {
      if (r.payload.size() < 2 || r.payload.size() > w.max_payload()) return;
      w.add_record(cpu, r.ts, r.payload);
      (void)sideband.observe(r.payload);
      uint16_t id;
      std::memcpy(&id, r.payload.data(), 2);
      if (stack != nullptr && id == stack->id())
        for (size_t off = 16; off + 8 <= r.payload.size(); off += 8) {
          uint64_t ip;
          std::memcpy(&ip, r.payload.data() + off, 8);
          if (ip == ~uint64_t{0}) break;
          frames.push_back(ip);
        }
    });
  }
  w.set_cpu_stats(std::move(stat_texts));
  if (!frames.empty()) w.set_kallsyms(process_kallsyms(frames));
  sideband.apply_cmdlines(w);
  return w;
}

}  // namespace

void write_trace_dat(const Instance& instance, const std::filesystem::path& path,
                     const ExportOptions& options) {
  make_writer(instance, options).write(path);
}

std::vector<std::byte> trace_dat_bytes(const Instance& instance, const ExportOptions& options) {
  return make_writer(instance, options).to_bytes();
}

namespace {

template <class Sink>
size_t emit_text(const Instance& inst, const TextOptions& options, Sink&& sink) {
  TextFormatter f(inst.registry(), options.style, inst.clock().in_nanoseconds);
  f.set_cmdlines(inst.cmdlines());
  f.set_symbolizer(&process_symbol_text);
  size_t n = 0;
  fmt::memory_buffer line;
  const auto each = [&](const buffers::RecordView& r) {
    line.clear();
    f.format(r.cpu, r.ts, r.payload, line);
    sink(std::string_view(line.data(), line.size()));
    ++n;
  };
  if (options.header) {
    uint64_t entries = 0, written = 0;
    for (const auto& s : inst.cpu_stats()) {
      entries += s.entries;
      written += s.entries + s.overrun;
    }
    sink(trace_header(entries, written, inst.cpus()));
  }
  if (options.consume) {
    auto m = buffers::merged_consumer(inst.ring());
    while (auto r = m.next()) each(*r);
  } else {
    auto m = buffers::merged_iterator(inst.ring());
    while (auto r = m.next()) each(*r);
  }
  return n;
}

}  // namespace

std::string trace_text(const Instance& instance, const TextOptions& options) {
  std::string out;
  emit_text(instance, options, [&](std::string_view s) { out.append(s); });
  return out;
}

size_t write_trace_text(const Instance& instance, std::FILE* out, const TextOptions& options) {
  return emit_text(instance, options,
                   [&](std::string_view s) { std::fwrite(s.data(), 1, s.size(), out); });
}

}  // namespace tracepipe
