// `tracepipe convert IN.dat -o OUT --to perfetto|ctf`: a trace.dat as a
// Perfetto trace or a CTF 1.8 directory (core/convert). See docs/convert.md.
#include <fmt/core.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "tracepipe/core/convert/converter.h"
#include "tracepipe/core/convert/out_file.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/tools/commands.h"
#include "tracepipe/tools/same_file.h"
#include "tracepipe/tools/tracedat_message.h"

namespace tracepipe::tools {
namespace {

struct ConvertCli {
  std::string in;
  std::string out;
  std::string to;
  std::string buffer;
  std::string progress = "auto";
  bool quiet = false;
};

// The progress line on stderr, redrawn at most every 200 ms from the
// converter's callback (its own thread: no locking):
//   convert  52%  6.0 MiB / 11.6 MiB  257346 records  12.3 M events/s
class ProgressLine {
 public:
  ProgressLine(bool enabled, uint64_t total) : enabled_(enabled), total_(total) {}
  void update(uint64_t bytes, uint64_t records) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    drawn_ = true;
    const double s = std::chrono::duration<double>(now - start_).count();
    const double pct =
        total_ ? 100.0 * static_cast<double>(bytes) / static_cast<double>(total_) : 100.0;
    fmt::print(stderr,
               "\rconvert {:4.0f}%  {:.1f} MiB / {:.1f} MiB  {} records  {:.1f} M events/s\x1b[K",
               pct, static_cast<double>(bytes) / 1048576.0, static_cast<double>(total_) / 1048576.0,
               records, s > 0 ? static_cast<double>(records) / s / 1e6 : 0.0);
  }
  void erase() {
    if (drawn_) fmt::print(stderr, "\r\x1b[K");
    drawn_ = false;
  }

 private:
  bool enabled_;
  uint64_t total_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

constexpr uint64_t kLargeInput = 64ull
                                 << 20;  // bytes of page data: `auto` draws the line above this

void run(const ConvertCli& cli) {
  const auto format = convert::parse_format(cli.to);
  if (!format) throw CLI::ValidationError("--to", "must be perfetto or ctf, not '" + cli.to + "'");
  if (const std::string e = output_is_input("-o", cli.out, cli.in, "the input trace"); !e.empty())
    throw CLI::ValidationError(e);
  const auto reader = TraceDatReader::open(cli.in);
  for (const std::string& w : reader.warnings())
    fmt::print(stderr, "tracepipe convert: warning: {}: {}\n", reader.name(), w);
  uint64_t total = 0;
  if (const auto b = reader.find_buffer(cli.buffer)) {
    for (const auto& d : reader.buffers()[*b].cpu_data)
      total += d.uncompressed_size ? d.uncompressed_size : d.size;
  }
  const bool draw =
      cli.progress == "always" || (cli.progress == "auto" && total > kLargeInput && isatty(2));
  ProgressLine bar(draw, total);
  convert::ConvertOptions opt;
  opt.format = *format;
  opt.buffer = cli.buffer;
  opt.progress = [&](uint64_t bytes, uint64_t records) { bar.update(bytes, records); };
  convert::ConvertStats st;
  try {
    st = convert::convert(reader, cli.out, opt);
  } catch (const TraceDatError& e) {
    bar.erase();
    throw std::runtime_error(tracedat_message(e, cli.in) +
                             " (the records before it were converted into " + cli.out +
                             ", which is complete and valid)");
  }
  bar.erase();
  if (cli.quiet) return;
  uint64_t lost = 0;
  for (const auto& c : st.cpus) lost += c.lost_events;
  fmt::print(stderr, "tracepipe convert: {} records from {} CPUs into {} ({}, {} bytes)",
             st.records, st.cpus.size(), cli.out, cli.to, st.bytes_out);
  if (lost) fmt::print(stderr, ", {} events marked lost", lost);
  if (st.unknown_events) fmt::print(stderr, ", {} records without a format", st.unknown_events);
  if (st.short_records)
    fmt::print(stderr, ", {} records shorter than their format", st.short_records);
  fmt::print(stderr, "\n");
}

const Registrar reg{[](CLI::App& app) {
  auto cli = std::make_shared<ConvertCli>();
  auto* sub = app.add_subcommand("convert",
                                 "Convert a trace.dat to a Perfetto trace or a CTF 1.8 directory");
  sub->add_option("file", cli->in, "trace.dat (version 6 or 7, uncompressed or zstd/zlib)")
      ->required();
  sub->add_option("-o,--output", cli->out, "output: a file (perfetto) or a directory (ctf)")
      ->required();
  sub->add_option("--to", cli->to, "output format: perfetto or ctf")
      ->required()
      ->check(CLI::IsMember({"perfetto", "ctf"}));
  sub->add_option("-B,--buffer", cli->buffer,
                  "the instance to convert (trace-cmd record -B NAME); default: the top one");
  sub->add_option("--progress", cli->progress,
                  "progress line on stderr: auto (large files on a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  sub->add_flag("-q,--quiet", cli->quiet, "no summary line");
  sub->callback([cli] { run(*cli); });
}};

}  // namespace
}  // namespace tracepipe::tools
