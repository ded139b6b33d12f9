// `tracepipe bench-peers` end to end on tiny counts: the output's structure,
// the skip lines of unavailable peers, and that the kernel instance and the
// LTTng daemon are gone afterwards. Timing figures are not checked here
// (targets live in the bench's own report, never in tests).
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <string>

#include "test_support.h"

namespace {

struct Run {
  int status = -1;
  std::string out;
  std::string err;
};

Run run_peers(const std::string& args, const std::string& env = "") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto out = dir / ("tp_peers_out_" + std::to_string(getpid()));
  const auto err = dir / ("tp_peers_err_" + std::to_string(getpid()));
  const std::string cmd = env + (env.empty() ? "" : " ") + "'" + TP_TRACEPIPE_EXE +
                          "' bench-peers " + args + " >'" + out.string() + "' 2>'" + err.string() +
                          "'";
  const int rc = std::system(cmd.c_str());
  Run r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = tp_test::read_file(out);
  r.err = tp_test::read_file(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// Lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    if (line.rfind(prefix, 0) == 0) v.push_back(line);
    pos = nl + 1;
  }
  return v;
}

/// Number of processes whose command name is `comm`.
int count_processes(const std::string& comm) {
  int n = 0;
  DIR* d = opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d)) {
    const std::string pid = e->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    try {
      std::string c = tp_test::read_file("/proc/" + pid + "/comm");
      while (!c.empty() && c.back() == '\n') c.pop_back();
      if (c == comm) ++n;
    } catch (...) {
    }
  }
  closedir(d);
  return n;
}

bool lttng_usable() {
  return std::filesystem::exists(std::filesystem::path(TP_TRACEPIPE_EXE).parent_path() /
                                 "libtracepipe_peer_lttng.so") &&
         std::system(
             "command -v lttng-sessiond >/dev/null 2>&1 && command -v lttng >/dev/null 2>&1") == 0;
}

}  // namespace

TEST_CASE("bench-peers: forced-unavailable peers are skipped with one line each", "[peers][cli]") {
  Run r = run_peers(
      "-q -n 2000 -r 2 -t 1 --cases disabled,enabled,reject-int -g 1 -f 2 -l 5 --hb-runs 1",
      "TRACEPIPE_PEERS_UNAVAILABLE=lttng,kernel");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const auto skips = lines_starting(r.out, "peer ");
  REQUIRE(skips.size() == 2);
  CHECK(std::count(skips.begin(), skips.end(),
                   "peer lttng-ust: skipped: marked unavailable (--unavailable lttng or "
                   "TRACEPIPE_PEERS_UNAVAILABLE)") == 1);
  CHECK(std::count(skips.begin(), skips.end(),
                   "peer kernel: skipped: marked unavailable (--unavailable kernel or "
                   "TRACEPIPE_PEERS_UNAVAILABLE)") == 1);
  // tracepipe is still measured, alone: one row per case, figures, no peer column.
  CHECK(contains(r.out, "Table 1:"));
  CHECK_FALSE(contains(r.out, "Table 2:"));  // the kernel's tables
  CHECK_FALSE(contains(r.out, "Table 3:"));
  const std::regex row(
      R"((disabled|enabled|reject-int) +1 +[0-9.]+ \[[0-9.]+ [0-9.]+\] +[0-9]+/[0-9]+)");
  int rows = 0;
  for (const std::string& l : lines_starting(r.out, "")) rows += std::regex_search(l, row) ? 1 : 0;
  CHECK(rows == 3);
  // Every target that needs a peer says so instead of passing.
  CHECK(contains(r.out, "[n/a] enabled x1"));
  CHECK(contains(r.out, "lttng-ust not measured"));
  CHECK(contains(r.out, "kernel not measured"));
  CHECK_FALSE(contains(r.out, "[MET]"));
}

