// tracepipe_microbench's main: Google Benchmark's, plus, after a console
// run that included the emit cases, the emit targets judged from that run's
// medians and paired ratios (emit_targets.h), on stderr so that stdout stays the
// library's table. With --benchmark_format=json or csv the library's own
// reporter runs alone.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tracepipe/bench/micro/emit_targets.h"

namespace {

// The console reporter, keeping each emit case's CPU time per iteration and
// each paired case's counters: the library's median when it computed one
// (repetitions > 1), else the case's one run.
class TargetsReporter : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      const std::string key = tracepipe::bench::emit_case_key(r.run_name.str());
      if (key.empty() || r.error_occurred) continue;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type == Run::RT_Aggregate && !median) continue;
      if (tracepipe::bench::is_paired_case(key)) {
        for (const auto& [name, counter] : r.counters)
          (median ? paired_median_ : paired_single_)[name] = counter.value;
        continue;
      }
      const double ns =
          r.GetAdjustedCPUTime() * 1e9 / benchmark::GetTimeUnitMultiplier(r.time_unit);
      (median ? median_ : single_)[key] = ns;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> medians() const { return merged(median_, single_); }
  std::map<std::string, double> paired() const { return merged(paired_median_, paired_single_); }

 private:
  static std::map<std::string, double> merged(std::map<std::string, double> m,
                                              const std::map<std::string, double>& single) {
    m.insert(single.begin(), single.end());  // keeps the medians where both exist
    return m;
  }
  std::map<std::string, double> median_, single_;
  std::map<std::string, double> paired_median_, paired_single_;
};

bool has_arg(int argc, char** argv, const char* prefix) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix, std::strlen(prefix)) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Read before Initialize(), which removes the flags it knows from argv.
  const bool console = !has_arg(argc, argv, "--benchmark_format=") ||
                       has_arg(argc, argv, "--benchmark_format=console");
  const bool color = isatty(STDOUT_FILENO) != 0 && !has_arg(argc, argv, "--benchmark_color=false");
  const bool tabular = has_arg(argc, argv, "--benchmark_counters_tabular=true");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!console) {
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
  int opts = benchmark::ConsoleReporter::OO_None;
  if (color) opts |= benchmark::ConsoleReporter::OO_Color;
  if (tabular) opts |= benchmark::ConsoleReporter::OO_Tabular;
  TargetsReporter reporter(static_cast<benchmark::ConsoleReporter::OutputOptions>(opts));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const auto checks = tracepipe::bench::emit_targets(reporter.medians(), reporter.paired());
  if (!checks.empty()) {
    std::fflush(stdout);
    std::fputs(tracepipe::bench::render_targets(checks).c_str(), stderr);
  }
  benchmark::Shutdown();
  return 0;
}
