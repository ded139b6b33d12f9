// bench/engine/records: the bench emits the kernel's exact schemas.
#include <catch2/catch.hpp>
#include <cstddef>
#include <string>

#include "test_support.h"
#include "tracepipe/bench/engine/records.h"
#include "tracepipe/core/events/event_format.h"

using namespace tracepipe::bench;

namespace {

struct Expect {
  const char* field;
  size_t offset;
  size_t size;
};

void check_layout(EventKind kind, std::initializer_list<Expect> fields) {
  const EventInfo& info = event_info(kind);
  tracepipe::EventFormat f = tracepipe::parse_event_format(info.format, info.system);
  INFO(info.name);
  CHECK(f.name == info.name);
  CHECK(f.id == info.id);
  CHECK(f.fixed_size() == info.size);
  CHECK(f.common_fields == tracepipe::kernel_common_fields());
  REQUIRE(f.fields.size() == fields.size());
  size_t i = 0;
  for (const Expect& e : fields) {
    INFO(e.field);
    CHECK(f.fields[i].name == e.field);
    CHECK(f.fields[i].offset == e.offset);
    CHECK(f.fields[i].size == e.size);
    ++i;
  }
}

}  // namespace

TEST_CASE("bench records: structs match the embedded kernel format files", "[tools][bench]") {
  check_layout(EventKind::sched_switch, {{"prev_comm", offsetof(SchedSwitchRecord, prev_comm), 16},
                                         {"prev_pid", offsetof(SchedSwitchRecord, prev_pid), 4},
                                         {"prev_prio", offsetof(SchedSwitchRecord, prev_prio), 4},
                                         {"prev_state", offsetof(SchedSwitchRecord, prev_state), 8},
                                         {"next_comm", offsetof(SchedSwitchRecord, next_comm), 16},
                                         {"next_pid", offsetof(SchedSwitchRecord, next_pid), 4},
                                         {"next_prio", offsetof(SchedSwitchRecord, next_prio), 4}});
  check_layout(EventKind::sched_wakeup,
               {{"comm", offsetof(SchedWakeupRecord, comm), 16},
                {"pid", offsetof(SchedWakeupRecord, pid), 4},
                {"prio", offsetof(SchedWakeupRecord, prio), 4},
                {"target_cpu", offsetof(SchedWakeupRecord, target_cpu), 4}});
  check_layout(EventKind::sys_enter, {{"id", offsetof(SysEnterRecord, id), 8},
                                      {"args", offsetof(SysEnterRecord, args), 48}});
  check_layout(EventKind::sys_exit,
               {{"id", offsetof(SysExitRecord, id), 8}, {"ret", offsetof(SysExitRecord, ret), 8}});
}

TEST_CASE("bench records: embedded formats are the captured kernel files verbatim",
          "[tools][bench]") {
  for (const EventInfo& e : kEventInfo) {
    auto path = tp_test::shared_data_or_skip("kernel/formats/" + std::string(e.system) + "__" +
                                             std::string(e.name) + ".format");
    INFO(path.string());
    CHECK(tp_test::read_file(path) == e.format);
  }
}

TEST_CASE("bench records: find_event by name and system:name", "[tools][bench]") {
  REQUIRE(find_event("sched_switch") != nullptr);
  CHECK(find_event("sched_switch")->kind == EventKind::sched_switch);
  CHECK(find_event("raw_syscalls:sys_exit")->kind == EventKind::sys_exit);
  CHECK(find_event("sched:sys_exit") == nullptr);
  CHECK(find_event("sched:") == nullptr);
  CHECK(find_event("kmalloc") == nullptr);
}
