#pragma once
// What `tracepipe bench-peers` prints: the two tables, the skip lines, and
// the targets (docs/peers.md) checked against the figures of this run.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracepipe/bench/peers/kernel_micro.h"
#include "tracepipe/bench/peers/kernel_table.h"
#include "tracepipe/bench/peers/micro.h"

namespace tracepipe::peers {

struct PeersReport {
  // Setup, echoed in the report.
  uint64_t events = 0;          ///< table 1: events per thread per round
  uint32_t disabled_scale = 1;  ///< the disabled case runs this many times more
  uint32_t rounds = 0;
  std::string glob;
  std::string timing = "cpu";      ///< "cpu" or "wall"
  std::vector<int> cpus;           ///< worker i pinned to cpus[i]
  std::vector<std::string> sides;  ///< one description line per side of table 1
  bench::WorkloadConfig workload;  ///< table 2
  uint32_t hb_runs = 0;

  std::vector<std::string> skipped;              ///< "peer <name>: skipped: <why>" lines
  std::vector<std::string> errors;               ///< measurement failures
  std::vector<MicroCell> micro;                  ///< table 1
  std::optional<KernelMicroTable> kernel_micro;  ///< table 2
  std::optional<KernelTable> kernel;             ///< table 3
  double seconds = 0;                            ///< wall time of the whole run
};

/// One target (docs/peers.md, "Targets"), checked on this run's medians.
struct TargetCheck {
  std::string what;   ///< e.g. "reject-int x1: tracepipe >= 5x faster than lttng-ust"
  std::string value;  ///< the measured figure, e.g. "7.3x"
  enum class Verdict { met, not_met, unknown } verdict = Verdict::unknown;
  std::string why_unknown;
};

/// Median ns/event of `side` in `cell`, or nullopt if it has no samples.
std::optional<double> median_of(const MicroCell& cell, const std::string& side);

/// The targets: >= 5x faster than LTTng-UST per rejected event (reject-int,
/// reject-glob) and per committed event (enabled, accept-int, overwrite) on
/// each thread count; no slower when disabled (within 5%); tracepipe's
/// reject/commit cost ratio below the kernel's (event loops: table 1 against
/// table 2; hackbench: table 3).
std::vector<TargetCheck> check_targets(const PeersReport& report);

/// Text tables for a terminal.
std::string format_text(const PeersReport& report);
/// One JSON document with every sample.
std::string format_json(const PeersReport& report);

}  // namespace tracepipe::peers
