// The latency recipe from a TOML config: `synthetic_events` defines the
// synthetic event, [events."synthetic:NAME"] enables and triggers it, and
// the hist triggers with variables and onmatch() come through `trigger`.
#include <catch2/catch.hpp>
#include <thread>

#include "tracepipe/core/config/config.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/synthetic.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {
using Mark = EventDecl<"tpcfglat", "mark", Chars<"buf", 16>>;
}

TEST_CASE("hist config: synthetic_events and the user-space latency recipe from TOML",
          "[triggers][config]") {
  (void)Mark::desc();
  const Config c = parse_config(R"(
buffer_size_kb = 64
synthetic_events = ["tpcfglat_lat u64 lat"]
[events."tpcfglat:mark"]
trigger = ['hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"',
           'hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(tpcfglat.mark).tpcfglat_lat($lat) if buf == "end"']
[events."synthetic:tpcfglat_lat"]
enable = true
trigger = "hist:keys=common_pid"
)",
                                "lat.toml");
  auto inst = Instance::from_config(c.instances.front());
  const EventDesc* lat = synthetic_event(*inst, "tpcfglat_lat");
  REQUIRE(lat != nullptr);
  CHECK(inst->enabled(*lat));
  for (int i = 0; i < 3; ++i) {
    Mark::emit(*inst, "start");
    Mark::emit(*inst, "end");
  }
  CHECK(hist_file(*inst, *lat).find("Hits: 3\n") != std::string::npos);
  // A bad definition names the file, the line and the key.
  try {
    (void)Instance::from_config(
        parse_config("synthetic_events = \"9x u64 a\"\n", "bad.toml").instances.front());
    FAIL("no error");
  } catch (const ConfigError& e) {
    const std::string w = e.what();
    CHECK(w.find("bad.toml") != std::string::npos);
    CHECK(w.find("Illegal name") != std::string::npos);
  }
}
