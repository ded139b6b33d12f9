// The kernel's trigger selftests (tools/testing/selftests/ftrace/test.d/
// trigger/*.tc, the non-hist ones) translated to tracepipe's API: the
// events below stand in for the kernel's (sched_process_fork, sched_switch,
// ftrace:print); every assertion of each script is kept, in its order.
//   tracing_on        -> !Instance::paused()
//   events/.../enable -> "0", "1", "0*", "1*" as the kernel's enable file
//   snapshot          -> snapshot_write() / snapshot_file()
//   `! echo X > trigger` (must fail) -> set_trigger(...) is not ok
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "tracepipe/core/export/instance_export.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/snapshot.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {

using Fork = EventDecl<"tpsched", "sched_process_fork", Int<"parent_pid", int32_t>,
                       Int<"child_pid", int32_t>>;
using Switch = EventDecl<"tpsched", "sched_switch", Int<"prev_pid", int32_t>>;
using Print = EventDecl<"tpftrace", "print", Chars<"buf", 32>>;

InstanceOptions small() {
  InstanceOptions o;
  o.buffer_size_kb = 16;
  o.cpus = 1;
  return o;
}

// ( echo "forked" ): one fork event, its child's pid non-zero.
void fork_once(Instance& inst) { Fork::emit(inst, 100, 101); }

// The kernel's events/SYS/EVENT/enable text.
std::string enable_file(const Instance& inst, const EventDesc& e) {
  std::string s = inst.enabled(e) && !inst.soft_disabled(e) ? "1" : "0";
  if (inst.soft_disabled(e) || inst.in_soft_mode(e)) s += "*";
  return s;
}

bool ok(Instance& inst, const EventDesc& e, const char* cmd) {
  return set_trigger(inst, e, cmd).ok();
}

// test_trace FILE X: every line that is not a comment has ">X<", X going up by 2.
void test_trace(const std::string& file, int x) {
  std::istringstream in(file);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    INFO("line: " << line);
    CHECK(line.find(">" + std::to_string(x) + "<") != std::string::npos);
    x += 2;
    ++lines;
  }
  CHECK(lines == 5);
}

}  // namespace

TEST_CASE("kernel selftest trigger-traceonoff.tc", "[triggers][selftest]") {
  Instance inst(small());
  inst.enable(Fork::desc());
  // Test traceoff trigger
  inst.resume();
  REQUIRE(ok(inst, Fork::desc(), "traceoff"));
  fork_once(inst);
  CHECK(inst.paused());
  clear_triggers(inst, Fork::desc());
  // Test traceon trigger
  (void)inst.pause();
  REQUIRE(ok(inst, Fork::desc(), "traceon"));
  fork_once(inst);
  CHECK_FALSE(inst.paused());
  clear_triggers(inst, Fork::desc());
  // Test semantic error for traceoff/on trigger
  CHECK_FALSE(ok(inst, Fork::desc(), "traceoff:badparam"));
  CHECK_FALSE(ok(inst, Fork::desc(), "traceoff+0"));
  CHECK(ok(inst, Fork::desc(), "traceon"));
  CHECK_FALSE(ok(inst, Fork::desc(), "traceon"));
  CHECK_FALSE(ok(inst, Fork::desc(), "traceoff"));
}

TEST_CASE("kernel selftest trigger-eventonoff.tc", "[triggers][selftest]") {
  Instance inst(small());
  inst.enable(Fork::desc());
  // Test enable_event trigger
  inst.enable(Switch::desc(), false);
  REQUIRE(ok(inst, Fork::desc(), "enable_event:tpsched:sched_switch"));
  fork_once(inst);
  CHECK(enable_file(inst, Switch::desc()) == "1*");
  clear_triggers(inst, Fork::desc());
  // Test disable_event trigger
  inst.enable(Switch::desc(), true);
  REQUIRE(ok(inst, Fork::desc(), "disable_event:tpsched:sched_switch"));
  fork_once(inst);
  CHECK(enable_file(inst, Switch::desc()) == "0*");
  clear_triggers(inst, Fork::desc());
  // Test semantic error for event enable/disable trigger
  CHECK_FALSE(ok(inst, Fork::desc(), "enable_event:nogroup:noevent"));
  CHECK_FALSE(ok(inst, Fork::desc(), "disable_event+1"));
  CHECK(ok(inst, Fork::desc(), "enable_event:tpsched:sched_switch"));
  CHECK_FALSE(ok(inst, Fork::desc(), "enable_event:tpsched:sched_switch"));
  CHECK_FALSE(ok(inst, Fork::desc(), "disable_event:tpsched:sched_switch"));
}

