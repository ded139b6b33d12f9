// Break-it: the per-CPU staging slot's rseq claim (buffers/temp_buffer.h,
// Writers::cpu_local; buffers/rseq.h: claim_local). Attacks the invariant
// "at most one live StagedRecord per slot" with oversubscribed threads whose
// affinity another thread keeps flipping, SA_NODEFER signal handlers that
// claim (and re-raise while holding a claim) on the same thread, holders
// that sleep and release from another CPU, a buffer with fewer slots than
// CPUs, and fork() while a slot is held. Every record is owned through a
// per-slot owner word and a byte pattern, so two live claims of one slot,
// or a claim that writes over another's record, fail the test. Label
// "concurrency". Needs rseq: skips when buffers::detail::rseq_usable() is
// false (ThreadSanitizer builds, GLIBC_TUNABLES=glibc.pthread.rseq=0);
// staging_fallback_test.cc covers that case.
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "test_support.h"
#include "tracepipe/buffers/temp_buffer.h"

using namespace tracepipe::buffers;

namespace {

constexpr int kNoOwner = -1;
constexpr uint32_t kMaxCpus = 1024;

void require_rseq() {
  if (!detail::rseq_usable())
    TP_SKIP("rseq or membarrier RSEQ unavailable here (or a ThreadSanitizer build)");
}
uint32_t conf_cpus() { return static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF)); }
uint32_t online_cpus() { return static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)); }

using tp_test::set_thread_affinity;

// Ownership bookkeeping shared by threads and handlers (lock-free, async-signal-safe).
struct Owners {
  std::atomic<int> who[kMaxCpus];
  std::atomic<uint64_t> violations{0};
  Owners() {
    for (auto& w : who) w.store(kNoOwner);
  }
  // Takes the record's slot; fills the record with `who`'s byte.
  void take(const StagedRecord& h, int who_id) {
    if (h.cpu() >= kMaxCpus) {
      violations.fetch_add(1);
      return;
    }
    const int prev = who[h.cpu()].exchange(who_id);
    if (prev != kNoOwner) violations.fetch_add(1);  // two live claims of one slot
    std::memset(h.data().data(), who_id & 0xff, h.data().size());
  }
  // Checks the record still holds `who`'s bytes, gives the slot up, releases.
  void give(const StagedRecord& h, int who_id) {
    for (std::byte b : h.data())
      if (static_cast<int>(b) != (who_id & 0xff)) {
        violations.fetch_add(1);  // someone wrote into our record
        break;
      }
    if (h.cpu() < kMaxCpus && who[h.cpu()].exchange(kNoOwner) != who_id) violations.fetch_add(1);
    TempBuffer::release(h);
  }
};

