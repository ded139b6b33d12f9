// `tracepipe bench-peers`: tracepipe side by side with LTTng-UST and the
// kernel's own trace events. `tracepipe bench --peers` forwards here
// (run_peers). See docs/peers.md and bench/peers/peers.h.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "tracepipe/bench/peers/peers.h"
#include "tracepipe/core/config/instance_options.h"
#include "tracepipe/tools/commands.h"

namespace tracepipe::tools {
using namespace tracepipe::peers;
namespace {

// Tables 1 and 2: the event loop, tracepipe beside LTTng-UST and the kernel.
void add_loop_options(CLI::App* sub, PeersOptions& o) {
  const char* T1 = "Tables 1 and 2 (event loop: tracepipe vs LTTng-UST, the kernel)";
  sub->add_option("-n,--events", o.events, "Events per thread per timed round")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}))
      ->group(T1);
  sub->add_option("--disabled-scale", o.disabled_scale,
                  "The disabled case runs this many times more events")
      ->check(CLI::Range(1, 10000))
      ->group(T1);
  sub->add_option("-r,--rounds", o.rounds,
                  "Timed rounds per case and side (median and spread reported)")
      ->check(CLI::Range(1, 1000))
      ->group(T1);
  sub->add_option("-t,--threads", o.threads, "Thread counts (each thread pinned to its own CPU)")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024))
      ->group(T1);
  sub->add_option(
         "--cases", o.cases,
         "Cases: disabled, enabled, reject-int, accept-int, reject-glob, overwrite (default all)")
      ->delimiter(',')
      ->group(T1);
  sub->add_option("--glob", o.glob, "Glob of the reject-glob case (must not match \"hackbench\")")
      ->group(T1);
  sub->add_option("--staging", o.staging,
                  "tracepipe staging: per_cpu, per_thread, adaptive, off (default: core's)")
      ->group(T1);
  sub->add_option("--tp-api", o.tp_api,
                  "tracepipe's call: trace (TRACEPIPE_TRACE, tracepoint-style), trace-fn "
                  "(EventDecl::trace) or "
                  "emit (EventDecl::emit into the instance)")
      ->check(CLI::IsMember({"trace", "trace-fn", "emit"}))
      ->group(T1);
  sub->add_option("--buffer-kb", o.buffer_kb,
                  "Buffer per CPU in the discard-mode cases, KiB (0 = one round)")
      ->check(CLI::Range(uint64_t{0}, kMaxBufferSizeKb))
      ->group(T1);
  sub->add_option("--overwrite-kb", o.overwrite_kb,
                  "Buffer per CPU in the overwrite case, both sides, KiB")
      ->check(CLI::Range(uint64_t{64}, kMaxBufferSizeKb))
      ->group(T1);
  sub->add_option("--lttng-plugin", o.lttng_plugin,
                  "Path of libtracepipe_peer_lttng.so (default: search)")
      ->group(T1);
}

// Table 3: hackbench, tracepipe beside the kernel.
void add_hackbench_options(CLI::App* sub, PeersOptions& o) {
  const char* T2 = "Table 3 (hackbench: tracepipe vs the kernel)";
  sub->add_option("-g,--groups", o.hb_groups, "hackbench groups")
      ->check(CLI::Range(1, 64))
      ->group(T2);
  sub->add_option("-f,--fds", o.hb_fds, "hackbench senders = receivers per group")
      ->check(CLI::Range(1, 64))
      ->group(T2);
  sub->add_option("-l,--loops", o.hb_loops, "hackbench messages per sender and receiver")
      ->check(CLI::Range(1u, 1'000'000u))
      ->group(T2);
  sub->add_option("--hb-runs", o.hb_runs, "Runs per case and side")
      ->check(CLI::Range(1, 1000))
      ->group(T2);
  sub->add_option("--hb-cases", o.hb_cases,
                  "Cases: off, all, reject, accept, half (off always runs)")
      ->delimiter(',')
      ->group(T2);
  sub->add_option("--hb-staging", o.hb_staging,
                  "tracepipe engine staging: on (or per_cpu), off, adaptive, per_thread")
      ->group(T2);
}

// Which tables, how they are timed, which peers sit out, the output.
void add_general_options(CLI::App* sub, PeersOptions& o, std::string& only) {
  const char* G = "General";
  sub->add_option("--table", only, "Which tables: all, loop (1 and 2) or hackbench (3)")
      ->check(CLI::IsMember({"all", "loop", "hackbench"}))
      ->group(G);
  sub->add_option("--timing", o.timing,
                  "cpu: thread CPU time per round (process CPU time for hackbench), so other tasks "
                  "on a shared "
                  "machine do not count; wall: wall-clock time")
      ->check(CLI::IsMember({"cpu", "wall"}))
      ->group(G);
  sub->add_option(
         "--unavailable", o.unavailable,
         "Treat these peers as unavailable (lttng, kernel); also $TRACEPIPE_PEERS_UNAVAILABLE")
      ->delimiter(',')
      ->group(G);
  sub->add_flag("--json", o.json, "JSON on stdout instead of tables")->group(G);
  sub->add_flag("-q,--quiet", o.quiet, "No progress lines on stderr")->group(G);
}

const Registrar reg{[](CLI::App& app) {
  auto o = std::make_shared<PeersOptions>();
  auto only = std::make_shared<std::string>("all");
  CLI::App* sub = app.add_subcommand("bench-peers",
                                     "Measure tracepipe beside the systems users would pick "
                                     "instead, in the same process run, interleaved: "
                                     "a sched_switch-like event through tracepipe and LTTng-UST "
                                     "(disabled, enabled, integer filter rejecting or "
                                     "accepting all, string glob rejecting all, overwrite mode; 1 "
                                     "and 2 pinned threads), and the main bench's "
                                     "hackbench cases traced by tracepipe and by the kernel's own "
                                     "trace events and filters. A peer that cannot run "
                                     "is skipped with one line saying why. See docs/peers.md.");
  sub->option_defaults()->always_capture_default();
  // The groups in the order --help lists them.
  add_loop_options(sub, *o);
  add_hackbench_options(sub, *o);
  add_general_options(sub, *o, *only);

  sub->callback([o, only] {
    PeersOptions opts = *o;
    opts.run_loops = *only != "hackbench";
    opts.run_hackbench = *only != "loop";
    const int rc = run_peers(opts);
    if (rc != 0) std::exit(rc);
  });
}};

}  // namespace
}  // namespace tracepipe::tools
