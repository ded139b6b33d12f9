// `tracepipe replay FILE.dat [-F 'EVENT: FILTER' ... | --config FILTERS.toml] [-o OUT.dat]`:
// feeds every recorded event through tracepipe's stage -> filter -> commit
// path into per-CPU ring buffers and prints what the filters kept, per event.
// See docs/replay.md and core/replay/replay.h.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "tracepipe/bench/engine/replay_compare.h"
#include "tracepipe/core/config/instance_options.h"
#include "tracepipe/core/replay/filter_plan.h"
#include "tracepipe/core/replay/replay.h"
#include "tracepipe/core/tracedat/tracedat_error.h"
#include "tracepipe/tools/commands.h"
#include "tracepipe/tools/option_checks.h"
#include "tracepipe/tools/same_file.h"
#include "tracepipe/tools/tracedat_message.h"

namespace tracepipe::tools {
namespace {

struct ReplayCli {
  replay::ReplayOptions o;
  std::string input = "trace.dat";
  std::string config, output, kallsyms, staging;
  bool no_timing = false, progress = false, no_progress = false, verbose = false;
  unsigned bench_reps = 5;
  bool bench_flag = false;
  std::string trace_cmd = "trace-cmd";
};

void print_verbose(const replay::ReplayResult& r) {
  fmt::print(
      "\npath (instance counters): EVENT  staged / direct (nested, contended, too big) / "
      "unfiltered / ring discards\n");
  for (const auto& e : r.events) {
    if (!e.replayed) continue;
    fmt::print("  {:<32} {:>9} / {:>9} ({}, {}, {}) / {:>9} / {}\n", e.name, e.path.staged,
               e.path.direct, e.path.nested, e.path.contended, e.path.too_big, e.path.unfiltered,
               e.path.ring_discards);
  }
  fmt::print("ring (per CPU): entries overrun lost discarded read\n");
  for (size_t c = 0; c < r.ring.size(); ++c)
    fmt::print("  cpu{}: {} {} {} {} {}\n", c, r.ring[c].entries, r.ring[c].overrun,
               r.ring[c].lost(), r.ring[c].discarded, r.ring[c].read);
}

void run(ReplayCli& cli) {
  replay::ReplayOptions& o = cli.o;
  o.input = cli.input;
  if (!cli.config.empty()) o.config = cli.config;
  if (!cli.output.empty()) o.output = cli.output;
  if (!cli.kallsyms.empty()) o.kallsyms = cli.kallsyms;
  o.timing = !cli.no_timing;
  o.progress = cli.progress      ? replay::ProgressMode::on
               : cli.no_progress ? replay::ProgressMode::off
                                 : replay::ProgressMode::automatic;
  try {
    if (!cli.staging.empty()) {  // a usage error like the others: exit 2, "tracepipe replay: "
      o.staging = parse_staging(cli.staging);
      if (!o.staging)
        throw replay::ReplayError(fmt::format(
            "--staging '{}': expected off, per_cpu (or on), per_thread or adaptive", cli.staging));
    }
    if (o.output)
      for (const auto& [in, what] :
           {std::pair{o.input, "the input trace"}, std::pair{o.config.value_or(""), "the config"},
            std::pair{o.kallsyms.value_or(""), "the kallsyms file"}})
        if (const std::string e = output_is_input("-o", *o.output, in, what); !e.empty())
          throw replay::ReplayError(e);
    if (cli.bench_flag) {
      replay::BenchOptions b;
      b.reps = cli.bench_reps;
      b.trace_cmd = cli.trace_cmd;
      const replay::BenchResult r = replay::run_bench(o, b);
      fmt::print("{}", replay::format_bench(o, r));  // whole, even if a name holds a NUL
      return;
    }
    const replay::ReplayResult r = replay::run_replay(o);
    fmt::print("{}", replay::format_result(r, o.timing));
    if (o.output)
      fmt::print("output: {} kept records written to {}\n", r.output_records, o.output->string());
    if (cli.verbose) print_verbose(r);
    // --trigger: each event's trigger file, then its hist file (as
    // events/SYS/EVENT/trigger and hist would show them after the run).
    for (const auto& t : r.triggered) {
      fmt::print("\n==> {}: trigger <==\n{}", t.event, t.trigger);
      if (!t.hist.empty()) fmt::print("\n==> {}: hist <==\n{}", t.event, t.hist);
    }
    std::fflush(stdout);
  } catch (const replay::ReplayError& e) {
    // Already a complete message (filter errors carry the kernel's caret).
    std::fflush(stdout);
    fmt::print(stderr, "tracepipe replay: {}\n", e.what());
    std::exit(2);
  } catch (const TraceDatError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "tracepipe replay: {}\n", tracedat_message(e, o.input.string()));
    std::exit(1);
  }
}

const Registrar reg{[](CLI::App& app) {
  auto cli = std::make_shared<ReplayCli>();
  auto* sub = app.add_subcommand("replay",
                                 "Replay a trace.dat through tracepipe's stage -> filter -> commit "
                                 "path and count what the filters keep");
  sub->add_option("file", cli->input,
                  "trace.dat file (version 6 or 7, uncompressed or zstd/zlib-compressed)")
      ->capture_default_str();
  sub->add_option("-i,--input", cli->input, "same as FILE");
  sub->add_option("-F,--filter", cli->o.filter_args,
                  "'EVENT: FILTER' as trace-cmd report -F: 'sched:sched_switch: prev_pid == 0', "
                  "'sched_switch: ...', 'sched: ...' (a whole system), 'a,b: ...'; repeatable")
      ->take_all();
  sub->add_option(
         "--trigger", cli->o.trigger_args,
         "'SYS:EVENT: TRIGGER' as written to events/SYS/EVENT/trigger: "
         "'sched:sched_switch: hist:keys=prev_pid:vals=prev_state:sort=hitcount.descending', "
         "'sched:sched_wakeup: traceoff if pid == 1'; repeatable. Prints each event's trigger and "
         "hist "
         "files after the run")
      ->take_all();
  sub->add_option(
         "--synthetic", cli->o.synthetic_args,
         "a synthetic event, as written to synthetic_events: 'wakeup_latency u64 lat; pid_t pid; "
         "int prio'; "
         "repeatable. --trigger 'synthetic:NAME: hist:...' counts it; triggers that pair events "
         "(variables, onmatch, onmax, onchange) replay the records in time order")
      ->take_all();
  sub->add_option(
      "--config", cli->config,
      "TOML file of filters (the config file syntax of docs/config.md; its main instance)");
  sub->add_option("-o,--output", cli->output, "write the kept events to this trace.dat (v6)");
  sub->add_flag("--only-filtered", cli->o.only_filtered,
                "replay only events that have a filter, as trace-cmd report -F does "
                "(default: kernel instance semantics, unfiltered events are kept)");
  sub->add_option(
      "--kallsyms", cli->kallsyms,
      "kallsyms text for FIELD.function == SYMBOL (default: the file's, if it has one)");
  sub->add_option(
      "--staging", cli->staging,
      "off | per_cpu (or on, as in tracepipe bench) | per_thread | adaptive (default per_thread)");
  // 0 means "automatic" inside ReplayOptions: on the command line each has a
  // range, so a 0 is an error rather than a silent default.
  sub->add_option("--subbuf-size-kb", cli->o.subbuf_size_kb,
                  "ring sub-buffer size in KiB (default 16)")
      ->check(power_of_two_range(kMinSubbufSizeKb, kMaxSubbufSizeKb));
  sub->add_option("--buffer-size-kb", cli->o.buffer_size_kb,
                  "ring size per CPU in KiB, the config file's buffer_size_kb (default: automatic; "
                  "with -o never "
                  "below what the batches in flight need)")
      ->check(CLI::Range(
          uint64_t{1}, kMaxBufferSizeKb));  // as the config file's (core/config/instance_options.h)
  sub->add_option("-j,--threads", cli->o.threads, "worker threads (default: all cores)")
      ->check(CLI::Range(1u, 1024u));
  sub->add_flag(
      "--no-timing", cli->no_timing,
      "do not estimate the time per event (it samples every 16th record of each event with rdtsc)");
  sub->add_flag("--progress", cli->progress, "always draw the progress bar on stderr");
  sub->add_flag("--no-progress", cli->no_progress, "never draw the progress bar");
  sub->add_flag("-v,--verbose", cli->verbose,
                "also print the instance's path counters and ring statistics");
  sub->add_flag(
      "--bench", cli->bench_flag,
      "measure events/s (best of --reps runs) next to `trace-cmd report -F` with the same filters");
  sub->add_option("--reps", cli->bench_reps, "repetitions for --bench (default 5)")
      ->check(CLI::Range(1u, 1000u));
  sub->add_option("--trace-cmd", cli->trace_cmd,
                  "trace-cmd executable for --bench (\"\" to skip it)");
  sub->callback([cli] { run(*cli); });
}};

}  // namespace
}  // namespace tracepipe::tools
