// `tracepipe bench`: the kernel patch's discard-versus-commit experiment
// (0fc1b09ff1ff, "tracing: Use temp buffer when filtering events") on an
// in-process hackbench, and the perf overwrite series' experiment.
// See docs/bench.md; the engine lives in bench/engine/.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tracepipe/bench/engine/report.h"
#include "tracepipe/bench/engine/runner.h"
#include "tracepipe/bench/peers/peers.h"
#include "tracepipe/core/config/instance_options.h"
#include "tracepipe/tools/commands.h"
#include "tracepipe/tools/option_checks.h"

namespace tracepipe::tools {
using namespace tracepipe::bench;
namespace {

struct CliOptions {
  BenchOptions bench;
  std::vector<std::string> cases;
  std::vector<std::string> stagings;
  std::string channel = "socketpair";
  std::string mode = "overwrite";
  std::string table = "all";
  std::string filters_file;
  uint64_t buffer_kb = 1408;
  bool no_pin = false;
  bool json = false;
  bool quiet = false;
  bool no_warmup = false;
  bool perf_no_syscall = false;
  bool peers = false;
};

template <class T, class Parse>
std::vector<T> parse_list(const std::vector<std::string>& names, Parse parse, const char* what) {
  std::vector<T> out;
  for (const std::string& n : names) {
    auto v = parse(n);
    if (!v) throw std::invalid_argument(fmt::format("unknown {} '{}'", what, n));
    out.push_back(*v);
  }
  return out;
}

void run(CliOptions& cli) {
  if (cli.peers) {  // same as `tracepipe bench-peers` (docs/peers.md)
    tracepipe::peers::PeersOptions po;
    po.json = cli.json;
    po.quiet = cli.quiet;
    if (const int rc = tracepipe::peers::run_peers(po); rc != 0) std::exit(rc);
    return;
  }
  BenchOptions& o = cli.bench;
  if (!cli.cases.empty()) o.cases = parse_list<Case>(cli.cases, parse_case, "case");
  if (!cli.stagings.empty())
    o.stagings = parse_list<Staging>(cli.stagings, bench::parse_staging, "staging mode");
  // Print per-CPU staging by the name it was asked by ("on" or "per_cpu").
  for (const std::string& n : cli.stagings)
    if (bench::parse_staging(n) == Staging::per_cpu) {
      o.staging_on_name = n;
      break;
    }
  o.workload.channel = cli.channel == "pipe" ? Channel::pipe : Channel::socketpair;
  o.workload.pin = !cli.no_pin;
  o.engine.overwrite = cli.mode == "overwrite";
  o.engine.buffer_bytes_per_cpu = cli.buffer_kb * 1024;
  o.mix = cli.table == "all" || cli.table == "mix";
  o.hackbench = cli.table == "all" || cli.table == "both" || cli.table == "hackbench";
  if (cli.table == "hackbench" || cli.table == "mix") o.perf_events = 0;
  o.perf_syscall = !cli.perf_no_syscall;
  o.warmup = !cli.no_warmup;
  if (!cli.filters_file.empty()) o.filters_file = cli.filters_file;

  // A peer that fails mid-run must not kill us through SIGPIPE: the workload
  // reports EPIPE as an error instead.
  std::signal(SIGPIPE, SIG_IGN);
  Progress progress(Progress::auto_style(cli.quiet));
  // The replayed-mix table comes first and quickly: print it as soon as it
  // is done, before the slower end-to-end phases.
  bool mix_printed = false;
  if (!cli.json)
    o.on_mix_done = [&mix_printed, &progress](const BenchReport& partial) {
      const std::string t = format_mix_table(partial);
      if (t.empty()) return;
      std::fwrite(t.data(), 1, t.size(), stdout);
      std::fputs("\n", stdout);
      std::fflush(stdout);
      mix_printed = true;
    };
  BenchReport report = run_bench(o, progress);
  const std::string text = cli.json ? to_json(report) : format_table(report, !mix_printed);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

// The in-process hackbench (the end-to-end table).
void add_workload_options(CLI::App* sub, CliOptions& cli) {
  BenchOptions& o = cli.bench;
  const char* W = "Workload (like hackbench -T)";
  sub->add_option("-g,--groups", o.workload.groups, "Groups of senders and receivers")
      ->check(CLI::Range(1, 64))
      ->group(W);
  sub->add_option("-f,--fds", o.workload.fds,
                  "Senders and receivers per group (each sender writes to every receiver)")
      ->check(CLI::Range(1, 64))
      ->group(W);
  sub->add_option("-l,--loops", o.workload.loops,
                  "Messages each sender writes to each receiver of its group")
      ->check(CLI::Range(1u, 1'000'000u))
      ->group(W);
  sub->add_option("-s,--datasize", o.workload.msg_bytes, "Bytes per message")
      ->check(CLI::Range(1, 4096))
      ->group(W);
  sub->add_option("--channel", cli.channel, "Channel per receiver: socketpair or pipe")
      ->check(CLI::IsMember({"socketpair", "pipe"}))
      ->group(W);
  sub->add_flag("--no-pin", cli.no_pin,
                "Do not pin threads (default: sender/receiver pair p runs on allowed CPU p mod n)")
      ->group(W);
}

// The cases, their repetitions and the warnings on their spread.
void add_case_options(CLI::App* sub, CliOptions& cli) {
  BenchOptions& o = cli.bench;
  const char* C = "Cases and statistics";
  sub->add_option("-r,--runs", o.runs,
                  "Repetitions of every case (like perf stat -r); runs are interleaved")
      ->check(CLI::Range(1, 1000))
      ->group(C);
  sub->add_option("--cases", cli.cases,
                  "Cases of the first table: off,all,reject,accept,half (off always runs: it is "
                  "the base) [default: all five]")
      ->delimiter(',')
      ->group(C);
  sub->add_option(
         "--staging", cli.stagings,
         "Staging modes: on or per_cpu (per-CPU temp buffer, the config file's name), off, "
         "adaptive, per_thread [default: on,off,adaptive]")
      ->delimiter(',')
      ->group(C);
  sub->add_option("--filters", cli.filters_file,
                  "TOML file overriding the filters of the reject, accept and half cases "
                  "(see docs/bench.md)")
      ->check(CLI::ExistingFile)
      ->group(C);
  sub->add_option("--warn-spread", o.warn_spread_pct,
                  "Warn when a case's relative stddev exceeds this many percent")
      ->check(number_range(0.01, 1000))
      ->group(C);
  sub->add_flag("--no-warmup", cli.no_warmup, "Skip the untimed warm-up pass")->group(C);
}

// The replayed kernel event mix (the first table).
void add_mix_options(CLI::App* sub, CliOptions& cli) {
  BenchOptions& o = cli.bench;
  const char* M = "Replayed mix (the first table)";
  sub->add_option(
         "--mix", o.mix_source,
         "Kernel capture whose sched_switch, sched_wakeup, sys_enter and sys_exit records "
         "are replayed, or 'embedded' [default: ../shared/data/kernel/hackbench.dat beside "
         "the source tree, else the embedded mix]")
      ->group(M);
  sub->add_option("--mix-rounds", o.mix_rounds,
                  "Rounds of paired blocks (each traced cell and off once per round); 0 skips "
                  "the table")
      ->check(CLI::Range(0u, 100000u))
      ->group(M);
  sub->add_option("--mix-events", o.mix_block_events, "Events per thread per block")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}))
      ->group(M);
  sub->add_option("--seed", o.mix_seed, "Seed of the random block order")->group(M);
}

