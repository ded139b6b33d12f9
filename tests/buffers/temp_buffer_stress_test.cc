// Stress of the temp buffer: threads claim per-CPU slots (and per-thread
// slots) at random; a slot is never held by two claimers at once, every
// claim is released, and the fallbacks are counted. Label "concurrency".
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "test_support.h"
#include "tracepipe/buffers/temp_buffer.h"

using namespace tracepipe::buffers;

namespace {
#if defined(TRACEPIPE_SANITIZED)
constexpr int kStressIterations = 5000;
#else
constexpr int kStressIterations = 100000;
#endif
}  // namespace

TEST_CASE("temp buffer stress: one holder per slot, every busy claim counted",
          "[buffers][temp][stress]") {
  constexpr uint32_t kCpus = 2;
  constexpr int kThreads = 4;
  TempBuffer tb(TempBufferConfig{.cpus = kCpus, .slot_size = 512});
  std::atomic<int> owner[kCpus];
  for (auto& o : owner) o = -1;
  std::atomic<uint64_t> claims{0}, busy{0}, violations{0}, corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kStressIterations; ++i) {
        const uint32_t cpu = rng() % kCpus;
        const uint32_t len = 1 + rng() % tb.capacity();
        StagedRecord h = tb.try_claim(cpu, len);
        if (!h) {
          if (h.error() != StageError::busy) violations.fetch_add(1);
          busy.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        claims.fetch_add(1, std::memory_order_relaxed);
        if (owner[cpu].exchange(t) != -1) violations.fetch_add(1);
        std::memset(h.data().data(), t + 1, h.data().size());
        for (std::byte b : h.data())
          if (static_cast<int>(b) != t + 1) {
            corrupted.fetch_add(1);
            break;
          }
        owner[cpu].store(-1);
        TempBuffer::release(h);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(violations == 0);
  CHECK(corrupted == 0);
  CHECK(claims + busy == uint64_t{kThreads} * kStressIterations);
  CHECK(tb.stats(0).busy_fallbacks + tb.stats(1).busy_fallbacks == busy);
  for (uint32_t c = 0; c < kCpus; ++c) CHECK_FALSE(tb.busy_for_testing(c));
}

TEST_CASE("temp buffer stress: per-thread slots never collide", "[buffers][temp][stress]") {
  PerThreadTempBuffer tb(1024);
  std::atomic<uint64_t> corrupted{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kStressIterations; ++i) {
        StagedRecord h = tb.try_claim(0, 64 + i % 900);
        if (!h) {
          failed.fetch_add(1);
          continue;
        }
        std::memset(h.data().data(), t + 1, h.data().size());
        std::this_thread::yield();
        for (std::byte b : h.data())
          if (static_cast<int>(b) != t + 1) {
            corrupted.fetch_add(1);
            break;
          }
        PerThreadTempBuffer::release(h);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(corrupted == 0);
  CHECK(failed == 0);  // no nesting here: every claim succeeds
}

namespace {
// Shared with the signal handler of the cpu_local stress test.
TempBuffer* g_local_tb = nullptr;
std::atomic<int> g_local_owner[1024];
std::atomic<uint64_t> g_handler_claims{0}, g_handler_busy{0}, g_handler_violations{0};

// Claims `len` bytes on the CPU it runs on, checks it is the only holder of
// that slot, fills and checks the record, releases. Returns false if busy.
bool claim_check_release(TempBuffer& tb, int who, uint32_t len, bool yield_inside,
                         std::atomic<uint64_t>& violations) {
  StagedRecord h = tb.try_claim_local(len);
  if (!h) {
    if (h.error() != StageError::busy) violations.fetch_add(1);
    return false;
  }
  if (g_local_owner[h.cpu()].exchange(who) != -1) violations.fetch_add(1);
  std::memset(h.data().data(), who & 0x7f, h.data().size());
  if (yield_inside) std::this_thread::yield();  // held while preempted / migrated
  for (std::byte b : h.data())
    if (static_cast<int>(b) != (who & 0x7f)) {
      violations.fetch_add(1);
      break;
    }
  g_local_owner[h.cpu()].store(-1);
  TempBuffer::release(h);
  return true;
}

void local_claim_in_handler(int) {
  if (claim_check_release(*g_local_tb, 100, 16, false, g_handler_violations))
    g_handler_claims.fetch_add(1, std::memory_order_relaxed);
  else
    g_handler_busy.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

TEST_CASE(
    "temp buffer stress: cpu_local claims from migrating threads and signal handlers never collide",
    "[buffers][temp][stress][rseq]") {
  if (!detail::rseq_usable())
    TP_SKIP("rseq or membarrier RSEQ unavailable here (or a ThreadSanitizer build)");
  const auto cpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  REQUIRE(cpus <= 1024);
  TempBuffer tb(TempBufferConfig{.cpus = cpus, .slot_size = 512, .writers = Writers::cpu_local});
  g_local_tb = &tb;
  for (auto& o : g_local_owner) o = -1;
  std::atomic<uint64_t> claims{0}, busy{0}, violations{0};
  auto old = std::signal(SIGUSR2, local_claim_in_handler);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  std::vector<pthread_t> handles;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kStressIterations; ++i) {
        // A loaded machine may start the signaller after the claims are
        // done: halfway, wait for a handler to run (on any of the threads;
        // the signaller takes them in turn until stop, so this ends).
        if (i == kStressIterations / 2) {
          const uint64_t h0 = g_handler_claims.load() + g_handler_busy.load();
          while (g_handler_claims.load() + g_handler_busy.load() == h0) std::this_thread::yield();
        }
        if (claim_check_release(tb, t, 1 + rng() % tb.capacity(), i % 64 == 0, violations))
          claims.fetch_add(1, std::memory_order_relaxed);
        else
          busy.fetch_add(1, std::memory_order_relaxed);
      }
    });
    handles.push_back(threads.back().native_handle());
  }
  std::thread signaller([&] {
    uint32_t n = 0;
    while (!stop.load()) {
      pthread_kill(handles[n++ % handles.size()], SIGUSR2);
      std::this_thread::yield();
    }
  });
  for (auto& th : threads) th.join();
  stop = true;
  signaller.join();
  std::signal(SIGUSR2, old);
  CHECK(violations == 0);
  CHECK(g_handler_violations == 0);
  CHECK(g_handler_claims + g_handler_busy >
        0);  // the handlers did run (the midpoint wait makes this hold)
  CHECK(claims + busy == uint64_t{4} * kStressIterations);
  uint64_t counted = 0;
  for (uint32_t c = 0; c < cpus; ++c) {
    counted += tb.stats(c).busy_fallbacks;
    CHECK_FALSE(tb.busy_for_testing(c));
  }
  CHECK(counted == busy + g_handler_busy);
  CHECK(tb.bad_cpu_fallbacks() == 0);
  g_local_tb = nullptr;
}
