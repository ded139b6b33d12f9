// Compatibility with the real trace-cmd (installed by scripts/setup.sh):
// files tracepipe writes must read back in `trace-cmd report` with the right
// fields and time stamps; `tracepipe report` must print what trace-cmd
// prints; the reader must accept what `trace-cmd convert` writes. Kept out
// of the sanitizer runs (no "parser" label): the work here is trace-cmd's.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "sample_events.h"
#include "tracedat_test_util.h"
#include "tracepipe/core/tracedat/trace_report.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

using namespace tracepipe;
using namespace tp_tracedat_test;

namespace {

void compare_with_trace_cmd(const std::filesystem::path& p) {
  const struct {
    const char* flag;
    ReportOptions opt;
  } modes[] = {{"", {true, false}}, {"-N", {false, false}}, {"-t", {true, true}}};
  for (const auto& m : modes) {
    INFO(p.string() << " " << m.flag);
    const auto want = lines(run(fmt::format("trace-cmd report {} '{}'", m.flag, p.string())));
    const auto got = lines(report_text(p, m.opt));
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("line " << i + 1);
      REQUIRE(got[i] == want[i]);
    }
  }
}

}  // namespace

TEST_CASE("tracedat_reader: version 7 (uncompressed) gives the same records as version 6",
          "[tracedat][reader]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  const auto out = std::filesystem::temp_directory_path() / "tp_reader_v7.dat";
  const std::string cmd = "trace-cmd convert -i '" + path.string() +
                          "' --file-version 7 --compression none -o '" + out.string() +
                          "' >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto v6 = TraceDatReader::open(path);
  const auto v7 = TraceDatReader::open(out);
  CHECK(v7.version() == 7);
  CHECK(v7.compression() == "none");
  CHECK(v7.clock_name() == "local");
  CHECK(v7.formats() == v6.formats());
  CHECK(v7.cmdlines() == v6.cmdlines());
  CHECK(v7.printk_text() == v6.printk_text());
  CHECK(v7.cpu_count() == 2);
  CHECK(same_records(v6, v7) == 257346);
  std::filesystem::remove(out);
}

TEST_CASE("tracedat_writer: trace-cmd report prints every event with its fields and time stamp",
          "[tracedat][writer][trace-cmd]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  TraceDatWriter w({.cpus = 3});
  w.add_format(sample_format());
  w.add_format(tick_format());
  for (int32_t pid = 100; pid < 104; ++pid) w.set_cmdline(pid, fmt::format("worker{}", pid));
  auto in = make_records(w, 3000);
  const TempPath out("writer_report.dat");
  w.write(out.path);
  const auto got = lines(run("trace-cmd report -t '" + out.path.string() + "'"));
  REQUIRE(got.size() == in.size() + 1);
  CHECK(got[0] == "cpus=3");
  // trace-cmd merges CPUs by time stamp; ours never tie across CPUs? They
  // may: sort our records the way trace-cmd does (ts, then cpu).
  std::stable_sort(in.begin(), in.end(), [](const Written& a, const Written& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.cpu < b.cpu;
  });
  for (size_t i = 0; i < in.size(); ++i) {
    const auto& r = in[i];
    int32_t pid;
    std::memcpy(&pid, &r.payload[4], 4);
    std::string fields;
    if (r.is_tick) {
      uint32_t n;
      std::memcpy(&n, &r.payload[8], 4);
      fields = fmt::format("tick: {:>{}}n={}", "", 22 - 6, n);
    } else {
      fields =
          fmt::format("sample: {:>{}}value={} tag={} name={} delta={} small={} flag={}", "", 22 - 8,
                      r.s.value, r.s.tag.substr(0, 8), r.s.name, r.s.delta, r.s.small, r.s.flag);
    }
    const std::string want =
        fmt::format("{:>16}-{:<5} [{:03}] {:>5}.{:09}: {}", fmt::format("worker{}", pid), pid,
                    r.cpu, r.ts / 1000000000, r.ts % 1000000000, fields);
    INFO("line " << i + 1);
    REQUIRE(got[i + 1] == want);
  }
}

TEST_CASE("tracedat_writer: a rewritten subset of hackbench.dat reads the same in trace-cmd",
          "[tracedat][writer][trace-cmd]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  const auto r = TraceDatReader::open(path);
  const std::set<std::string> keep = {"sched_switch",  "sched_wakeup",      "sched_waking",
                                      "kmalloc",       "signal_generate",   "sys_enter",
                                      "hrtimer_start", "sched_process_exec"};
  TraceDatWriter w({.cpus = r.cpu_count()});
  for (const auto& f : r.formats()) w.add_format(f);
  for (const auto& [pid, comm] : r.cmdlines()) w.set_cmdline(pid, comm);
  w.set_printk(std::string(r.printk_text()));
  size_t kept = 0;
  for (size_t i = 0; i < r.cpu_data().size(); ++i) {
    auto c = r.cpu_records(i);
    while (auto rec = c.next()) {
      if (!keep.count(r.format(*rec->event_id())->name)) continue;
      w.add_record(rec->cpu, rec->ts, rec->payload);
      ++kept;
    }
  }
  const TempPath out("writer_hackbench_subset.dat");
  w.write(out.path);
  const auto orig = lines(run("trace-cmd report '" + path.string() + "'"));
  const auto mine = lines(run("trace-cmd report '" + out.path.string() + "'"));
  std::vector<std::string> want;
  for (size_t i = 1; i < orig.size(); ++i) {
    const auto colon = orig[i].find(": ", orig[i].find("] "));
    const auto end = orig[i].find(':', colon + 2);
    const std::string ev = orig[i].substr(colon + 2, end - colon - 2);
    const auto b = ev.find_first_not_of(' ');
    if (keep.count(ev.substr(b))) want.push_back(orig[i]);
  }
  CHECK(want.size() == kept);
  REQUIRE(mine.size() == want.size() + 1);
  CHECK(mine[0] == orig[0]);
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("line " << i + 2);
    REQUIRE(mine[i + 1] == want[i]);
  }
}

TEST_CASE("trace_report: hackbench.dat prints exactly like trace-cmd report (default, -N, -t)",
          "[tracedat][report][trace-cmd]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  compare_with_trace_cmd(path);
}

TEST_CASE("trace_report: the filter oracle's captures print exactly like trace-cmd report",
          "[tracedat][report][trace-cmd]") {
  const auto dir = tp_test::shared_data_or_skip("kernel/filter-oracle");
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  // 016 starts with an idle sched_switch: trace-cmd's comm-table quirk.
  // 003 and 047 carry block_rq_issue, task_newtask, rcu_utilization, ipi events.
  int n = 0;
  for (const char* id : {"001", "003", "016", "030", "047", "054", "069"}) {
    const auto p = dir / id / "all.dat";
    if (!std::filesystem::exists(p)) continue;
    compare_with_trace_cmd(p);
    ++n;
  }
  CHECK(n >= 5);
}
