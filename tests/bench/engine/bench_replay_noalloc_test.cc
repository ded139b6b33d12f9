// The replayed mix's timed loop (CaseEngine::replay) is the write path and
// nothing else: no allocation and no lock, in every case and staging mode.
#include <catch2/catch.hpp>

#include "alloc_counter.h"
#include "test_support.h"
#include "tracepipe/bench/engine/engine.h"

using namespace tracepipe::bench;
namespace ac = tp_test::alloc_counter;

TEST_CASE("bench mix: the replay loop allocates and locks nothing", "[tools][bench]") {
  if (!ac::enabled()) TP_SKIP("sanitizer build: malloc belongs to the sanitizer");
  REQUIRE(ac::probe() == 2);
  const EventMix mix = embedded_mix(1, 64);
  const FilterSet filters = default_filters({0, 1});
  for (Case c : {Case::off, Case::all, Case::reject, Case::accept, Case::half})
    for (Staging s : {Staging::per_cpu, Staging::off, Staging::adaptive, Staging::per_thread}) {
      INFO(name(c) << "/" << name(s));
      EngineOptions eo;
      eo.staging = s;
      eo.buffer_bytes_per_cpu = 64 * 1024;  // wraps many times: overwrite included
      auto engine = make_case_engine(eo, c, filters.for_case(c));
      engine->prepare_thread();
      engine->replay(mix.lanes[0], 1000);  // first touches
      const RunCounts before = engine->totals();
      ac::Window w;
      engine->replay(mix.lanes[0], 20000);
      CHECK(w.allocs() == 0);
      CHECK(w.locks() == 0);
      const RunCounts after = engine->totals();
      CHECK(after.emitted - before.emitted == (c == Case::off ? 0u : 20000u));
    }
}
