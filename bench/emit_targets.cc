#include "bench/emit_targets.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace tracepipe::bench {

namespace {

using Medians = std::map<std::string, double>;

std::optional<double> get(const Medians& m, const std::string& k) {
  const auto it = m.find(k);
  if (it == m.end() || !(it->second > 0)) return std::nullopt;
  return it->second;
}

void add(std::vector<TargetCheck>& out, std::string what, double value, double bound, std::string detail) {
  out.push_back({std::move(what), value, bound, value <= bound, std::move(detail)});
}

// Ratio of a case to another; nothing when either did not run.
void ratio(std::vector<TargetCheck>& out, const Medians& m, const char* what, const char* num, const char* den,
           double bound) {
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

std::vector<TargetCheck> emit_targets(const Medians& m) {
  std::vector<TargetCheck> out;
  if (const auto v = get(m, "staged_discard/per_thread"))
    add(out, "staged discard (ns)", *v, 5.0, "staged_discard/per_thread");
  if (const auto v = get(m, "no_filter")) add(out, "commit (ns)", *v, 20.0, "no_filter");
  ratio(out, m, "staged commit / unfiltered commit", "staged_commit/per_thread", "no_filter", 1.15);
  ratio(out, m, "adaptive 100% kept / unfiltered commit", "adaptive/accept_100", "no_filter", 1.05);
  better(out, m, "0%", "adaptive/accept_0", "staged_discard/per_thread", "direct_discard");
  better(out, m, "50%", "adaptive/accept_50", "staged_half/per_thread", "direct_half");
  better(out, m, "97%", "adaptive/accept_97", "staged_97/per_thread", "direct_97");
  better(out, m, "100%", "adaptive/accept_100", "staged_commit/per_thread", "direct_commit");
  return out;
}

std::string render_targets(const std::vector<TargetCheck>& checks) {
  std::string s = "issue-5 targets, from this run's medians (ratios within the run):\n";
  size_t met = 0;
  for (const TargetCheck& c : checks) {
    met += c.met ? 1 : 0;
    s += fmt::format("  {:<42} {:>7.3f}  <= {:<5g} {:<8} {}\n", c.what, c.value, c.bound,
                     c.met ? "met" : "NOT MET", c.detail);
  }
  s += fmt::format("  {} of {} targets met\n", met, checks.size());
  return s;
}

std::string emit_case_key(const std::string& run_name) {
  static constexpr std::string_view kPrefix = "emit/";
  if (run_name.compare(0, kPrefix.size(), kPrefix) != 0) return {};
  std::string k = run_name.substr(kPrefix.size());
  if (const size_t p = k.find("/min_time:"); p != std::string::npos) k.resize(p);
  return k;
}

}  // namespace tracepipe::bench
