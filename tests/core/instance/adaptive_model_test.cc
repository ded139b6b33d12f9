// Writer threads that take turns one emit at a time in a random but
// deterministic interleaving (handoff by semaphores), with soft-disable
// toggles, records too big to stage, and thread exits (a new thread starts
// on a zeroed context), at thresholds 0 to 0.999. Each emit's path (staged
// or direct) and result is checked against a model of the rule written out
// per emit (tests/core/instance/adaptive_model.h: each thread counts its accepts and
// moves its average at its rejects) with shared flags and period and
// per-thread scores: the instance, which derives each thread's run from its
// counters and a mark, must flip at the same emits.
#include "adaptive_model.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

#include "test_events.h"
#include "tracepipe/core/instance/adaptive_average.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/raw_emit.h"

namespace {
using namespace tracepipe;
using tp_core_test::Model;
using tp_core_test::Other;
using tp_core_test::ThreadModel;

struct Worker {
  std::binary_semaphore go{0}, done{0};
  std::function<void()> job;
  bool quit = false;
  std::thread th;
  Worker() {
    th = std::thread([this] {
      for (;;) {
        go.acquire();
        if (quit) return;
        job();
        done.release();
      }
    });
  }
  void run(std::function<void()> f) {
    job = std::move(f);
    go.release();
    done.acquire();
  }
  ~Worker() {
    quit = true;
    go.release();
    th.join();
  }
};

}  // namespace

TEST_CASE("adaptive: threads taking turns flip where a per-emit model does", "[core][adaptive]") {
  const double threshold = GENERATE(0.9, 0.5, 0.97, 0.0, 0.999, 0.3);
  const uint64_t seed = GENERATE(11u, 12u, 13u, 14u);
  CAPTURE(threshold, seed);
  InstanceOptions o = tp_core_test::small_options(Staging::adaptive, BufferMode::overwrite);
  o.subbuf_size_kb = 16;
  o.buffer_size_kb = 1024;
  o.adaptive_threshold = threshold;
  Instance inst(o);
  inst.enable(Other::desc());
  REQUIRE(inst.set_filter(Other::desc(), "level != 0").ok());
  Model m{static_cast<uint64_t>(threshold * 65536.0)};
  constexpr int kThreads = 3;
  std::unique_ptr<Worker> w[kThreads];
  ThreadModel tm[kThreads];
  for (auto& x : w) x = std::make_unique<Worker>();
  std::mt19937_64 rng(seed);
  const std::string small_msg(20, 'x'), big_msg(4200, 'y');
  const uint32_t rates[] = {100, 96, 90, 85, 99, 50, 100, 0, 92, 100, 97, 10, 88, 100, 98, 94};
  uint64_t emits = 0, mism = 0, exits = 0, softs = 0, bigs = 0, flips = 0;
  bool last = false;
  for (int round = 0; round < 4; ++round)
    for (uint32_t rate : rates) {
      // In a phase, threads take turns in runs (so per-thread averages move).
      for (int i = 0; i < 1500; ++i) {
        const int t = static_cast<int>((rng() % 8 == 0) ? rng() % kThreads : (i / 50) % kThreads);
        const uint64_t roll = rng() % 1000;
        if (roll == 0) {  // thread exit, new thread on a zeroed context
          w[t].reset();
          w[t] = std::make_unique<Worker>();
          tm[t] = ThreadModel{};
          ++exits;
          continue;
        }
        if (roll == 1 || (m.soft && roll < 40)) {  // soft toggle
          m.soft = !m.soft;
          inst.set_soft_disabled(Other::desc(), m.soft);
          ++softs;
          continue;
        }
        const bool accept = rng() % 100 < rate;
        const bool big = rng() % 60 == 0;
        bigs += big;
        const auto want = m.emit(tm[t], accept, big);
        const EventStats before = inst.event_stats(Other::desc());
        EmitResult r{};
        w[t]->run([&] {
          if (!big) {
            r = Other::emit(inst, accept ? 1 : 0, small_msg);
          } else {
            std::vector<std::byte> rec(4200);
            const uint16_t id = Other::desc().id();
            std::memcpy(rec.data(), &id, 2);
            const int16_t lv = accept ? 1 : 0;
            std::memcpy(rec.data() + 8, &lv, 2);
            r = tracepipe::RawEmit::emit(inst, Other::desc(), rec, 0);
          }
        });
        const EventStats after = inst.event_stats(Other::desc());
        const bool went_direct = after.direct == before.direct + 1;
        ++emits;
        if (went_direct != want.first || r != want.second) {
          ++mism;
          if (mism < 10)
            UNSCOPED_INFO("emit " << emits << " thread " << t << " accept " << accept << " big "
                                  << big << " soft " << m.soft << ": direct " << went_direct
                                  << " want " << want.first << " result " << static_cast<int>(r)
                                  << " want " << static_cast<int>(want.second));
          if (mism > 20) break;
        }
        if (went_direct != last) ++flips;
        last = went_direct;
      }
      if (mism > 20) break;
    }
  INFO("emits " << emits << " exits " << exits << " soft toggles " << softs << " big " << bigs
                << " flips " << flips);
  CHECK(mism == 0);
  CHECK(flips > 4);
  CHECK(exits > 0);
  const EventStats s = inst.event_stats(Other::desc());
  CHECK(s.lost == 0);
}
