// `tracepipe bench` end to end: the real command on a tiny workload, its
// JSON parsed and checked for shape and for counts that must agree.
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "mini_json.h"
#include "test_support.h"

namespace {

struct Run {
  int status = -1;
  std::string out;
  std::string err;
};

Run run_tracepipe(const std::string& args) {
  auto dir = std::filesystem::temp_directory_path();
  auto out = dir / ("tp_bench_out_" + std::to_string(getpid()));
  auto err = dir / ("tp_bench_err_" + std::to_string(getpid()));
  std::string cmd = std::string("'") + TP_TRACEPIPE_EXE + "' " + args + " >'" + out.string() +
                    "' 2>'" + err.string() + "'";
  int rc = std::system(cmd.c_str());
  Run r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = tp_test::read_file(out);
  r.err = tp_test::read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

bool two_cpus_of_both_parities() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return false;
  bool even = false, odd = false;
  int n = 0;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) {
      ++n;
      (i & 1 ? odd : even) = true;
    }
  return n == 2 && even && odd;
}

}  // namespace

TEST_CASE("bench cli: tiny run, JSON shape and consistent counts", "[tools][bench]") {
  // 1 group of 2 pairs, 20 loops: 80 messages, 480 events per traced run.
  Run r = run_tracepipe(
      "bench -g 1 -f 2 -l 20 -r 2 --json --perf-events 20000 --perf-no-syscall --no-warmup "
      "--mix-rounds 6 --mix-events 200 --mix embedded");
  INFO(r.err);
  REQUIRE(r.status == 0);
  mini_json::Value doc = mini_json::parse(r.out);
  CHECK(doc["tool"].str() == "tracepipe bench");
  CHECK(doc["config"]["messages"].number() == 80);

  const auto& cases = doc["cases"].array();
  REQUIRE(cases.size() == 13);  // off + {all, reject, accept, half} x {on, off, adaptive}
  std::map<std::string, double> events_of_case;
  std::map<std::string, int> stagings_of_case;
  for (const auto& c : cases) {
    const std::string kase = c["case"].str();
    const std::string staging = c["staging"].str();
    INFO(kase << "/" << staging);
    CHECK((staging == "on" || staging == "off" || staging == "adaptive"));
    CHECK(c["runs"].number() == 2);
    CHECK(c["samples_s"].array().size() == 2);
    CHECK(c["mean_s"].number() > 0);
    CHECK(c["median_s"].number() > 0);
    CHECK(c["stddev_pct"].number() >= 0);
    // A figure only when significant (positive, above the spread), else null.
    CHECK(c["ns_per_event_measured"].is_number());
    CHECK(c["significant"].is_bool());
    if (c["significant"].boolean()) {
      CHECK(c["ns_per_event"].is_number());
      CHECK(c["ns_per_event"].number() == c["ns_per_event_measured"].number());
    } else {
      CHECK(c["ns_per_event"].is_null());
      const std::string cell = kase + "/" + staging;
      bool listed = false;
      for (const auto& w : doc["warnings"].array())
        if (w.str().find("not significant") != std::string::npos &&
            w.str().find(cell) != std::string::npos)
          listed = true;
      CHECK(listed);
    }
    if (kase != "off" && c["ns_per_event_measured"].number() <= 0)
      CHECK_FALSE(c["significant"].boolean());
    CHECK(c["conserved"].boolean());
    const double events = c["events"].number();
    const double accepted = c["accepted"].number();
    if (kase == "off") {
      CHECK(events == 0);
      CHECK(c["ns_per_event"].number() == 0);
      continue;
    }
    CHECK(events == 480);
    if (events_of_case.count(kase)) CHECK(events_of_case[kase] == events);
    events_of_case[kase] = events;
    ++stagings_of_case[kase];
    if (kase == "reject") CHECK(accepted == 0);
    if (kase == "all" || kase == "accept") CHECK(accepted + c["lost"].number() == events);
    if (kase == "half") {
      if (two_cpus_of_both_parities())
        CHECK(accepted == events / 2);
      else
        CHECK(accepted <= events);
    }
  }
  CHECK(stagings_of_case ==
        std::map<std::string, int>{{"all", 3}, {"reject", 3}, {"accept", 3}, {"half", 3}});

  // The replayed mix: every traced cell with a cost, its interval and its
  // verdict; 6 rounds of 200 events per thread per block.
  const auto& mix = doc["mix"];
  CHECK(mix["source"].str() == "embedded");
  CHECK(mix["rounds"].number() == 6);
  CHECK(mix["block_events"].number() == 200);
  const double threads = mix["threads"].number();
  CHECK(threads >= 1);
  CHECK(mix["base_ns_per_event"].number() > 0);
  const auto& mc = mix["cases"].array();
  REQUIRE(mc.size() == 12);
  for (const auto& c : mc) {
    const std::string kase = c["case"].str();
    INFO("mix " << kase << "/" << c["staging"].str());
    CHECK(c["rounds"].number() == 6);
    CHECK(c["events"].number() == 6 * 200 * threads);
    CHECK(c["samples_ns"].array().size() == 6);
    CHECK(c["ns_per_event"].is_number());
    CHECK(c["ci95_ns"].number() >= 0);
    CHECK(c["ci95_lo_ns"].number() <= c["ns_per_event"].number());
    CHECK(c["ci95_hi_ns"].number() >= c["ns_per_event"].number());
    CHECK(c["coverage"].number() >= 0.95);  // 6 rounds: [min, max], 96.9%
    CHECK(c["significant"].is_bool());
    CHECK(c["significant"].boolean() == c["why"].str().empty());
    CHECK(c["conserved"].boolean());
    if (kase == "reject") CHECK(c["accepted"].number() == 0);
    if (kase == "all" || kase == "accept") CHECK(c["accept_pct"].number() == 100);
  }
  CHECK(mix["discard_vs_commit"].array().size() == 3);

  const auto& series = doc["overwrite_series"];
  CHECK(series["events"].number() == 20000);
  const auto& pc = series["cases"].array();
  REQUIRE(pc.size() == 4);
  std::map<std::string, const mini_json::Value*> by;
  for (const auto& p : pc) by[p["case"].str()] = &p;
  REQUIRE(by.size() == 4);
  CHECK((*by["base"])["events"].number() == 0);
  for (const char* k : {"drop+consumer", "overwrite", "overwrite+snapshot"}) {
    INFO(k);
    const auto& p = *by[k];
    CHECK(p["events"].number() == 20000);
    CHECK(p["runs"].number() == 2);
    // written is the writer's own count of successful reservations; lost
    // is the ring's: together they are every attempt.
    CHECK(p["written"].number() + p["lost"].number() == 20000);
    CHECK(p["conserved"].boolean());
  }
  CHECK((*by["base"])["conserved"].boolean());
  // The overwrite buffer keeps only what fits: nobody reads it, so what was
  // overwritten plus what is left equals what was written.
  CHECK((*by["overwrite"])["read"].number() == 0);
  CHECK((*by["overwrite+snapshot"])["snapshots"].number() >= 1);
}

