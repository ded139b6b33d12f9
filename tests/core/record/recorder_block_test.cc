// The recorder's blocking mode (RecorderOptions::block_timeout, LTTng's
// --blocking-timeout): writers of a full drop-newest buffer wait for a slow
// recorder and nothing is lost; the bound is honoured; writers that may not
// wait (in a signal handler's scope, nested) drop and are counted.
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "../instance/test_events.h"
#include "../tracedat/tracedat_test_util.h"
#include "record_test_util.h"
#include "tracepipe/core/config/config.h"
#include "tracepipe/core/record/recorder.h"
#include "tracepipe/core/record/testing/hooks.h"

using namespace tracepipe;
using namespace tp_core_test;
using tp_tracedat_test::TempPath;
using Clock = std::chrono::steady_clock;

namespace {

// One CPU buffer of 16 KiB (about 200 Sample records): a recorder that
// sleeps 2 ms per pass cannot keep up with a writer emitting flat out.
InstanceOptions tiny() {
  InstanceOptions o = small_options(Staging::per_thread);
  o.cpus = 1;
  o.buffer_size_kb = 16;
  return o;
}

buffers::RingBufferBase::BlockStats block_stats(Instance& inst) {
  return inst.ring().block_stats(0);
}

using tp_record_test::Stall;

// Emits until one is dropped (the buffer is full; the recorder is stalled).
uint32_t fill(Instance& inst) {
  uint32_t n = 0;
  while (emit_sample(inst, 1, n, "fill") == EmitResult::kept) ++n;
  return n;
}

}  // namespace

TEST_CASE("recorder blocking: a slow recorder loses nothing, writers wait for it",
          "[record][block]") {
  TempPath out("rec_block.dat");
  Instance inst(tiny());
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.watermark_percent = 0;
  ro.block_timeout = record::RecorderOptions::kBlockForever;
  const tp_record_test::PassHook hook(
      [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });  // a slow recorder
  record::Recorder rec(inst, ro);
  constexpr uint32_t kN = 20000;  // about 100 buffers' worth
  uint64_t kept = 0;
  std::thread w([&] {
    for (uint32_t i = 0; i < kN; ++i)
      kept += emit_sample(inst, 7, i, "blocked") == EmitResult::kept;
  });
  w.join();
  const record::RecorderStats s = rec.stop();
  REQUIRE(!rec.error());
  CHECK(kept == kN);
  CHECK(s.dropped == 0);
  CHECK(s.records == kN);
  const auto b = block_stats(inst);
  CHECK(b.waits > 0);
  CHECK(b.wait_ns > 0);
  CHECK(b.timed_out == 0);
  CHECK(b.not_allowed == 0);
  CHECK(inst.cpu_stats(0).lost_full == 0);
  const auto seqs = tp_record_test::sample_seqs(out.path);
  REQUIRE(seqs.size() == kN);
  for (uint32_t i = 0; i < kN; ++i) REQUIRE(seqs[i] == i);
}

TEST_CASE("recorder blocking: a stalled recorder holds a writer no longer than block_timeout",
          "[record][block]") {
  TempPath out("rec_block_bound.dat");
  Instance inst(tiny());
  inst.enable(Sample::desc());
  Stall stall;
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.block_timeout = std::chrono::milliseconds(30);
  const tp_record_test::PassHook hook([&] { stall.pass(); });
  record::Recorder rec(inst, ro);
  uint32_t n = 0;
  double ms = 0;
  std::thread w([&] {
    const auto t0 = Clock::now();
    n = fill(inst);  // the last emit waited 30 ms, then dropped
    ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  });
  w.join();
  CHECK(n > 0);
  CHECK(ms >= 30.0);
  CHECK(ms < 2000.0);
  auto b = block_stats(inst);
  CHECK(b.waits == 1);
  CHECK(b.timed_out == 1);
  CHECK(b.wait_ns >= 30'000'000);
  CHECK(inst.cpu_stats(0).lost_full == 1);
  stall.release();
  const record::RecorderStats s = rec.stop();
  CHECK(s.records == n);
  CHECK(s.dropped == 1);  // counted and marked as any drop-newest loss
}

