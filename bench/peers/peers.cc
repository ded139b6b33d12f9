// run_peers: table 1 (tracepipe vs LTTng-UST, event loop), table 2 (the
// kernel's event loop), table 3 (tracepipe vs the kernel, hackbench), then the
// report. See peers.h.
#include "tracepipe/bench/peers/peers.h"

#include <fmt/core.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "tracepipe/bench/engine/model.h"
#include "tracepipe/bench/engine/progress.h"
#include "tracepipe/bench/engine/workload.h"
#include "tracepipe/bench/peers/kernel_micro.h"
#include "tracepipe/bench/peers/kernel_table.h"
#include "tracepipe/bench/peers/lttng_side.h"
#include "tracepipe/bench/peers/micro.h"
#include "tracepipe/bench/peers/peers_report.h"
#include "tracepipe/bench/peers/tracefs.h"
#include "tracepipe/bench/peers/tracepipe_side.h"
#include "tracepipe/core/config/instance_options.h"

namespace tracepipe::peers {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(start, end - start);
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

void micro_progress(const std::string& label, void* ctx) {
  auto* quiet = static_cast<bool*>(ctx);
  if (!*quiet) std::fprintf(stderr, "peers: table 1: %s\n", label.c_str());
}

// The peers marked unavailable by the option and by
// $TRACEPIPE_PEERS_UNAVAILABLE; throws std::invalid_argument on a name that is
// no peer.
std::vector<std::string> unavailable_peers(const PeersOptions& o) {
  std::vector<std::string> unavailable = o.unavailable;
  if (const char* env = std::getenv("TRACEPIPE_PEERS_UNAVAILABLE"))
    for (const std::string& n : split_commas(env)) unavailable.push_back(n);
  for (const std::string& n : unavailable)
    if (n != "lttng" && n != "kernel")
      throw std::invalid_argument(fmt::format("unknown peer '{}' (lttng, kernel)", n));
  return unavailable;
}

// Tables 1 and 2's options; throws std::invalid_argument on a bad one.
MicroOptions micro_options(const PeersOptions& o) {
  MicroOptions mo;
  mo.events = o.events;
  mo.disabled_scale = std::max<uint32_t>(1, o.disabled_scale);
  mo.rounds = o.rounds;
  mo.threads = o.threads;
  mo.glob = o.glob;
  mo.buffer_kb = o.buffer_kb;
  mo.overwrite_kb = o.overwrite_kb;
  // A round must fit one buffer (nothing lost: both sides are compared with
  // nothing dropped); past the config's per-CPU bound, say so before running.
  if (o.buffer_kb == 0 && round_buffer_kb(o.events) > kMaxBufferSizeKb)
    throw std::invalid_argument(
        fmt::format("--events {}: one round needs {} MiB of buffer per CPU (2 x 64 bytes per "
                    "event), above the {} MiB "
                    "maximum; use at most {} events, or set --buffer-kb (records beyond it are "
                    "then lost and reported)",
                    o.events, (round_buffer_kb(o.events) + 1023) / 1024, kMaxBufferSizeKb / 1024,
                    kMaxBufferSizeKb * 1024 / 128));
  if (o.timing != "cpu" && o.timing != "wall")
    throw std::invalid_argument(fmt::format("unknown --timing '{}' (cpu, wall)", o.timing));
  mo.timing = o.timing == "cpu" ? Timing::cpu : Timing::wall;
  if (!o.cases.empty()) {
    mo.cases.clear();
    for (const std::string& c : o.cases) {
      const auto k = parse_micro_case(c);
      if (!k) throw std::invalid_argument(fmt::format("unknown case '{}'", c));
      mo.cases.push_back(*k);
    }
  }
  if (o.glob.find('"') != std::string::npos || o.glob.find('\\') != std::string::npos)
    throw std::invalid_argument("--glob must not contain '\"' or '\\'");
  return mo;
}

// Table 3's options; throws std::invalid_argument on a bad one.
KernelTableOptions kernel_table_options(const PeersOptions& o) {
  KernelTableOptions ko;
  ko.workload.groups = o.hb_groups;
  ko.workload.fds = o.hb_fds;
  ko.workload.loops = o.hb_loops;
  ko.runs = o.hb_runs;
  ko.cpu_time = o.timing == "cpu";
  const auto staging = bench::parse_staging(o.hb_staging);
  if (!staging) throw std::invalid_argument(fmt::format("unknown --hb-staging '{}'", o.hb_staging));
  ko.engine.staging = *staging;
  if (o.hb_cases.empty()) {
    ko.cases.assign(std::begin(bench::kAllCases), std::end(bench::kAllCases));
  } else {
    for (const std::string& c : o.hb_cases) {
      const auto k = bench::parse_case(c);
      if (!k) throw std::invalid_argument(fmt::format("unknown hackbench case '{}'", c));
      ko.cases.push_back(*k);
    }
  }
  bench::validate(ko.workload);
  if (o.hb_runs == 0) throw std::invalid_argument("--hb-runs must be > 0");
  return ko;
}

// One run of the peers bench: its options, the report it fills, and the
// peers that may not run.
struct PeersRun {
  const PeersOptions& o;
  std::vector<std::string> unavailable;
  PeersReport report;

