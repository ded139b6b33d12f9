// An application's debug build: inline functions that emit, in two
// translation units, both compiled at -O0 (tests/core/instance/CMakeLists.txt), so
// each unit has its own COMDAT copy and the linker discards one. That this
// executable links at all is half the test (the rseq sections of a
// discarded copy used to point into it); the other half is that both
// units' emits record, through the rseq claim of a per-CPU staging slot
// and the rseq reserve of a cpu_local ring.
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "link_comdat_emit.h"
#include "test_support.h"
#include "tracepipe/buffers/readers.h"

using namespace tracepipe;
using namespace tp_link_test;

TEST_CASE("link: emits inlined at -O0 in two translation units link and record", "[core][link]") {
  InstanceOptions o;
  o.staging = Staging::per_cpu;
  o.buffer_size_kb = 64;
  Instance inst(o);
  inst.enable(Ev::desc());
  REQUIRE(
      inst.set_filter(Ev::desc(), "n != 1000000").ok());  // filtered: the staging slot's claim runs
  constexpr uint32_t kEach = 200;
  for (uint32_t i = 0; i < kEach; ++i) REQUIRE(emit_ev(inst, 1, i) == EmitResult::kept);
  emit_from_other_tu(inst, kEach);
  const EventStats s = inst.event_stats(Ev::desc());
  CHECK(s.kept == 2 * kEach);
  CHECK(s.lost == 0);
  CHECK(s.staged + s.direct == 2 * kEach);
  CHECK(s.staged >= kEach);  // the declared emits stage (raw ones too, unless a slot was busy)
  // Every record is there, from both units, raw ones with the hand-built fields.
  uint32_t from[3] = {0, 0, 0};
  for (uint32_t c = 0; c < inst.cpus(); ++c) {
    buffers::ConsumingReader r(inst.ring(), c);
    while (auto rec = r.next()) {
      uint32_t tu = 0;
      std::memcpy(&tu, rec->payload.data() + 8, 4);
      REQUIRE(tu < 3);
      ++from[tu];
    }
  }
  CHECK(from[1] == kEach);
  CHECK(from[2] == kEach);
}
