#pragma once
// Turning measured runs into the bench's two outputs: a table like the kernel
// patch's (and the perf series'), and JSON for tools.
//
// JSON shape (stable; extra keys may be added, none removed):
//   {"tool": "tracepipe bench", "config": {...},
//    "cases": [{"case": "off"|"all"|"reject"|"accept"|"half",
//               "staging": "on"|"per_cpu"|"off"|"adaptive"|"per_thread", "runs": r, "mean_s": x,
//               "median_s": x, "stddev_pct": x, "events": n, "accepted": n,
//               "rejected": n, "accept_pct": x, "lost": n, "lost_commit_overrun": n,
//               "lost_busy": n, "lost_set_aside": n,
//               "ns_per_event": x|null, "ns_per_event_measured": x, "significant": bool,
//               "ratio_to_off": x, "staged": n, "staging_busy": n,
//               "conserved": bool,
//               "samples_s": [...]}, ...],
//    "overwrite_series": {"events": N, "syscall": bool,
//               "cases": [{"case": "base"|"drop+consumer"|"overwrite"|"overwrite+snapshot",
//                          "runs": r, "mean_s": x, "median_s": x, "stddev_pct": x,
//                          "events": n, "ns_per_event": x|null, "ns_per_event_measured": x,
//                          "significant": bool, "written": n, "lost": n,
//                          "overrun": n, "read": n, "snapshots": n,
//                          "conserved": bool}, ...]},
//    "warnings": ["...", ...]}
// The "off" case traces nothing: staging "off", events 0, ns_per_event 0.
// Per-CPU staging is named as it was asked for (BenchReport::staging_on_name).
// A cost that is not significant (negative, or within the run-to-run spread:
// CaseResult::significant) has ns_per_event null and prints "n.s." in the
// table; ns_per_event_measured keeps the raw difference.
// "accepted", "lost" are medians over the runs; the overwrite series' counts
// (written, lost, overrun, read, snapshots) all come from one run, the
// lower-median one by "lost", so written + lost == events.
#include <string>
#include <vector>

#include "tracepipe/bench/engine/model.h"

namespace tracepipe::bench {

/// Fills every derived field of `report` from its raw samples: summaries,
/// per-run event counts (checked identical across runs), median accepted,
/// rejected and lost counts, the filter pass rate, ns per event and ratio
/// against the off case (the base row of the second table), and appends
/// warnings, one line per kind listing the cells concerned: spread above
/// `warn_spread_pct`, a difference to off (or to base) that is negative or
/// smaller than the noise (those cells get significant = false), events
/// lost by the ring, a half filter far from 50%; and one line per cell for a
/// count that contradicts the case (a reject-all filter that accepted an
/// event, an accept-all filter that rejected one, events that differ between
/// runs). Throws std::logic_error if a traced case has runs but no off row.
void finalize(BenchReport& report, double warn_spread_pct);

/// The replayed-mix table alone (empty when the phase did not run): a row
/// per case, a column per staging mode, each cell "ns/event ±95%", a "*" on
/// cells that are not significant; then reject / all per staging mode.
std::string format_mix_table(const BenchReport& report);

/// The human table(s), ending with the warnings. Plain text. `with_mix`
/// false leaves out the replayed-mix table (already printed by the caller).
std::string format_table(const BenchReport& report, bool with_mix = true);

/// Per staging mode that has both cells: the replayed mix's reject cost,
/// all cost and their ratio (what discarding costs against committing).
struct DiscardVsCommit {
  Staging staging = Staging::off;
  double reject_ns = 0, all_ns = 0, ratio = 0;
};
std::vector<DiscardVsCommit> discard_vs_commit(const BenchReport& report);

/// The JSON document described above, one line per case, ending with "\n".
std::string to_json(const BenchReport& report);

}  // namespace tracepipe::bench
