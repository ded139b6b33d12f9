// The wakeup latency recipe of histogram.rst section 2.2.3, replayed over a
// real `trace-cmd record` capture (hackbench.dat), against an independent
// computation from `trace-cmd report` of the same file: the records in
// report order, a pid's sched_waking stamp kept until the next sched_switch
// to it reads it once (the kernel's onmatch and read-once pairing), the
// latency in microseconds rounded as the kernel's ns2usecs.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "test_support.h"
#include "tracepipe/core/replay/filter_plan.h"
#include "tracepipe/core/replay/replay.h"

using namespace tracepipe;

namespace {

std::string field(const std::string& line, const std::string& name) {
  const size_t at = line.find(" " + name + "=");
  if (at == std::string::npos) return {};
  const size_t b = at + name.size() + 2;
  return line.substr(b, line.find(' ', b) - b);
}

// "  1006.919571204: " -> ns
uint64_t stamp_ns(const std::string& line, size_t colon) {
  size_t b = line.rfind(' ', colon) + 1;
  const std::string t = line.substr(b, colon - b);
  const size_t dot = t.find('.');
  return std::stoull(t.substr(0, dot)) * 1'000'000'000ull + std::stoull(t.substr(dot + 1));
}

}  // namespace

TEST_CASE("hist replay: wakeup latency over hackbench.dat equals trace-cmd report's pairing",
          "[triggers][hist][replay]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const auto scratch =
      std::filesystem::temp_directory_path() / fmt::format("tp-hist-replay-{}", ::getpid());
  std::filesystem::create_directories(scratch);
  const tp_test::CommandResult rep =
      tp_test::run_command({"trace-cmd", "report", "-R", "-t", "-F", "sched_switch", "-F",
                            "sched_waking", "-i", dat.string()},
                           scratch);
  std::filesystem::remove_all(scratch);
  if (rep.status != 0) tp_test::skip("trace-cmd report failed or is missing: " + rep.err);

  // The independent pairing.
  std::map<int, uint64_t> ts0;                                  // pid -> usecs, while set
  std::map<std::tuple<long, long, uint64_t>, uint64_t> expect;  // (pid, prio, lat) -> hits
  uint64_t matched = 0;
  std::istringstream in(rep.out);
  for (std::string line; std::getline(in, line);) {
    const bool waking = line.find(": sched_waking: ") != std::string::npos;
    const bool sw = line.find(": sched_switch: ") != std::string::npos;
    if (!waking && !sw) continue;
    const size_t colon = line.find(waking ? ": sched_waking: " : ": sched_switch: ");
    const uint64_t us = (stamp_ns(line, colon) + 500) / 1000;
    if (waking) {
      if (field(line, "comm") == "hackbench") ts0[std::stoi(field(line, "pid"))] = us;
      continue;
    }
    if (field(line, "next_comm") != "hackbench") continue;
    const int pid = std::stoi(field(line, "next_pid"));
    const auto it = ts0.find(pid);
    if (it == ts0.end()) continue;
    ++expect[{pid, std::stol(field(line, "next_prio")), us - it->second}];
    ++matched;
    ts0.erase(it);  // read once
  }
  REQUIRE(matched > 1000);  // hackbench.dat holds ~2100 such pairs

  replay::ReplayOptions o;
  o.input = dat;
  o.timing = false;
  o.progress = replay::ProgressMode::off;
  o.synthetic_args = {"wakeup_latency u64 lat; pid_t pid; int prio"};
  o.trigger_args = {
      "sched:sched_waking: hist:keys=$saved_pid:saved_pid=pid:ts0=common_timestamp.usecs if "
      "comm==\"hackbench\"",
      "sched:sched_switch: "
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking)."
      "wakeup_latency($wakeup_lat,$saved_pid,next_prio) if next_comm==\"hackbench\"",
      "synthetic:wakeup_latency: hist:keys=pid,prio,lat:sort=pid,lat:size=8192",
  };
  const replay::ReplayResult r = replay::run_replay(o);
  const auto it = std::find_if(r.triggered.begin(), r.triggered.end(),
                               [](const auto& t) { return t.event == "synthetic:wakeup_latency"; });
  REQUIRE(it != r.triggered.end());

  // sort=pid,lat, ties by the keys in order (pid, prio, lat).
  std::vector<std::tuple<long, uint64_t, long, uint64_t>> rows;
  for (const auto& [k, n] : expect)
    rows.emplace_back(std::get<0>(k), std::get<2>(k), std::get<1>(k), n);
  std::sort(rows.begin(), rows.end());
  std::string want =
      "# event histogram\n#\n# trigger info: "
      "hist:keys=pid,prio,lat:vals=hitcount:sort=pid,lat:size=8192 [active]\n#\n\n";
  for (const auto& [pid, lat, prio, n] : rows)
    want += fmt::format("{{ pid: {:>10}, prio: {:>10}, lat: {:>10} }} hitcount: {:>10}\n", pid,
                        prio, lat, n);
  want += fmt::format("\nTotals:\n    Hits: {}\n    Entries: {}\n    Dropped: 0\n", matched,
                      rows.size());
  CHECK(it->hist == want);
}

TEST_CASE("hist replay: --synthetic and --trigger errors name the option",
          "[triggers][hist][replay]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  replay::ReplayOptions o;
  o.input = dat;
  o.progress = replay::ProgressMode::off;
  o.synthetic_args = {"9bad u64 x"};
  CHECK_THROWS_WITH(replay::run_replay(o),
                    Catch::Contains("--synthetic '9bad u64 x'") && Catch::Contains("Illegal name"));
  o.synthetic_args.clear();
  o.trigger_args = {"synthetic:nosuch: hist:keys=lat"};
  CHECK_THROWS_WITH(replay::run_replay(o), Catch::Contains("no synthetic event synthetic:nosuch"));
  o.trigger_args = {"sched:sched_switch: hist:keys=next_pid:x=common_timestamp-$nope"};
  CHECK_THROWS_WITH(replay::run_replay(o), Catch::Contains("Couldn't find variable"));
}
