// Deterministic interleavings: a Hooks policy runs a nested writer at a
// chosen step of reserve / switch / discard (ring_buffer.h (A)..(E), S1..S4),
// so the order is forced, not hoped for. Plus the blocking waiter with a
// writer thread that writes only while the waiter is blocked (it watches
// the waiter's sleep slices, CpuBuffer::wait_polls). Label "concurrency".
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <functional>
#include <thread>

#include "buffer_test_util.h"

using namespace tp_buffers_test;

namespace {

struct Nest {
  std::function<void(Step, uint32_t)> fn;
  int depth = 0;
};
// Calls nest->fn once per outer step (not from inside itself).
struct TestHooks {
  Nest* nest = nullptr;
  void operator()(Step s, uint32_t cpu) const noexcept {
    if (nest == nullptr || !nest->fn || nest->depth != 0) return;
    ++nest->depth;
    nest->fn(s, cpu);
    --nest->depth;
  }
};
template <OverflowMode M>
using HookRB = RingBuffer<M, FunctionClock, TestHooks>;

constexpr RingBufferConfig kSmall{.cpus = 1, .size_per_cpu = 1024, .subbuf_size = 256};

// Runs `fn` at the first occurrence of step `at`, then disarms.
void once_at(Nest& n, Step at, std::function<void()> fn) {
  n.fn = [&n, at, fn = std::move(fn)](Step s, uint32_t) mutable {
    if (s != at) return;
    std::function<void()> run = std::move(fn);  // n.fn (this lambda) dies on the next line
    n.fn = nullptr;
    run();
  };
}

std::vector<uint64_t> stamps(const std::vector<Got>& g) {
  std::vector<uint64_t> t;
  for (const Got& x : g) t.push_back(x.ts);
  return t;
}

}  // namespace

TEST_CASE("interleave: nested writer between (A) and (C) lands first, stamps stay ordered",
          "[buffers][interleave]") {
  for (Step at : {Step::loaded, Step::clocked}) {
    Nest nest;
    HookRB<OverflowMode::overwrite> rb(kSmall, &fake_clock, TestHooks{&nest});
    g_fake_now = 100;
    once_at(nest, at, [&] {
      g_fake_now = 200;
      REQUIRE(put(rb, 0, 16, 2));  // the nested record
    });
    Reservation outer = rb.reserve(0, 16);  // its CAS fails once, then retries after the nested one
    REQUIRE(outer);
    std::memset(outer.payload().data(), 1, 16);
    rb.commit(outer);
    CHECK(outer.ts() == 200);
    ConsumingReader reader(rb, 0);
    auto got = drain(reader);
    CHECK(tags(got) == std::vector<int>{2, 1});
    CHECK(stamps(got) == std::vector<uint64_t>{200, 200});
    CHECK(rb.stats(0).conserved(2));
  }
}

TEST_CASE("interleave: nested writer after (C) lands after, hidden until the outer commits",
          "[buffers][interleave]") {
  Nest nest;
  HookRB<OverflowMode::drop_newest> rb(kSmall, &fake_clock, TestHooks{&nest});
  g_fake_now = 100;
  once_at(nest, Step::reserved, [&] {
    g_fake_now = 50;  // the clock even steps back: the clamp keeps order
    REQUIRE(put(rb, 0, 16, 2));
    Iterator it(rb, 0);
    CHECK_FALSE(it.next());  // the outer record is pending: nothing is visible
  });
  Reservation outer = rb.reserve(0, 16);
  REQUIRE(outer);
  std::memset(outer.payload().data(), 1, 16);
  ConsumingReader reader(rb, 0);
  CHECK_FALSE(reader.next());
  rb.commit(outer);
  auto got = drain(reader);
  CHECK(tags(got) == std::vector<int>{1, 2});
  CHECK(stamps(got) == std::vector<uint64_t>{100, 100});
  CHECK(rb.stats(0).conserved(2));
}

TEST_CASE("interleave: outer discard after a nested record becomes padding",
          "[buffers][interleave][discard]") {
  Nest nest;
  HookRB<OverflowMode::overwrite> rb(kSmall, &fake_clock, TestHooks{&nest});
  once_at(nest, Step::reserved, [&] { REQUIRE(put(rb, 0, 16, 2)); });
  Reservation outer = rb.reserve(0, 40);
  REQUIRE(outer);
  rb.discard(outer);
  CpuStats s = rb.stats(0);
  CHECK(s.discarded == 1);
  CHECK(s.reclaimed == 0);
  ConsumingReader reader(rb, 0);
  CHECK(tags(drain(reader)) == std::vector<int>{2});
  CHECK(rb.stats(0).conserved(2));
}

