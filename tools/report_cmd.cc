// `tracepipe report [FILE]`: prints a trace.dat like `trace-cmd report`.
// See docs/tracedat.md.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "tracepipe/core/tracedat/trace_report.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/tools/commands.h"
#include "tracepipe/tools/tracedat_message.h"

namespace tracepipe::tools {
namespace {

struct ReportCli {
  std::string file = "trace.dat";
  bool no_plugins = false;
  bool ns = false;
  bool info = false;
  bool stat = false;
};

// --stat: the per-CPU statistics the recording stored (CPUSTAT options),
// then where each CPU's data lies, as `trace-cmd report --stat` prints them
// (lib/trace-cmd/trace-input.c: tracecmd_print_stats; each option's NUL
// becomes a newline).
void print_stat(const TraceDatReader& r) {
  fmt::print(
      "cpus={}\n\nKernel buffer statistics:\n"
      "  Note: \"entries\" are the entries left in the kernel ring buffer and are not\n"
      "        recorded in the trace data. They should all be zero.\n\n",
      r.cpu_count());
  std::string stats;
  for (const TraceDatOption& o : r.options()) {
    if (o.id != static_cast<uint16_t>(TraceDatOptionId::cpustat) || o.data.empty()) continue;
    std::string text(reinterpret_cast<const char*>(o.data.data()), o.data.size());
    text.back() = '\n';
    stats += text;
  }
  if (stats.empty())
    fmt::print(" No stats in this file\n");
  else
    fmt::print("{}\n", stats);
  for (const CpuDataInfo& d : r.cpu_data())
    fmt::print("CPU{} data recorded at offset={:#x}\n    {} bytes in size\n", d.cpu, d.offset,
               d.size);
}

// --info: what the file holds, without the records.
void print_info(const TraceDatReader& r) {
  fmt::print("version: {}{}\n", r.version(),
             r.compression().empty() ? "" : " (compression " + r.compression() + ")");
  fmt::print("page size: {}\nkernel long size: {}\nclock: {}\n", r.page_size(),
             r.header_page().commit.size,
             r.clock_name().empty() ? "(not recorded)" : r.clock_name());
  fmt::print("formats: {}\ncmdlines: {}\noptions:", r.formats().size(), r.cmdlines().size());
  for (const auto& o : r.options()) fmt::print(" {}", o.id);
  fmt::print("\ncpus: {}\n", r.cpu_count());
  const auto cpu_line = [](const CpuDataInfo& d, CpuRecordCursor c) {
    while (c.next()) {
    }
    const auto s = c.stats();
    fmt::print(
        "  cpu {}: offset {} size {} pages {} records {} discarded {} lost-pages {} lost {}\n",
        d.cpu, d.offset, d.size, s.pages, s.records, s.discarded, s.pages_with_loss, s.lost_events);
  };
  for (size_t i = 0; i < r.cpu_data().size(); ++i) cpu_line(r.cpu_data()[i], r.cpu_records(i));
  // Named instances (trace-cmd record/extract -B), in the file's order.
  for (size_t b = 0; b < r.buffers().size(); ++b) {
    const TraceDatBuffer& buf = r.buffers()[b];
    if (buf.name.empty()) continue;  // the top instance: above
    fmt::print("buffer '{}': clock {} cpus {}\n", buf.name,
               buf.clock.empty() ? "(not recorded)" : buf.clock, buf.cpu_count);
    for (size_t i = 0; i < buf.cpu_data.size(); ++i)
      cpu_line(buf.cpu_data[i], r.buffer_cpu_records(b, i));
  }
}

void print(const ReportCli& cli) {
  const auto reader = TraceDatReader::open(cli.file);
  for (const std::string& w : reader.warnings())
    fmt::print(stderr, "tracepipe report: warning: {}: {}\n", reader.name(), w);
  if (cli.info) {
    print_info(reader);
    return;
  }
  if (cli.stat) {
    print_stat(reader);
    return;
  }
  if (reader.is_latency()) {
    std::fwrite(reader.latency_text().data(), 1, reader.latency_text().size(), stdout);
    return;
  }
  TraceReport report(reader, ReportOptions{!cli.no_plugins, cli.ns});
  report.print_all(stdout);
  std::fflush(stdout);
}

// The open refuses a FIFO without blocking, a device or a directory:
// "tracepipe: FILE: not a regular file (a FIFO)", exit 1. A malformed file
// (found at the open or while printing) is named by its path the same way.
void run(const ReportCli& cli) {
  try {
    print(cli);
  } catch (const TraceDatError& e) {
    std::fflush(stdout);
    throw std::runtime_error(tracedat_message(e, cli.file));
  }
}

const Registrar reg{[](CLI::App& app) {
  auto cli = std::make_shared<ReportCli>();
  auto* sub = app.add_subcommand("report", "Print a trace.dat like `trace-cmd report`");
  sub->add_option("file", cli->file,
                  "trace.dat file (version 6 or 7, uncompressed or zstd/zlib-compressed)")
      ->capture_default_str();
  sub->add_option("-i,--input", cli->file, "same as FILE (trace-cmd's spelling)");
  sub->add_flag("-N,--no-plugins", cli->no_plugins,
                "render every event through its print fmt (trace-cmd report -N)");
  sub->add_flag("-t,--ns", cli->ns, "nanosecond time stamps (trace-cmd report -t)");
  sub->add_flag("--info", cli->info,
                "describe the file (headers, per-CPU data) instead of printing records");
  sub->add_flag("--stat", cli->stat,
                "print the per-CPU statistics stored with the recording (entries, overrun, "
                "dropped, ...) instead of "
                "the records (trace-cmd report --stat)");
  sub->callback([cli] { run(*cli); });
}};

}  // namespace
}  // namespace tracepipe::tools
