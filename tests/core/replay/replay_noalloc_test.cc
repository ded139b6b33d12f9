// Router::feed (the [filter] stage of replay) allocates nothing and takes no
// lock, on every route: the instance's filter (staged reject/accept),
// unfiltered commits, the replay-side filter with COMM from a record field
// and from saved_cmdlines, skipped and unknown events, with timing on and
// the ring recycling sub-buffers. malloc & co and pthread_mutex_lock are
// interposed in this executable and counted (as tests/core/instance/noalloc_test.cc).
#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>

#include "alloc_counter.h"
#include "replay_test_util.h"
#include "test_support.h"
#include "tracepipe/core/replay/filter_plan.h"
#include "tracepipe/core/replay/router.h"

using namespace tracepipe;
using namespace tracepipe::replay;

TEST_CASE("replay router: feed() allocates nothing and takes no lock on any route",
          "[replay][noalloc]") {
#ifdef TRACEPIPE_SANITIZED
  TP_SKIP("allocation counting needs the real malloc (sanitized build)");
#else
  replay_test::TempPath in("replay_noalloc");
  uint64_t switches_as_sh = 0;
  {
    TraceDatWriter w = replay_test::make_writer(2);
    w.set_cmdline(100, "hackbench");
    w.set_cmdline(200, "bash");
    for (uint64_t i = 0; i < 20000; ++i) {
      const uint32_t cpu = static_cast<uint32_t>(i % 2);
      switch (i % 4) {
        case 0:
          w.add_record(cpu, i, replay_test::kmalloc(100, i, i % 300));
          break;
        case 1:
          w.add_record(cpu, i,
                       replay_test::sched_switch(100, i % 3 ? "hackbench" : "sh", 100, "x", 0));
          switches_as_sh += i % 3 == 0;
          break;
        case 2:
          w.add_record(cpu, i, replay_test::sched_waking(i % 8 == 2 ? 100 : 200, "k", 5, 1));
          break;
        default: {
          auto r = replay_test::kmalloc(0, i, 1);
          replay_test::put(r, 0, uint16_t{4242});  // unknown ID
          w.add_record(cpu, i, r);
        }
      }
    }
    w.write(in.path);
  }
  const TraceDatReader reader = TraceDatReader::open(in.path);
  Registry reg;
  for (const EventFormat& f : reader.formats()) reg.add(f);
  PlanInput pin;
  for (const char* a : {"kmalloc: bytes_req > 100", "sched_switch: COMM ~ \"hack*\"",
                        "sched_waking: COMM == \"hackbench\" && CPU == 0"})
    pin.filters.push_back(parse_filter_arg(a));
  pin.compile.nr_cpu_ids = 2;
  const auto plan = make_plan(reg, pin);
  InstanceOptions o;
  o.cpus = 2;
  o.buffer_size_kb = 64;  // recycled many times by 20000 records
  o.subbuf_size_kb = 4;
  o.staging = Staging::per_thread;
  Instance inst(o, reg);
  const Router router(reader, inst, plan, 2);
  CHECK(router.route(*reg.find("kmem:kmalloc")) == FilterRoute::instance);
  CHECK(router.route(*reg.find("sched:sched_switch")) == FilterRoute::replay_side);

  std::vector<std::vector<Rec> > recs(2);
  for (size_t i = 0; i < reader.cpu_data().size(); ++i) {
    auto c = reader.cpu_records(i);
    while (auto r = c.next())
      recs[i].push_back(Rec{r->ts, r->payload.data(), static_cast<uint32_t>(r->payload.size()),
                            EmitResult::disabled});
  }
  std::vector<Counter> counters(router.counter_slots());
  // Warm-up: registers this thread and maps its counter window (allocates).
  for (uint32_t cpu = 0; cpu < 2; ++cpu) router.feed(recs[cpu], cpu, counters, true);
  counters.assign(router.counter_slots(), Counter{});

  REQUIRE(tp_test::alloc_counter::probe() == 2);  // the counter counts
  const tp_test::alloc_counter::Window window;
  for (int round = 0; round < 3; ++round)
    for (uint32_t cpu = 0; cpu < 2; ++cpu) router.feed(recs[cpu], cpu, counters, true);
  const uint64_t allocs = window.allocs(), locks = window.locks();
  CHECK(allocs == 0);
  CHECK(locks == 0);

  // And it did the work: every route taken, with the expected verdicts.
  const Counter& km = counters[reg.find("kmem:kmalloc")->index()];
  const Counter& sw = counters[reg.find("sched:sched_switch")->index()];
  const Counter& wk = counters[reg.find("sched:sched_waking")->index()];
  CHECK(km.replayed == 3 * 5000);
  CHECK(km.kept > 0);
  CHECK(km.discarded > 0);
  CHECK(sw.kept == 3 * (5000 - switches_as_sh));  // COMM is prev_comm, not pid 100's "hackbench"
  CHECK(sw.discarded > 0);
  CHECK(wk.kept > 0);  // pid 100 = hackbench on CPU 0 only
  CHECK(wk.discarded > 0);
  CHECK(counters[router.unknown_slot()].skipped == 3 * 5000);
  CHECK(km.samples > 0);
  const buffers::CpuStats s = inst.cpu_stats(0);
  CHECK(s.overrun > 0);  // the ring recycled while counting
#endif
}
