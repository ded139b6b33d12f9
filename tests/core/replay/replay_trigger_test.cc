// `replay --trigger` on the real hackbench capture: hist counts against an
// independent count of the same records (trace-cmd report's text when
// trace-cmd is installed, else the trace.dat reader's records), vals summed,
// .log2 buckets, .execname from the file's saved cmdlines, triggers that see
// records the event's filter discards, and the errors.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "test_support.h"
#include "tracepipe/core/replay/filter_plan.h"
#include "tracepipe/core/replay/replay.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tracepipe::replay;

namespace {

template <typename T>
T field(const TraceRecord& r, const EventFormat& f, std::string_view name) {
  const FormatField* x = f.find_field(name);
  T v{};
  std::memcpy(&v, r.payload.data() + x->offset, sizeof v);
  return v;
}

// The kernel's line for a .log2 key and one val.
std::string fmt_bucket(int64_t b, uint64_t hits, uint64_t sum) {
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "{ bytes_req: ~ 2^%-2lld } hitcount: %10llu  bytes_alloc: %10llu\n",
                static_cast<long long>(b), static_cast<unsigned long long>(hits),
                static_cast<unsigned long long>(sum));
  return buf;
}

// "{ prev_pid:      30284 } hitcount:        123" -> {30284: 123}
std::map<int64_t, uint64_t> parse_hist(const std::string& text, const std::string& key) {
  std::map<int64_t, uint64_t> out;
  const std::regex line("\\{ " + key + ": +(-?[0-9]+) \\} hitcount: +([0-9]+)");
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out[std::stoll(m[1])] = std::stoull(m[2]);
  }
  return out;
}

// sched_switch per prev_pid, from trace-cmd report's text (nullopt without trace-cmd).
std::optional<std::map<int64_t, uint64_t>> trace_cmd_prev_pids(const std::filesystem::path& dat) {
  if (std::system("trace-cmd -h >/dev/null 2>&1") == -1) return std::nullopt;
  const std::string cmd = "trace-cmd report -F sched_switch '" + dat.string() + "' 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return std::nullopt;
  std::map<int64_t, uint64_t> out;
  const std::regex re("sched_switch: +.*:(-?[0-9]+) \\[[0-9]+\\] [A-Z+|]* ==> ");
  char buf[512];
  uint64_t lines = 0;
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    std::cmatch m;
    if (std::regex_search(buf, m, re)) ++out[std::stoll(m[1])], ++lines;
  }
  if (::pclose(p) != 0 || lines == 0) return std::nullopt;
  return out;
}

}  // namespace

