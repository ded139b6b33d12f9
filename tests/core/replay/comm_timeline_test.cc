// CommTimeline on small synthetic traces: which name a pid has at each
// record (state, rename and exec observations, their order, the first
// observation's "before", pids never named), and exec's base name when the
// trace has no task_rename record. The real captures are replay_comm_test.cc.
#include "tracepipe/core/replay/comm_timeline.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "replay_test_util.h"
#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

using namespace tracepipe;
using namespace tracepipe::replay;

namespace {

constexpr std::string_view kCommon =
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

EventFormat format(std::string_view system, std::string name, int id, std::string fields,
                   std::string fmt) {
  const std::string text = "name: " + name + "\nID: " + std::to_string(id) + "\nformat:\n" +
                           std::string(kCommon) + fields + "\nprint fmt: " + fmt + "\n";
  return parse_event_format(text, system);
}

const EventFormat& rename_format() {
  static const EventFormat f =
      format("task", "task_rename", 204,
             "\tfield:pid_t pid;\toffset:8;\tsize:4;\tsigned:1;\n"
             "\tfield:char oldcomm[16];\toffset:12;\tsize:16;\tsigned:0;\n"
             "\tfield:char newcomm[16];\toffset:28;\tsize:16;\tsigned:0;\n",
             "\"pid=%d\", REC->pid");
  return f;
}
const EventFormat& exec_format() {
  static const EventFormat f =
      format("sched", "sched_process_exec", 365,
             "\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n"
             "\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n"
             "\tfield:pid_t old_pid;\toffset:16;\tsize:4;\tsigned:1;\n",
             "\"pid=%d\", REC->pid");
  return f;
}
const EventFormat& mark_format() {
  static const EventFormat f = format("tp", "mark", 900, "", "\"mark\"");
  return f;
}

std::vector<std::byte> header(uint16_t id, int32_t pid, size_t size) {
  std::vector<std::byte> r(size);
  std::memcpy(r.data(), &id, 2);
  std::memcpy(r.data() + 4, &pid, 4);
  return r;
}
void put_str(std::vector<std::byte>& r, size_t off, std::string_view s) {
  std::memcpy(r.data() + off, s.data(), s.size());
}

std::vector<std::byte> mark(int32_t pid) { return header(900, pid, 8); }
std::vector<std::byte> rename(int32_t pid, std::string_view from, std::string_view to,
                              int32_t current) {
  auto r = header(204, current, 44);
  std::memcpy(r.data() + 8, &pid, 4);
  put_str(r, 12, from);
  put_str(r, 28, to);
  return r;
}
std::vector<std::byte> switch_out(int32_t pid, std::string_view comm) {
  auto r = header(372, pid, 64);
  put_str(r, 8, comm);
  std::memcpy(r.data() + 24, &pid, 4);
  put_str(r, 40, "swapper/0");  // next: the idle task (pid 0, never named)
  return r;
}
std::vector<std::byte> exec(int32_t pid, std::string_view file) {
  auto r = header(365, pid, 20);
  const uint32_t word = static_cast<uint32_t>((file.size() + 1) << 16 | 20);
  std::memcpy(r.data() + 8, &word, 4);
  std::memcpy(r.data() + 12, &pid, 4);
  std::memcpy(r.data() + 16, &pid, 4);
  for (char c : file) r.push_back(static_cast<std::byte>(c));
  r.push_back(std::byte{0});
  while (r.size() % 4) r.push_back(std::byte{0});
  return r;
}

struct Built {
  replay_test::TempPath path{"comm_timeline"};
  std::optional<TraceDatReader> reader;
  std::optional<CommTimeline> timeline;
};

// Writes the records (cpu, ts, payload) and builds the timeline from the file.
void build(Built& b,
           const std::vector<std::tuple<uint32_t, uint64_t, std::vector<std::byte>>>& recs) {
  TraceDatWriter w({.cpus = 2, .page_size = 4096, .clock = "local"});
  w.add_format(parse_event_format(replay_test::kSchedSwitch, "sched"));
  w.add_format(rename_format());
  w.add_format(exec_format());
  w.add_format(mark_format());
  for (const auto& [cpu, ts, p] : recs) w.add_record(cpu, ts, p);
  w.write(b.path.path);
  b.reader.emplace(TraceDatReader::open(b.path.path));
  b.timeline.emplace(*b.reader);
}

std::string at(const Built& b, int32_t pid, uint64_t ts, uint32_t cpu, uint64_t seq) {
  const auto n = b.timeline->name_at(pid, {ts, cpu, seq});
  return n ? std::string(*n) : std::string("<none>");
}

}  // namespace

