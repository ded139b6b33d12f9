#include "tracepipe/bench/engine/report.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tracepipe::bench {
namespace {

uint64_t median_u64(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];  // lower median: always one of the observed counts
}

const char* filter_label(Case c) {
  switch (c) {
    case Case::off:
      return "tracing off";
    case Case::all:
      return "no filter";
    case Case::reject:
      return "common_preempt_count==20";
    case Case::accept:
      return "common_preempt_count!=20";
    case Case::half:
      return "half (below)";
  }
  return "?";
}

// JSON helpers: numbers are finite or null; strings escaped per RFC 8259.
std::string jnum(double x) {
  if (!std::isfinite(x)) return "null";
  return fmt::format("{:.9g}", x);
}

std::string jstr(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string jsamples(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + jnum(v[i]);
  return out + "]";
}

std::string with_commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = int(s.size()) - 3; i > 0; i -= 3) s.insert(size_t(i), ",");
  return s;
}

std::string cpu_list(const std::vector<int>& cpus) {
  if (cpus.empty()) return "unpinned";
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

// A traced cell's cost over the base is a figure only when it is positive
// and at least the larger of the two cells' run-to-run stddevs (with one run
// each there is no spread: only the sign counts). Below that, or negative,
// the difference is noise.
bool above_noise(const Summary& cell, const Summary& base) {
  const double diff = cell.median - base.median;
  return diff > 0 && diff >= std::max(cell.stddev, base.stddev);
}

// The ns/event column: the figure, or "n.s." when it is not significant.
std::string ns_cell(double ns, bool significant) {
  return significant ? fmt::format("{:.1f}", ns) : std::string("n.s.");
}

}  // namespace