TEST_CASE("replay trigger: hist counts per key equal an independent count of the records",
          "[replay][triggers]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const auto rd = TraceDatReader::open(dat);
  std::map<int64_t, uint64_t> prev_pid;
  std::map<int64_t, std::pair<uint64_t, uint64_t>> kmalloc_log2;  // bucket -> hits, bytes_alloc
  auto c = rd.records();
  while (auto rec = c.next()) {
    const EventFormat* f = rd.format(*rec->event_id());
    if (f->name == "sched_switch") ++prev_pid[field<int32_t>(*rec, *f, "prev_pid")];
    if (f->name == "kmalloc") {
      const uint64_t req = field<uint64_t>(*rec, *f, "bytes_req");
      const int64_t b = req <= 1 ? 0 : 64 - __builtin_clzll(req - 1);
      ++kmalloc_log2[b].first;
      kmalloc_log2[b].second += field<uint64_t>(*rec, *f, "bytes_alloc");
    }
  }
  REQUIRE(prev_pid.size() > 10);
  if (const auto tc = trace_cmd_prev_pids(dat))
    CHECK(*tc == prev_pid);  // trace-cmd agrees with the reader

  ReplayOptions o;
  o.input = dat;
  o.progress = ProgressMode::off;
  o.threads = 1;
  // The filter discards nearly every sched_switch: the hist still sees them all.
  o.filter_args = {"sched:sched_switch: prev_pid == 1"};
  o.trigger_args = {"sched:sched_switch: hist:keys=prev_pid:sort=prev_pid",
                    "kmem:kmalloc: hist:keys=bytes_req.log2:vals=bytes_alloc:sort=bytes_req",
                    "sched:sched_switch: hist:keys=common_pid.execname:sort=hitcount.descending"};
  const ReplayResult r = run_replay(o);
  REQUIRE(r.triggered.size() == 2);
  const auto& sw = r.triggered[0];
  CHECK(sw.event == "sched:sched_switch");
  CHECK(parse_hist(sw.hist, "prev_pid") == prev_pid);
  CHECK(sw.hist.find("Totals:\n    Hits: 3596\n    Entries: " + std::to_string(prev_pid.size()) +
                     "\n    Dropped: 0\n") != std::string::npos);
  CHECK(sw.trigger.find("hist:keys=prev_pid:vals=hitcount:sort=prev_pid:size=2048 [active]\n") !=
        std::string::npos);
  // .execname: the comm from the file's saved cmdlines.
  CHECK(sw.hist.find("{ common_pid: hackbench       [     30284] } hitcount:") !=
        std::string::npos);

  const auto& km = r.triggered[1];
  CHECK(km.event == "kmem:kmalloc");
  uint64_t hits = 0;
  for (const auto& [b, v] : kmalloc_log2) {
    INFO("bucket 2^" << b);
    hits += v.first;
    const std::string want = fmt_bucket(b, v.first, v.second);
    CHECK(km.hist.find(want) != std::string::npos);
  }
  CHECK(hits == 42345);
  CHECK(km.hist.find("    Hits: 42345\n") != std::string::npos);

  // A filter that needs the recorded context (COMM) runs in replay, before
  // the instance: the records it rejects still reach the triggers.
  o.filter_args = {"sched:sched_switch: COMM == \"no-such-task\""};
  o.trigger_args = {"sched:sched_switch: hist:keys=prev_pid:sort=prev_pid"};
  const ReplayResult side = run_replay(o);
  REQUIRE(side.triggered.size() == 1);
  const auto sw_side = std::find_if(side.events.begin(), side.events.end(), [](const EventRow& e) {
    return e.name == "sched:sched_switch";
  });
  REQUIRE(sw_side != side.events.end());
  CHECK(sw_side->route == FilterRoute::replay_side);
  CHECK(sw_side->counts.kept == 0);
  CHECK(sw_side->counts.discarded == 3596);
  CHECK(parse_hist(side.triggered[0].hist, "prev_pid") == prev_pid);
  CHECK(side.triggered[0].hist.find("    Hits: 3596\n") != std::string::npos);
}

TEST_CASE("replay trigger: errors name the argument and carry the kernel's message",
          "[replay][triggers]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  ReplayOptions o;
  o.input = dat;
  o.progress = ProgressMode::off;
  o.trigger_args = {"sched:sched_switch: hist:keys=bogus"};
  try {
    (void)run_replay(o);
    FAIL("no error");
  } catch (const ReplayError& e) {
    CHECK(std::string(e.what()).find("hist:sched:sched_switch: error: Couldn't find field") !=
          std::string::npos);
  }
  o.trigger_args = {"sched:nope: traceoff"};
  CHECK_THROWS_AS(run_replay(o), ReplayError);
  o.trigger_args = {"traceoff"};
  CHECK_THROWS_AS(run_replay(o), ReplayError);
}

TEST_CASE("replay trigger: a config's trigger error names the file, line and key, not --trigger",
          "[replay][triggers]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const std::filesystem::path cfg =
      std::filesystem::temp_directory_path() /
      ("tp_replay_trigger_cfg_" + std::to_string(::getpid()) + ".toml");
  {
    std::ofstream f(cfg);
    f << "mode = \"overwrite\"\n\n[events.\"sched:sched_switch\"]\nenable = true\n"
         "trigger = \"hist:keys=bogus\"\n";
  }
  ReplayOptions o;
  o.input = dat;
  o.progress = ProgressMode::off;
  o.config = cfg;
  std::string what;
  try {
    (void)run_replay(o);
  } catch (const ReplayError& e) {
    what = e.what();
  }
  std::filesystem::remove(cfg);
  INFO(what);
  CHECK(what.starts_with(cfg.string() +
                         ":5: events.\"sched:sched_switch\".trigger: trigger 'hist:keys=bogus' "
                         "rejected for sched:sched_switch: hist:sched:sched_switch: error: "
                         "Couldn't find field"));
  CHECK(what.find("--trigger") == std::string::npos);
}