TEST_CASE("comm timeline: a rename takes effect after its own record, a state at it",
          "[replay][comm]") {
  Built b;
  // cpu 0: seq 0 switch-out of 100 ("alpha"), 1 mark, 2 rename alpha -> beta,
  // 3 mark; cpu 1: seq 0 mark of 100, seq 1 rename of 200 (its first record).
  build(b, {{0, 10, switch_out(100, "alpha")},
            {0, 20, mark(100)},
            {0, 30, rename(100, "alpha", "beta", 100)},
            {0, 30, mark(100)},
            {1, 40, mark(100)},
            {1, 50, rename(200, "x-old", "x-new", 100)}});
  CHECK(at(b, 100, 5, 0, 0) == "alpha");  // before its first observation: that state's name
  CHECK(at(b, 100, 20, 0, 1) == "alpha");
  CHECK(at(b, 100, 30, 0, 2) == "alpha");  // the task_rename record itself: still the old name
  CHECK(at(b, 100, 30, 0, 3) == "beta");
  CHECK(at(b, 100, 40, 1, 0) == "beta");
  CHECK(at(b, 200, 45, 1, 0) == "x-old");  // first observation a rename: oldcomm before it
  CHECK(at(b, 200, 50, 1, 1) == "x-old");
  CHECK(at(b, 200, 51, 0, 9) == "x-new");
  CHECK(at(b, 300, 20, 0, 1) == "<none>");  // never named: the caller uses saved_cmdlines
  CHECK(at(b, 0, 10, 0, 0) == "<none>");    // the idle tasks are not tracked
  CHECK(b.timeline->stats().renames == 2);
  CHECK_FALSE(b.timeline->stats().execs_used);
  CHECK(b.timeline->stats().pids == 2);
}

TEST_CASE("comm timeline: without task_rename records, exec names the task by the file's base name",
          "[replay][comm]") {
  Built b;
  build(b, {{0, 10, mark(400)},
            {0, 20, exec(400, "/usr/lib/tools/a-very-long-program-name")},
            {0, 30, mark(400)},
            {1, 40, switch_out(400, "a-very-long-pro")},
            {1, 50, exec(400, "/bin/sh")}});
  CHECK(b.timeline->stats().execs_used);
  CHECK(at(b, 400, 10, 0, 0) == "<none>");  // nothing says what it was before the exec
  CHECK(at(b, 400, 20, 0, 1) ==
        "a-very-long-pro");  // the exec record itself: the new name, 15 bytes
  CHECK(at(b, 400, 30, 0, 2) == "a-very-long-pro");
  CHECK(at(b, 400, 50, 1, 1) == "sh");
}

TEST_CASE("comm timeline: with task_rename records, exec records are not used", "[replay][comm]") {
  Built b;
  // fexecve: the exec's own task_rename gives the file's name, the exec
  // record only /dev/fd/3.
  build(b, {{0, 10, switch_out(500, "before")},
            {0, 20, rename(500, "before", "real-name", 500)},
            {0, 30, exec(500, "/dev/fd/3")},
            {0, 40, mark(500)}});
  CHECK_FALSE(b.timeline->stats().execs_used);
  CHECK(b.timeline->stats().execs == 1);
  CHECK(at(b, 500, 30, 0, 2) == "real-name");
  CHECK(at(b, 500, 40, 0, 3) == "real-name");
}
