// `tracepipe replay` end to end: exit codes and the kernel's error_log text
// for bad filters, the table, and kept counts against `trace-cmd report -F`
// on the real hackbench capture (same semantics with --only-filtered), with
// the differences that come from libtraceevent's own filter pinned down.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "replay_test_util.h"
#include "test_support.h"

namespace {

using Run = tp_test::CommandResult;

// A scratch folder for the commands' output, removed at exit.
struct ScratchDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("replay_cli_" + std::to_string(getpid()));
  ScratchDir() { std::filesystem::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

Run run(const std::vector<std::string>& args) {
  static const ScratchDir scratch;
  return tp_test::run_command(args, scratch.path);
}

Run replay(std::vector<std::string> args) {
  args.insert(args.begin(), {TP_TRACEPIPE_EXE, "replay", "--no-progress"});
  return run(args);
}

// KEPT of one row of the table.
uint64_t kept_of(const std::string& table, const std::string& name) {
  const auto c = replay_test::replayed_kept(table, name);
  INFO("table:\n" << table);
  REQUIRE(c);
  return c->second;
}

std::string trace_cmd() {
  for (const char* p : {"/usr/bin/trace-cmd", "/usr/local/bin/trace-cmd"})
    if (access(p, X_OK) == 0) return p;
  return {};
}

// Lines printed by trace-cmd report -F (events kept), without its "cpus=N" header.
uint64_t trace_cmd_kept(const std::string& exe, const std::string& filter,
                        const std::filesystem::path& dat) {
  const Run r = run({exe, "report", "-F", filter, dat.string()});
  REQUIRE(r.status == 0);
  uint64_t n = 0;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line.rfind("cpus=", 0) != 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("replay cli: a rejected filter prints the kernel's error_log entry and exits 2",
          "[replay][cli]") {
  replay_test::TempPath dat("replay_cli_in");
  {
    tracepipe::TraceDatWriter w = replay_test::make_writer(1);
    w.add_record(0, 1, replay_test::sched_switch(1, "a", 1, "b", 2));
    w.write(dat.path);
  }
  // filter-oracle/invalid.tsv: "Expecting numeric field", caret column 13.
  Run r = replay({dat.path.string(), "-F", "sched:sched_switch: prev_pid == \"abc\""});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(r.err ==
        "tracepipe replay: -F 'sched:sched_switch: prev_pid == \"abc\"': filter rejected for "
        "sched:sched_switch\n"
        "event filter parse error: error: Expecting numeric field\n"
        "  Command: prev_pid == \"abc\"\n"
        "                        ^\n");
  // "Too many '('" (invalid.tsv: caret 2).
  r = replay({dat.path.string(), "-F", "sched_switch: ((prev_pid == 1)"});
  CHECK(r.status == 2);
  CHECK(r.err.find("error: Too many '('\n") != std::string::npos);
  // Unknown event, malformed -F, missing file.
  r = replay({dat.path.string(), "-F", "nosuch: a == 1"});
  CHECK(r.status == 2);
  CHECK(r.err.find("no event or system 'nosuch'") != std::string::npos);
  r = replay({dat.path.string(), "-F", "prev_pid == 1"});
  CHECK(r.status == 2);
  CHECK(r.err.find("expected 'EVENT: FILTER'") != std::string::npos);
  r = replay({"/nonexistent.dat"});
  CHECK(r.status != 0);
  CHECK_FALSE(r.err.empty());
  // A good run: the table, exit 0.
  r = replay({dat.path.string(), "-F", "sched_switch: prev_pid == 1", "--no-timing"});
  CHECK(r.status == 0);
  CHECK(kept_of(r.out, "sched:sched_switch") == 1);
}

TEST_CASE("replay cli: kept counts equal trace-cmd report -F on hackbench.dat",
          "[replay][cli][trace-cmd]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const std::string tc = trace_cmd();
  if (tc.empty()) TP_SKIP("trace-cmd not installed");
  struct Row {
    std::string filter, event;
  };
  // Same semantics as libtraceevent: --only-filtered (events without a
  // filter are dropped by trace-cmd report -F).
  const std::vector<Row> rows = {
      {"kmalloc: bytes_req > 100", "kmem:kmalloc"},
      {"sched_switch: prev_pid == 0", "sched:sched_switch"},
      {"sched:sched_switch: prev_pid == 0",
       "sched:sched_switch"},  // trace-cmd spells it sched/sched_switch
      {"sched_switch: prev_comm =~ \"^hack\"",
       "sched:sched_switch"},  // regex: libtraceevent's and our extension
      {"sched_switch: prev_comm == \"hackbench\"", "sched:sched_switch"},
      {"sched_waking: comm =~ \"^kworker\"", "sched:sched_waking"},
      {"kmalloc: gfp_flags & 0x100", "kmem:kmalloc"},
      {"sys_enter: id == 1", "raw_syscalls:sys_enter"},
      {"kfree: ptr == 0", "kmem:kfree"},
      {"sched_switch: next_comm == \"swapper/1\" && prev_prio < 130", "sched:sched_switch"},
      {"sched: prev_pid == 0", "sched:sched_switch"},  // a system: only sched_switch has the field
  };
  for (const Row& row : rows) {
    INFO(row.filter);
    std::string tcf = row.filter;
    if (tcf.rfind("sched:sched_switch:", 0) == 0) tcf = "sched/sched_switch:" + tcf.substr(19);
    const uint64_t expect = trace_cmd_kept(tc, tcf, dat);
    const Run r = replay({dat.string(), "-F", row.filter, "--only-filtered", "--no-timing"});
    REQUIRE(r.status == 0);
    CHECK(kept_of(r.out, row.event) == expect);
    CHECK(kept_of(r.out, "total") == expect);
    CHECK(expect > 0);
  }
}

TEST_CASE("replay cli: where libtraceevent's filter differs from the kernel's",
          "[replay][cli][trace-cmd]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const std::string tc = trace_cmd();
  if (tc.empty()) TP_SKIP("trace-cmd not installed");
  auto ours = [&](const std::string& f) {
    const Run r = replay({dat.string(), "-F", f, "--only-filtered", "--no-timing"});
    REQUIRE(r.status == 0);
    return kept_of(r.out, "total");
  };
  // 1. libtraceevent compares numbers as unsigned 64-bit (test_num): a signed
  //    `long ret` is never < 0 for it. The kernel (and replay) compare signed:
  //    21 sys_exit records have a negative ret.
  CHECK(trace_cmd_kept(tc, "sys_exit: ret < 0", dat) == 0);
  CHECK(ours("sys_exit: ret < 0") == 21);
  // 2. `~` is the kernel's glob operator; libtraceevent has only =~ (regex),
  //    and trace-cmd keeps nothing for `~` without an error.
  CHECK(trace_cmd_kept(tc, "sched_switch: prev_comm ~ \"hack*\"", dat) == 0);
  CHECK(ours("sched_switch: prev_comm ~ \"hack*\"") ==
        ours("sched_switch: prev_comm =~ \"^hack\""));
  CHECK(ours("sched_switch: prev_comm ~ \"hack*\"") == 3499);
  // 3. COMM: libtraceevent takes the comm of common_pid from saved_cmdlines;
  //    the kernel reads current->comm, which for sched_switch is prev_comm. Pid
  //    30284 is "hackbench" in saved_cmdlines but switched out once as
  //    "python3", before its exec.
  CHECK(trace_cmd_kept(tc, "sched_switch: COMM == \"hackbench\"", dat) == 3500);
  CHECK(ours("sched_switch: COMM == \"hackbench\"") == 3499);
}

TEST_CASE("replay cli: without --only-filtered unfiltered events are kept (kernel semantics)",
          "[replay][cli]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const Run r = replay({dat.string(), "-F", "kmalloc: bytes_req > 100", "--no-timing"});
  REQUIRE(r.status == 0);
  CHECK(kept_of(r.out, "kmem:kmalloc") == 42091);
  CHECK(kept_of(r.out, "kmem:kfree") == 44757);
  CHECK(kept_of(r.out, "total") == 257346 - (42345 - 42091));
  // Several -F in one run, each on its event.
  const Run two = replay({dat.string(), "-F", "kmalloc: bytes_req > 100", "-F",
                          "sched_switch: prev_pid == 0", "--only-filtered", "--no-timing"});
  REQUIRE(two.status == 0);
  CHECK(kept_of(two.out, "kmem:kmalloc") == 42091);
  CHECK(kept_of(two.out, "sched:sched_switch") == 61);
  CHECK(kept_of(two.out, "total") == 42091 + 61);
}

TEST_CASE("replay cli: --bench runs both sides and agrees on the kept count",
          "[replay][cli][trace-cmd]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const std::string tc = trace_cmd();
  if (tc.empty()) TP_SKIP("trace-cmd not installed");
  const Run r = replay({dat.string(), "-F", "kmalloc: bytes_req > 100", "--only-filtered",
                        "--bench", "--reps", "1", "--trace-cmd", tc});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("tracepipe replay, 1 thread:") != std::string::npos);
  CHECK(r.out.find("trace-cmd report -F:") != std::string::npos);
  CHECK(r.out.find("speed-up of replay (1 thread) over trace-cmd:") != std::string::npos);
  CHECK(r.out.find("kept: replay 42091, trace-cmd report -F 42091") != std::string::npos);
}

TEST_CASE("replay cli: docs/replay.md's hist example prints the lines the doc shows",
          "[replay][cli][docs]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  std::ifstream doc(std::filesystem::path(TP_SOURCE_DIR) / "docs" / "replay.md");
  REQUIRE(doc);
  // The example's command line and the hist lines after it, up to the block's end.
  std::string line, trigger;
  std::vector<std::string> shown;
  bool in_example = false;
  while (std::getline(doc, line)) {
    if (line.rfind("$ tracepipe replay ", 0) == 0 && line.find("hist:keys=") != std::string::npos) {
      in_example = true;
      const size_t q = line.find('\'');
      trigger = line.substr(q + 1, line.rfind('\'') - q - 1);
    } else if (in_example && line == "```") {
      break;
    } else if (in_example && line.rfind("{ ", 0) == 0) {
      shown.push_back(line);
    }
  }
  REQUIRE(!trigger.empty());
  REQUIRE(shown.size() >= 3);
  const Run r = replay({dat.string(), "-j", "1", "--trigger", trigger});
  INFO(r.err);
  REQUIRE(r.status == 0);
  for (const std::string& l : shown) {
    INFO(l);
    CHECK(r.out.find(l + "\n") != std::string::npos);
  }
}
