#include "tracepipe/core/tracedat/trace_report.h"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "tracedat_test_util.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

using namespace tracepipe;
using namespace tp_tracedat_test;

TEST_CASE("trace_report: lost events, raw clocks and unknown events", "[tracedat][report]") {
  const EventFormat tick{"tp",
                         "tick",
                         7,
                         kernel_common_fields(),
                         {{"unsigned int", "n", 8, 4, false}},
                         "\"n=%u\", REC->n"};
  auto payload = [](uint16_t id, int32_t pid, uint32_t n) {
    std::vector<std::byte> b(12);
    std::memcpy(&b[0], &id, 2);
    std::memcpy(&b[4], &pid, 4);
    std::memcpy(&b[8], &n, 4);
    return b;
  };
  TraceDatWriter w({.cpus = 2, .clock = "counter"});
  w.add_format(tick);
  w.set_cmdline(42, "app");
  w.add_record(0, 1000, payload(7, 42, 1));
  w.add_lost(0, 5);
  w.add_record(0, 2000, payload(7, 43, 2));
  w.add_lost(1, std::nullopt);
  w.add_record(1, 2500, payload(7, 0, 3));
  w.add_record(1, 2600, payload(9, 0, 4));
  const TempPath out("report_lost.dat");
  w.write(out.path);
  const std::string want =
      "cpus=2\n"
      "             app-42    [000]        1000: tick:                 n=1\n"
      "CPU:0 [5 EVENTS DROPPED]\n"
      "           <...>-43    [000]        2000: tick:                 n=2\n"
      "CPU:1 [EVENTS DROPPED]\n"
      "          <idle>-0     [001]        2500: tick:                 n=3\n"
      "          <idle>-0     [001]        2600: [UNKNOWN TYPE 9]\n";
  CHECK(report_text(out.path, {}) == want);
  if (have_trace_cmd()) {
    // trace-cmd agrees, except on the unknown event: it prints
    // "[UNKNOWN EVENT][UNKNOWN EVENT] (NULL): ..." without the type number.
    const auto tc = lines(run("trace-cmd report '" + out.path.string() + "'"));
    const auto ours = lines(want);
    REQUIRE(tc.size() == ours.size());
    for (size_t i = 0; i + 1 < tc.size(); ++i) CHECK(tc[i] == ours[i]);
    CHECK_THAT(tc.back(), Catch::StartsWith("[UNKNOWN EVENT]"));
  }
}

TEST_CASE("trace_report: CommTable mirrors libtraceevent's registration order",
          "[tracedat][report]") {
  CommTable t;
  t.register_comm(10, "saved");
  t.register_comm(10,
                  "taught");  // before the first lookup: both listed, newest first after sorting
  t.register_comm(0, "swapper");
  CHECK(t.find(0) == "<idle>");
  CHECK(t.find(10) == "taught");
  t.register_comm(11, "new");
  t.register_comm(11, "ignored");  // after the first lookup: never overrides
  CHECK(t.find(11) == "new");
  CHECK(t.find(12) == "<...>");
}
