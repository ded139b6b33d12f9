#include "tracepipe/bench/micro/emit_targets.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <optional>

namespace tracepipe::bench {

namespace {

using Medians = std::map<std::string, double>;

std::optional<double> get(const Medians& m, const std::string& k) {
  const auto it = m.find(k);
  if (it == m.end() || !(it->second > 0)) return std::nullopt;
  return it->second;
}

void add(std::vector<TargetCheck>& out, std::string what, double value, double bound,
         std::string detail) {
  out.push_back({std::move(what), value, bound, value <= bound, std::move(detail)});
}

// A paired ratio counter with its quartiles and the legs' ns; false when it
// did not run.
bool paired_ratio(std::vector<TargetCheck>& out, const Medians& p, std::string what,
                  const std::string& counter, double bound, const std::string& legs) {
  const auto v = get(p, counter), lo = get(p, counter + "_p25"), hi = get(p, counter + "_p75");
  if (!v || !lo || !hi) return false;
  add(out, std::move(what), *v, bound,
      fmt::format("paired: quartiles {:.3f}-{:.3f}; {}", *lo, *hi, legs));
  return true;
}

// "a 14.20, b 13.60 ns" from the paired legs that ran.
std::string legs_ns(const Medians& p, std::initializer_list<const char*> legs) {
  std::string s;
  for (const char* l : legs)
    if (const auto v = get(p, std::string(l) + "_ns"))
      s += fmt::format("{}{} {:.2f}", s.empty() ? "" : ", ", l, *v);
  return s + " ns";
}

// Ratio of a case to another; nothing when either did not run.
void ratio(std::vector<TargetCheck>& out, const Medians& m, const char* what, const char* num,
           const char* den, double bound) {
  const auto a = get(m, num), b = get(m, den);
  if (!a || !b) return;
  add(out, what, *a / *b, bound, fmt::format("{} {:.2f} / {} {:.2f} ns", num, *a, den, *b));
}

// An adaptive case against the better (faster) of its staged and direct
// counterparts in the same run.
void better(std::vector<TargetCheck>& out, const Medians& m, const char* pct, const char* adaptive,
            const char* staged, const char* direct) {
  const auto a = get(m, adaptive), s = get(m, staged), d = get(m, direct);
  if (!a || !s || !d) return;
  const double best = std::min(*s, *d);
  add(out, fmt::format("adaptive {} kept / better policy", pct), *a / best, 1.05,
      fmt::format("{:.2f} ns against staged {:.2f}, direct {:.2f}", *a, *s, *d));
}

}  // namespace

std::vector<TargetCheck> emit_targets(const Medians& m, const Medians& p) {
  std::vector<TargetCheck> out;
  if (const auto v = get(m, "staged_discard/per_thread"))
    add(out, "staged discard (ns)", *v, 5.0, "staged_discard/per_thread");
  if (const auto v = get(m, "no_filter")) {
    // The host's share of the bound: a commit reads the clock once, and the
    // floor joins reserve, clock and write by hand (bench/micro/core_bench.cc).
    std::string floors;
    if (const auto c = get(m, "floor/clock")) floors += fmt::format("; clock read {:.2f}", *c);
    if (const auto f = get(m, "floor/commit")) floors += fmt::format("; floor/commit {:.2f}", *f);
    add(out, "commit (ns)", *v, 20.0, floors.empty() ? "no_filter" : "no_filter" + floors + " ns");
  }
  const std::string commit_legs =
      legs_ns(p, {"staged_commit", "adaptive_100", "direct_commit", "no_filter"});
  if (!paired_ratio(out, p, "staged commit / unfiltered commit", "staged_commit/no_filter", 1.15,
                    commit_legs))
    ratio(out, m, "staged commit / unfiltered commit", "staged_commit/per_thread", "no_filter",
          1.15);
  if (!paired_ratio(out, p, "adaptive 100% kept / unfiltered commit", "adaptive_100/no_filter",
                    1.05, commit_legs))
    ratio(out, m, "adaptive 100% kept / unfiltered commit", "adaptive/accept_100", "no_filter",
          1.05);
  struct Rate {
    const char* pct;
    const char* counter;
    const char* adaptive;
    const char* staged;
    const char* direct;
    std::initializer_list<const char*> legs;
  };
  const Rate rates[] = {
      {"0%",
       "adaptive_0/better",
       "adaptive/accept_0",
       "staged_discard/per_thread",
       "direct_discard",
       {"adaptive_0", "staged_discard", "direct_discard"}},
      {"50%",
       "adaptive_50/better",
       "adaptive/accept_50",
       "staged_half/per_thread",
       "direct_half",
       {"adaptive_50", "staged_half", "direct_half"}},
      {"97%",
       "adaptive_97/better",
       "adaptive/accept_97",
       "staged_97/per_thread",
       "direct_97",
       {"adaptive_97", "staged_97", "direct_97"}},
      {"100%",
       "adaptive_100/better",
       "adaptive/accept_100",
       "staged_commit/per_thread",
       "direct_commit",
       {"adaptive_100", "staged_commit", "direct_commit"}},
  };
  for (const Rate& r : rates)
    if (!paired_ratio(out, p, fmt::format("adaptive {} kept / better policy", r.pct), r.counter,
                      1.05, legs_ns(p, r.legs)))
      better(out, m, r.pct, r.adaptive, r.staged, r.direct);
  return out;
}

std::string render_targets(const std::vector<TargetCheck>& checks) {
  std::string s = "emit targets, from this run's medians (ratios within the run):\n";
  size_t met = 0;
  for (const TargetCheck& c : checks) {
    met += c.met ? 1 : 0;
    s += fmt::format("  {:<42} {:>7.3f}  <= {:<5g} {:<8} {}\n", c.what, c.value, c.bound,
                     c.met ? "met" : "NOT MET", c.detail);
  }
  s += fmt::format("  {} of {} targets met\n", met, checks.size());
  return s;
}

bool is_paired_case(const std::string& key) { return key.rfind("paired/", 0) == 0; }

std::string emit_case_key(const std::string& run_name) {
  static constexpr std::string_view kPrefix = "emit/";
  if (run_name.compare(0, kPrefix.size(), kPrefix) != 0) return {};
  std::string k = run_name.substr(kPrefix.size());
  if (const size_t p = k.find("/min_time:"); p != std::string::npos) k.resize(p);
  return k;
}

}  // namespace tracepipe::bench