TEST_CASE("bench cli: a filter the kernel rejects fails before any run, with its error",
          "[tools][bench]") {
  auto f = std::filesystem::temp_directory_path() /
           ("tp_bench_bad_filter_" + std::to_string(getpid()) + ".toml");
  std::ofstream(f) << "[half]\nsys_enter = \"id ==\"\n";
  Run r = run_tracepipe("bench -q -r 1 -g 1 -f 1 -l 1 --table hackbench --filters '" + f.string() +
                        "'");
  std::filesystem::remove(f);
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find("sys_enter") != std::string::npos);
  CHECK(r.err.find("id ==") != std::string::npos);
}

TEST_CASE("bench cli: --help documents the options, bad options fail", "[tools][bench]") {
  Run h = run_tracepipe("bench --help");
  CHECK(h.status == 0);
  for (const char* opt :
       {"--groups", "--fds", "--loops", "--runs", "--cases", "--staging", "--buffer-kb", "--mode",
        "--clock", "--filters", "--json", "--perf-events"})
    CHECK(h.out.find(opt) != std::string::npos);
  // The config file's spellings, next to bench's own (docs/bench.md).
  CHECK(h.out.find("-b,--buffer-kb,--buffer-size-kb") != std::string::npos);
  CHECK(h.out.find("overwrite, or drop_newest (the config file's name) = drop") !=
        std::string::npos);
  CHECK(h.out.find("on or per_cpu (per-CPU temp buffer, the config file's name)") !=
        std::string::npos);
  CHECK(run_tracepipe("bench --cases sometimes").status != 0);
  CHECK(run_tracepipe("bench --staging per_cpuu -q -r 1 -l 1").status != 0);
  CHECK(run_tracepipe("bench --mode sideways").status != 0);
  CHECK(run_tracepipe("bench -q --clock sundial -r 1 -l 1").status == 1);
}