TEST_CASE("bench-peers: the --unavailable option and a missing plugin give skip lines",
          "[peers][cli]") {
  Run r = run_peers(
      "-q -n 1000 -r 1 -t 1 --cases enabled --table loop --unavailable kernel --lttng-plugin "
      "/nonexistent/libx.so");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, "peer lttng-ust: skipped: plugin /nonexistent/libx.so does not exist\n"));
  Run k = run_peers("-q --table hackbench --unavailable kernel -g 1 -f 2 -l 5 --hb-runs 1");
  INFO(k.out << k.err);
  REQUIRE(k.status == 0);
  CHECK(contains(k.out, "peer kernel: skipped: marked unavailable"));
}

TEST_CASE("bench-peers: bad options fail with a message", "[peers][cli]") {
  Run r = run_peers("-q --cases bogus --table loop");
  CHECK(r.status != 0);
  CHECK(contains(r.err, "unknown case 'bogus'"));
  Run u = run_peers("-q --unavailable nosuch --table loop");
  CHECK(u.status != 0);
  CHECK(contains(u.err, "unknown peer 'nosuch'"));
  // A round that no buffer can hold is refused before anything runs.
  Run big = run_peers("-q --unavailable lttng kernel --table loop --cases enabled -n 8388609");
  CHECK(big.status != 0);
  CHECK(contains(big.err, "--events 8388609: one round needs 1025 MiB of buffer per CPU"));
  CHECK(contains(big.err, "use at most 8388608 events"));
  CHECK(big.out.empty());
}

TEST_CASE("bench-peers: LTTng-UST side by side (JSON), daemon gone afterwards",
          "[peers][cli][lttng]") {
  if (!lttng_usable()) {
    // Then the bench must say why it skips LTTng.
    Run r = run_peers("-q -n 1000 -r 1 -t 1 --cases enabled --table loop --unavailable kernel");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(contains(r.out, "peer lttng-ust: skipped: "));
    TP_SKIP("LTTng-UST plugin or lttng-tools absent (the skip line was checked)");
  }
  const int daemons_before = count_processes("lttng-sessiond");
  Run r = run_peers(
      "-q --json -n 3000 -r 2 -t 1 --cases disabled,enabled,reject-int,reject-glob,overwrite "
      "--table loop --unavailable kernel");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  // Only the peer this test turned off is skipped.
  CHECK(contains(r.out, "\"skipped\":[\"peer kernel: skipped: marked unavailable"));
  CHECK_FALSE(contains(r.out, "peer lttng-ust: skipped"));
  CHECK(contains(r.out, "\"kernel_loop\":null"));
  CHECK(contains(r.out, "\"errors\":[]"));
  // Five cells, each with both sides measured twice.
  const std::regex cell(R"re(\{"case":"([a-z-]+)","threads":1,"events":([0-9]+),"sides":\[)re");
  int cells = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), cell);
       it != std::sregex_iterator(); ++it)
    ++cells;
  CHECK(cells == 5);
  const std::regex side(
      R"re(\{"side":"(tracepipe|lttng-ust)","ns":\[[0-9.e+-]+,[0-9.e+-]+\],"wall_ns":\[[0-9.e+-]+,[0-9.e+-]+\],"median":[0-9.e+-]+)re");
  int sides = 0;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), side);
       it != std::sregex_iterator(); ++it)
    ++sides;
  CHECK(sides == 10);
  // Nothing lost on either side in the discard-mode cases (the buffers hold
  // a round), and LTTng recorded bytes only when it committed.
  CHECK_FALSE(std::regex_search(r.out, std::regex(R"re("lost":[1-9])re")));
  const std::regex lt_bytes(
      R"re("case":"([a-z-]+)"[^\]]*\{"side":"lttng-ust"[^}]*"bytes":([0-9]+))re");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), lt_bytes);
       it != std::sregex_iterator(); ++it) {
    const std::string kase = (*it)[1];
    const uint64_t bytes = std::stoull((*it)[2]);
    INFO(kase << " bytes " << bytes);
    if (kase == "enabled")
      CHECK(bytes >= 3000ull * 56);  // every event of every round reached the trace
    if (kase == "reject-int" || kase == "reject-glob") CHECK(bytes < 3000ull * 56 / 10);
  }
  CHECK(contains(r.out, "\"verdict\":"));
  CHECK(count_processes("lttng-sessiond") == daemons_before);
  CHECK(count_processes("lttng-consumerd") == 0);
}

