// `tracepipe convert IN.dat -o OUT --to perfetto|ctf`: a trace.dat as a
// Perfetto trace or a CTF 1.8 directory (core/convert). See docs/convert.md.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "tracepipe/core/convert/converter.h"
#include "tracepipe/core/convert/out_file.h"
#include "tracepipe/core/replay/progress.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/tools/commands.h"
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

void run(const ConvertCli& cli) {
  const auto format = convert::parse_format(cli.to);
  if (!format) throw CLI::ValidationError("--to", "must be perfetto or ctf, not '" + cli.to + "'");
  const auto reader = TraceDatReader::open(cli.in);
  for (const std::string& w : reader.warnings())
    fmt::print(stderr, "tracepipe convert: warning: {}: {}\n", reader.name(), w);
  uint64_t total = 0;
  if (const auto b = reader.find_buffer(cli.buffer)) {
    for (const auto& d : reader.buffers()[*b].cpu_data) total += d.uncompressed_size ? d.uncompressed_size : d.size;
  }
  const bool draw = cli.progress == "always" || (cli.progress == "auto" && replay::ProgressBar::wanted(total));
  replay::ProgressBar bar(draw, total);
  uint64_t last_bytes = 0, last_records = 0;
  convert::ConvertOptions opt;
  opt.format = *format;
  opt.buffer = cli.buffer;
  opt.progress = [&](uint64_t bytes, uint64_t records) {
    bar.add(bytes - last_bytes, records - last_records);
    last_bytes = bytes;
    last_records = records;
  };
  convert::ConvertStats st;
  try {
    st = convert::convert(reader, cli.out, opt);
  } catch (const TraceDatError& e) {
    bar.stop();
    throw std::runtime_error(tracedat_message(e, cli.in) + " (the records before it were converted into " +
                             cli.out + ", which is complete and valid)");
  }
  bar.stop();
  if (cli.quiet) return;
  uint64_t lost = 0;
  for (const auto& c : st.cpus) lost += c.lost_events;
  fmt::print(stderr, "tracepipe convert: {} records from {} CPUs into {} ({}, {} bytes)", st.records, st.cpus.size(),
             cli.out, cli.to, st.bytes_out);
  if (lost) fmt::print(stderr, ", {} events marked lost", lost);
  if (st.unknown_events) fmt::print(stderr, ", {} records without a format", st.unknown_events);
  if (st.short_records) fmt::print(stderr, ", {} records shorter than their format", st.short_records);
  fmt::print(stderr, "\n");
}

const Registrar reg{[](CLI::App& app) {
  auto cli = std::make_shared<ConvertCli>();
  auto* sub = app.add_subcommand("convert", "Convert a trace.dat to a Perfetto trace or a CTF 1.8 directory");
  sub->add_option("file", cli->in, "trace.dat (version 6 or 7, uncompressed or zstd/zlib)")->required();
  sub->add_option("-o,--output", cli->out, "output: a file (perfetto) or a directory (ctf)")->required();
  sub->add_option("--to", cli->to, "output format: perfetto or ctf")->required()->check(CLI::IsMember({"perfetto", "ctf"}));
  sub->add_option("-B,--buffer", cli->buffer, "the instance to convert (trace-cmd record -B NAME); default: the top one");
  sub->add_option("--progress", cli->progress, "progress line on stderr: auto (large files on a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  sub->add_flag("-q,--quiet", cli->quiet, "no summary line");
  sub->callback([cli] { run(*cli); });
}};

}  // namespace
}  // namespace tracepipe::tools