TEST_CASE("kernel selftest trigger-filter.tc", "[triggers][selftest]") {
  Instance inst(small());
  inst.enable(Fork::desc());
  // Test trigger filter
  inst.resume();
  REQUIRE(ok(inst, Fork::desc(), "traceoff if child_pid == 0"));
  fork_once(inst);
  CHECK_FALSE(inst.paused());
  clear_triggers(inst, Fork::desc());
  // Test semantic error for trigger filter
  CHECK_FALSE(ok(inst, Fork::desc(), "traceoff if a"));
  CHECK_FALSE(ok(inst, Fork::desc(), "traceoff if common_pid=0"));
  CHECK_FALSE(ok(inst, Fork::desc(), "traceoff if common_pid==b"));
  CHECK(ok(inst, Fork::desc(), "traceoff if common_pid == 0"));
  CHECK(ok(inst, Fork::desc(), "!traceoff"));
  CHECK_FALSE(ok(inst, Fork::desc(), "traceoff if common_pid == child_pid"));
  for (const char* f : {"traceoff if common_pid <= 0", "traceoff if common_pid >= 0",
                        "traceoff if parent_pid >= 0 && child_pid >= 0",
                        "traceoff if parent_pid >= 0 || child_pid >= 0"}) {
    CHECK(ok(inst, Fork::desc(), f));
    CHECK(ok(inst, Fork::desc(), "!traceoff"));
  }
}

TEST_CASE("kernel selftest trigger-snapshot.tc", "[triggers][selftest]") {
  Instance inst(small());
  // Test snapshot trigger
  REQUIRE(snapshot_write(inst, 0).ok());
  inst.enable(Fork::desc());
  fork_once(inst);
  REQUIRE(ok(inst, Fork::desc(), "snapshot:1"));
  fork_once(inst);
  CHECK(snapshot_file(inst).find("sched_process_fork") != std::string::npos);
  clear_triggers(inst, Fork::desc());
  REQUIRE(snapshot_write(inst, 0).ok());
  inst.enable(Fork::desc(), false);
  // Test snapshot semantic errors
  CHECK_FALSE(ok(inst, Fork::desc(), "snapshot+1"));
  CHECK(ok(inst, Fork::desc(), "snapshot"));
  CHECK_FALSE(ok(inst, Fork::desc(), "snapshot"));
}

TEST_CASE("kernel selftest trigger-stacktrace.tc", "[triggers][selftest]") {
  Instance inst(small());
  // Test stacktrace trigger
  REQUIRE(ok(inst, Fork::desc(), "stacktrace"));
  fork_once(inst);
  CHECK(trace_text(inst).find("<stack trace>") != std::string::npos);
  clear_triggers(inst, Fork::desc());
  // Test stacktrace semantic errors
  CHECK_FALSE(ok(inst, Fork::desc(), "stacktrace:foo"));
  CHECK(ok(inst, Fork::desc(), "stacktrace"));
  CHECK_FALSE(ok(inst, Fork::desc(), "stacktrace"));
}

TEST_CASE("kernel selftest trigger-trace-marker-snapshot.tc", "[triggers][selftest]") {
  Instance inst(small());
  inst.enable(Print::desc());
  // Test snapshot trace_marker trigger
  REQUIRE(ok(inst, Print::desc(), "snapshot"));
  // make sure the snapshot is allocated
  CHECK(snapshot_file(inst).find("Snapshot is allocated") != std::string::npos);
  for (int i = 1; i <= 10; ++i) Print::emit(inst, ("hello >" + std::to_string(i) + "<").c_str());
  test_trace(trace_text(inst), 1);
  test_trace(snapshot_file(inst), 2);
}