struct Tally {
  std::atomic<uint64_t> ok{0}, busy{0}, bad_cpu{0}, too_big{0};
  void count(const StagedRecord& h) {
    if (h)
      ok.fetch_add(1, std::memory_order_relaxed);
    else if (h.error() == StageError::busy)
      busy.fetch_add(1, std::memory_order_relaxed);
    else if (h.error() == StageError::bad_cpu)
      bad_cpu.fetch_add(1, std::memory_order_relaxed);
    else
      too_big.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t total() const { return ok + busy + bad_cpu + too_big; }
};

uint64_t sum_busy(const TempBuffer& tb) {
  uint64_t n = 0;
  for (uint32_t c = 0; c < tb.cpus(); ++c) n += tb.stats(c).busy_fallbacks;
  return n;
}

// Moves `threads` between single CPUs and "any CPU" until `stop`.
std::thread affinity_flipper(std::vector<pthread_t>& threads, std::atomic<bool>& stop,
                             std::atomic<uint64_t>& flips) {
  return std::thread([&] {
    std::mt19937 rng(7);
    const uint32_t n = online_cpus();
    while (!stop.load()) {
      for (pthread_t th : threads) {
        const uint32_t pick = rng() % (n + 1);
        set_thread_affinity(th, pick == n ? UINT32_MAX : pick);
      }
      flips.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
}

}  // namespace

TEST_CASE(
    "staging claim: cpu_local slots stay exclusive under oversubscribed threads whose affinity "
    "flips",
    "[staging][rseq][breakit]") {
  require_rseq();
  const uint32_t cpus = conf_cpus();
  REQUIRE(cpus <= kMaxCpus);
  TempBuffer tb(TempBufferConfig{.cpus = cpus, .slot_size = 512, .writers = Writers::cpu_local});
  Owners owners;
  Tally tally;
  const uint32_t nthreads = 4 * online_cpus() + 2;
  constexpr int kIters = 20000;
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> ready{0}, finished{0};
  std::atomic<uint64_t> flips{0}, attempts{0};
  std::vector<std::thread> workers;
  std::vector<pthread_t> handles;
  for (uint32_t t = 0; t < nthreads; ++t) {
    workers.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < nthreads) std::this_thread::yield();
      std::mt19937 rng(t);
      const int me = static_cast<int>(t);
      // kIters claims, and more until some claim was refused: a refusal
      // needs a holder preempted by another worker on its CPU, which a
      // loaded machine may not give in kIters (all keep going, so two of
      // them share a CPU at some point; the bound turns a miss into a failure).
      int i = 0;
      for (; i < kIters || (tally.busy.load() == 0 && i < 100 * kIters); ++i) {
        // The flipper may not have run yet on a loaded machine: halfway, wait
        // for two of its passes, so the second half runs with affinities flipped.
        if (i == kIters / 2) {
          const uint64_t f0 = flips.load();
          while (flips.load() < f0 + 2) std::this_thread::yield();
        }
        const uint32_t len = 1 + rng() % tb.capacity();
        const StagedRecord h = tb.try_claim_local(len);
        tally.count(h);
        if (!h) {
          if (h.error() != StageError::busy) owners.violations.fetch_add(1);
          continue;
        }
        if (h.data().size() != len) owners.violations.fetch_add(1);
        owners.take(h, me);
        if (i % 2 == 0) sched_yield();  // held while another thread runs here
        if (i % 512 == 0) usleep(50);   // held while asleep: likely migrated, released elsewhere
        owners.give(h, me);
      }
      attempts.fetch_add(static_cast<uint64_t>(i));
      finished.fetch_add(1);
      while (!stop.load()) std::this_thread::yield();  // the flipper still names this thread
    });
    handles.push_back(workers.back().native_handle());
  }
  std::thread flipper = affinity_flipper(handles, stop, flips);
  while (finished.load() < nthreads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  flipper.join();
  for (auto& w : workers) w.join();

  INFO("ok " << tally.ok << " busy " << tally.busy << " flips " << flips);
  CHECK(owners.violations == 0);
  CHECK(attempts.load() >= uint64_t{nthreads} * kIters);
  CHECK(tally.total() == attempts.load());
  CHECK(tally.bad_cpu == 0);  // cpus = every configured CPU: never out of range
  CHECK(tb.bad_cpu_fallbacks() == 0);
  CHECK(tally.too_big == 0);
  CHECK(sum_busy(tb) == tally.busy);  // every refusal counted once, on some CPU
  CHECK(tally.ok > 0);
  CHECK(tally.busy > 0);  // holders were preempted: the contention did happen
  CHECK(flips >= 2);      // the midpoint wait above makes this hold
  for (uint32_t c = 0; c < cpus; ++c) CHECK_FALSE(tb.busy_for_testing(c));
}

namespace {
// SA_NODEFER handler state: the handler claims, and while holding its claim
// re-raises itself (a nested handler on the same thread), up to kMaxDepth.
TempBuffer* g_tb = nullptr;
Owners* g_owners = nullptr;
Tally* g_tally = nullptr;
std::atomic<uint64_t> g_nested_on_held{0}, g_nested_on_held_busy{0}, g_handler_runs{0};
thread_local int t_depth = 0;
thread_local int t_id = 0;
constexpr int kMaxDepth = 4;

void nodefer_handler(int sig) {
  const int saved = errno;
  g_handler_runs.fetch_add(1, std::memory_order_relaxed);
  if (t_depth >= kMaxDepth) {
    errno = saved;
    return;
  }
  ++t_depth;
  const int me = t_id * 16 + t_depth;  // distinct per (thread, depth)
  const StagedRecord h = g_tb->try_claim_local(8 + static_cast<uint32_t>(t_depth) * 8);
  g_tally->count(h);
  if (h) g_owners->take(h, me);
  if (!h && h.error() != StageError::busy) g_owners->violations.fetch_add(1);
  // Nested on the same thread (whether or not we hold a slot). While we hold
  // slot h.cpu(), a nested claim on that CPU must find it busy; the owner
  // word catches it if it does not (wherever it ran).
  const int32_t before = detail::rseq_cpu();
  raise(sig);
  const int32_t after = detail::rseq_cpu();
  if (h) {
    if (before == static_cast<int32_t>(h.cpu()) && after == before)
      g_nested_on_held.fetch_add(1, std::memory_order_relaxed);
    g_owners->give(h, me);
  }
  --t_depth;
  errno = saved;
}
}  // namespace

TEST_CASE(
    "staging claim: SA_NODEFER handlers that claim while their own thread holds a slot are refused",
    "[staging][rseq][signal][breakit]") {
  require_rseq();
  const uint32_t cpus = conf_cpus();
  REQUIRE(cpus <= kMaxCpus);
  TempBuffer tb(TempBufferConfig{.cpus = cpus, .slot_size = 256, .writers = Writers::cpu_local});
  Owners owners;
  Tally tally;
  g_tb = &tb;
  g_owners = &owners;
  g_tally = &tally;
  g_nested_on_held = 0;
  g_handler_runs = 0;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = nodefer_handler;
  sa.sa_flags = SA_NODEFER | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);

