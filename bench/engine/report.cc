#include "tracepipe/bench/engine/report.h"

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace tracepipe::bench {
namespace {

uint64_t median_u64(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];  // lower median: always one of the observed counts
}

const char* filter_label(Case c);

// The label of a case's filter: the default's, or the filter file's.
const char* filter_label(const BenchReport& r, Case c) {
  if (std::find(r.filters_from_file.begin(), r.filters_from_file.end(), c) !=
      r.filters_from_file.end())
    return c == Case::half ? "from --filters (below)" : "from --filters";
  return filter_label(c);
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

// A cell's label: "off", or "case/staging".
std::string cell_label(const CaseSpec& c, std::string_view on_name) {
  return c.kase == Case::off ? std::string("off")
                             : fmt::format("{}/{}", name(c.kase), name(c.staging, on_name));
}

// The paired costs of a traced cell over its base, their median and 95%
// interval, and the verdict. Without pairs (no events, or no base runs) the
// difference of the medians stands, with too few samples to be significant.
template <class Row>
void judge_row(Row& row, const std::vector<double>& cell_s, const std::vector<double>& base_s,
               double cell_median, double base_median, uint64_t events) {
  row.pair_costs = paired_ns_per_event(cell_s, base_s, events);
  row.ci = median_ci95(row.pair_costs);
  row.ns_per_event =
      row.pair_costs.empty() ? ns_per_event(cell_median, base_median, events) : row.ci.median;
  row.verdict = judge(row.ci);
  row.significant = row.verdict == Verdict::significant;
}

// "15.31 ±0.20": a cost and its 95% half width, digits by magnitude.
std::string cost_text(double ns, double half_width) {
  const int digits = std::fabs(ns) < 10 ? 2 : 1;
  return fmt::format("{:.{}f} ±{:.{}f}", ns, digits, half_width, digits);
}

// The ns/event column: the figure, or "n.s." when it is not significant.
std::string ns_cell(double ns, bool significant) {
  return significant ? fmt::format("{:.1f}", ns) : std::string("n.s.");
}

// Warnings that concern several cells are gathered here and printed as one
// line each, after the warnings about a single cell.
struct Findings {
  Findings(BenchReport& report, double spread_pct) : r(report), warn_spread_pct(spread_pct) {}

  BenchReport& r;
  double warn_spread_pct;
  std::vector<std::string> spread, lost, noise, half, mix_noise, mix_lost;
  uint64_t lost_commit_overrun = 0, lost_busy = 0;

  void warn(std::string w) { r.warnings.push_back("[auto] " + std::move(w)); }
};

// The case's counts: the lower median of each over its runs, so that every
// figure is one a run observed. False when the runs saw different numbers
// of events.
bool take_median_counts(CaseResult& c) {
  std::vector<uint64_t> accepted, rejected, lost_v, lost_co, lost_sa, lost_bz, staged, busy;
  c.events = c.counts.empty() ? 0 : c.counts.front().emitted;
  bool same = true;
  for (const RunCounts& k : c.counts) {
    accepted.push_back(k.accepted);
    rejected.push_back(k.rejected);
    lost_v.push_back(k.lost);
    lost_co.push_back(k.lost_commit_overrun);
    lost_sa.push_back(k.lost_set_aside);
    lost_bz.push_back(k.lost_busy);
    staged.push_back(k.staged);
    busy.push_back(k.staging_busy);
    same = same && k.emitted == c.events;
  }
  c.accepted = median_u64(accepted);
  c.rejected = median_u64(rejected);
  c.lost = median_u64(lost_v);
  c.lost_commit_overrun = median_u64(lost_co);
  c.lost_set_aside = median_u64(lost_sa);
  c.lost_busy = median_u64(lost_bz);
  c.staged = median_u64(staged);
  c.staging_busy = median_u64(busy);
  c.accept_pct =
      c.events ? 100.0 * double(c.events - std::min(c.rejected, c.events)) / double(c.events) : 0;
  return same;
}

// What an end-to-end case's runs say about the engine and the filters: a
// count that cannot be right points at a bug, not at noise.
void check_case_counts(const CaseResult& c, const std::string& label, bool same, Findings& f) {
  if (!same) f.warn(fmt::format("{}: events differ between runs (engine or workload bug)", label));
  if (c.spec.kase == Case::off && c.events != 0)
    f.warn(fmt::format("off: {} events reached the engine with tracing off", c.events));
  if (c.spec.kase != Case::off && c.events == 0 && !c.counts.empty())
    f.warn(fmt::format("{}: no event reached the engine", label));
  for (const RunCounts& k : c.counts)
    if (!k.conserved) {
      f.warn(
          fmt::format("{}: the ring buffer's accounting does not add up to the engine's "
                      "reservations (a core/ or buffers/ bug)",
                      label));
      break;
    }
  for (const RunCounts& k : c.counts) {
    if (c.spec.kase == Case::reject && k.accepted != 0) {
      f.warn(fmt::format("{}: the reject-all filter accepted {} events", label, k.accepted));
      break;
    }
    if ((c.spec.kase == Case::accept || c.spec.kase == Case::all) && k.rejected != 0) {
      f.warn(fmt::format("{}: {} events rejected although every event should pass", label,
                         k.rejected));
      break;
    }
  }
}

// Summarises every end-to-end case and notes its losses, odd half filter and
// spread. Returns the off (base) case, or null.
const CaseResult* summarize_cases(Findings& f) {
  const CaseResult* off = nullptr;
  for (CaseResult& c : f.r.cases) {
    c.summary = summarize(c.seconds);
    if (c.spec.kase == Case::off) off = &c;
    const bool same = take_median_counts(c);
    const std::string label =
        c.spec.kase == Case::off
            ? std::string("off")
            : fmt::format("{}/{}", name(c.spec.kase), name(c.spec.staging, f.r.staging_on_name));
    check_case_counts(c, label, same, f);
    if (c.events > 0 && c.lost * 200 > c.events) {  // > 0.5%
      f.lost.push_back(fmt::format("{} {:.1f}%", label, 100.0 * double(c.lost) / double(c.events)));
      f.lost_commit_overrun += c.lost_commit_overrun;
      f.lost_busy += c.lost_busy;
    }
    if (c.spec.kase == Case::half && c.events > 0 && (c.accept_pct < 45 || c.accept_pct > 55))
      f.half.push_back(fmt::format("{} {:.1f}%", label, c.accept_pct));
    if (c.summary.n >= 2 && c.summary.stddev_pct > f.warn_spread_pct)
      f.spread.push_back(fmt::format("{} ±{:.1f}%", label, c.summary.stddev_pct));
  }
  return off;
}

// Each traced case's cost over off, from the runs paired with off's.
void judge_cases(const CaseResult* off, Findings& f) {
  if (!off && std::any_of(f.r.cases.begin(), f.r.cases.end(),
                          [](const CaseResult& c) { return !c.seconds.empty(); }))
    throw std::logic_error("bench report: traced cases without an off (base) case");
  for (CaseResult& c : f.r.cases) {
    if (!off || off->summary.median <= 0) continue;
    c.ratio_to_off = c.summary.median / off->summary.median;
    if (c.spec.kase == Case::off) {
      c.ns_per_event = 0;
      continue;
    }
    judge_row(c, c.seconds, off->seconds, c.summary.median, off->summary.median, c.events);
    if (!c.significant)
      f.noise.push_back(
          fmt::format("{} ({})", cell_label(c.spec, f.r.staging_on_name), verdict_text(c.verdict)));
  }
}

// The perf overwrite series: summaries, one run's counts, each case's cost
// over base.
void finalize_perf(Findings& f) {
  const PerfResult* base = nullptr;
  for (PerfResult& p : f.r.perf) {
    p.summary = summarize(p.seconds);
    if (p.kase == PerfCase::base) base = &p;
    // Counts of one run (the lower-median run by losses), so that they add up.
    std::vector<PerfCounts> runs = p.counts;
    std::sort(runs.begin(), runs.end(),
              [](const PerfCounts& a, const PerfCounts& b) { return a.lost < b.lost; });
    p.median_counts = runs.empty() ? PerfCounts{} : runs[(runs.size() - 1) / 2];
    for (const PerfCounts& k : p.counts)
      if (!k.conserved) {
        f.warn(
            fmt::format("overwrite series {}: the ring buffer's counts do not add up (written "
                        "{} + lost {} against {} attempts, or consumed + overrun + lost + "
                        "discarded + entries differs): a buffers/ accounting bug",
                        name(p.kase), k.written, k.lost, p.events));
        break;
      }
    if (p.summary.n >= 2 && p.summary.stddev_pct > f.warn_spread_pct)
      f.spread.push_back(fmt::format("{} ±{:.1f}%", name(p.kase), p.summary.stddev_pct));
  }
  for (PerfResult& p : f.r.perf)
    if (base && p.kase != PerfCase::base) {
      judge_row(p, p.seconds, base->seconds, p.summary.median, base->summary.median, p.events);
      if (!p.significant)
        f.noise.push_back(fmt::format("{} ({})", name(p.kase), verdict_text(p.verdict)));
    }
}

// What a replayed-mix cell's counts say about the engine and the filters.
void check_mix_counts(const MixResult& m, const std::string& label, uint64_t block_events,
                      Findings& f) {
  const RunCounts& k = m.counts;
  if (k.emitted > 0 && k.lost * 200 > k.emitted)
    f.mix_lost.push_back(
        fmt::format("{} {:.1f}%", label, 100.0 * double(k.lost) / double(k.emitted)));
  if (m.spec.kase == Case::half && k.emitted > 0 && (m.accept_pct < 45 || m.accept_pct > 55))
    f.half.push_back(fmt::format("replayed mix {} {:.1f}%", label, m.accept_pct));
  if (!k.conserved)
    f.warn(
        fmt::format("replayed mix {}: the ring buffer's accounting does not add up to the "
                    "engine's reservations (a core/ or buffers/ bug)",
                    label));
  if (m.spec.kase == Case::reject && k.accepted != 0)
    f.warn(fmt::format("replayed mix {}: the reject-all filter accepted {} events", label,
                       k.accepted));
  if ((m.spec.kase == Case::accept || m.spec.kase == Case::all) && k.rejected != 0)
    f.warn(fmt::format("replayed mix {}: {} events rejected although every event should pass",
                       label, k.rejected));
  if (k.emitted != uint64_t(m.costs.size()) * block_events)
    f.warn(fmt::format("replayed mix {}: {} events reached the engine, expected {}", label,
                       k.emitted, uint64_t(m.costs.size()) * block_events));
}

// The replayed mix: each cell's paired block costs over off, their interval
// and verdict, and the base's own cost.
void finalize_mix(Findings& f) {
  BenchReport& r = f.r;
  if (r.mix_cases.empty()) return;
  const uint64_t block_events = uint64_t{r.mix.threads} * r.mix.block_events;
  std::vector<double> base_costs;
  for (MixResult& m : r.mix_cases) {
    m.costs.clear();
    const size_t n = std::min(m.block_ns.size(), m.base_ns.size());
    for (size_t i = 0; i < n && block_events > 0; ++i) {
      m.costs.push_back((m.block_ns[i] - m.base_ns[i]) / double(block_events));
      base_costs.push_back(m.base_ns[i] / double(block_events));
    }
    m.ci = median_ci95(m.costs);
    m.verdict = judge(m.ci);
    const RunCounts& k = m.counts;
    m.accept_pct =
        k.emitted ? 100.0 * double(k.emitted - std::min(k.rejected, k.emitted)) / double(k.emitted)
                  : 0;
    const std::string label = cell_label(m.spec, r.staging_on_name);
    if (m.costs.empty()) continue;
    if (m.verdict != Verdict::significant)
      f.mix_noise.push_back(fmt::format("{} ({})", label, verdict_text(m.verdict)));
    check_mix_counts(m, label, block_events, f);
  }
  r.mix.base = median_ci95(base_costs);
  if (!r.mix.fallback_reason.empty())
    f.warn(fmt::format("replayed mix: the embedded mix was used ({})", r.mix.fallback_reason));
}

// One line per kind of finding, each listing the cells concerned.
void warn_gathered(Findings& f) {
  auto join = [](const std::vector<std::string>& v) {
    return fmt::format("{}", fmt::join(v, ", "));
  };
  if (!f.lost.empty())
    f.warn(fmt::format(
        "events lost by the ring buffer: {} (of them {} because the sub-buffer to overwrite still "
        "held a record whose writer was preempted between reserve and commit and no spare was "
        "free: commit_overrun; {} because the next sub-buffer was held by a writer preempted while "
        "zeroing it, or by one preempted while walking it and no spare was free: lost_busy); those "
        "cells under-count the cost of committing: enlarge "
        "--buffer-kb or run fewer threads",
        join(f.lost), f.lost_commit_overrun, f.lost_busy));
  if (!f.half.empty())
    f.warn(
        fmt::format("the half filter passed {} of the events, not about 50% (odd CPU count, "
                    "--no-pin, an odd number of pairs, or a filter file)",
                    join(f.half)));
  if (!f.spread.empty())
    f.warn(
        fmt::format("high spread (relative stddev above {:.0f}%): {}; the machine is noisy: "
                    "compare medians, raise --runs or the workload size",
                    f.warn_spread_pct, join(f.spread)));
  if (!f.mix_lost.empty())
    f.warn(fmt::format("replayed mix: events lost by the ring buffer: {}", join(f.mix_lost)));
  if (!f.mix_noise.empty())
    f.warn(
        fmt::format("replayed mix: ns/event not significant (95% interval reaching 0 or wider "
                    "than ±10%, marked *): {}",
                    join(f.mix_noise)));
  if (!f.noise.empty())
    f.warn(
        fmt::format("end to end: ns/event not significant (95% interval of the paired runs "
                    "reaching 0 or wider than ±10%, or too few runs; shown as n.s.): {}",
                    join(f.noise)));
}

}  // namespace

void finalize(BenchReport& r, double warn_spread_pct) {
  // Idempotent: the warnings a previous call added are replaced, not doubled.
  r.warnings.erase(std::remove_if(r.warnings.begin(), r.warnings.end(),
                                  [](const std::string& w) { return w.starts_with("[auto] "); }),
                   r.warnings.end());
  Findings f(r, warn_spread_pct);
  judge_cases(summarize_cases(f), f);
  finalize_perf(f);
  finalize_mix(f);
  warn_gathered(f);
}

std::vector<DiscardVsCommit> discard_vs_commit(const BenchReport& r) {
  std::vector<DiscardVsCommit> out;
  for (const MixResult& rej : r.mix_cases) {
    if (rej.spec.kase != Case::reject || rej.costs.empty()) continue;
    for (const MixResult& all : r.mix_cases)
      if (all.spec.kase == Case::all && all.spec.staging == rej.spec.staging && !all.costs.empty())
        out.push_back({rej.spec.staging, rej.ci.median, all.ci.median,
                       all.ci.median > 0 ? rej.ci.median / all.ci.median : 0});
  }
  return out;
}

std::string format_mix_table(const BenchReport& r) {
  std::string out;
  if (r.mix_cases.empty() || r.mix_cases.front().costs.empty()) return out;
  auto line = [&](std::string s) { out += s + "\n"; };
  const MixInfo& m = r.mix;
  std::string kinds;
  for (const EventInfo& e : kEventInfo) {
    const uint64_t n = m.per_kind[static_cast<size_t>(e.kind)];
    kinds += fmt::format("{}{} {:.0f}%", kinds.empty() ? "" : ", ", e.name,
                         m.records ? 100.0 * double(n) / double(m.records) : 0.0);
  }
  if (m.source == "embedded")
    line(
        fmt::format("tracepipe bench: replayed event mix (embedded: the in-process hackbench's "
                    "pattern, {} records: {})",
                    with_commas(m.records), kinds));
  else
    line(fmt::format("tracepipe bench: replayed kernel event mix ({}: {} of its {} records: {})",
                     std::filesystem::path(m.source).filename().string(), with_commas(m.records),
                     with_commas(m.file_records), kinds));
  line(fmt::format(
      "  {} threads, {}, {} events per thread per block; {} rounds of paired blocks "
      "(cell, off) in random order",
      m.threads, r.workload.pin ? "pinned to CPUs " + cpu_list(r.cpus) : std::string("unpinned"),
      with_commas(m.block_events), m.rounds));
  line(
      fmt::format("  ring buffer {} KiB/CPU, {}, clock {}; ns/event = median over rounds of (cell "
                  "block - off block) / events, ± its 95% interval",
                  r.buffer_bytes_per_cpu / 1024, r.mode, r.clock));
  line("");
  std::vector<Staging> cols;
  for (const MixResult& c : r.mix_cases)
    if (std::find(cols.begin(), cols.end(), c.spec.staging) == cols.end())
      cols.push_back(c.spec.staging);
  std::string head = fmt::format("{:<7} {:<26}", "case", "filter");
  for (Staging st : cols)
    head += fmt::format(" {:>16}", fmt::format("staging {}", name(st, r.staging_on_name)));
  line(head + fmt::format(" {:>7}", "pass %"));
  line(
      fmt::format("{:<7} {:<26} base: the loop and the disabled check, {} ns/event (not subtracted "
                  "below: every cell is over it)",
                  "off", filter_label(Case::off), cost_text(m.base.median, m.base.half_width)));
  std::vector<std::string> footnotes;
  for (Case k : kAllCases) {
    if (k == Case::off) continue;
    std::string row = fmt::format("{:<7} {:<26}", name(k), filter_label(r, k));
    double pass = -1;
    bool any = false;
    for (Staging st : cols) {
      auto it = std::find_if(r.mix_cases.begin(), r.mix_cases.end(), [&](const MixResult& c) {
        return c.spec.kase == k && c.spec.staging == st;
      });
      if (it == r.mix_cases.end() || it->costs.empty()) {
        row += fmt::format(" {:>16}", "-");
        continue;
      }
      any = true;
      if (pass < 0) pass = it->accept_pct;
      const bool sig = it->verdict == Verdict::significant;
      row +=
          fmt::format(" {:>16}", cost_text(it->ci.median, it->ci.half_width) + (sig ? " " : "*"));
    }
    if (any) line(row + fmt::format(" {:>7.1f}", pass));
  }
  const auto dvc = discard_vs_commit(r);
  if (!dvc.empty()) {
    std::string t;
    for (const DiscardVsCommit& d : dvc)
      t += fmt::format("{}staging {} {:.2f}", t.empty() ? "" : ", ",
                       name(d.staging, r.staging_on_name), d.ratio);
    line("");
    line("discarding against committing (reject / all): " + t);
  }
  if (std::any_of(r.mix_cases.begin(), r.mix_cases.end(), [](const MixResult& c) {
        return !c.costs.empty() && c.verdict != Verdict::significant;
      }))
    line("* not significant: the 95% interval reaches 0 or is wider than ±10% (see the warnings)");
  // The half filter is listed under the end-to-end table; without it, here.
  if (r.cases.empty() && !r.half_filters.empty()) {
    line("");
    line("half filter (per event):");
    for (const auto& [ev, expr] : r.half_filters) line(fmt::format("  {:<14} {}", ev, expr));
  }
  return out;
}

std::string format_table(const BenchReport& r, bool with_mix) {
  std::string out;
  auto line = [&](std::string s) { out += s + "\n"; };
  const WorkloadConfig& w = r.workload;
  if (with_mix) out += format_mix_table(r);
  if (!r.cases.empty()) {
    if (!out.empty()) line("");
    line(fmt::format(
        "tracepipe bench: hackbench -g {} -f {} -l {} ({}, {}-byte messages, {} threads, "
        "CPUs {})",
        w.groups, w.fds, w.loops, w.channel == Channel::socketpair ? "socketpairs" : "pipes",
        w.msg_bytes, w.threads(), cpu_list(r.cpus)));
    line(
        fmt::format("  {} messages/run, 6 events each (sys_enter, sys_exit, sched_wakeup, "
                    "sched_switch); engine: {}",
                    with_commas(w.messages()), r.engine));
    line(
        fmt::format("  ring buffer {} KiB/CPU, {}, clock {}; {} runs per case, interleaved; "
                    "ns/event = median of the runs' paired (case - off) / events, ± its 95% "
                    "interval",
                    r.buffer_bytes_per_cpu / 1024, r.mode, r.clock, r.runs));
    line("");
    line(fmt::format("{:<7} {:<26} {:<10} {:>8} {:>6} {:>8} {:>10} {:>6} {:>6} {:>8} {:>7} {:>5}",
                     "case", "filter", "staging", "mean s", "±%", "median s", "events", "pass %",
                     "lost %", "ns/event", "±95%", "x off"));
    for (const CaseResult& c : r.cases) {
      const bool off = c.spec.kase == Case::off;
      const std::string lost_pct =
          c.events ? fmt::format("{:.1f}", 100.0 * double(c.lost) / double(c.events)) : "-";
      line(fmt::format(
          "{:<7} {:<26} {:<10} {:>8.4f} {:>5.1f}% {:>8.4f} {:>10} {:>6} {:>6} {:>8} {:>7} {:>5.2f}",
          name(c.spec.kase), filter_label(r, c.spec.kase),
          off ? "-" : name(c.spec.staging, r.staging_on_name), c.summary.mean, c.summary.stddev_pct,
          c.summary.median, with_commas(c.events),
          off ? std::string("-") : fmt::format("{:.1f}", c.accept_pct),
          off ? std::string("-") : lost_pct,
          off ? std::string("-") : ns_cell(c.ns_per_event, c.significant),
          off ? std::string("-") : fmt::format("{:.1f}", c.ci.half_width), c.ratio_to_off));
    }
    // `lost %` counts refused reservations; the ring's losses by cause follow,
    // with lost_set_aside (reserved records lost after their sub-buffer was
    // set aside: their writers were preempted), when any cell has one.
    const bool any_loss = std::any_of(r.cases.begin(), r.cases.end(), [](const CaseResult& c) {
      return c.lost_commit_overrun + c.lost_busy + c.lost_set_aside != 0;
    });
    if (any_loss) {
      line("");
      line("ring losses by cause, median per run (docs/buffers.md, \"Writers preempted\"):");
      for (const CaseResult& c : r.cases) {
        if (c.spec.kase == Case::off) continue;
        line(fmt::format(
            "  {:<7} {:<10} commit_overrun {:>8}  lost_busy {:>8}  lost_set_aside {:>6}  ({:.4f}% "
            "of events)",
            name(c.spec.kase), name(c.spec.staging, r.staging_on_name), c.lost_commit_overrun,
            c.lost_busy, c.lost_set_aside,
            c.events ? 100.0 * double(c.lost_commit_overrun + c.lost_busy + c.lost_set_aside) /
                           double(c.events)
                     : 0.0));
      }
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
    line(fmt::format("{:<19} {:>9} {:>7} {:>9} {:>9} {:>7} {:>11} {:>11} {:>11} {:>11}", "case",
                     "mean s", "±%", "median s", "ns/event", "±95%", "written", "lost", "overrun",
                     "read"));
    for (const PerfResult& p : r.perf) {
      const bool base = p.kase == PerfCase::base;
      line(fmt::format("{:<19} {:>9.4f} {:>6.1f}% {:>9.4f} {:>9} {:>7} {:>11} {:>11} {:>11} {:>11}",
                       name(p.kase), p.summary.mean, p.summary.stddev_pct, p.summary.median,
                       base ? std::string("-") : ns_cell(p.ns_per_event, p.significant),
                       base ? std::string("-") : fmt::format("{:.1f}", p.ci.half_width),
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

namespace {

std::string json_config(const BenchReport& r) {
  const WorkloadConfig& w = r.workload;
  std::string out = fmt::format(
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
  out += fmt::format("}}, \"total_s\": {}}},\n", jnum(r.total_seconds));
  return out;
}

std::string json_mix_case(const BenchReport& r, const MixResult& c) {
  const bool sig = c.verdict == Verdict::significant;
  return fmt::format(
      "{{\"case\": {}, \"staging\": {}, \"rounds\": {}, \"ns_per_event\": {}, "
      "\"ci95_ns\": {}, \"ci95_lo_ns\": {}, \"ci95_hi_ns\": {}, \"coverage\": {}, "
      "\"iqr_pct\": {}, \"significant\": {}, \"why\": {}, \"events\": {}, \"accepted\": {}, "
      "\"rejected\": {}, \"lost\": {}, \"lost_commit_overrun\": {}, \"lost_busy\": {}, "
      "\"lost_set_aside\": {}, \"accept_pct\": {}, "
      "\"staged\": {}, \"staging_busy\": {}, \"conserved\": {}, \"samples_ns\": {}}}",
      jstr(name(c.spec.kase)), jstr(name(c.spec.staging, r.staging_on_name)), c.costs.size(),
      jnum(c.ci.median), jnum(c.ci.half_width), jnum(c.ci.lo), jnum(c.ci.hi), jnum(c.ci.coverage),
      jnum(c.ci.iqr_pct), sig ? "true" : "false", jstr(verdict_text(c.verdict)), c.counts.emitted,
      c.counts.accepted, c.counts.rejected, c.counts.lost, c.counts.lost_commit_overrun,
      c.counts.lost_busy, c.counts.lost_set_aside, jnum(c.accept_pct), c.counts.staged,
      c.counts.staging_busy, c.counts.conserved ? "true" : "false", jsamples(c.costs));
}

// The "mix" object, or nothing when the replayed mix did not run.
std::string json_mix(const BenchReport& r) {
  if (r.mix_cases.empty()) return {};
  const MixInfo& m = r.mix;
  std::string out = fmt::format(
      " \"mix\": {{\"source\": {}, \"fallback_reason\": {}, \"records\": {}, \"file_records\": "
      "{}, "
      "\"per_kind\": {{",
      jstr(m.source), jstr(m.fallback_reason), m.records, m.file_records);
  for (size_t i = 0; i < kEventInfo.size(); ++i)
    out += fmt::format("{}{}: {}", i ? ", " : "", jstr(kEventInfo[i].name), m.per_kind[i]);
  out += fmt::format(
      "}}, \"threads\": {}, \"rounds\": {}, \"block_events\": {}, \"seed\": {}, "
      "\"base_ns_per_event\": {}, \"base_ci95_ns\": {}, \"seconds\": {},\n  \"cases\": [",
      m.threads, m.rounds, m.block_events, m.seed, jnum(m.base.median), jnum(m.base.half_width),
      jnum(m.seconds));
  for (size_t i = 0; i < r.mix_cases.size(); ++i)
    out += (i ? ",\n   " : "\n   ") + json_mix_case(r, r.mix_cases[i]);
  out += "],\n  \"discard_vs_commit\": [";
  const auto dvc = discard_vs_commit(r);
  for (size_t i = 0; i < dvc.size(); ++i)
    out += fmt::format("{}{{\"staging\": {}, \"reject_ns\": {}, \"all_ns\": {}, \"ratio\": {}}}",
                       i ? ", " : "", jstr(name(dvc[i].staging, r.staging_on_name)),
                       jnum(dvc[i].reject_ns), jnum(dvc[i].all_ns), jnum(dvc[i].ratio));
  out += "]},\n";
  return out;
}

std::string json_case(const BenchReport& r, const CaseResult& c) {
  return fmt::format(
      "{{\"case\": {}, \"staging\": {}, \"runs\": {}, \"mean_s\": {}, \"median_s\": {}, "
      "\"stddev_pct\": {}, \"events\": {}, \"accepted\": {}, \"rejected\": {}, \"accept_pct\": "
      "{}, \"lost\": {}, "
      "\"lost_commit_overrun\": {}, \"lost_busy\": {}, \"lost_set_aside\": {}, "
      "\"ns_per_event\": {}, \"ns_per_event_measured\": {}, "
      "\"ci95_ns\": {}, \"ci95_lo_ns\": {}, \"ci95_hi_ns\": {}, "
      "\"significant\": {}, \"why\": {}, \"ratio_to_off\": {}, "
      "\"staged\": {}, \"staging_busy\": {}, \"conserved\": {}, \"samples_s\": {}}}",
      jstr(name(c.spec.kase)), jstr(name(c.spec.staging, r.staging_on_name)), c.summary.n,
      jnum(c.summary.mean), jnum(c.summary.median), jnum(c.summary.stddev_pct), c.events,
      c.accepted, c.rejected, jnum(c.accept_pct), c.lost, c.lost_commit_overrun, c.lost_busy,
      c.lost_set_aside, c.significant ? jnum(c.ns_per_event) : "null", jnum(c.ns_per_event),
      jnum(c.ci.half_width), jnum(c.ci.lo), jnum(c.ci.hi), c.significant ? "true" : "false",
      jstr(verdict_text(c.verdict)), jnum(c.ratio_to_off), c.staged, c.staging_busy,
      std::all_of(c.counts.begin(), c.counts.end(), [](const RunCounts& k) { return k.conserved; })
          ? "true"
          : "false",
      jsamples(c.seconds));
}

std::string json_cases(const BenchReport& r) {
  std::string out = " \"cases\": [";
  for (size_t i = 0; i < r.cases.size(); ++i)
    out += (i ? ",\n  " : "\n  ") + json_case(r, r.cases[i]);
  out += "],\n";
  return out;
}

std::string json_perf_case(const PerfResult& p) {
  return fmt::format(
      "{{\"case\": {}, \"runs\": {}, \"mean_s\": {}, \"median_s\": {}, \"stddev_pct\": "
      "{}, "
      "\"events\": {}, \"ns_per_event\": {}, \"ns_per_event_measured\": {}, "
      "\"ci95_ns\": {}, \"ci95_lo_ns\": {}, \"ci95_hi_ns\": {}, \"significant\": {}, \"why\": "
      "{}, "
      "\"written\": {}, \"lost\": {}, \"overrun\": {}, "
      "\"read\": {}, \"snapshots\": {}, \"conserved\": {}, \"samples_s\": {}}}",
      jstr(name(p.kase)), p.summary.n, jnum(p.summary.mean), jnum(p.summary.median),
      jnum(p.summary.stddev_pct), p.events, p.significant ? jnum(p.ns_per_event) : "null",
      jnum(p.ns_per_event), jnum(p.ci.half_width), jnum(p.ci.lo), jnum(p.ci.hi),
      p.significant ? "true" : "false", jstr(verdict_text(p.verdict)), p.median_counts.written,
      p.median_counts.lost, p.median_counts.overrun, p.median_counts.read,
      p.median_counts.snapshots,
      std::all_of(p.counts.begin(), p.counts.end(), [](const PerfCounts& k) { return k.conserved; })
          ? "true"
          : "false",
      jsamples(p.seconds));
}

// The "overwrite_series" object, or nothing when the series did not run.
std::string json_overwrite_series(const BenchReport& r) {
  if (r.perf_events == 0) return {};
  std::string out =
      fmt::format(" \"overwrite_series\": {{\"events\": {}, \"syscall\": {}, \"cases\": [",
                  r.perf_events, r.perf_syscall ? "true" : "false");
  for (size_t i = 0; i < r.perf.size(); ++i)
    out += (i ? ",\n  " : "\n  ") + json_perf_case(r.perf[i]);
  out += "]},\n";
  return out;
}

std::string json_warnings(const BenchReport& r) {
  std::string out = " \"warnings\": [";
  for (size_t i = 0; i < r.warnings.size(); ++i) {
    const std::string& w = r.warnings[i];
    out += (i ? ", " : "") + jstr(w.starts_with("[auto] ") ? std::string_view(w).substr(7) : w);
  }
  out += "]";
  return out;
}

}  // namespace

std::string to_json(const BenchReport& r) {
  return "{\"tool\": \"tracepipe bench\",\n" + json_config(r) + json_mix(r) + json_cases(r) +
         json_overwrite_series(r) + json_warnings(r) + "}\n";
}

}  // namespace tracepipe::bench
