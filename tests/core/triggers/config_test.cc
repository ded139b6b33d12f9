// Triggers from a TOML config: `trigger` takes one command or a list in an
// [events.*] table, Instance::from_config applies them (through the hook the
// triggers library installs), and a rejected command is a ConfigError naming
// the file, line and key with the kernel's error.
#include "tracepipe/core/config/config.h"

#include <catch2/catch.hpp>

#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {
using Cfg = EventDecl<"tpcfgtrig", "req", Int<"id", uint32_t>, Int<"lat", uint32_t>>;
}

TEST_CASE("triggers config: trigger keys are applied and read back", "[triggers][config]") {
  (void)Cfg::desc();
  const Config c = parse_config(R"(
buffer_size_kb = 64
[events."tpcfgtrig:req"]
enable = true
filter = "lat > 100"
trigger = ["hist:keys=id:vals=lat", "traceoff:2 if lat > 1000"]
)",
                                "app.toml");
  auto inst = Instance::from_config(c.instances.front());
  CHECK(trigger_file(*inst, Cfg::desc()) ==
        "traceoff:count=2 if lat > 1000\nhist:keys=id:vals=hitcount,lat:sort=hitcount:size=2048 "
        "[active]\n");
  Cfg::emit(*inst, 1, 5);
  Cfg::emit(*inst, 1, 7);
  CHECK(hist_file(*inst, Cfg::desc())
            .find("{ id:          1 } hitcount:          2  lat:         12\n") !=
        std::string::npos);
}

TEST_CASE("triggers config: a rejected trigger names the file, line and key",
          "[triggers][config]") {
  (void)Cfg::desc();
  const Config c = parse_config(
      "[events.\"tpcfgtrig:req\"]\nenable = true\ntrigger = \"traceoff if nope == 1\"\n",
      "bad.toml");
  try {
    (void)Instance::from_config(c.instances.front());
    FAIL("no error");
  } catch (const ConfigError& e) {
    const std::string w = e.what();
    CHECK(w.find("bad.toml") != std::string::npos);
    CHECK(w.find(":3") != std::string::npos);
    CHECK(w.find("Field not found") != std::string::npos);
  }
  // Not allowed in [systems.*], as soft_disable.
  CHECK_THROWS_AS(parse_config("[systems.tpcfgtrig]\ntrigger = \"traceoff\"\n"), ConfigError);
}
