// Per-thread contexts, exact per-thread counters and grace periods.
#include "tracepipe/core/instance/grace_period.h"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "tracepipe/core/instance/thread_context.h"

using namespace tracepipe;

TEST_CASE("thread_context: caches tid and comm, lists the thread in cmdlines", "[core][thread]") {
  std::thread t([] {
    pthread_setname_np(pthread_self(), "tp-worker-7");
    ThreadContext* c = thread_context();
    REQUIRE(c != nullptr);
    CHECK(c->tid == static_cast<int32_t>(gettid()));
    CHECK(c->comm_view() == "tp-worker-7");
    CHECK(thread_context() == c);  // same context on every call
    bool found = false;
    for (const Cmdline& cl : cmdlines())
      if (cl.pid == c->tid) found = cl.comm == "tp-worker-7";
    CHECK(found);
    pthread_setname_np(pthread_self(), "tp-renamed");
    refresh_thread_comm();
    CHECK(c->comm_view() == "tp-renamed");
    for (const Cmdline& cl : cmdlines())
      if (cl.pid == c->tid) CHECK(cl.comm == "tp-renamed");
  });
  t.join();
}

TEST_CASE("counters: exact sums over live and exited threads", "[core][thread][concurrency]") {
  const uint32_t g = allocate_counter_group();
  REQUIRE(g != 0);
  CHECK(counter_sums(g) == std::array<uint64_t, detail::kGroupSlots>{});
  constexpr int kThreads = 4;
  constexpr int kAdds = 20000;
  std::atomic<int> done{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) {
    ts.emplace_back([&, i] {
      ThreadContext& c = *thread_context();
      auto& grp = thread_counters(c, g);
      for (int k = 0; k < kAdds; ++k) {
        counter_add(grp.v[0]);
        counter_add(grp.v[i + 1], 2);
      }
      done.fetch_add(1);
      while (!release.load()) std::this_thread::yield();
    });
  }
  while (done.load() < kThreads) std::this_thread::yield();
  // All writers are quiet but alive: their slices are summed.
  auto live = counter_sums(g);
  CHECK(live[0] == uint64_t{kThreads} * kAdds);
  for (int i = 0; i < kThreads; ++i) CHECK(live[i + 1] == 2u * kAdds);
  release.store(true);
  for (auto& t : ts) t.join();
  // Exited: folded into the retired totals, nothing lost or counted twice.
  auto after = counter_sums(g);
  CHECK(after == live);
  CHECK(counter_sum(g, 0) == uint64_t{kThreads} * kAdds);
  // A recycled group starts at zero for everyone.
  free_counter_group(g);
  const uint32_t g2 = allocate_counter_group();
  CHECK(counter_sums(g2) == std::array<uint64_t, detail::kGroupSlots>{});
  free_counter_group(g2);
}

TEST_CASE("grace period: synchronize waits for a scope opened before it",
          "[core][rcu][concurrency]") {
  std::atomic<int> stage{0};
  std::thread reader([&] {
    ThreadContext& c = *thread_context();
    {
      WriterScope s(c);
      CHECK(s.depth() == 0);
      CHECK(c.section_epoch() != 0);
      stage.store(1);
      while (stage.load() != 2) std::this_thread::yield();
    }
    CHECK(c.section_epoch() == 0);
  });
  while (stage.load() != 1) std::this_thread::yield();
  const uint64_t before = synchronize_count();
  std::atomic<bool> synced{false};
  std::thread updater([&] {
    synchronize();
    synced.store(true);
  });
  // However long we look, the updater cannot finish while the reader is inside.
  for (int look = 0; look < 20000; ++look) {
    REQUIRE_FALSE(synced.load());
    std::this_thread::yield();
  }
  CHECK(synchronize_count() == before);
  stage.store(2);
  updater.join();
  reader.join();
  CHECK(synced.load());
}

TEST_CASE("thread_context: a signal handler never registers its thread", "[core][thread]") {
  std::thread t([] {
    const uint64_t before = unregistered_drops();
    {
      SignalScope in_handler;              // as a handler would open it
      CHECK(thread_context() == nullptr);  // no malloc or mutex inside a handler
    }
    CHECK(unregistered_drops() == before);  // refusing to register is not itself a drop
    CHECK(thread_context() != nullptr);     // outside the handler, registration works
  });
  t.join();
}

TEST_CASE("grace period: synchronize inside a scope is refused", "[core][rcu]") {
  ThreadContext& c = *thread_context();
  WriterScope s(c);
  CHECK_THROWS_AS(synchronize(), std::logic_error);
}