TEST_CASE("interleave: a nested reserve+discard leaves the outer record last",
          "[buffers][interleave][discard]") {
  Nest nest;
  HookRB<OverflowMode::overwrite> rb(kSmall, &fake_clock, TestHooks{&nest});
  once_at(nest, Step::reserved, [&] {
    Reservation inner = rb.reserve(0, 24);
    REQUIRE(inner);
    rb.discard(inner);
  });
  Reservation outer = rb.reserve(0, 40);
  std::byte* where = outer.payload().data();
  rb.discard(outer);
  CHECK(rb.stats(0).reclaimed == 2);
  Reservation next = rb.reserve(0, 8);
  CHECK(next.payload().data() == where);
  rb.commit(next);
  CHECK(rb.stats(0).conserved(3));
}

TEST_CASE(
    "interleave: a nested writer that reserves while we reclaim turns our discard into padding",
    "[buffers][interleave][discard]") {
  Nest nest;
  HookRB<OverflowMode::drop_newest> rb(kSmall, &fake_clock, TestHooks{&nest});
  Reservation outer = rb.reserve(0, 40);
  REQUIRE(outer);
  once_at(nest, Step::reclaiming, [&] { REQUIRE(put(rb, 0, 16, 2)); });
  rb.discard(outer);
  CHECK(rb.stats(0).discarded == 1);
  CHECK(rb.stats(0).reclaimed == 0);
  ConsumingReader reader(rb, 0);
  auto got = drain(reader);
  REQUIRE(got.size() == 1);
  CHECK(got[0].tag == 2);
  CHECK(got[0].uniform);
  CHECK(rb.stats(0).conserved(2));
}

TEST_CASE("interleave: nested writers during a sub-buffer switch",
          "[buffers][interleave][switch]") {
  SECTION("before the claim: the nested record still fits the old sub-buffer") {
    Nest nest;
    HookRB<OverflowMode::overwrite> rb(kSmall, &fake_clock, TestHooks{&nest});
    REQUIRE(put(rb, 0, 200, 1));                                          // 216 used, 40 left
    once_at(nest, Step::switching, [&] { REQUIRE(put(rb, 0, 16, 2)); });  // 32 bytes: fits
    REQUIRE(put(rb, 0, 48, 3));                                           // needs the switch
    CHECK(rb.stats(0).subbuf_switches == 1);
    ConsumingReader reader(rb, 0);
    CHECK(tags(drain(reader)) == std::vector<int>{1, 2, 3});
    CHECK(rb.stats(0).conserved(3));
  }
  SECTION("after the tail moved, before END: the nested record follows ours") {
    Nest nest;
    HookRB<OverflowMode::drop_newest> rb(kSmall, &fake_clock, TestHooks{&nest});
    REQUIRE(put(rb, 0, 200, 1));
    once_at(nest, Step::switched, [&] {
      REQUIRE(put(rb, 0, 16, 2));
      Iterator it(rb, 0);  // the old sub-buffer is not closed yet: only record 1
      CHECK(tags(drain(it)) == std::vector<int>{1});
    });
    REQUIRE(put(rb, 0, 48, 3));
    ConsumingReader reader(rb, 0);
    CHECK(tags(drain(reader)) == std::vector<int>{1, 3, 2});
    CHECK(rb.stats(0).conserved(3));
  }
  SECTION("the nested writer switches again before we close ours") {
    Nest nest;
    HookRB<OverflowMode::overwrite> rb(kSmall, &fake_clock, TestHooks{&nest});
    REQUIRE(put(rb, 0, 200, 1));
    once_at(nest, Step::switched, [&] { REQUIRE(put(rb, 0, rb.max_payload(), 2)); });
    REQUIRE(put(rb, 0, 48, 3));
    CHECK(rb.stats(0).subbuf_switches == 2);
    ConsumingReader reader(rb, 0);
    CHECK(tags(drain(reader)) == std::vector<int>{1, 3, 2});
    CHECK(rb.stats(0).conserved(3));
  }
}