TEST_CASE("recorder blocking: writers in a signal handler's scope never wait, they drop and count",
          "[record][block]") {
  TempPath out("rec_block_signal.dat");
  Instance inst(tiny());
  inst.enable(Sample::desc());
  Stall stall;
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.block_timeout = record::RecorderOptions::kBlockForever;  // a waiting writer would never return
  const tp_record_test::PassHook hook([&] { stall.pass(); });
  record::Recorder rec(inst, ro);
  uint32_t n = 0;
  EmitResult last{};
  std::thread w([&] {
    prepare_thread();
    SignalScope scope;  // as a signal handler that marks itself
    n = fill(inst);
    last = emit_sample(inst, 1, 0, "again");
  });
  w.join();
  CHECK(n > 0);
  CHECK(last != EmitResult::kept);
  auto b = block_stats(inst);
  CHECK(b.not_allowed == 2);
  CHECK(b.waits == 0);
  CHECK(inst.cpu_stats(0).lost_full == 2);
  stall.release();
  (void)rec.stop();
}

namespace {
Instance* g_sig_inst = nullptr;
std::atomic<int> g_sig_result{-1};
void on_usr1(int) {
  // A real handler that interrupts an emit of its thread: nested, never waits.
  g_sig_result = static_cast<int>(emit_sample(*g_sig_inst, 2, 0, "handler"));
}
}  // namespace

TEST_CASE("recorder blocking: a signal handler interrupting an emit does not wait",
          "[record][block]") {
  TempPath out("rec_block_nested.dat");
  Instance inst(tiny());
  inst.enable(Sample::desc());
  Stall stall;
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.block_timeout = record::RecorderOptions::kBlockForever;
  const tp_record_test::PassHook hook([&] { stall.pass(); });
  record::Recorder rec(inst, ro);
  g_sig_inst = &inst;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);
  std::thread w([&] {
    prepare_thread();
    {
      SignalScope scope;  // fill without waiting
      (void)fill(inst);
    }
    // The handler must run while an emit of this thread is in flight. An
    // emit that finds the buffer full waits (forever) before a signal could
    // be aimed at it, so the outer emit is stood in for by the state its
    // WriterScope leaves: one emit in flight (read_section's depth bits).
    ThreadContext* c = thread_context();
    REQUIRE(c != nullptr);
    const uint64_t saved = c->read_section.load();
    REQUIRE(saved == 0);
    c->read_section.store(saved + 1);
    raise(SIGUSR1);
    c->read_section.store(saved);
  });
  w.join();
  sigaction(SIGUSR1, &old, nullptr);
  CHECK(g_sig_result != static_cast<int>(EmitResult::kept));
  const auto b = block_stats(inst);
  CHECK(b.waits == 0);
  CHECK(b.not_allowed == 2);  // the fill's last emit, and the handler's
  stall.release();
  (void)rec.stop();
}

TEST_CASE("recorder blocking: not on an overwrite buffer", "[record][block]") {
  TempPath out("rec_block_ow.dat");
  InstanceOptions o = tiny();
  o.mode = BufferMode::overwrite;
  Instance inst(o);
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.block_timeout = std::chrono::microseconds(100);
  CHECK_THROWS_WITH(record::Recorder(inst, ro),
                    Catch::Contains("block_timeout needs a drop-newest buffer"));
}

TEST_CASE("recorder blocking: [recording] block_timeout_us takes microseconds or \"inf\"",
          "[record][block][config]") {
  CHECK(parse_config("[recording]\nblock_timeout_us = 1500\n", "r.toml")
            .recording->block_timeout_us == 1500);
  CHECK(parse_config("[recording]\nblock_timeout_us = \"inf\"\n", "r.toml")
            .recording->block_timeout_us == -1);
  CHECK(parse_config("[recording]\noutput = \"a.dat\"\n", "r.toml").recording->block_timeout_us ==
        0);
  CHECK_THROWS_WITH(
      parse_config("[recording]\nblock_timeout_us = \"forever\"\n", "r.toml"),
      Catch::Contains("recording.block_timeout_us: expected microseconds or \"inf\""));
  CHECK_THROWS_WITH(parse_config("[recording]\nblock_timeout_us = -5\n", "r.toml"),
                    Catch::Contains("recording.block_timeout_us"));
}
