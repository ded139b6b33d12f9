// -F parsing and the filter plan: which events replay feeds, with which
// filter, and the errors (the kernel's error_log text and caret).
#include "tracepipe/core/replay/filter_plan.h"

#include <catch2/catch.hpp>

#include "replay_test_util.h"
#include "tracepipe/core/config/config.h"
#include "tracepipe/core/events/registry.h"

using namespace tracepipe;
using namespace tracepipe::replay;

namespace {

struct Fixture {
  Registry reg;
  const EventDesc* sw;
  const EventDesc* wk;
  const EventDesc* km;
  Fixture()
      : sw(&reg.add_format_text(replay_test::kSchedSwitch, "sched")),
        wk(&reg.add_format_text(replay_test::kSchedWaking, "sched")),
        km(&reg.add_format_text(replay_test::kKmalloc, "kmem")) {}

  std::vector<EventPlan> plan(std::vector<std::string> args, bool only = false,
                              const InstanceConfig* cfg = nullptr) {
    PlanInput in;
    for (const auto& a : args) in.filters.push_back(parse_filter_arg(a));
    in.only_filtered = only;
    in.config = cfg;
    in.compile.nr_cpu_ids = 2;
    return make_plan(reg, in);
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ReplayError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("replay -F: the forms trace-cmd and the kernel use", "[replay][plan]") {
  struct Row {
    std::string arg, events, expr;
  };
  const std::vector<Row> rows = {
      {"sched:sched_switch: prev_pid == 0", "sched:sched_switch", "prev_pid == 0"},
      {"sched/sched_switch: prev_pid == 0", "sched/sched_switch", "prev_pid == 0"},
      {"sched_switch: prev_pid == 0", "sched_switch", "prev_pid == 0"},
      {"sched_switch:prev_pid==0", "sched_switch", "prev_pid==0"},
      {"sched:sched_switch:prev_pid==0", "sched:sched_switch", "prev_pid==0"},
      {"sched: prev_pid == 0", "sched", "prev_pid == 0"},
      {"sched_switch,sched_waking: common_pid > 1", "sched_switch,sched_waking", "common_pid > 1"},
      {"sched:sched_switch,kmem:kmalloc: common_pid > 1", "sched:sched_switch,kmem:kmalloc",
       "common_pid > 1"},
      {"kmalloc: call_site.function == foo", "kmalloc", "call_site.function == foo"},
      {"sched_switch: prev_comm == \"a:b\"", "sched_switch", "prev_comm == \"a:b\""},
      {"  kmalloc :   bytes_req > 100  ", "kmalloc", "bytes_req > 100  "},
      {"sched_switch:", "sched_switch", ""},
  };
  for (const Row& r : rows) {
    INFO(r.arg);
    const FilterArg f = parse_filter_arg(r.arg);
    CHECK(f.events == r.events);
    CHECK(f.expr == r.expr);
  }
  CHECK_THROWS_AS(parse_filter_arg("prev_pid == 0"), ReplayError);
  CHECK_THROWS_AS(parse_filter_arg(": prev_pid == 0"), ReplayError);
  CHECK_THROWS_AS(parse_filter_arg(""), ReplayError);
}

TEST_CASE("replay plan: kernel instance semantics, unfiltered events are kept", "[replay][plan]") {
  Fixture f;
  const auto p = f.plan({"sched_switch: prev_pid == 0"});
  REQUIRE(p.size() == 3);
  CHECK(p[f.sw->index()].replayed);
  CHECK(p[f.sw->index()].filter == "prev_pid == 0");
  REQUIRE(p[f.sw->index()].program);
  CHECK(p[f.sw->index()].program->predicate_count() == 1);
  CHECK(p[f.wk->index()].replayed);
  CHECK(p[f.wk->index()].filter.empty());
  CHECK(p[f.km->index()].replayed);
  CHECK_FALSE(p[f.km->index()].program);
}

TEST_CASE("replay plan: --only-filtered drops events without a filter (trace-cmd report -F)",
          "[replay][plan]") {
  Fixture f;
  const auto p = f.plan({"sched_switch: prev_pid == 0"}, /*only=*/true);
  CHECK(p[f.sw->index()].replayed);
  CHECK_FALSE(p[f.wk->index()].replayed);
  CHECK_FALSE(p[f.km->index()].replayed);
}

TEST_CASE("replay plan: a system filter leaves events without the fields unfiltered",
          "[replay][plan]") {
  Fixture f;
  const auto p = f.plan({"sched: prev_pid == 0"});
  CHECK(p[f.sw->index()].filter == "prev_pid == 0");
  CHECK(p[f.wk->index()].filter.empty());
  CHECK(p[f.wk->index()].note.find("Field not found") != std::string::npos);
  CHECK(p[f.km->index()].filter.empty());
  CHECK(p[f.km->index()].note.empty());  // not in the system
  // With --only-filtered the unfiltered one is dropped, as libtraceevent does.
  const auto q = f.plan({"sched: prev_pid == 0"}, true);
  CHECK(q[f.sw->index()].replayed);
  CHECK_FALSE(q[f.wk->index()].replayed);
  // A field every sched event has: both take it.
  const auto r = f.plan({"sched: common_pid != 0"});
  CHECK(r[f.sw->index()].filter == "common_pid != 0");
  CHECK(r[f.wk->index()].filter == "common_pid != 0");
}

TEST_CASE("replay plan: lists, globs, later settings win, \"0\" clears", "[replay][plan]") {
  Fixture f;
  auto p = f.plan({"sched_*: common_pid > 5"});
  CHECK(p[f.sw->index()].filter == "common_pid > 5");
  CHECK(p[f.wk->index()].filter == "common_pid > 5");
  p = f.plan({"sched_switch,kmem:kmalloc: common_pid > 5", "kmalloc: bytes_req > 100"});
  CHECK(p[f.sw->index()].filter == "common_pid > 5");
  CHECK(p[f.km->index()].filter == "bytes_req > 100");
  CHECK(p[f.wk->index()].filter.empty());
  p = f.plan({"sched_switch: prev_pid == 0", "sched_switch: 0"});
  CHECK(p[f.sw->index()].filter.empty());
  CHECK_FALSE(p[f.sw->index()].program);
}

TEST_CASE(
    "replay plan: a blank filter is the kernel's Error, kernel forms of 0 clear, the text is the "
    "kernel's",
    "[replay][plan]") {
  Fixture f;
  // Asked of the kernel: a blank write is EINVAL "Error" at 0, not a clear.
  for (const char* arg : {"sched_switch:", "sched_switch:   ", "sched: "}) {
    INFO(arg);
    const std::string e = error_of([&] { f.plan({arg}); });
    CHECK(e.find("event filter parse error: error: Error\n") != std::string::npos);
  }
  // "0\v", "\f0", "0\0junk" clear, as in the kernel (kernel whitespace, cut at NUL).
  for (const std::string& z : {std::string("0\v"), std::string("\f0"), std::string("0\0junk", 6)}) {
    auto p = f.plan({"sched_switch: prev_pid == 0", "sched_switch: " + z});
    CHECK(p[f.sw->index()].filter.empty());
    CHECK_FALSE(p[f.sw->index()].program);
  }
  // The text kept is what the kernel's filter file shows: cut at a NUL,
  // trailing whitespace (\v too) removed.
  auto p = f.plan({std::string("sched_switch: prev_pid == 0\0 garbage", 37)});
  CHECK(p[f.sw->index()].filter == "prev_pid == 0");
  p = f.plan({"sched_switch: prev_pid == 0 \v"});
  CHECK(p[f.sw->index()].filter == "prev_pid == 0");
}

TEST_CASE("replay plan: a rejected filter is an error with the kernel's message and caret",
          "[replay][plan]") {
  Fixture f;
  // filter-oracle/invalid.tsv: the kernel logs "Expecting numeric field", caret at column 13.
  const std::string e = error_of([&] { f.plan({"sched_switch: prev_pid == \"abc\""}); });
  INFO(e);
  CHECK(e.rfind("-F 'sched_switch: prev_pid == \"abc\"': filter rejected for sched:sched_switch\n",
                0) == 0);
  CHECK(e.find("event filter parse error: error: Expecting numeric field\n") != std::string::npos);
  CHECK(e.find("\n  Command: prev_pid == \"abc\"\n") != std::string::npos);
  // The caret line: 11 spaces of "  Command: " then the column.
  const size_t caret = e.rfind('^');
  const size_t line = e.rfind('\n', caret);
  REQUIRE(caret != std::string::npos);
  CHECK(caret - line - 1 - 11 == 13);

  const std::string nf = error_of([&] { f.plan({"kmalloc: nosuch > 1"}); });
  CHECK(nf.find("error: Field not found") != std::string::npos);
  const std::string ev = error_of([&] { f.plan({"nosuch_event: x == 1"}); });
  CHECK(ev == "-F 'nosuch_event: x == 1': no event or system 'nosuch_event' in the trace file");
  const std::string sys = error_of([&] { f.plan({"sched: nosuch == 1"}); });
  CHECK(sys.find("no event of system 'sched' accepts the filter") != std::string::npos);
  CHECK(sys.find("Field not found") != std::string::npos);
}

TEST_CASE("replay plan: config systems, then events, then -F, enable and soft_disable",
          "[replay][plan]") {
  Fixture f;
  const Config cfg = parse_config(R"(
[systems.sched]
filter = "common_pid != 0"
[events."sched:sched_waking"]
filter = "target_cpu == 1"
[events."kmem:kmalloc"]
soft_disable = true
)",
                                  "filters.toml");
  auto p = f.plan({}, false, &cfg.instances[0]);
  CHECK(p[f.sw->index()].filter == "common_pid != 0");
  CHECK(p[f.wk->index()].filter == "target_cpu == 1");
  CHECK(p[f.wk->index()].origin.rfind("filters.toml:5:", 0) == 0);
  CHECK(p[f.km->index()].soft_disabled);
  CHECK(p[f.km->index()].replayed);
  p = f.plan({"sched_switch: prev_pid == 0"}, false, &cfg.instances[0]);
  CHECK(p[f.sw->index()].filter == "prev_pid == 0");

  const Config off = parse_config("[events.\"sched:sched_switch\"]\nenable = false\n", "off.toml");
  p = f.plan({}, false, &off.instances[0]);
  CHECK_FALSE(p[f.sw->index()].replayed);
  CHECK(p[f.wk->index()].replayed);

  const Config bad =
      parse_config("[events.\"kmem:kmalloc\"]\nfilter = \"bytes_req >\"\n", "bad.toml");
  const std::string e = error_of([&] { f.plan({}, false, &bad.instances[0]); });
  CHECK(e.rfind("bad.toml:2: ", 0) == 0);
  CHECK(e.find("filter rejected for kmem:kmalloc") != std::string::npos);
}