TEST_CASE("bench-peers: the kernel's tables, instance removed afterwards", "[peers][cli][kernel]") {
  if (!tp_test::tracefs_writable()) {
    Run r = run_peers("-q --table hackbench -g 1 -f 2 -l 5 --hb-runs 1");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(contains(r.out, "peer kernel: skipped: "));
    TP_SKIP("tracefs not writable (the skip line was checked)");
  }
  SECTION("table 2: the kernel's event loop") {
    Run r = run_peers(
        "-q --table loop --unavailable lttng -n 2000 -r 2 -t 1 --cases "
        "disabled,enabled,reject-int,reject-glob");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(contains(
        r.out,
        "Table 2: the kernel's own cost per event: raw_syscalls:sys_enter (64-byte record)"));
    // Rows: label, threads, ns/syscall [min max], ns/event, recorded.
    const std::regex row(R"(^([a-z-]+) +1 +[0-9.]+ \[[0-9.]+ [0-9.]+\] +(-|-?[0-9.]+) +([0-9]+)$)");
    std::map<std::string, uint64_t> recorded;
    for (const std::string& l : lines_starting(r.out, "")) {
      std::smatch m;
      if (std::regex_match(l, m, row)) recorded[m[1]] = std::stoull(m[3]);
    }
    REQUIRE(recorded.size() == 5);  // off, ignored, and the three cases other than disabled
    CHECK(recorded["off"] == 0);
    CHECK(recorded["enabled"] >=
          2000);  // every getppid() of the round (and the worker's futex calls)
    CHECK(recorded["enabled"] < 2000 + 100);
    CHECK(recorded["reject-int"] == 0);
    CHECK(recorded["reject-glob"] == 0);
    CHECK(contains(r.out, "kernel reject/commit cost ratio (reject-int/enabled, 1 thread): "));
  }
  SECTION("table 3: hackbench") {
    Run r = run_peers("-q --table hackbench -g 1 -f 4 -l 20 --hb-runs 2");
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    CHECK(contains(r.out, "Table 3:"));
    // Rows: case, tp median, rsd, ns/event, events/run, kernel median, rsd, ns/event, recorded.
    const std::regex row(
        R"(^(off|all|reject|accept|half) +[0-9.]+ +[0-9.]+ +(-|-?[0-9.]+) +([0-9]+) +[0-9.]+ +[0-9.]+ +(-|-?[0-9.]+) +([0-9]+)$)");
    std::map<std::string, std::pair<uint64_t, uint64_t>>
        got;  // case -> (tp events, kernel recorded)
    for (const std::string& l : lines_starting(r.out, "")) {
      std::smatch m;
      if (std::regex_match(l, m, row)) got[m[1]] = {std::stoull(m[3]), std::stoull(m[5])};
    }
    REQUIRE(got.size() == 5);
    // tracepipe's workload emits 6 events per message: 1 * 4 * 4 * 20 messages.
    CHECK(got["all"].first == 6 * 320);
    CHECK(got["off"].first == 0);
    // The kernel records this process's events only when a case enables them,
    // all of them with no filter, none with the reject-all filter.
    CHECK(got["off"].second == 0);
    CHECK(got["all"].second >= 2 * 320);  // at least a read and a write per message, entered
    CHECK(got["reject"].second == 0);
    CHECK(got["accept"].second >= 2 * 320);
    CHECK(contains(r.out, "reject/commit cost ratio"));
  }
  // The dedicated instance is gone.
  for (const auto& e : std::filesystem::directory_iterator("/sys/kernel/tracing/instances"))
    CHECK(e.path().filename().string().rfind("tracepipe-peers-", 0) != 0);
}