void finalize(BenchReport& r, double warn_spread_pct) {
  r.warnings.erase(std::remove_if(r.warnings.begin(), r.warnings.end(),
                                  [](const std::string& w) { return w.starts_with("[auto] "); }),
                   r.warnings.end());
  auto warn = [&](std::string w) { r.warnings.push_back("[auto] " + std::move(w)); };
  // Warnings that concern several cells are gathered into one line each.
  std::vector<std::string> spread, lost, noise, half;
  uint64_t lost_commit_overrun = 0;

  const CaseResult* off = nullptr;
  for (CaseResult& c : r.cases) {
    c.summary = summarize(c.seconds);
    if (c.spec.kase == Case::off) off = &c;
    std::vector<uint64_t> accepted, rejected, lost_v, lost_co, staged, busy;
    c.events = c.counts.empty() ? 0 : c.counts.front().emitted;
    bool same = true;
    for (const RunCounts& k : c.counts) {
      accepted.push_back(k.accepted);
      rejected.push_back(k.rejected);
      lost_v.push_back(k.lost);
      lost_co.push_back(k.lost_commit_overrun);
      staged.push_back(k.staged);
      busy.push_back(k.staging_busy);
      same = same && k.emitted == c.events;
    }
    c.accepted = median_u64(accepted);
    c.rejected = median_u64(rejected);
    c.lost = median_u64(lost_v);
    c.lost_commit_overrun = median_u64(lost_co);
    c.staged = median_u64(staged);
    c.staging_busy = median_u64(busy);
    c.accept_pct =
        c.events ? 100.0 * double(c.events - std::min(c.rejected, c.events)) / double(c.events) : 0;
    const std::string label = c.spec.kase == Case::off
                                  ? std::string("off")
                                  : fmt::format("{}/{}", name(c.spec.kase), name(c.spec.staging, r.staging_on_name));
    if (!same) warn(fmt::format("{}: events differ between runs (engine or workload bug)", label));
    if (c.spec.kase == Case::off && c.events != 0)
      warn(fmt::format("off: {} events reached the engine with tracing off", c.events));
    if (c.spec.kase != Case::off && c.events == 0 && !c.counts.empty())
      warn(fmt::format("{}: no event reached the engine", label));
    for (const RunCounts& k : c.counts)
      if (!k.conserved) {
        warn(
            fmt::format("{}: the ring buffer's accounting does not add up to the engine's "
                        "reservations (a core/ or buffers/ bug)",
                        label));
        break;
      }
    for (const RunCounts& k : c.counts) {
      if (c.spec.kase == Case::reject && k.accepted != 0) {
        warn(fmt::format("{}: the reject-all filter accepted {} events", label, k.accepted));
        break;
      }
      if ((c.spec.kase == Case::accept || c.spec.kase == Case::all) && k.rejected != 0) {
        warn(fmt::format("{}: {} events rejected although every event should pass", label,
                         k.rejected));
        break;
      }
    }
    if (c.events > 0 && c.lost * 200 > c.events) {  // > 0.5%
      lost.push_back(fmt::format("{} {:.1f}%", label, 100.0 * double(c.lost) / double(c.events)));
      lost_commit_overrun += c.lost_commit_overrun;
    }
    if (c.spec.kase == Case::half && c.events > 0 && (c.accept_pct < 45 || c.accept_pct > 55))
      half.push_back(fmt::format("{} {:.1f}%", label, c.accept_pct));
    if (c.summary.n >= 2 && c.summary.stddev_pct > warn_spread_pct)
      spread.push_back(fmt::format("{} ±{:.1f}%", label, c.summary.stddev_pct));
  }
  if (!off && std::any_of(r.cases.begin(), r.cases.end(),
                          [](const CaseResult& c) { return !c.seconds.empty(); }))
    throw std::logic_error("bench report: traced cases without an off (base) case");
  for (CaseResult& c : r.cases) {
    if (!off || off->summary.median <= 0) continue;
    c.ratio_to_off = c.summary.median / off->summary.median;
    c.ns_per_event = ns_per_event(c.summary.median, off->summary.median, c.events);
    if (c.spec.kase == Case::off) continue;
    c.significant = above_noise(c.summary, off->summary);
    if (!c.significant)
      noise.push_back(fmt::format("{}/{}", name(c.spec.kase), name(c.spec.staging, r.staging_on_name)));
  }

  const PerfResult* base = nullptr;
  for (PerfResult& p : r.perf) {
    p.summary = summarize(p.seconds);
    if (p.kase == PerfCase::base) base = &p;
    // Counts of one run (the lower-median run by losses), so that they add up.
    std::vector<PerfCounts> runs = p.counts;
    std::sort(runs.begin(), runs.end(),
              [](const PerfCounts& a, const PerfCounts& b) { return a.lost < b.lost; });
    p.median_counts = runs.empty() ? PerfCounts{} : runs[(runs.size() - 1) / 2];
    for (const PerfCounts& k : p.counts)
      if (!k.conserved) {
        warn(
            fmt::format("overwrite series {}: the ring buffer's counts do not add up (written "
                        "{} + lost {} against {} attempts, or consumed + overrun + lost + "
                        "discarded + entries differs): a buffers/ accounting bug",
                        name(p.kase), k.written, k.lost, p.events));
        break;
      }
    if (p.summary.n >= 2 && p.summary.stddev_pct > warn_spread_pct)
      spread.push_back(fmt::format("{} ±{:.1f}%", name(p.kase), p.summary.stddev_pct));
  }
  for (PerfResult& p : r.perf)
    if (base && p.kase != PerfCase::base) {
      p.ns_per_event = ns_per_event(p.summary.median, base->summary.median, p.events);
      p.significant = above_noise(p.summary, base->summary);
      if (!p.significant) noise.push_back(std::string(name(p.kase)));
    }

  auto join = [](const std::vector<std::string>& v) {
    return fmt::format("{}", fmt::join(v, ", "));
  };
  if (!lost.empty())
    warn(fmt::format(
        "events lost by the ring buffer: {} ({} of them because the sub-buffer to overwrite still "
        "held a record whose writer was preempted between reserve and commit: commit_overrun); "
        "those cells under-count the cost of committing: enlarge --buffer-kb or run fewer threads",
        join(lost), lost_commit_overrun));
  if (!half.empty())
    warn(
        fmt::format("the half filter passed {} of the events, not about 50% (odd CPU count, "
                    "--no-pin, an odd number of pairs, or a filter file)",
                    join(half)));
  if (!spread.empty())
    warn(
        fmt::format("high spread (relative stddev above {:.0f}%): {}; the machine is noisy: "
                    "compare medians, raise --runs or the workload size",
                    warn_spread_pct, join(spread)));
  if (!noise.empty())
    warn(
        fmt::format("difference to off (or base) negative or within the run-to-run spread "
                    "(ns/event not significant, shown as n.s.): {}",
                    join(noise)));
}

