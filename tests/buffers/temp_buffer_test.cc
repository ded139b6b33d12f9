// Unit tests of the temp buffer (staging): claim, nesting, size boundary,
// migration between claim and release, per-thread variant, the rseq
// (cpu_local) claim.
#include "tracepipe/buffers/temp_buffer.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <thread>

#include "test_support.h"

using namespace tracepipe::buffers;

TEST_CASE("temp buffer: config is validated", "[buffers][temp]") {
  CHECK_THROWS_WITH(TempBuffer(TempBufferConfig{.cpus = 0}),
                    Catch::Contains("cpus must be in [1, 65536], got 0"));
  CHECK_THROWS_WITH(TempBuffer(TempBufferConfig{.cpus = 1, .slot_size = 32}),
                    Catch::Contains("slot_size must be in [64, 1048576], got 32"));
  CHECK_THROWS_AS(PerThreadTempBuffer(8192), ConfigError);
  TempBuffer tb(TempBufferConfig{.cpus = 2});
  CHECK(tb.capacity() == 4096 - 8);  // a page minus header and length word, like the kernel
  CHECK(tb.cpus() == 2);
}

TEST_CASE("temp buffer: claim, nested claim falls back, release", "[buffers][temp]") {
  TempBuffer tb(TempBufferConfig{.cpus = 2, .slot_size = 256});
  StagedRecord a = tb.try_claim(1, 100);
  REQUIRE(a);
  CHECK(a.cpu() == 1);
  REQUIRE(a.data().size() == 100);
  std::memset(a.data().data(), 0x5A, 100);
  CHECK(tb.busy_for_testing(1));
  StagedRecord nested = tb.try_claim(1, 10);
  CHECK_FALSE(nested);
  CHECK(nested.error() == StageError::busy);
  TempBuffer::release(nested);  // empty: no-op, must not free the outer claim
  CHECK(tb.busy_for_testing(1));
  StagedRecord other = tb.try_claim(0, 10);  // another CPU's slot is free
  CHECK(other);
  TempBuffer::release(other);
  TempBuffer::release(a);
  CHECK_FALSE(tb.busy_for_testing(1));
  StagedRecord again = tb.try_claim(1, 10);
  CHECK(again);
  CHECK(again.data().data() == a.data().data());
  TempBuffer::release(again);
  CHECK(tb.stats(1).busy_fallbacks == 1);
  CHECK(tb.stats(1).too_big_fallbacks == 0);
  CHECK(tb.stats(0).busy_fallbacks == 0);
}

TEST_CASE("temp buffer: the capacity boundary", "[buffers][temp]") {
  TempBuffer tb(TempBufferConfig{.cpus = 1, .slot_size = 128});
  REQUIRE(tb.capacity() == 120);
  StagedRecord fits = tb.try_claim(0, 120);
  REQUIRE(fits);
  CHECK(fits.data().size() == 120);
  TempBuffer::release(fits);
  StagedRecord big = tb.try_claim(0, 121);
  CHECK_FALSE(big);
  CHECK(big.error() == StageError::too_big);
  CHECK_FALSE(tb.busy_for_testing(0));  // nothing was claimed
  CHECK(tb.stats(0).too_big_fallbacks == 1);
  CHECK(tb.try_claim(3, 1).error() == StageError::bad_cpu);
  CHECK(tb.bad_cpu_fallbacks() == 1);  // counted under its own cause, not busy or too_big
}

TEST_CASE("temp buffer: release after migrating frees the slot that was claimed",
          "[buffers][temp]") {
  TempBuffer tb(TempBufferConfig{.cpus = 2, .slot_size = 256});
  StagedRecord h = tb.try_claim(0, 16);  // claimed "on CPU 0"
  REQUIRE(h);
  std::thread([&] {
    // The thread now runs elsewhere: it releases through the handle.
    TempBuffer::release(h);
  }).join();
  CHECK_FALSE(tb.busy_for_testing(0));
  CHECK_FALSE(tb.busy_for_testing(1));
}

TEST_CASE("temp buffer: per-thread slots", "[buffers][temp]") {
  PerThreadTempBuffer tb(256);
  CHECK(tb.capacity() == 248);
  StagedRecord a = tb.try_claim(0, 248);
  REQUIRE(a);
  CHECK(PerThreadTempBuffer::busy_for_testing());
  CHECK(tb.try_claim(0, 8).error() == StageError::busy);
  std::byte* other_thread_slot = nullptr;
  std::thread([&] {
    StagedRecord b = tb.try_claim(0, 8);  // its own slot
    other_thread_slot = b.data().data();  // (null if the claim failed)
    PerThreadTempBuffer::release(b);
  }).join();
  CHECK(other_thread_slot != nullptr);
  CHECK(other_thread_slot != a.data().data());
  PerThreadTempBuffer::release(a);
  CHECK_FALSE(PerThreadTempBuffer::busy_for_testing());
  CHECK(tb.try_claim(0, 249).error() == StageError::too_big);
  CHECK(tb.stats().busy_fallbacks == 1);
  CHECK(tb.stats().too_big_fallbacks == 1);
}

namespace {
TempBuffer* g_tb = nullptr;
PerThreadTempBuffer* g_ptb = nullptr;
volatile StageError g_in_handler = StageError::none;
void claim_in_handler(int) {
  StagedRecord h = g_tb != nullptr ? g_tb->try_claim(0, 8) : g_ptb->try_claim(0, 8);
  g_in_handler = h ? StageError::none : h.error();
  TempBuffer::release(h);
}
}  // namespace