  // 1. Deterministic: pinned, claim, raise while holding: the nested
  // handler (same CPU, same thread) is refused, recursively.
  {
    tp_test::PinToCpu pin(0);
    REQUIRE(pin.ok());
    t_id = 60;
    const StagedRecord outer = tb.try_claim_local(32);
    REQUIRE(outer);
    REQUIRE(outer.cpu() == 0);
    owners.take(outer, 999);
    raise(SIGUSR1);  // depths 1..4 claim: all busy (the outer holds CPU 0's slot)
    CHECK(tally.busy == kMaxDepth);
    CHECK(tally.ok == 0);
    owners.give(outer, 999);
    raise(SIGUSR1);  // depth 1 gets the slot, depths 2..4 are refused
    CHECK(tally.ok == 1);
    CHECK(tally.busy == kMaxDepth + (kMaxDepth - 1));
    CHECK(g_nested_on_held == 1);
    CHECK(tb.stats(0).busy_fallbacks == tally.busy);
    CHECK(owners.violations == 0);
    CHECK_FALSE(tb.busy_for_testing(0));
  }

  // 2. Storm: unpinned workers that claim/hold/release, a signaller that
  // keeps interrupting them (handlers nest through SA_NODEFER), and the
  // affinity flipper moving them between CPUs.
  const uint32_t nthreads = 2 * online_cpus() + 1;
  constexpr int kIters = 30000;
  constexpr uint64_t kMinRuns = 2000;
  std::atomic<bool> stop{false};
  std::atomic<uint32_t> running{0}, finished{0};
  std::atomic<uint64_t> flips{0};
  std::vector<std::thread> workers;
  std::vector<pthread_t> handles;
  for (uint32_t t = 0; t < nthreads; ++t) {
    workers.emplace_back([&, t] {
      t_id = static_cast<int>(t);
      running.fetch_add(1);
      std::mt19937 rng(t);
      const int me = 1000 + static_cast<int>(t);
      // kIters claims, and more until the storm has reached the workers
      // (a loaded machine may start the signaller late) and a handler has
      // nested over a held slot (checked below).
      for (int i = 0;
           i < kIters ||
           ((g_handler_runs.load() < kMinRuns || g_nested_on_held.load() < 2) && i < 200 * kIters);
           ++i) {
        const StagedRecord h = tb.try_claim_local(1 + rng() % tb.capacity());
        tally.count(h);
        if (!h) continue;
        owners.take(h, me);
        if (i % 64 == 0) sched_yield();
        owners.give(h, me);
      }
      finished.fetch_add(1);
      // Stay alive (no signal may hit thread exit) until the signaller stops.
      while (!stop.load()) std::this_thread::yield();
    });
    handles.push_back(workers.back().native_handle());
  }
  while (running.load() < nthreads) std::this_thread::yield();
  std::thread flipper = affinity_flipper(handles, stop, flips);
  std::atomic<bool> writers_done{false};
  std::thread signaller([&] {
    uint32_t n = 0;
    while (!writers_done.load()) {
      pthread_kill(handles[n++ % handles.size()], SIGUSR1);
      if (n % 8 == 0) std::this_thread::yield();
    }
  });
  // Wait until every worker has done its claims (they then spin on stop).
  while (finished.load() < nthreads) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  writers_done = true;
  signaller.join();
  stop = true;
  flipper.join();
  for (auto& w : workers) w.join();
  sigaction(SIGUSR1, &old, nullptr);