std::string format_table(const BenchReport& r) {
  std::string out;
  auto line = [&](std::string s) { out += s + "\n"; };
  const WorkloadConfig& w = r.workload;
  if (!r.cases.empty()) {
    line(fmt::format(
        "tracepipe bench: hackbench -g {} -f {} -l {} ({}, {}-byte messages, {} threads, "
        "CPUs {})",
        w.groups, w.fds, w.loops, w.channel == Channel::socketpair ? "socketpairs" : "pipes",
        w.msg_bytes, w.threads(), cpu_list(r.cpus)));
    line(
        fmt::format("  {} messages/run, 6 events each (sys_enter, sys_exit, sched_wakeup, "
                    "sched_switch); engine: {}",
                    with_commas(w.messages()), r.engine));
    line(fmt::format("  ring buffer {} KiB/CPU, {}, clock {}; {} runs per case, interleaved",
                     r.buffer_bytes_per_cpu / 1024, r.mode, r.clock, r.runs));
    line("");
    line(fmt::format("{:<7} {:<26} {:<10} {:>8} {:>6} {:>8} {:>10} {:>6} {:>6} {:>8} {:>5}", "case",
                     "filter", "staging", "mean s", "±%", "median s", "events", "pass %", "lost %",
                     "ns/event", "x off"));
    for (const CaseResult& c : r.cases) {
      const bool off = c.spec.kase == Case::off;
      const std::string lost_pct =
          c.events ? fmt::format("{:.1f}", 100.0 * double(c.lost) / double(c.events)) : "-";
      line(fmt::format(
          "{:<7} {:<26} {:<10} {:>8.4f} {:>5.1f}% {:>8.4f} {:>10} {:>6} {:>6} {:>8} {:>5.2f}",
          name(c.spec.kase), filter_label(c.spec.kase), off ? "-" : name(c.spec.staging, r.staging_on_name),
          c.summary.mean, c.summary.stddev_pct, c.summary.median, with_commas(c.events),
          off ? std::string("-") : fmt::format("{:.1f}", c.accept_pct),
          off ? std::string("-") : lost_pct,
          off ? std::string("-") : ns_cell(c.ns_per_event, c.significant), c.ratio_to_off));
    }
    if (!r.half_filters.empty()) {
      line("");
      line("half filter (per event):");
      for (const auto& [ev, expr] : r.half_filters) line(fmt::format("  {:<14} {}", ev, expr));
    }
  }
  if (!r.perf.empty()) {
    if (!out.empty()) line("");
    line(fmt::format(
        "perf overwrite series: N = {} sys_enter events from one thread{}; {} runs "
        "per case, interleaved",
        with_commas(r.perf_events), r.perf_syscall ? " (each after a close(-1))" : "", r.runs));
    line("");
    line(fmt::format("{:<19} {:>9} {:>7} {:>9} {:>9} {:>11} {:>11} {:>11} {:>11}", "case", "mean s",
                     "±%", "median s", "ns/event", "written", "lost", "overrun", "read"));
    for (const PerfResult& p : r.perf) {
      const bool base = p.kase == PerfCase::base;
      line(fmt::format("{:<19} {:>9.4f} {:>6.1f}% {:>9.4f} {:>9} {:>11} {:>11} {:>11} {:>11}",
                       name(p.kase), p.summary.mean, p.summary.stddev_pct, p.summary.median,
                       base ? std::string("-") : ns_cell(p.ns_per_event, p.significant),
                       with_commas(p.median_counts.written), with_commas(p.median_counts.lost),
                       with_commas(p.median_counts.overrun), with_commas(p.median_counts.read)));
    }
  }
  if (!r.warnings.empty()) {
    line("");
    for (const std::string& w : r.warnings)
      line("warning: " + (w.starts_with("[auto] ") ? w.substr(7) : w));
  }
  return out;
}