TEST_CASE("temp buffer: a signal handler that runs during a claim falls back",
          "[buffers][temp][signal]") {
  TempBuffer tb(TempBufferConfig{.cpus = 1, .slot_size = 128});
  PerThreadTempBuffer ptb(128);
  auto old = std::signal(SIGUSR2, claim_in_handler);
  for (int variant = 0; variant < 2; ++variant) {
    g_tb = variant == 0 ? &tb : nullptr;
    g_ptb = variant == 0 ? nullptr : &ptb;
    StagedRecord outer = variant == 0 ? tb.try_claim(0, 16) : ptb.try_claim(0, 16);
    REQUIRE(outer);
    std::raise(SIGUSR2);  // delivered before raise() returns: nested in the claim
    CHECK(g_in_handler == StageError::busy);
    TempBuffer::release(outer);
    std::raise(SIGUSR2);
    CHECK(g_in_handler == StageError::none);  // free again: the handler got it
  }
  CHECK(tb.stats(0).busy_fallbacks == 1);
  CHECK(ptb.stats().busy_fallbacks == 1);
  std::signal(SIGUSR2, old);
  g_tb = nullptr;
  g_ptb = nullptr;
}

namespace {
void require_rseq() {
  if (!detail::rseq_usable())
    TP_SKIP("rseq or membarrier RSEQ unavailable here (or a ThreadSanitizer build)");
}
uint32_t online_cpus() { return static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)); }
}  // namespace

TEST_CASE("temp buffer: cpu_local claims the slot of the CPU the caller runs on",
          "[buffers][temp][rseq]") {
  require_rseq();
  const uint32_t cpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
  TempBuffer tb(TempBufferConfig{.cpus = cpus, .slot_size = 256, .writers = Writers::cpu_local});
  CHECK(tb.writers() == Writers::cpu_local);
  for (uint32_t cpu = 0; cpu < online_cpus() && cpu < 4; ++cpu) {
    tp_test::PinToCpu pin(cpu);
    REQUIRE(pin.ok());
    StagedRecord a = tb.try_claim_local(100);
    REQUIRE(a);
    CHECK(a.cpu() == cpu);
    CHECK(a.data().size() == 100);
    CHECK(tb.busy_for_testing(cpu));
    // Nested on the same CPU: busy, counted, and the outer claim holds.
    StagedRecord nested = tb.try_claim_local(8);
    CHECK(nested.error() == StageError::busy);
    CHECK(tb.stats(cpu).busy_fallbacks == 1);
    CHECK(tb.try_claim(cpu, 8).error() == StageError::busy);  // the same slot, named
    CHECK(tb.stats(cpu).busy_fallbacks == 2);
    TempBuffer::release(nested);
    CHECK(tb.busy_for_testing(cpu));
    TempBuffer::release(a);
    CHECK_FALSE(tb.busy_for_testing(cpu));
    // Too big: refused before anything is claimed.
    CHECK(tb.try_claim_local(249).error() == StageError::too_big);
    CHECK(tb.stats(cpu).too_big_fallbacks == 1);
    CHECK_FALSE(tb.busy_for_testing(cpu));
  }
}

TEST_CASE(
    "temp buffer: cpu_local refuses another CPU's slot, and a migrated owner releases its own",
    "[buffers][temp][rseq]") {
  require_rseq();
  if (online_cpus() < 2) TP_SKIP("needs a second online CPU");
  TempBuffer tb(TempBufferConfig{.cpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF)),
                                 .slot_size = 256,
                                 .writers = Writers::cpu_local});
  StagedRecord h;
  {
    tp_test::PinToCpu on0(0);
    REQUIRE(on0.ok());
    // Naming CPU 1 from CPU 0 is refused: that store could race with a
    // section on CPU 1 that already compared.
    CHECK(tb.try_claim(1, 8).error() == StageError::bad_cpu);
    CHECK(tb.bad_cpu_fallbacks() == 1);
    CHECK_FALSE(tb.busy_for_testing(1));
    h = tb.try_claim(0, 16);  // our own CPU, named: fine
    REQUIRE(h);
    CHECK(h.cpu() == 0);
  }
  {
    tp_test::PinToCpu on1(1);
    REQUIRE(on1.ok());
    StagedRecord here = tb.try_claim_local(8);  // CPU 1's slot is free
    REQUIRE(here);
    CHECK(here.cpu() == 1);
    TempBuffer::release(here);
    TempBuffer::release(h);  // released from CPU 1: CPU 0's slot is freed
  }
  CHECK_FALSE(tb.busy_for_testing(0));
  CHECK_FALSE(tb.busy_for_testing(1));
  tp_test::PinToCpu on0(0);
  StagedRecord again = tb.try_claim_local(8);
  CHECK(again.cpu() == 0);
  CHECK(static_cast<bool>(again));
  TempBuffer::release(again);
}

TEST_CASE("temp buffer: a signal handler that runs during a cpu_local claim falls back",
          "[buffers][temp][rseq][signal]") {
  require_rseq();
  tp_test::PinToCpu pin(0);
  REQUIRE(pin.ok());
  TempBuffer tb(TempBufferConfig{.cpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF)),
                                 .slot_size = 128,
                                 .writers = Writers::cpu_local});
  auto old = std::signal(SIGUSR2, claim_in_handler);
  g_tb = &tb;
  StagedRecord outer = tb.try_claim_local(16);
  REQUIRE(outer);
  std::raise(SIGUSR2);
  CHECK(g_in_handler == StageError::busy);
  TempBuffer::release(outer);
  std::raise(SIGUSR2);
  CHECK(g_in_handler == StageError::none);
  CHECK(tb.stats(0).busy_fallbacks == 1);
  std::signal(SIGUSR2, old);
  g_tb = nullptr;
}