  INFO("handler runs " << g_handler_runs << " nested-on-held " << g_nested_on_held << " ok "
                       << tally.ok << " busy " << tally.busy);
  CHECK(owners.violations == 0);
  CHECK(g_handler_runs >= kMinRuns);  // the storm reached the workers
  CHECK(g_nested_on_held > 1);  // nesting over a held slot happened in the storm too (1 in part 1)
  CHECK(tally.bad_cpu == 0);
  CHECK(tb.bad_cpu_fallbacks() == 0);
  CHECK(sum_busy(tb) == tally.busy);  // handlers' refusals counted too
  for (uint32_t c = 0; c < cpus; ++c) CHECK_FALSE(tb.busy_for_testing(c));
  g_tb = nullptr;
  g_owners = nullptr;
  g_tally = nullptr;
}

TEST_CASE(
    "staging claim: a cpu_local slot held across sleep refuses its CPU's other threads, then frees "
    "from elsewhere",
    "[staging][rseq][breakit]") {
  require_rseq();
  if (online_cpus() < 2) TP_SKIP("needs a second online CPU");
  TempBuffer tb(
      TempBufferConfig{.cpus = conf_cpus(), .slot_size = 128, .writers = Writers::cpu_local});
  constexpr int kRounds = 6;
  constexpr int kHammers = 3;
  std::atomic<int> held{0};  // round number while the holder holds CPU 0's slot, else 0
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> refused_while_held{0}, won_while_held{0}, won_free{0}, other_errors{0};
  std::vector<std::thread> hammers;
  for (int k = 0; k < kHammers; ++k)
    hammers.emplace_back([&] {
      tp_test::PinToCpu pin(0);
      if (!pin.ok()) other_errors.fetch_add(1);
      while (!stop.load()) {
        const int before = held.load();
        const StagedRecord h = tb.try_claim_local(16);
        const int after = held.load();
        if (h) {
          if (h.cpu() != 0) other_errors.fetch_add(1);
          // The holder clears `held` before it releases: if it is still set
          // after our claim succeeded, both of us held the slot.
          if (before != 0 && after == before) won_while_held.fetch_add(1);
          won_free.fetch_add(1);
          TempBuffer::release(h);
        } else if (h.error() == StageError::busy) {
          if (before != 0 && after == before) refused_while_held.fetch_add(1);
        } else {
          other_errors.fetch_add(1);
        }
        sched_yield();
      }
    });
  for (int round = 1; round <= kRounds; ++round) {
    StagedRecord h;
    for (int tries = 0; !h && tries < 100000; ++tries) {
      tp_test::PinToCpu on0(0);
      REQUIRE(on0.ok());
      h = tb.try_claim_local(64);  // the hammers hold it briefly too
      if (!h)
        sched_yield();
      else
        held.store(round);
    }
    REQUIRE(h);
    REQUIRE(h.cpu() == 0);
    const uint64_t refused0 = refused_while_held.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(15));  // preempted while holding
    // A loaded machine may give the hammers no turn in 15 ms: keep holding
    // (asleep) until one of them was refused this round. They claim until
    // stop, so this ends; 10 s bounds it should a hammer be unable to pin.
    for (int i = 0; i < 10000 && refused_while_held.load() == refused0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    {
      tp_test::PinToCpu on1(1);  // release from another CPU
      REQUIRE(on1.ok());
      CHECK(tb.busy_for_testing(0));
      held.store(0);
      TempBuffer::release(h);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // Free now: the hammers must get the slot (up to 10 s: a loaded machine
  // may have given them no turn in the 2 ms gaps above).
  for (int i = 0; i < 10000 && won_free.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  for (auto& t : hammers) t.join();
  INFO("refused while held " << refused_while_held << ", won when free " << won_free);
  CHECK(won_while_held == 0);
  CHECK(other_errors == 0);
  CHECK(refused_while_held >= kRounds);  // one each round at least: the wait above
  CHECK(won_free > 0);
  CHECK_FALSE(tb.busy_for_testing(0));
}

TEST_CASE(
    "staging claim: a cpu_local buffer with fewer slots than CPUs refuses the others as bad_cpu, "
    "never out of range",
    "[staging][rseq][breakit]") {
  require_rseq();
  if (online_cpus() < 2) TP_SKIP("needs a second online CPU");
  TempBuffer tb(TempBufferConfig{.cpus = 1, .slot_size = 64, .writers = Writers::cpu_local});
  {
    tp_test::PinToCpu on1(1);
    REQUIRE(on1.ok());
    const StagedRecord a = tb.try_claim_local(8);
    CHECK(a.error() == StageError::bad_cpu);
    CHECK(tb.bad_cpu_fallbacks() == 1);
    CHECK(tb.try_claim(0, 8).error() ==
          StageError::bad_cpu);  // slot 0 exists, but we are not on CPU 0
    CHECK(tb.bad_cpu_fallbacks() == 2);
    CHECK(tb.try_claim(1, 8).error() == StageError::bad_cpu);  // no slot 1
    CHECK(tb.bad_cpu_fallbacks() == 3);
    CHECK(tb.try_claim_local(57).error() == StageError::bad_cpu);  // the CPU is checked first
    CHECK(tb.bad_cpu_fallbacks() == 4);
    CHECK(tb.stats(1).busy_fallbacks == 0);  // out of range: zeros, no read past the slots
    CHECK_FALSE(tb.busy_for_testing(0));
  }
  {
    tp_test::PinToCpu on0(0);
    REQUIRE(on0.ok());
    const StagedRecord b = tb.try_claim_local(56);
    REQUIRE(b);
    CHECK(b.cpu() == 0);
    CHECK(tb.try_claim_local(8).error() == StageError::busy);
    TempBuffer::release(b);
  }
  // Migrating: every claim is either CPU 0's slot or bad_cpu, and each
  // bad_cpu is counted once.
  const uint64_t bad0 = tb.bad_cpu_fallbacks();
  Tally tally;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> flips{0}, wrong{0};
  std::atomic<bool> worker_done{false}, flipper_stopped{false};
  std::thread worker([&] {
    for (int i = 0; i < 40000; ++i) {
      if (i % 4000 == 0) set_thread_affinity(pthread_self(), (i / 4000) % 2);  // both CPUs for sure
      const StagedRecord h = tb.try_claim_local(8);
      tally.count(h);
      if (h) {
        if (h.cpu() != 0) wrong.fetch_add(1);
        TempBuffer::release(h);
      }
    }
    worker_done = true;
    while (!flipper_stopped.load())
      std::this_thread::yield();  // the flipper still names this thread
    // One claim on each CPU for sure, whatever the flipper left us: a
    // loaded machine may have kept the loop above on one CPU.
    for (uint32_t cpu : {0u, 1u}) {
      set_thread_affinity(pthread_self(), cpu);
      const StagedRecord h = tb.try_claim_local(8);
      tally.count(h);
      if (h) {
        if (h.cpu() != 0) wrong.fetch_add(1);
        TempBuffer::release(h);
      }
    }
  });
  std::vector<pthread_t> handles{worker.native_handle()};
  std::thread flipper = affinity_flipper(handles, stop, flips);
  while (!worker_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop = true;
  flipper.join();
  flipper_stopped = true;
  worker.join();
  CHECK(wrong == 0);
  CHECK(tally.total() == 40002);
  CHECK(tally.ok > 0);
  CHECK(tally.bad_cpu > 0);
  CHECK(tally.busy == 0);  // one thread, released every time
  CHECK(tb.bad_cpu_fallbacks() - bad0 == tally.bad_cpu);
  CHECK_FALSE(tb.busy_for_testing(0));
}

namespace {
// Waits for `pid` up to `seconds`; kills it on timeout. The exit status, or
// -1 (killed: a hang) / -2 (died by a signal).
int wait_child(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int st = 0;
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}
}  // namespace

TEST_CASE(
    "staging claim: fork while another thread holds a cpu_local slot: the child's slot stays busy, "
    "no hang",
    "[staging][rseq][fork][breakit]") {
  require_rseq();
  if (online_cpus() < 2) TP_SKIP("needs a second online CPU");
  TempBuffer tb(
      TempBufferConfig{.cpus = conf_cpus(), .slot_size = 128, .writers = Writers::cpu_local});
  tp_test::PinToCpu on0(0);
  REQUIRE(on0.ok());
  std::atomic<int> phase{0};
  std::thread holder([&] {
    tp_test::PinToCpu pin(0);
    const StagedRecord h = tb.try_claim_local(16);
    phase = h ? 1 : -1;
    while (phase.load() == 1) std::this_thread::yield();
    TempBuffer::release(h);
  });
  while (phase.load() == 0) std::this_thread::yield();
  REQUIRE(phase.load() == 1);
  REQUIRE(tb.busy_for_testing(0));

  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The child: the holder thread does not exist here, its claim was
    // copied. Exit codes name the first failed expectation.
    if (!tb.busy_for_testing(0)) _exit(10);
    if (tb.try_claim_local(8).error() != StageError::busy) _exit(11);  // on CPU 0: busy, forever
    if (tb.stats(0).busy_fallbacks != 1) _exit(12);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) _exit(13);
    // rseq survives fork: the section still runs (and claims CPU 1's slot).
    const StagedRecord h1 = tb.try_claim_local(8);
    if (!h1 || h1.cpu() != 1) _exit(14);
    TempBuffer::release(h1);
    if (tb.busy_for_testing(1)) _exit(15);
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) _exit(16);
    if (tb.try_claim_local(8).error() != StageError::busy) _exit(17);
    _exit(0);
  }
  const int child = wait_child(pid, 20);
  phase = 2;
  holder.join();
  INFO("child status " << child << " (-1: hung and killed, -2: crashed, 10..17: failed step)");
  CHECK(child == 0);
  CHECK_FALSE(tb.busy_for_testing(0));     // the parent's holder released
  CHECK(tb.stats(0).busy_fallbacks == 0);  // the child's refusal was counted in the child only
}

TEST_CASE(
    "staging claim: fork while the forking thread holds a cpu_local slot: the child owns and "
    "releases its copy",
    "[staging][rseq][fork][breakit]") {
  require_rseq();
  TempBuffer tb(
      TempBufferConfig{.cpus = conf_cpus(), .slot_size = 128, .writers = Writers::cpu_local});
  tp_test::PinToCpu on0(0);
  REQUIRE(on0.ok());
  const StagedRecord h = tb.try_claim_local(16);
  REQUIRE(h);
  std::memset(h.data().data(), 0x5a, h.data().size());
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (std::byte b : h.data())
      if (b != std::byte{0x5a}) _exit(20);
    if (tb.try_claim_local(8).error() != StageError::busy) _exit(21);
    TempBuffer::release(h);
    const StagedRecord again = tb.try_claim_local(8);
    if (!again || again.cpu() != 0) _exit(22);
    TempBuffer::release(again);
    _exit(0);
  }
  const int child = wait_child(pid, 20);
  INFO("child status " << child);
  CHECK(child == 0);
  CHECK(tb.busy_for_testing(0));  // the child's release freed only its copy
  CHECK(tb.try_claim_local(8).error() == StageError::busy);
  TempBuffer::release(h);
  CHECK_FALSE(tb.busy_for_testing(0));
}