std::string to_json(const BenchReport& r) {
  const WorkloadConfig& w = r.workload;
  std::string out = "{\"tool\": \"tracepipe bench\",\n";
  out += fmt::format(
      " \"config\": {{\"groups\": {}, \"fds\": {}, \"loops\": {}, \"msg_bytes\": {}, "
      "\"channel\": {}, \"threads\": {}, \"messages\": {}, \"pinned\": {}, \"cpus\": [{}], "
      "\"runs\": {}, \"buffer_bytes_per_cpu\": {}, \"mode\": {}, \"clock\": {}, \"engine\": {}, "
      "\"half_filters\": {{",
      w.groups, w.fds, w.loops, w.msg_bytes,
      jstr(w.channel == Channel::socketpair ? "socketpair" : "pipe"), w.threads(), w.messages(),
      w.pin ? "true" : "false", fmt::join(r.cpus, ", "), r.runs, r.buffer_bytes_per_cpu,
      jstr(r.mode), jstr(r.clock), jstr(r.engine));
  for (size_t i = 0; i < r.half_filters.size(); ++i)
    out += fmt::format("{}{}: {}", i ? ", " : "", jstr(r.half_filters[i].first),
                       jstr(r.half_filters[i].second));
  out += fmt::format("}}, \"total_s\": {}}},\n \"cases\": [", jnum(r.total_seconds));
  for (size_t i = 0; i < r.cases.size(); ++i) {
    const CaseResult& c = r.cases[i];
    out += fmt::format(
        "{}\n  {{\"case\": {}, \"staging\": {}, \"runs\": {}, \"mean_s\": {}, \"median_s\": {}, "
        "\"stddev_pct\": {}, \"events\": {}, \"accepted\": {}, \"rejected\": {}, \"accept_pct\": "
        "{}, \"lost\": {}, "
        "\"lost_commit_overrun\": {}, \"ns_per_event\": {}, \"ns_per_event_measured\": {}, "
        "\"significant\": {}, \"ratio_to_off\": {}, "
        "\"staged\": {}, \"staging_busy\": {}, \"conserved\": {}, \"samples_s\": {}}}",
        i ? "," : "", jstr(name(c.spec.kase)), jstr(name(c.spec.staging, r.staging_on_name)), c.summary.n,
        jnum(c.summary.mean), jnum(c.summary.median), jnum(c.summary.stddev_pct), c.events,
        c.accepted, c.rejected, jnum(c.accept_pct), c.lost, c.lost_commit_overrun,
        c.significant ? jnum(c.ns_per_event) : "null", jnum(c.ns_per_event),
        c.significant ? "true" : "false", jnum(c.ratio_to_off), c.staged, c.staging_busy,
        std::all_of(c.counts.begin(), c.counts.end(),
                    [](const RunCounts& k) { return k.conserved; })
            ? "true"
            : "false",
        jsamples(c.seconds));
  }
  out += "],\n";
  if (r.perf_events > 0) {
    out += fmt::format(" \"overwrite_series\": {{\"events\": {}, \"syscall\": {}, \"cases\": [",
                       r.perf_events, r.perf_syscall ? "true" : "false");
    for (size_t i = 0; i < r.perf.size(); ++i) {
      const PerfResult& p = r.perf[i];
      out += fmt::format(
          "{}\n  {{\"case\": {}, \"runs\": {}, \"mean_s\": {}, \"median_s\": {}, \"stddev_pct\": "
          "{}, "
          "\"events\": {}, \"ns_per_event\": {}, \"ns_per_event_measured\": {}, \"significant\": {}, "
          "\"written\": {}, \"lost\": {}, \"overrun\": {}, "
          "\"read\": {}, \"snapshots\": {}, \"conserved\": {}, \"samples_s\": {}}}",
          i ? "," : "", jstr(name(p.kase)), p.summary.n, jnum(p.summary.mean),
          jnum(p.summary.median), jnum(p.summary.stddev_pct), p.events,
          p.significant ? jnum(p.ns_per_event) : "null", jnum(p.ns_per_event),
          p.significant ? "true" : "false",
          p.median_counts.written, p.median_counts.lost, p.median_counts.overrun,
          p.median_counts.read, p.median_counts.snapshots,
          std::all_of(p.counts.begin(), p.counts.end(),
                      [](const PerfCounts& k) { return k.conserved; })
              ? "true"
              : "false",
          jsamples(p.seconds));
    }
    out += "]},\n";
  }
  out += " \"warnings\": [";
  for (size_t i = 0; i < r.warnings.size(); ++i) {
    const std::string& w = r.warnings[i];
    out += (i ? ", " : "") + jstr(w.starts_with("[auto] ") ? std::string_view(w).substr(7) : w);
  }
  out += "]}\n";
  return out;
}

}  // namespace tracepipe::bench