TEST_CASE("interleave: a record reserved on one thread is committed from another",
          "[buffers][interleave]") {
  OverwriteRingBuffer rb(kSmall);
  Reservation r = rb.reserve(0, 8);
  REQUIRE(r);
  std::thread([&] {
    std::memset(r.payload().data(), 4, 8);
    rb.commit(r);
  }).join();  // (no Catch assertion on the other thread)
  ConsumingReader reader(rb, 0);
  CHECK(tags(drain(reader)) == std::vector<int>{4});
  CHECK(rb.stats(0).conserved(1));
}

namespace {
// Until the waiter has ended `n` more sleep slices inside wait() (it is
// blocked there), or `done`. No sleep: the waiter's own slices pace it.
bool until_polled(const detail::CpuBuffer& cb, uint64_t n, const std::atomic<bool>& done) {
  const uint64_t base = cb.wait_polls.load(std::memory_order_relaxed);
  while (!done.load(std::memory_order_acquire)) {
    if (cb.wait_polls.load(std::memory_order_relaxed) >= base + n) return true;
    std::this_thread::yield();
  }
  return false;
}
}  // namespace

TEST_CASE("interleave: a blocked waiter returns once a writer thread reaches its watermark",
          "[buffers][wait]") {
  DropNewestRingBuffer rb(kSmall);  // 4 data sub-buffers + 1 spare, 256 bytes each
  ConsumingReader reader(rb, 0);
  std::atomic<bool> done{false};
  std::atomic<int> written{0}, while_blocked{0};  // Catch assertions only on the test's thread
  SECTION("any data") {
    std::thread w([&] {
      if (until_polled(rb.cpu_buffer(0), 2, done)) ++while_blocked;
      written += put(rb, 0, 8, 1);
    });
    CHECK(reader.wait(0, std::chrono::seconds(20)) == WaitResult::ready);
    done = true;
    w.join();
    CHECK(while_blocked == 1);  // the waiter was blocked when the record came
    CHECK(written == 1);
    CHECK(tags(drain(reader)) == std::vector<int>{1});
    CHECK(rb.stats(0).conserved(1));
  }
  SECTION("a watermark of full sub-buffers") {
    // 75% of 4 = 3 full and unread: 3 * 4 records of 48 bytes (stride 64),
    // plus the one that moves the tail into the 4th sub-buffer: 13.
    std::thread w([&] {
      for (int i = 0; i < 16 && until_polled(rb.cpu_buffer(0), 1, done); ++i) {
        written += put(rb, 0, 48, static_cast<uint8_t>(i));
        ++while_blocked;
      }
    });
    CHECK(reader.wait(75, std::chrono::seconds(20)) == WaitResult::ready);
    done = true;
    w.join();
    CHECK(while_blocked >= 13);
    CHECK(while_blocked <= 14);  // one more if the waiter looked just before the 13th
    CHECK(written == while_blocked);
    CHECK(tags(drain(reader)).size() == static_cast<size_t>(written.load()));
    CHECK(rb.stats(0).conserved(written));
  }
}

namespace {
OverwriteRingBuffer* g_sig_rb = nullptr;
void write_in_handler(int) {  // async-signal-safe: no allocation
  Reservation r = g_sig_rb->reserve(0, 16);
  if (!r) return;
  std::memset(r.payload().data(), 2, 16);
  g_sig_rb->commit(r);
}
}  // namespace

TEST_CASE("interleave: a real signal handler writing between reserve and commit",
          "[buffers][interleave][signal]") {
  OverwriteRingBuffer rb(kSmall);
  g_sig_rb = &rb;
  auto old = std::signal(SIGUSR2, write_in_handler);
  Reservation outer = rb.reserve(0, 16);
  REQUIRE(outer);
  std::raise(SIGUSR2);  // runs the handler now, nested after (C)
  std::memset(outer.payload().data(), 1, 16);
  rb.commit(outer);
  std::raise(SIGUSR2);  // and once more outside any reservation
  std::signal(SIGUSR2, old);
  ConsumingReader reader(rb, 0);
  auto got = drain(reader);
  CHECK(tags(got) == std::vector<int>{1, 2, 2});
  CHECK(got[0].ts <= got[1].ts);
  CHECK(got[1].ts <= got[2].ts);
  CHECK(rb.stats(0).conserved(3));
}