  bool forced_off(const std::string& peer) const {
    return std::find(unavailable.begin(), unavailable.end(), peer) != unavailable.end();
  }
  void skip(const std::string& peer, const std::string& why) {
    report.skipped.push_back(fmt::format("peer {}: skipped: {}", peer, why));
    if (o.json || !o.quiet) std::fprintf(stderr, "%s\n", report.skipped.back().c_str());
  }
};

// The kernel peer: one tracefs instance for tables 2 and 3, or null.
std::unique_ptr<TracefsInstance> open_kernel_peer(PeersRun& run) {
  if (run.forced_off("kernel")) {
    run.skip("kernel", "marked unavailable (--unavailable kernel or TRACEPIPE_PEERS_UNAVAILABLE)");
    return nullptr;
  }
  try {
    return TracefsInstance::create();
  } catch (const PeerUnavailable& e) {
    run.skip("kernel", e.what());
  }
  return nullptr;
}

std::unique_ptr<LttngSide> open_lttng_peer(PeersRun& run) {
  if (run.forced_off("lttng")) {
    run.skip("lttng-ust",
             "marked unavailable (--unavailable lttng or TRACEPIPE_PEERS_UNAVAILABLE)");
    return nullptr;
  }
  try {
    return LttngSide::open(run.o.lttng_plugin);
  } catch (const PeerUnavailable& e) {
    run.skip("lttng-ust", e.what());
  }
  return nullptr;
}

// Table 1: tracepipe beside LTTng-UST (when it opens) in the event loop.
void run_tracepipe_lttng_table(PeersRun& run, const MicroOptions& mo,
                               const std::vector<int>& cpus) {
  PeersReport& report = run.report;
  TracepipeSide tp(run.o.staging, run.o.tp_api);
  std::unique_ptr<LttngSide> lttng = open_lttng_peer(run);
  std::vector<MicroSide*> sides{&tp};
  report.sides.push_back(tp.description());
  if (lttng) {
    sides.push_back(lttng.get());
    report.sides.push_back(lttng->description());
  }
  std::vector<std::string> skipped;
  bool quiet = run.o.quiet;
  report.micro = run_micro(mo, sides, cpus, skipped, micro_progress, &quiet);
  lttng.reset();  // stops the daemon before the kernel's tables
  const size_t max_t =
      std::min<size_t>(cpus.size(), *std::max_element(mo.threads.begin(), mo.threads.end()));
  report.cpus.assign(cpus.begin(), cpus.begin() + static_cast<std::ptrdiff_t>(max_t));
  for (const std::string& s : skipped) report.skipped.push_back("table 1: skipped: " + s);
  for (const MicroCell& c : report.micro)
    for (const SideResult& s : c.sides)
      if (!s.error.empty())
        report.errors.push_back(
            fmt::format("table 1 {} x{} {}: {}", name(c.kase), c.threads, s.side, s.error));
}

// Table 2: the kernel's own event loop.
void run_kernel_loop_table(PeersRun& run, const MicroOptions& mo, TracefsInstance& tracefs,
                           const std::vector<int>& cpus) {
  if (!run.o.quiet) std::fprintf(stderr, "peers: table 2: kernel event loop\n");
  try {
    run.report.kernel_micro = run_kernel_micro(mo, tracefs, cpus);
  } catch (const PeerUnavailable& e) {
    run.skip("kernel (table 2)", e.what());
  } catch (const std::exception& e) {
    run.report.errors.push_back(fmt::format("table 2: {}", e.what()));
  }
}

// Table 3: hackbench traced by tracepipe and by the kernel.
void run_hackbench_table(PeersRun& run, const KernelTableOptions& ko, TracefsInstance& tracefs) {
  try {
    bench::Progress progress(bench::Progress::auto_style(run.o.quiet));
    run.report.kernel = run_kernel_table(ko, tracefs, progress);
  } catch (const PeerUnavailable& e) {
    run.skip("kernel (table 3)", e.what());
  } catch (const std::exception& e) {
    run.report.errors.push_back(fmt::format("table 3: {}", e.what()));
  }
}

}  // namespace

int run_peers(const PeersOptions& o) {
  // A workload thread that fails must see EPIPE, not kill us.
  std::signal(SIGPIPE, SIG_IGN);
  const uint64_t t0 = bench::detail::now_ns();
  PeersRun run{o, unavailable_peers(o), {}};
  const MicroOptions mo = micro_options(o);
  const KernelTableOptions ko = kernel_table_options(o);

  PeersReport& report = run.report;
  report.events = mo.events;
  report.disabled_scale = mo.disabled_scale;
  report.rounds = mo.rounds;
  report.glob = mo.glob;
  report.timing = o.timing;
  report.workload = ko.workload;
  report.hb_runs = ko.runs;
  const std::vector<int> cpus = bench::detail::allowed_cpus();

  std::unique_ptr<TracefsInstance> tracefs;
  if (o.run_loops || o.run_hackbench) tracefs = open_kernel_peer(run);
  if (o.run_loops) {
    run_tracepipe_lttng_table(run, mo, cpus);
    if (tracefs) run_kernel_loop_table(run, mo, *tracefs, cpus);
  }
  if (o.run_hackbench && tracefs) run_hackbench_table(run, ko, *tracefs);
  tracefs.reset();

  report.seconds = static_cast<double>(bench::detail::now_ns() - t0) / 1e9;
  const std::string text = o.json ? format_json(report) : format_text(report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return report.errors.empty() ? 0 : 1;
}

}  // namespace tracepipe::peers