TEST_CASE("bench cli: the config file's spellings --buffer-size-kb, drop_newest and per_cpu",
          "[tools][bench]") {
  // The same run spelt both ways reports the same configuration, in bench's
  // names, except that per-CPU staging keeps the name it was asked by.
  for (const auto& [args, staging] :
       {std::pair<const char*, const char*>{"--buffer-size-kb 64 -m drop_newest --staging per_cpu",
                                            "per_cpu"},
        {"-b 64 -m drop --staging on", "on"},
        {"--buffer-kb=64 --mode=drop_newest --staging=per_cpu", "per_cpu"}}) {
    INFO(args);
    Run r = run_tracepipe(std::string("bench -q -g 1 -f 1 -l 2 -r 1 --cases all --perf-events 0 "
                                      "--no-warmup --mix-rounds 0 --json ") +
                          args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    mini_json::Value doc = mini_json::parse(r.out);
    CHECK(doc["config"]["buffer_bytes_per_cpu"].number() == 64 * 1024);
    CHECK(doc["config"]["mode"].str() == "drop");
    const auto& cases = doc["cases"].array();
    REQUIRE(cases.size() == 2);  // off + all/on
    CHECK(cases[1]["case"].str() == "all");
    CHECK(cases[1]["staging"].str() == staging);
  }
  // The table too: the cell's staging column and its progress/warning label.
  Run r = run_tracepipe(
      "bench -q -g 1 -f 1 -l 2 -r 1 --cases reject --perf-events 0 --no-warmup --mix-rounds 0 "
      "--staging per_cpu");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find(" per_cpu ") != std::string::npos);
  CHECK(r.out.find(" on ") == std::string::npos);
  CHECK(r.out.find("/on") == std::string::npos);
}

TEST_CASE("bench cli: the replayed-mix table comes first and once, --table picks the tables",
          "[tools][bench]") {
  Run r = run_tracepipe(
      "bench -q -g 1 -f 1 -l 2 -r 1 --perf-events 0 --no-warmup --mix-rounds 2 --mix-events 50 "
      "--mix embedded --cases off,reject --staging on");
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("tracepipe bench: replayed event mix (embedded") == 0);
  CHECK(r.out.find("replayed event mix", 40) == std::string::npos);  // printed once
  const size_t hb = r.out.find("tracepipe bench: hackbench");
  CHECK(hb != std::string::npos);
  CHECK(r.out.find("discarding against committing") == std::string::npos);  // no all row
  Run m = run_tracepipe(
      "bench -q --table mix --mix-rounds 2 --mix-events 50 --mix embedded --cases all,reject "
      "--staging on,off");
  INFO(m.err);
  REQUIRE(m.status == 0);
  CHECK(m.out.find("discarding against committing (reject / all): staging on ") !=
        std::string::npos);
  CHECK(m.out.find("hackbench -g") == std::string::npos);
  CHECK(m.out.find("half filter (per event)") == std::string::npos);  // no half case asked
  Run h = run_tracepipe(
      "bench -q --table mix --mix-rounds 2 --mix-events 50 --mix embedded "
      "--cases half --staging on");
  REQUIRE(h.status == 0);
  CHECK(h.out.find("half filter (per event):") != std::string::npos);
  CHECK(m.out.find("perf overwrite series") == std::string::npos);
  // A named capture that cannot be read is an error, not a silent fallback.
  Run bad = run_tracepipe("bench -q --table mix --mix /nonexistent/trace.dat");
  CHECK(bad.status != 0);
  CHECK(bad.err.find("/nonexistent/trace.dat") != std::string::npos);
}
