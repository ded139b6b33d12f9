// Synthetic events recorded like any other: enabled on an instance, the
// events an onmatch() generates land in the ring, a trace.dat of the
// instance carries their format, and `trace-cmd report` prints them with
// the kernel's print fmt (numbers and a static and a dynamic string).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "test_support.h"
#include "tracepipe/core/export/instance_export.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/synthetic.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {
using Begin = EventDecl<"tpsyndat", "begin", Int<"id", uint32_t>>;
using Done =
    EventDecl<"tpsyndat", "done", Int<"id", uint32_t>, Int<"status", int32_t>, Chars<"who", 16>>;
}  // namespace

TEST_CASE("synthetic events: recorded, written to trace.dat, printed by trace-cmd report",
          "[triggers][synthetic]") {
  InstanceOptions o;
  o.buffer_size_kb = 64;
  Instance inst(o);
  REQUIRE(set_synthetic_event(inst,
                              "tpsyndat_lat u64 lat; u32 id; int status; char who[16]; char whod[]")
              .ok());
  const EventDesc* lat = synthetic_event(inst, "tpsyndat_lat");
  REQUIRE(lat != nullptr);
  inst.enable(*lat);
  REQUIRE(set_trigger(inst, Begin::desc(), "hist:keys=id:t0=common_timestamp").ok());
  REQUIRE(set_trigger(inst, Done::desc(),
                      "hist:keys=id:d=common_timestamp-$t0:onmatch(tpsyndat.begin).trace(tpsyndat_"
                      "lat,$d,id,status,who,"
                      "who)")
              .ok());
  for (uint32_t i = 0; i < 5; ++i) {
    Begin::emit(inst, i);
    Done::emit(inst, i, -static_cast<int32_t>(i), "worker");
  }
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("tp-syndat-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const auto dat = dir / "syn.dat";
  write_trace_dat(inst, dat);
  const tp_test::CommandResult rep =
      tp_test::run_command({"trace-cmd", "report", "-i", dat.string()}, dir);
  std::filesystem::remove_all(dir);
  if (rep.status != 0 && rep.err.find("No such file") != std::string::npos)
    tp_test::skip("trace-cmd is missing");
  REQUIRE(rep.status == 0);
  INFO(rep.out);
  size_t n = 0;
  for (size_t at = 0; (at = rep.out.find("tpsyndat_lat:", at)) != std::string::npos; ++at) ++n;
  CHECK(n == 5);
  // "lat=%llu, id=%u, status=%d, who=%s, whod=%s"
  CHECK(rep.out.find(", id=3, status=-3, who=worker, whod=worker") != std::string::npos);
  CHECK(rep.out.find("lat=") != std::string::npos);
}