// The ring buffer the cases trace into.
void add_engine_options(CLI::App* sub, CliOptions& cli) {
  BenchOptions& o = cli.bench;
  const char* E = "Engine";
  sub->add_option(
         "-b,--buffer-kb,--buffer-size-kb", cli.buffer_kb,
         "Ring buffer size per CPU, KiB, at least 8 (the bench's own floor; the config file "
         "and replay accept 1) (--buffer-size-kb: the config file's and replay's name)")
      ->check(CLI::Range(
          uint64_t{8}, kMaxBufferSizeKb))  // as the config file's (core/config/instance_options.h)
      ->group(E);
  sub->add_option("-m,--mode", cli.mode,
                  "Ring buffer mode when full: overwrite, or drop_newest (the config file's name) "
                  "= drop")
      ->check(CLI::IsMember({"overwrite", "drop_newest", "drop"}))
      ->group(E);
  sub->add_option(
         "-C,--clock", o.engine.clock,
         "Trace clock (kernel names: local, global, counter, mono, mono_raw, x86-tsc, ...)")
      ->group(E);
}

// The perf overwrite series, and which tables run.
void add_perf_options(CLI::App* sub, CliOptions& cli) {
  BenchOptions& o = cli.bench;
  const char* P = "Second table (perf overwrite series)";
  sub->add_option("--perf-events", o.perf_events, "Events per run (N); 0 skips the table")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1'000'000'000}))
      ->group(P);
  sub->add_flag("--perf-no-syscall", cli.perf_no_syscall,
                "Do not make a close(-1) system call before each event")
      ->group(P);
  sub->add_option("--table", cli.table,
                  "Which tables to run: all, mix (the replayed mix), hackbench (end to end), "
                  "overwrite (perf series), both (hackbench and overwrite)")
      ->check(CLI::IsMember({"all", "mix", "both", "hackbench", "overwrite"}))
      ->group(P);
}

// Tables or JSON, progress, or the peers bench instead.
void add_output_options(CLI::App* sub, CliOptions& cli) {
  const char* O = "Output";
  sub->add_flag("--json", cli.json, "Print JSON (shape in docs/bench.md) instead of tables")
      ->group(O);
  sub->add_flag("-q,--quiet", cli.quiet, "No progress line on stderr")->group(O);
  sub->add_flag("--peers", cli.peers,
                "Run the peers bench instead: the same event through tracepipe, LTTng-UST and the "
                "kernel's ftrace, interleaved (same as `tracepipe bench-peers`, docs/peers.md)")
      ->group(O);
}

const Registrar reg{[](CLI::App& app) {
  auto cli = std::make_shared<CliOptions>();
  CLI::App* sub = app.add_subcommand(
      "bench",
      "Measure what discarding and committing events cost, as the kernel patch 0fc1b09ff1ff "
      "did, with tracing off, all events, a reject-all, an accept-all and a 50% filter, each with "
      "staging on/off/adaptive: first the recorded kernel event mix of hackbench replayed "
      "through the emit path on pinned threads (per-event costs with 95% intervals), then an "
      "in-process hackbench emitting sched_switch, sched_wakeup, sys_enter and sys_exit end "
      "to end; then the perf overwrite series (N events from one thread into "
      "drop-newest and overwrite buffers). Prints tables, or JSON with --json. See docs/bench.md.");
  sub->option_defaults()->always_capture_default();
  // The groups in the order --help lists them.
  add_workload_options(sub, *cli);
  add_case_options(sub, *cli);
  add_mix_options(sub, *cli);
  add_engine_options(sub, *cli);
  add_perf_options(sub, *cli);
  add_output_options(sub, *cli);
  sub->callback([cli] { run(*cli); });
}};

}  // namespace
}  // namespace tracepipe::tools
