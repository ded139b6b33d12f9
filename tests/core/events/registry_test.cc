// The event registry (core/events): declared events print a kernel format
// file and keep IDs clear of kernel IDs; kernel format files load with their
// IDs, conflicts are refused, and instances filter on their real fields.
#include <catch2/catch.hpp>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "../instance/test_events.h"
#include "test_support.h"

using namespace tracepipe;
using namespace tp_core_test;

TEST_CASE("events: a declared event prints a kernel format file", "[core][event]") {
  const EventDesc& d = Other::desc();
  CHECK(d.full_name() == "tptest:other");
  CHECK(d.origin() == EventOrigin::declared);
  CHECK(d.format_text() ==
        "name: other\n"
        "ID: " +
            std::to_string(d.id()) +
            "\n"
            "format:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
            "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
            "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
            "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
            "\n"
            "\tfield:s16 level;\toffset:8;\tsize:2;\tsigned:1;\n"
            "\tfield:__data_loc char[] msg;\toffset:12;\tsize:4;\tsigned:0;\n"
            "\n"
            "print fmt: \"level=%d msg=%s\", REC->level, __get_str(msg)\n");
  // Re-registering the same declaration is idempotent; the format parses back.
  CHECK(&Registry::global().add_declared(Other::make_format()) == &d);
  CHECK(parse_event_format(d.format_text(), "tptest") == d.format());
  // Record layout of the dynamic string: (len << 16) | offset, NUL included.
  std::vector<std::byte> rec(Other::record_size(-2, "hey"));
  CHECK(rec.size() == 16 + 4);
  Other::write_fields(rec.data(), -2, "hey");
  uint32_t loc;
  std::memcpy(&loc, rec.data() + 12, 4);
  CHECK((loc & 0xffff) == 16);
  CHECK((loc >> 16) == 4);
  CHECK(std::memcmp(rec.data() + 16, "hey", 4) == 0);
  int16_t level;
  std::memcpy(&level, rec.data() + 8, 2);
  CHECK(level == -2);
}

TEST_CASE(
    "events: declared IDs stay in 16384..32767, clear of kernel IDs taken in the same registry",
    "[core][event]") {
  // Every reader keeps the ID: KernelShark in an int16_t, so 32767 at most.
  CHECK(Other::desc().id() >= 16384);
  CHECK(Other::desc().id() <= 32767);
  Registry reg;
  EventFormat k = Other::make_format();
  k.system = "kern";
  k.id = 16385;  // a kernel format holding an ID of the declared range
  reg.add(k);
  auto declared = [&](int i) {
    EventFormat f = Other::make_format();
    f.name = "e" + std::to_string(i);
    f.id = 0;
    return reg.add_declared(std::move(f)).id();
  };
  CHECK(declared(0) == 16384);
  CHECK(declared(1) == 16386);  // 16385 is taken
  uint16_t last = 0;
  for (int i = 2; i < 16383; ++i) last = declared(i);
  CHECK(last == 32767);
  CHECK(reg.size() == Registry::kMaxEvents);
  try {
    declared(99999);
    FAIL("an ID past 32767 was handed out");
  } catch (const RegistryError& e) {
    CHECK(std::string(e.what()).find("no free event ID left in 16384..32767") != std::string::npos);
  }
}

TEST_CASE("events: kernel format files load with their IDs, conflicts are refused",
          "[core][event]") {
  const auto dir = tp_test::shared_data_or_skip("kernel/formats");
  Registry reg;
  const auto events = reg.add_format_dir(dir).events;
  CHECK(events.size() == 19);
  const EventDesc* sw = reg.find("sched:sched_switch");
  REQUIRE(sw != nullptr);
  CHECK(sw->id() == 372);
  CHECK(reg.by_id(372) == sw);
  CHECK(sw->origin() == EventOrigin::kernel_format);
  CHECK(sw->fixed_size() == 64);
  CHECK(reg.find("sched_switch") == sw);  // a bare name, unique
  CHECK(reg.match("sched:*").size() == 5);
  CHECK(reg.match("sched").size() == 5);  // a bare word matches a system
  CHECK(reg.match("irq_handler_entry").size() == 1);
  CHECK(reg.match("*:*").size() == 19);
  CHECK(reg.match("sched:sched_wak*").size() == 2);
  // Loading again is idempotent; a different format under the same name fails.
  CHECK(reg.add_format_dir(dir).events.size() == 19);
  EventFormat changed = sw->format();
  changed.fields.pop_back();
  CHECK_THROWS_AS(reg.add(changed), RegistryError);
  EventFormat same_id = sw->format();
  same_id.name = "renamed";
  CHECK_THROWS_AS(reg.add(same_id), RegistryError);
  // An instance on the global registry ignores this registry's events (same
  // dense index, different descriptor) instead of recording them wrongly.
  {
    Instance global_inst(small_options(Staging::per_thread));
    const EventDesc* same_index = Registry::global().by_index(sw->index());
    if (same_index != nullptr) {
      global_inst.enable(*same_index);
      CHECK(global_inst.emit_fill(*sw, 64, [](std::span<std::byte>) {}) == EmitResult::disabled);
    }
    CHECK_THROWS_AS(global_inst.enable(*sw), std::invalid_argument);
  }
  // Instances on this registry filter kernel events by their real fields.
  Instance inst(small_options(Staging::per_thread), reg);
  inst.enable(*sw);
  CHECK(inst.set_filter(*sw, "prev_pid == 1 && next_comm ~ \"kworker*\"").ok());
  CHECK(inst.set_filter(*sw, "nosuch == 1").error().code == filters::FilterErr::field_not_found);
}
