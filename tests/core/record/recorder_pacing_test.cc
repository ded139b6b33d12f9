// The recorder's pacing (core/record/recorder.cc, Pacing): how often it
// looks at the rings, read from its pass count. Writers never wake it, so
// its cost with few records is its wake-ups: quiet rings are looked at every
// max_poll_interval, and a steady rate is drained in batches of about half
// the watermark.
#include <pthread.h>
#include <sched.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "../instance/test_events.h"
#include "../tracedat/tracedat_test_util.h"
#include "tracepipe/core/record/pacing.h"
#include "tracepipe/core/record/recorder.h"

using namespace tracepipe;
using namespace tp_core_test;
using tp_tracedat_test::TempPath;

namespace {

// Emits `rate` Sample events per second from a thread pinned to CPU 0 for
// `seconds`; a writer that falls behind catches up at once. Returns the
// events emitted.
uint64_t paced(Instance& inst, double rate, double seconds) {
  uint64_t n = 0;
  std::thread t([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      const std::chrono::duration<double> el = std::chrono::steady_clock::now() - t0;
      if (el.count() >= seconds) break;
      const auto due = static_cast<uint64_t>(el.count() * rate);
      while (n < due) (void)emit_sample(inst, 1, static_cast<uint32_t>(n++), "paced");
    }
  });
  t.join();
  return n;
}

}  // namespace

TEST_CASE("recorder pacing: the sleep before a CPU's next look: aim, guard, quiet",
          "[record][pacing]") {
  // Compared within 1 ns: the rate is a double.
  const auto next_look_ns = [](double rate, uint64_t unread, uint64_t at, uint64_t usable,
                               uint64_t quiet) {
    return static_cast<double>(record::pacing::next_look_ns(rate, unread, at, usable, quiet));
  };
  const uint64_t quiet = 1'000'000, usable = 351,
                 drain_at = 44;  // the default 1408 KiB ring, watermark 25%
  // No sub-buffer closed since the last look: max_poll_interval.
  CHECK(next_look_ns(0.0, 0, drain_at, usable, quiet) ==
        Approx(static_cast<double>(quiet)).margin(1));
  CHECK(next_look_ns(0.0, 40, drain_at, usable, quiet) ==
        Approx(static_cast<double>(quiet)).margin(1));
  // 100 000 sub-buffers/s (5 M events of 64 bytes/s): drain_at of them in 440 µs.
  const double r = 100'000 / 1e9;
  CHECK(next_look_ns(r, 0, drain_at, usable, quiet) == Approx(440'000).margin(1));
  CHECK(next_look_ns(r, 34, drain_at, usable, quiet) ==
        Approx(100'000).margin(1));  // 10 more to go
  CHECK(next_look_ns(r, 44, drain_at, usable, quiet) ==
        Approx(10'000).margin(1));  // there: one more sub-buffer's time
  // 10 000 sub-buffers/s: the aim (4.4 ms) is past max_poll_interval.
  CHECK(next_look_ns(r / 10, 0, drain_at, usable, quiet) ==
        Approx(static_cast<double>(quiet)).margin(1));
  // A watermark of 100% (drain_at 175): the guard, 351 free sub-buffers at
  // 4x the rate, 877.5 µs, comes before the aim, 1.75 ms.
  CHECK(next_look_ns(r, 0, 175, usable, quiet) == Approx(877'500).margin(1));
  // 100 unread after the look: 75 to go (750 µs), but 251 free at 4x the rate: 627.5 µs.
  CHECK(next_look_ns(r, 100, 175, usable, quiet) == Approx(627'500).margin(1));
}

TEST_CASE("recorder pacing: quiet rings are looked at once per max_poll_interval",
          "[record][pacing]") {
  CHECK(record::RecorderOptions{}.max_poll_interval ==
        std::chrono::milliseconds(1));  // trace-cmd record's -s
  for (const auto poll : {std::chrono::microseconds(1000), std::chrono::microseconds(5000)}) {
    TempPath out("pacing_quiet.dat");
    InstanceOptions o;
    o.mode = BufferMode::drop_newest;
    Instance inst(o);
    inst.enable(Sample::desc());
    record::RecorderOptions ro;
    ro.output = out.path;
    ro.max_poll_interval = poll;
    record::Recorder rec(inst, ro);
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const record::RecorderStats s = rec.stop();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    INFO("max_poll_interval " << poll.count() << " us: " << s.passes << " passes in " << ms
                              << " ms");
    // Sleeps come late, never early: at most one look per interval (plus the first).
    CHECK(s.passes <= static_cast<uint64_t>(ms * 1000 / static_cast<double>(poll.count())) + 2);
    CHECK(s.passes >= 5);  // it does look
    CHECK(s.records == 0);
  }
}

TEST_CASE("recorder pacing: a steady rate is drained in batches of about half the watermark",
          "[record][pacing]") {
  TempPath out("pacing_steady.dat");
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  o.buffer_size_kb = 1024;
  Instance inst(o);
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.output = out.path;
  record::Recorder rec(inst, ro);
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t n = paced(inst, 2e6, 0.4);
  const record::RecorderStats s = rec.stop();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t P = inst.ring().nr_subbufs();
  const uint64_t drain_at = (uint64_t{ro.watermark_percent} * (P - 1) + 99) / 100 / 2;
  const uint64_t per_subbuf =
      inst.ring().subbuf_size() / 80;  // a 64-byte event takes 80 bytes in the ring
  const double subbufs = static_cast<double>(n) / static_cast<double>(per_subbuf);
  INFO(n << " events, " << subbufs << " sub-buffers, drain_at " << drain_at << ", " << s.passes
         << " passes in " << ms << " ms, peak unread " << s.peak_unread << ", dropped "
         << s.dropped);
  CHECK(s.records + s.dropped == n);  // conservation, whatever the machine did to the recorder
  // About one look per drain_at sub-buffers while records arrive (at 2 M
  // events/s the aim is under max_poll_interval), at most one per
  // max_poll_interval otherwise; a look aimed too early (a writer catching
  // up after a preemption reads as a higher rate) or after a loss adds a
  // few. A recorder looking every 250 µs whatever the rate makes about 1600.
  CHECK(static_cast<double>(s.passes) <= 2 * subbufs / static_cast<double>(drain_at) + ms + 20);
}