namespace {
std::atomic<uint32_t> g_handler_depth{99};
std::atomic<uint64_t> g_handler_epoch_seen{0};
void nested_handler(int) {
  SignalScope sig;
  ThreadContext& c = *detail::tl_context;
  WriterScope s(c);
  g_handler_depth.store(s.depth());
  g_handler_epoch_seen.store(c.section_epoch());
}
}  // namespace

TEST_CASE("grace period: a signal handler nests inside a scope and restores it", "[core][rcu]") {
  ThreadContext& c = *thread_context();
  struct sigaction sa {};
  sa.sa_handler = nested_handler;
  struct sigaction old {};
  sigaction(SIGUSR1, &sa, &old);
  uint64_t outer_epoch = 0;
  {
    WriterScope s(c);
    outer_epoch = c.section_epoch();
    raise(SIGUSR1);
    CHECK(c.nesting() == 1);
    CHECK(c.section_epoch() == outer_epoch);
  }
  CHECK(g_handler_depth.load() == 1);
  CHECK(g_handler_epoch_seen.load() == outer_epoch);  // the handler kept the outer epoch
  CHECK(c.nesting() == 0);
  CHECK(c.section_epoch() == 0);
  // Outside any scope, a handler's scope starts and ends its own section.
  raise(SIGUSR1);
  CHECK(g_handler_depth.load() == 0);
  CHECK(c.section_epoch() == 0);
  CHECK(c.in_signal.load() == 0);
  sigaction(SIGUSR1, &old, nullptr);
}

TEST_CASE("grace period: readers never see a freed object (swap, synchronize, free)",
          "[core][rcu][concurrency]") {
  struct Obj {
    uint64_t magic;
    uint64_t value;
  };
  constexpr uint64_t kAlive = 0xA11CEA11CEA11CEull;
  std::atomic<Obj*> current{new Obj{kAlive, 0}};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0};
  std::atomic<uint64_t> reads[2] = {0, 0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) {
    readers.emplace_back([&, i] {
      ThreadContext& c = *thread_context();
      reads[i].fetch_add(1);
      while (!stop.load(std::memory_order_relaxed)) {
        WriterScope s(c);
        const Obj* o = current.load(std::memory_order_acquire);
        for (int k = 0; k < 8; ++k)
          if (o->magic != kAlive) bad.fetch_add(1, std::memory_order_relaxed);
        reads[i].fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  while (reads[0].load() == 0 || reads[1].load() == 0)
    std::this_thread::yield();  // both readers started
  for (uint64_t i = 1; i <= 300; ++i) {
    // Started is not reading: a loaded machine may run the 300 swaps before
    // either reader's first section. Halfway, wait for a whole section of
    // each, so both read between swaps (they loop until stop: this ends).
    if (i == 150) {
      const uint64_t r0 = reads[0].load(), r1 = reads[1].load();
      while (reads[0].load() < r0 + 2 || reads[1].load() < r1 + 2) std::this_thread::yield();
    }
    Obj* old = current.exchange(new Obj{kAlive, i}, std::memory_order_acq_rel);
    synchronize();
    old->magic = 0xDEAD;  // a reader still holding it would see this
    delete old;
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  delete current.load();
  CHECK(bad.load() == 0);
  CHECK(reads[0].load() > 2);  // the midpoint wait above makes these hold
  CHECK(reads[1].load() > 2);
}

TEST_CASE("grace period: one word holds the section's epoch and the depth", "[core][rcu]") {
  ThreadContext& c = *thread_context();
  REQUIRE(c.read_section.load() == 0);
  uint64_t first = 0;
  {
    WriterScope outer(c);
    first = c.section_epoch();
    CHECK(first == detail::gp_global_section.load() >> 16);
    CHECK(c.nesting() == 1);
    {
      WriterScope inner(c);  // as a signal handler's emit would
      CHECK(inner.depth() == 1);
      CHECK(c.nesting() == 2);
      CHECK(c.section_epoch() == first);  // an inner scope keeps the outer epoch
    }
    CHECK(c.nesting() == 1);
    CHECK(c.section_epoch() == first);
  }
  CHECK(c.read_section.load() == 0);
  synchronize();  // advances the epoch by one
  {
    WriterScope again(c);
    CHECK(again.depth() == 0);
    CHECK(c.section_epoch() == first + 1);
  }
  CHECK(c.read_section.load() == 0);
}
