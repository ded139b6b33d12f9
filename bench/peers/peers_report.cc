#include "tracepipe/bench/peers/peers_report.h"

#include <fmt/core.h>

#include <algorithm>

namespace tracepipe::peers {
namespace {

// The targets against LTTng-UST: >= 5x faster per committed or
// rejected integer-filter event, >= 3x per rejected glob (a string match
// costs both sides more: the glob's target is lower, not the same 5x).
constexpr double kSpeedupTarget = 5.0;
constexpr double kGlobSpeedupTarget = 3.0;
constexpr double kDisabledTolerance = 1.05;  // "no slower when disabled", within 5% noise

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      default:
        if (c < 0x20)
          o += fmt::format("\\u{:04x}", c);
        else
          o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

std::string json_num(double v) { return fmt::format("{:.6g}", v); }

std::string json_nums(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + json_num(v[i]);
  return s + "]";
}

std::string json_strs(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + json_str(v[i]);
  return s + "]";
}

const SideResult* find_side(const MicroCell& cell, const std::string& side) {
  for (const SideResult& s : cell.sides)
    if (s.side == side) return &s;
  return nullptr;
}

std::string verdict_text(TargetCheck::Verdict v) {
  switch (v) {
    case TargetCheck::Verdict::met:
      return "MET";
    case TargetCheck::Verdict::not_met:
      return "NOT MET";
    case TargetCheck::Verdict::unknown:
      return "n/a";
  }
  return "?";
}

/// "12.34" with precision adapted to the magnitude (sub-ns figures keep 3 digits).
std::string ns(double v) { return v < 10 ? fmt::format("{:.3f}", v) : fmt::format("{:.1f}", v); }

}  // namespace

std::optional<double> median_of(const MicroCell& cell, const std::string& side) {
  const SideResult* s = find_side(cell, side);
  if (s == nullptr || s->ns.empty()) return std::nullopt;
  return s->summary.median;
}

std::vector<TargetCheck> check_targets(const PeersReport& r) {
  std::vector<TargetCheck> out;
  const std::string peer = "lttng-ust";
  for (const MicroCell& cell : r.micro) {
    TargetCheck t;
    const auto tp = median_of(cell, "tracepipe");
    const auto lt = median_of(cell, peer);
    if (cell.kase == MicroCase::disabled) {
      t.what = fmt::format("disabled x{}: tracepipe no slower than {} (tracepipe/peer <= {:.2f})",
                           cell.threads, peer, kDisabledTolerance);
      if (tp && lt && *lt > 0) {
        const double ratio = *tp / *lt;
        t.value = fmt::format("tracepipe/peer {:.2f}", ratio);
        t.verdict =
            ratio <= kDisabledTolerance ? TargetCheck::Verdict::met : TargetCheck::Verdict::not_met;
      }
    } else {
      const bool rejected = !commits(cell.kase);
      const double target =
          cell.kase == MicroCase::reject_glob ? kGlobSpeedupTarget : kSpeedupTarget;
      t.what =
          fmt::format("{} x{}: tracepipe >= {:.0f}x faster than {} per {} event", name(cell.kase),
                      cell.threads, target, peer, rejected ? "rejected" : "committed");
      if (tp && lt && *tp > 0) {
        const double speedup = *lt / *tp;
        t.value = fmt::format("{:.1f}x", speedup);
        t.verdict = speedup >= target ? TargetCheck::Verdict::met : TargetCheck::Verdict::not_met;
      }
    }
    if (t.verdict == TargetCheck::Verdict::unknown)
      t.why_unknown = lt ? "no tracepipe figure" : peer + " not measured";
    out.push_back(std::move(t));
  }
  // The ratio from the event loops: table 1 (tracepipe) against table 2 (kernel).
  for (const MicroCell& rej : r.micro) {
    if (rej.kase != MicroCase::reject_int || rej.threads != 1) continue;
    for (const MicroCell& all : r.micro) {
      if (all.kase != MicroCase::enabled || all.threads != 1) continue;
      const auto a = median_of(rej, "tracepipe"), b = median_of(all, "tracepipe");
      TargetCheck t;
      t.what =
          "reject/commit cost ratio, event loop x1: tracepipe (reject-int/enabled) below the "
          "kernel's";
      if (a && b && *b > 0 && r.kernel_micro && r.kernel_micro->reject_ratio >= 0) {
        t.value =
            fmt::format("tracepipe {:.2f}, kernel {:.2f}", *a / *b, r.kernel_micro->reject_ratio);
        t.verdict = *a / *b < r.kernel_micro->reject_ratio ? TargetCheck::Verdict::met
                                                           : TargetCheck::Verdict::not_met;
      } else {
        t.why_unknown = r.kernel_micro ? "a case is missing" : "kernel not measured";
      }
      out.push_back(std::move(t));
    }
  }
  TargetCheck k;
  k.what = "reject/commit cost ratio, hackbench: tracepipe (reject/all) below the kernel's";
  if (r.kernel && r.kernel->kernel_reject_ratio >= 0 && r.kernel->tracepipe_reject_ratio >= 0) {
    k.value = fmt::format("tracepipe {:.2f}, kernel {:.2f}", r.kernel->tracepipe_reject_ratio,
                          r.kernel->kernel_reject_ratio);
    k.verdict = r.kernel->tracepipe_reject_ratio < r.kernel->kernel_reject_ratio
                    ? TargetCheck::Verdict::met
                    : TargetCheck::Verdict::not_met;
  } else {
    k.why_unknown = r.kernel ? "reject or all case missing, or its cost is within noise"
                             : "kernel not measured";
  }
  out.push_back(std::move(k));
  return out;
}

namespace {

// One row of table 1: each side's median [min max], tracepipe's ratio to
// each peer, the losses, then the sides that failed.
std::string text_micro_row(const MicroCell& c, const std::vector<std::string>& names) {
  std::string line = fmt::format("{:<12} {:>3}", name(c.kase), c.threads);
  for (const SideResult& s : c.sides) {
    if (s.ns.empty())
      line += fmt::format("  {:>26}", s.error.empty() ? "-" : "failed");
    else
      line += fmt::format("  {:>26}", fmt::format("{} [{} {}]", ns(s.summary.median),
                                                  ns(s.summary.min), ns(s.summary.max)));
  }
  const auto tp = median_of(c, names[0]);
  for (size_t i = 1; i < names.size(); ++i) {
    const auto p = median_of(c, names[i]);
    line += (tp && p && *p > 0) ? fmt::format("  {:>9.3f}", *tp / *p) : fmt::format("  {:>9}", "-");
  }
  std::string loss;
  for (const SideResult& s : c.sides) {
    if (!loss.empty()) loss += " | ";
    loss += s.ns.empty() ? "-" : fmt::format("{}/{}", s.counts.lost, s.counts.overrun);
  }
  std::string o = line + "  " + loss + "\n";
  for (const SideResult& s : c.sides)
    if (!s.error.empty()) o += fmt::format("  {} failed: {}\n", s.side, s.error);
  return o;
}

// Table 1: tracepipe and LTTng-UST in the event loop.
std::string text_micro_table(const PeersReport& r) {
  std::vector<std::string> names;
  for (const SideResult& s : r.micro.front().sides) names.push_back(s.side);
  std::string o = fmt::format(
      "\nTable 1: one sched_switch-like event in a loop (64-byte record: 8-byte common header + "
      "56-byte payload)\n"
      "  {} events per thread per round ({}x that when disabled), {} rounds after 2 warm-up "
      "rounds, "
      "threads pinned to CPUs "
      "{}, glob \"{}\", {}\n",
      r.events, r.disabled_scale, r.rounds, join(r.cpus), r.glob,
      r.timing == "cpu" ? "times are each thread's CPU time" : "times are wall-clock");
  for (const std::string& d : r.sides) o += "  " + d + "\n";
  std::string head = fmt::format("\n{:<12} {:>3}", "case", "thr");
  for (const std::string& n : names) head += fmt::format("  {:>26}", n + " ns/event [min max]");
  for (size_t i = 1; i < names.size(); ++i)
    head += fmt::format("  {:>9}", "tp/" + names[i].substr(0, 5));
  head += "  lost/overrun";
  o += head + "\n";
  for (const MicroCell& c : r.micro) o += text_micro_row(c, names);
  o += "  (tp/peer < 1: tracepipe is faster; lost = dropped by a full buffer, must be 0; overrun "
       "= overwritten in "
       "the overwrite case, in records; lttng-ust does not count what a snapshot session "
       "overwrites)\n";
  return o;
}

// Table 2: the kernel's own event loop.
std::string text_kernel_micro_table(const PeersReport& r) {
  const KernelMicroTable& k = *r.kernel_micro;
  std::string o = fmt::format(
      "\nTable 2: the kernel's own cost per event: {} ({}-byte record) fired by getppid() in a "
      "loop, {} calls per "
      "thread per round, {} rounds after 1 warm-up, rows interleaved, same pinned CPUs, {}\n",
      k.event, k.record_bytes, k.events, r.rounds,
      r.timing == "cpu" ? "thread CPU time" : "wall-clock time");
  o += fmt::format("\n{:<12} {:>3}  {:>26}  {:>9}  {:>10}\n", "row", "thr", "ns/syscall [min max]",
                   "ns/event", "recorded");
  for (const KernelMicroRow& row : k.rows) {
    const bool base = !row.kase.has_value();
    o += fmt::format("{:<12} {:>3}  {:>26}  {:>9}  {:>10}\n", row.label, row.threads,
                     row.ns.empty() ? "-"
                                    : fmt::format("{} [{} {}]", ns(row.summary.median),
                                                  ns(row.summary.min), ns(row.summary.max)),
                     base ? "-" : ns(row.ns_per_event), row.recorded);
  }
  o += "  (ns/event = ns/syscall - ignored's: the event enabled for other threads only, so the "
       "call already takes "
       "the traced entry path and the probe)\n";
  o += fmt::format("  kernel reject/commit cost ratio (reject-int/enabled, 1 thread): {}\n",
                   k.reject_ratio >= 0 ? fmt::format("{:.2f}", k.reject_ratio) : "n/a");
  for (const std::string& w : k.warnings) o += "  warning: " + w + "\n";
  return o;
}

// Table 3: hackbench traced by tracepipe and by the kernel.
std::string text_hackbench_table(const PeersReport& r) {
  const KernelTable& k = *r.kernel;
  std::string o = fmt::format(
      "\nTable 3: hackbench -g {} -f {} -l {} ({} messages, 6 emit points per message), {} runs "
      "interleaved, "
      "tracepipe then the kernel, {}\n",
      r.workload.groups, r.workload.fds, r.workload.loops, r.workload.messages(), r.hb_runs,
      r.timing == "cpu" ? "times are the process's CPU time over the run"
                        : "times are the workload's wall time");
  o += "  tracepipe: " + k.engine + "\n";
  std::string evs;
  for (const std::string& e : k.kernel_events) evs += (evs.empty() ? "" : ", ") + e;
  o +=
      "  kernel: tracefs instance, events " + evs + ", same filters, this process's threads only\n";
  const bool cpu = r.timing == "cpu";
  o += fmt::format("\n{:<8} {:>12} {:>7} {:>9} {:>10}   {:>12} {:>7} {:>9} {:>10}\n", "case",
                   cpu ? "tp cpu s" : "tp wall s", "rsd%", "ns/event", "events/run",
                   cpu ? "kernel cpu s" : "kernel wall s", "rsd%", "ns/event", "recorded");
  o += "         (medians)\n";
  for (const KernelRow& row : k.rows) {
    const bool off = row.kase == bench::Case::off;
    o += fmt::format(
        "{:<8} {:>12.4f} {:>7.1f} {:>9} {:>10}   {:>12.4f} {:>7.1f} {:>9} {:>10}\n",
        bench::name(row.kase), row.tracepipe.summary.median, row.tracepipe.summary.stddev_pct,
        off ? "-" : fmt::format("{:.1f}", row.tracepipe.ns_per_event), row.tracepipe.events,
        row.kernel.summary.median, row.kernel.summary.stddev_pct,
        off ? "-" : fmt::format("{:.1f}", row.kernel.ns_per_event), row.kernel.recorded);
  }
  o += fmt::format(
      "  reject/commit cost ratio (ns/event of reject over all): tracepipe {}, kernel {}\n",
      k.tracepipe_reject_ratio >= 0 ? fmt::format("{:.2f}", k.tracepipe_reject_ratio) : "n/a",
      k.kernel_reject_ratio >= 0 ? fmt::format("{:.2f}", k.kernel_reject_ratio) : "n/a");
  for (const std::string& w : k.warnings) o += "  warning: " + w + "\n";
  return o;
}

std::string text_targets(const PeersReport& r) {
  std::string o = "\nTargets:\n";
  for (const TargetCheck& t : check_targets(r)) {
    o += fmt::format("  [{}] {}", verdict_text(t.verdict), t.what);
    if (!t.value.empty()) o += ": " + t.value;
    if (t.verdict == TargetCheck::Verdict::unknown && !t.why_unknown.empty())
      o += " (" + t.why_unknown + ")";
    o += "\n";
  }
  return o;
}

}  // namespace

std::string format_text(const PeersReport& r) {
  std::string o =
      "tracepipe bench-peers: tracepipe beside LTTng-UST and the kernel, same process, "
      "interleaved\n";
  for (const std::string& s : r.skipped) o += s + "\n";
  for (const std::string& e : r.errors) o += "error: " + e + "\n";
  if (!r.micro.empty()) o += text_micro_table(r);
  if (r.kernel_micro) o += text_kernel_micro_table(r);
  if (r.kernel) o += text_hackbench_table(r);
  o += text_targets(r);
  o += fmt::format("total {:.1f} s\n", r.seconds);
  return o;
}

std::string format_json(const PeersReport& r) {
  std::string o = "{\"tool\":\"tracepipe bench-peers\"";
  o += ",\"timing\":" + json_str(r.timing);
  o += ",\"skipped\":" + json_strs(r.skipped);
  o += ",\"errors\":" + json_strs(r.errors);
  o += fmt::format(
      ",\"micro\":{{\"events\":{},\"rounds\":{},\"glob\":{},\"cpus\":[{}],\"sides\":{},\"cells\":[",
      r.events, r.rounds, json_str(r.glob), join(r.cpus), json_strs(r.sides));
  for (size_t i = 0; i < r.micro.size(); ++i) {
    const MicroCell& c = r.micro[i];
    o += fmt::format("{}{{\"case\":{},\"threads\":{},\"events\":{},\"sides\":[", i ? "," : "",
                     json_str(std::string(name(c.kase))), c.threads, c.events);
    for (size_t j = 0; j < c.sides.size(); ++j) {
      const SideResult& s = c.sides[j];
      o += fmt::format(
          "{}{{\"side\":{},\"ns\":{},\"wall_ns\":{},\"median\":{},\"min\":{},\"max\":{},\"lost\":{}"
          ",\"overrun\":{},\"recorded\":{},"
          "\"bytes\":{},\"error\":{}}}",
          j ? "," : "", json_str(s.side), json_nums(s.ns), json_nums(s.wall_ns),
          json_num(s.summary.median), json_num(s.summary.min), json_num(s.summary.max),
          s.counts.lost, s.counts.overrun,
          s.counts.recorded_known ? std::to_string(s.counts.recorded) : "null", s.counts.bytes,
          json_str(s.error));
    }
    o += "]}";
  }
  o += "]}";
  if (r.kernel_micro) {
    const KernelMicroTable& k = *r.kernel_micro;
    o += fmt::format(",\"kernel_loop\":{{\"event\":{},\"record_bytes\":{},\"events\":{},\"rows\":[",
                     json_str(k.event), k.record_bytes, k.events);
    for (size_t i = 0; i < k.rows.size(); ++i) {
      const KernelMicroRow& row = k.rows[i];
      o += fmt::format(
          "{}{{\"row\":{},\"threads\":{},\"ns\":{},\"median\":{},\"ns_per_event\":{},\"recorded\":{"
          "}}}",
          i ? "," : "", json_str(row.label), row.threads, json_nums(row.ns),
          json_num(row.summary.median), json_num(row.ns_per_event), row.recorded);
    }
    o += fmt::format("],\"reject_ratio\":{},\"warnings\":{}}}", json_num(k.reject_ratio),
                     json_strs(k.warnings));
  } else {
    o += ",\"kernel_loop\":null";
  }
  if (r.kernel) {
    const KernelTable& k = *r.kernel;
    o += fmt::format(
        ",\"kernel\":{{\"groups\":{},\"fds\":{},\"loops\":{},\"runs\":{},\"engine\":{},\"events\":{"
        "},\"rows\":[",
        r.workload.groups, r.workload.fds, r.workload.loops, r.hb_runs, json_str(k.engine),
        json_strs(k.kernel_events));
    for (size_t i = 0; i < k.rows.size(); ++i) {
      const KernelRow& row = k.rows[i];
      auto side = [](const HackbenchSide& s) {
        return fmt::format(
            "{{\"seconds\":{},\"wall_seconds\":{},\"median\":{},\"rsd_pct\":{},\"events\":{},"
            "\"recorded\":{},\"ns_per_event\":{}}}",
            json_nums(s.seconds), json_nums(s.wall_seconds), json_num(s.summary.median),
            json_num(s.summary.stddev_pct), s.events, s.recorded, json_num(s.ns_per_event));
      };
      o += fmt::format("{}{{\"case\":{},\"tracepipe\":{},\"kernel\":{}}}", i ? "," : "",
                       json_str(std::string(bench::name(row.kase))), side(row.tracepipe),
                       side(row.kernel));
    }
    o += fmt::format("],\"tracepipe_reject_ratio\":{},\"kernel_reject_ratio\":{},\"warnings\":{}}}",
                     json_num(k.tracepipe_reject_ratio), json_num(k.kernel_reject_ratio),
                     json_strs(k.warnings));
  } else {
    o += ",\"kernel\":null";
  }
  o += ",\"targets\":[";
  const std::vector<TargetCheck> targets = check_targets(r);
  for (size_t i = 0; i < targets.size(); ++i) {
    const TargetCheck& t = targets[i];
    o += fmt::format("{}{{\"what\":{},\"value\":{},\"verdict\":{}}}", i ? "," : "",
                     json_str(t.what), json_str(t.value), json_str(verdict_text(t.verdict)));
  }
  o += fmt::format("],\"seconds\":{}}}\n", json_num(r.seconds));
  return o;
}

}  // namespace tracepipe::peers
