// cpu_local writers (buffers/rseq.h): the restartable-sequence CAS, records
// landing in the buffer of the writer's CPU, nested writers forced between
// the steps, pause() against spinning writers, and a stress run with
// migrating threads and signal handlers (conservation, no torn record,
// stamps never go back). Label "concurrency". Under ThreadSanitizer the
// cpu_local buffer uses the locked CAS (the sanitizer cannot follow rseq), so
// these tests then check that fallback.
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include "buffer_test_util.h"
#include "test_support.h"

using namespace tp_buffers_test;

namespace {

constexpr Writers Local = Writers::cpu_local;
template <OverflowMode M, class Hooks = NoHooks>
using LocalRB = RingBuffer<M, FunctionClock, Hooks, Local>;

uint32_t online_cpus() {
  return static_cast<uint32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

bool pin_to(uint32_t cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  return sched_setaffinity(0, sizeof s, &s) == 0;
}
void unpin() {
  cpu_set_t s;
  CPU_ZERO(&s);
  for (uint32_t c = 0; c < CPU_SETSIZE && c < 1024; ++c) CPU_SET(c, &s);
  sched_setaffinity(0, sizeof s, &s);
}

void require_rseq() {
#if TRACEPIPE_TSAN
  if (!detail::rseq_registered())
    TP_SKIP("rseq unavailable on this machine (or disabled by GLIBC_TUNABLES)");
#else
  if (!detail::rseq_usable()) TP_SKIP("rseq or membarrier RSEQ unavailable on this machine");
#endif
}

RingBufferConfig config_for_all_cpus(size_t size, size_t subbuf) {
  return RingBufferConfig{.cpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF)),
                          .size_per_cpu = size,
                          .subbuf_size = subbuf};
}

// Runs nest->at_step once, at the first outer occurrence of nest->step.
struct RseqNest {
  Step step = Step::clocked;
  std::function<void()> fn;
  int depth = 0;
};
struct RseqTestHooks {
  RseqNest* nest = nullptr;
  void operator()(Step s, uint32_t) const noexcept {
    if (nest == nullptr || !nest->fn || nest->depth != 0 || s != nest->step) return;
    ++nest->depth;
    auto f = std::move(nest->fn);
    nest->fn = nullptr;
    f();
    --nest->depth;
  }
};

}  // namespace

#if !TRACEPIPE_TSAN
TEST_CASE("rseq: cas16_local stores only on its CPU and only over the expected value",
          "[buffers][rseq]") {
  require_rseq();
  const uint32_t n = online_cpus();
  REQUIRE(pin_to(0));
  detail::TailWord t{100, 7};
  CHECK(detail::cas16_local(&t, 0, 100, 7, 180, 9) == detail::LocalCas::ok);
  CHECK(t.pos == 180);
  CHECK(t.ts == 9);
  CHECK(detail::cas16_local(&t, 0, 100, 9, 260, 10) == detail::LocalCas::changed);  // pos differs
  CHECK(detail::cas16_local(&t, 0, 180, 8, 260, 10) == detail::LocalCas::changed);  // ts differs
  CHECK(t.pos == 180);
  CHECK(t.ts == 9);
  if (n > 1) {
    CHECK(detail::cas16_local(&t, 1, 180, 9, 260, 10) ==
          detail::LocalCas::migrated);  // not on CPU 1
    CHECK(t.pos == 180);
  }
  unpin();
}
#endif

TEST_CASE("rseq: a cpu_local writer's record lands in the buffer of the CPU it runs on",
          "[buffers][rseq]") {
  require_rseq();
  const uint32_t n = online_cpus();
  LocalRB<OverflowMode::drop_newest> rb(config_for_all_cpus(8192, 1024));
  for (uint32_t cpu = 0; cpu < n && cpu < 4; ++cpu) {
    REQUIRE(pin_to(cpu));
    // The cpu argument is ignored: the writer's own CPU decides.
    const uint32_t other = (cpu + 1) % rb.cpus();
    Reservation r = rb.reserve(other, 24);
    REQUIRE(r);
    CHECK(r.cpu() == cpu);
    std::memset(r.payload().data(), 0x40 + static_cast<int>(cpu), 24);
    rb.commit(r);
    ConsumingReader rd(rb, cpu);
    auto got = drain(rd);
    REQUIRE(got.size() == 1);
    CHECK(got[0].tag == 0x40 + cpu);
    CHECK(got[0].uniform);
  }
  unpin();
}

TEST_CASE(
    "rseq: a writer nested between the load and the CAS lands first, reclaim and padding still "
    "work",
    "[buffers][rseq]") {
  require_rseq();
  REQUIRE(pin_to(0));
  RseqNest nest;
  LocalRB<OverflowMode::overwrite, RseqTestHooks> rb(config_for_all_cpus(4096, 256), &fake_clock,
                                                     RseqTestHooks{&nest});
  g_fake_now = 1000;
  // Nested at (B): the outer section's compare fails, it retries after the nested record.
  nest.step = Step::clocked;
  nest.fn = [&] {
    g_fake_now = 2000;
    REQUIRE(put(rb, 0, 16, 2));
  };
  REQUIRE(put(rb, 0, 16, 1));
  // A discard of the last record reclaims its space; one that is not last becomes padding.
  Reservation a = rb.reserve(0, 16);
  REQUIRE(a);
  rb.discard(a);
  Reservation b = rb.reserve(0, 16);
  Reservation c = rb.reserve(0, 16);
  REQUIRE(b);
  REQUIRE(c);
  std::memset(c.payload().data(), 3, 16);
  rb.commit(c);
  rb.discard(b);
  ConsumingReader rd(rb, 0);
  const auto got = drain(rd);
  REQUIRE(got.size() == 3);
  CHECK(tags(got) == std::vector<int>{2, 1, 3});
  CHECK(got[0].ts == 2000);
  CHECK(got[1].ts == 2000);  // clamped to the nested record's stamp
  const CpuStats s = rb.stats(0);
  CHECK(s.reclaimed == 1);
  CHECK(s.discarded - s.reclaimed == 1);  // the padding
  CHECK(s.discarded == 2);
  unpin();
}

TEST_CASE(
    "rseq: a cpu_local writer on a CPU without a buffer is counted bad_cpu and writes nowhere",
    "[buffers][rseq]") {
  require_rseq();
  if (online_cpus() < 2) TP_SKIP("needs a second CPU");
  // One buffer on a machine with more CPUs: the writer on CPU 1 has none.
  LocalRB<OverflowMode::drop_newest> rb(
      RingBufferConfig{.cpus = 1, .size_per_cpu = 4096, .subbuf_size = 1024});
  REQUIRE(pin_to(1));
  for (uint32_t i = 0; i < 5; ++i) {
    const Reservation r = rb.reserve(0, 16);  // the cpu argument does not matter: CPU 1 decides
    CHECK_FALSE(r);
    CHECK(r.error() == ReserveError::bad_cpu);
    CHECK(r.cpu() == 1);
  }
  const std::byte payload[8] = {};
  CHECK_FALSE(rb.write(0, payload));
  CHECK(rb.lost_bad_cpu() == 6);
  const CpuStats s0 = rb.stats(0);  // CPU 0's buffer saw none of it
  CHECK(s0.entries == 0);
  CHECK(s0.lost() == 0);
  CHECK(rb.stats(1).entries == 0);  // no such CPU: zeroed stats, no out-of-bounds read
  // Back on CPU 0 the same writer lands in buffer 0.
  REQUIRE(pin_to(0));
  CHECK(rb.write(5, payload));
  CHECK(rb.stats(0).entries == 1);
  CHECK(rb.lost_bad_cpu() == 6);
  unpin();
}

namespace {

// pause()'s fences, replaced through the Hooks policy (ring_buffer.h: NoHooks).
struct FenceCtl {
  bool membarrier_works = true;  // false: rseq_fence() fails as if the system call was refused
  bool visits_work = true;       // false: run_on_cpu() fails for every CPU
  std::atomic<uint32_t> fences{0};
  std::atomic<uint32_t> visits[64] = {};
  std::atomic<int32_t> ran_on[64] = {};
};
struct FenceHooks {
  FenceCtl* ctl = nullptr;
  void operator()(Step, uint32_t) const noexcept {}
  bool rseq_fence() noexcept {
    ctl->fences.fetch_add(1);
    return ctl->membarrier_works && detail::rseq_fence();
  }
  bool run_on_cpu(uint32_t c) noexcept {
    if (!ctl->visits_work) return false;
    const bool ok = detail::run_on_cpu(c);
    if (c < 64) {
      ctl->visits[c].fetch_add(1);
      ctl->ran_on[c] = ok ? sched_getcpu() : -1;
    }
    return ok;
  }
};

[[maybe_unused]] std::vector<uint32_t> affinity_of_this_thread() {  // unused in TSan builds
  cpu_set_t s;
  CPU_ZERO(&s);
  sched_getaffinity(0, sizeof s, &s);
  std::vector<uint32_t> v;
  for (uint32_t c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &s)) v.push_back(c);
  return v;
}

// Spinning writers on every CPU against 200 pause/resume rounds: a writer
// that starts after pause() returned and before resume() must fail.
// Returns the number of violations (and the pause() results seen). With a
// fence hook that does nothing, 2000 rounds saw 20k-120k violations here:
// a lost PAUSED bit leaves its CPU recording for the whole pause.
template <class RB>
uint64_t pause_race(RB& rb, std::vector<PauseFence>* results = nullptr, int rounds = 200) {
  const uint32_t n = std::min<uint32_t>(online_cpus(), 4);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> generation{0};  // odd: paused (pause() has returned)
  std::atomic<uint64_t> violations{0}, writes{0};
  std::atomic<uint32_t> ready{0};
  std::vector<std::thread> writers;
  for (uint32_t t = 0; t < 2 * n; ++t) {
    writers.emplace_back([&, t] {
      pin_to(t % n);
      bool first = true;
      while (!stop.load(std::memory_order_relaxed)) {
        if (first) {
          first = false;
          ready.fetch_add(1);
        }
        const uint64_t g = generation.load(std::memory_order_acquire);
        Reservation r = rb.reserve(0, 32);
        if (r) {
          rb.commit(r);
          writes.fetch_add(1, std::memory_order_relaxed);
          // Paused before we started and still the same pause: we must have failed.
          if ((g & 1) == 1 && generation.load(std::memory_order_acquire) == g)
            violations.fetch_add(1);
        }
      }
    });
  }
  // Every writer is writing before the first pause (else the check checks nothing).
  while (ready.load() < 2 * n || writes.load() < 2 * n) std::this_thread::yield();
  auto paused_now = [&] {
    uint64_t p = 0;
    for (uint32_t c = 0; c < rb.cpus(); ++c) p += rb.stats(c).lost_paused;
    return p;
  };
  for (int round = 0; round < rounds; ++round) {
    const PauseFence f = rb.pause();
    const uint64_t paused0 = paused_now();
    if (results != nullptr) results->push_back(f);
    generation.fetch_add(1, std::memory_order_acq_rel);  // now odd
    std::this_thread::yield();
    // A loaded machine may run no writer between pause() and resume() in
    // any round (then nothing was checked): each pause lasts until some
    // writer was refused after pause() returned. They reserve until stop,
    // so this ends.
    while (paused_now() == paused0) std::this_thread::yield();
    generation.fetch_add(1, std::memory_order_acq_rel);  // even again, before resume
    rb.resume();
    std::this_thread::yield();
  }
  stop = true;
  for (auto& w : writers) w.join();
  CHECK(writes.load() > 0);
  uint64_t paused_losses = 0;
  for (uint32_t c = 0; c < rb.cpus(); ++c) paused_losses += rb.stats(c).lost_paused;
  INFO("writes " << writes.load() << ", lost while paused " << paused_losses);
  CHECK(paused_losses >= static_cast<uint64_t>(rounds));  // the wait above makes this hold
  return violations.load();
}

}  // namespace

TEST_CASE("rseq: once pause() returns no cpu_local writer reserves, on any CPU",
          "[buffers][rseq][concurrency]") {
  require_rseq();
  LocalRB<OverflowMode::overwrite> rb(config_for_all_cpus(64 * 1024, 1024));
  std::vector<PauseFence> results;
  CHECK(pause_race(rb, &results) == 0);
  const PauseFence expect = TRACEPIPE_TSAN ? PauseFence::not_needed : PauseFence::membarrier;
  CHECK(std::count(results.begin(), results.end(), expect) == static_cast<long>(results.size()));
  CHECK(rb.pause_fence_fallbacks() == 0);
  CHECK(rb.pause_unfenced() == 0);
}

#if !TRACEPIPE_TSAN
TEST_CASE(
    "rseq: pause() whose membarrier fails fences by visiting every CPU, no writer reserves after "
    "it",
    "[buffers][rseq][concurrency]") {
  require_rseq();
  FenceCtl ctl;
  ctl.membarrier_works = false;
  LocalRB<OverflowMode::overwrite, FenceHooks> rb(config_for_all_cpus(64 * 1024, 1024),
                                                  FunctionClock{}, FenceHooks{&ctl});
  std::vector<PauseFence> results;
  CHECK(pause_race(rb, &results, 100) == 0);
  CHECK(std::count(results.begin(), results.end(), PauseFence::cpu_visits) == 100);
  CHECK(rb.pause_fence_fallbacks() == 100);
  CHECK(rb.pause_unfenced() == 0);
  CHECK(ctl.fences.load() >= 100);  // the membarrier was tried first, every time
  for (uint32_t c = 0; c < online_cpus() && c < 64; ++c) CHECK(ctl.visits[c].load() >= 100);
}

TEST_CASE(
    "rseq: the CPU visits run on each CPU, skip offline ones and restore the caller's affinity",
    "[buffers][rseq]") {
  require_rseq();
  const uint32_t n = online_cpus();
  REQUIRE(n ==
          static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF)));  // no offline CPU below n here
  FenceCtl ctl;
  ctl.membarrier_works = false;
  // Two more buffers than CPUs: CPUs n and n+1 do not exist (offline), so
  // run_on_cpu fails for them and the fence must skip them, not fail.
  RingBufferConfig cfg = config_for_all_cpus(8192, 1024);
  cfg.cpus = n + 2;
  LocalRB<OverflowMode::drop_newest, FenceHooks> rb(cfg, FunctionClock{}, FenceHooks{&ctl});
  const uint32_t home = n - 1;  // the caller is pinned to the last CPU: the visits must put it back
  REQUIRE(pin_to(home));
  CHECK(rb.pause() == PauseFence::cpu_visits);
  CHECK(affinity_of_this_thread() == std::vector<uint32_t>{home});
  CHECK(sched_getcpu() == static_cast<int>(home));
  for (uint32_t c = 0; c < n + 2; ++c) {
    INFO("cpu " << c);
    CHECK(ctl.visits[c].load() == 1);
    CHECK(ctl.ran_on[c].load() == (c < n ? static_cast<int32_t>(c) : -1));
  }
  CHECK(rb.pause_fence_fallbacks() == 1);
  CHECK(rb.pause_unfenced() == 0);
  // Paused for real: a writer on this CPU is refused and counted.
  CHECK_FALSE(rb.reserve(0, 16));
  CHECK(rb.stats(home).lost_paused == 1);
  rb.resume();
  unpin();
}

TEST_CASE("rseq: pause() that can fence neither way says so and counts it", "[buffers][rseq]") {
  require_rseq();
  FenceCtl ctl;
  ctl.membarrier_works = false;
  ctl.visits_work = false;
  LocalRB<OverflowMode::drop_newest, FenceHooks> rb(config_for_all_cpus(8192, 1024),
                                                    FunctionClock{}, FenceHooks{&ctl});
  REQUIRE(pin_to(0));
  const std::vector<uint32_t> before = affinity_of_this_thread();
  CHECK(rb.pause() == PauseFence::failed);
  CHECK(rb.pause_unfenced() == 1);
  CHECK(rb.pause_fence_fallbacks() == 0);
  CHECK(ctl.fences.load() == 1);
  CHECK(affinity_of_this_thread() == before);
  // The bits are set all the same: writers that run now are refused.
  CHECK(rb.paused());
  CHECK_FALSE(rb.reserve(0, 16));
  CHECK(rb.stats(0).lost_paused == 1);
  // The membarrier works again: the next pause() is fenced.
  ctl.membarrier_works = true;
  CHECK(rb.pause() == PauseFence::membarrier);
  CHECK(rb.pause_unfenced() == 1);
  rb.resume();
  CHECK(rb.reserve(0, 16));
  unpin();
}

TEST_CASE("rseq: an any_cpu buffer's pause() needs no fence", "[buffers][rseq]") {
  FenceCtl ctl;
  RingBuffer<OverflowMode::drop_newest, FunctionClock, FenceHooks> rb(
      RingBufferConfig{.cpus = 2, .size_per_cpu = 4096, .subbuf_size = 1024}, FunctionClock{},
      FenceHooks{&ctl});
  CHECK(rb.pause() == PauseFence::not_needed);
  CHECK(ctl.fences.load() == 0);
  CHECK(rb.pause_unfenced() == 0);
}
#endif

namespace {

// Stress: each record is {writer, seq, checksum, filler}; writers are not
// pinned (they migrate), and a signal handler writes nested records.
struct Rec {
  uint32_t writer;
  uint32_t seq;
  uint64_t sum;
  uint8_t fill[16];
};
uint64_t checksum(uint32_t w, uint32_t s) {
  return (uint64_t{w} << 32 | s) * 0x9E3779B97F4A7C15ull;
}

LocalRB<OverflowMode::drop_newest>* g_signal_rb = nullptr;
std::atomic<uint32_t> g_sig_seq{0};
std::atomic<uint64_t> g_sig_written{0}, g_sig_failed{0};
constexpr uint32_t kSigWriter = 0xffff;

void on_rseq_signal(int) {
  if (g_signal_rb == nullptr) return;
  const uint32_t s = g_sig_seq.fetch_add(1);
  Rec r{kSigWriter, s, checksum(kSigWriter, s), {}};
  std::memset(r.fill, static_cast<int>(s & 0xff), sizeof r.fill);
  if (g_signal_rb->write(0, std::as_bytes(std::span(&r, 1))))
    g_sig_written.fetch_add(1);
  else
    g_sig_failed.fetch_add(1);
}

}  // namespace

TEST_CASE(
    "rseq: migrating writers and signal handlers — no torn or duplicated record, conservation "
    "exact",
    "[buffers][rseq][concurrency]") {
  require_rseq();
  LocalRB<OverflowMode::drop_newest> rb(config_for_all_cpus(256 * 1024, 1024));
  g_signal_rb = &rb;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = on_rseq_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &sa, &old);

  constexpr uint32_t kWriters = 4, kPer = 20000;
  std::atomic<int> running{0};
  std::atomic<uint64_t> discards{0};
  std::vector<pthread_t> ids(kWriters);
  std::vector<std::thread> writers;
  std::atomic<bool> go{false};
  for (uint32_t w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      ids[w] = pthread_self();
      running.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (uint32_t s = 0; s < kPer; ++s) {
        Rec r{w, s, checksum(w, s), {}};
        std::memset(r.fill, static_cast<int>(s & 0xff), sizeof r.fill);
        Reservation res = rb.reserve(0, sizeof r);
        if (!res) continue;  // counted lost by the buffer
        std::memcpy(res.payload().data(), &r, sizeof r);
        if (s % 7 == 3) {
          rb.discard(res);  // a reject: reclaimed or padding
          discards.fetch_add(1);
        } else {
          rb.commit(res);
        }
        if (s % 1024 == 0) sched_yield();  // invite migration
      }
      running.fetch_sub(1);
    });
  }
  while (running.load() < static_cast<int>(kWriters)) std::this_thread::yield();
  go = true;
  // A consuming reader on every CPU runs while the writers write.
  std::vector<std::set<std::pair<uint32_t, uint32_t>>> seen(1);
  uint64_t read = 0, torn = 0, dup = 0, back = 0;
  std::vector<uint64_t> last_ts(rb.cpus(), 0);
  std::vector<std::unique_ptr<ConsumingReader>> readers;
  for (uint32_t c = 0; c < rb.cpus(); ++c)
    readers.push_back(std::make_unique<ConsumingReader>(rb, c));
  auto consume = [&] {
    for (uint32_t c = 0; c < rb.cpus(); ++c) {
      while (auto v = readers[c]->next()) {
        ++read;
        if (v->ts < last_ts[c]) ++back;
        last_ts[c] = v->ts;
        Rec r;
        if (v->payload.size() != sizeof r) {
          ++torn;
          continue;
        }
        std::memcpy(&r, v->payload.data(), sizeof r);
        bool ok = r.sum == checksum(r.writer, r.seq);
        for (uint8_t b : r.fill) ok &= b == (r.seq & 0xff);
        if (!ok) ++torn;
        if (!seen[0].insert({r.writer, r.seq}).second) ++dup;
      }
    }
  };
  uint32_t sent = 0;
  while (running.load() > 0) {
    for (uint32_t w = 0; w < kWriters && sent < 20000; ++w)
      if (pthread_kill(ids[w], SIGUSR2) == 0) ++sent;
    consume();
  }
  for (auto& t : writers) t.join();
  g_signal_rb = nullptr;
  sigaction(SIGUSR2, &old, nullptr);
  consume();

  CHECK(torn == 0);
  CHECK(dup == 0);
  CHECK(back == 0);
  uint64_t discarded = 0, lost = 0, entries = 0, rd = 0;
  for (uint32_t c = 0; c < rb.cpus(); ++c) {
    const CpuStats s = rb.stats(c);
    discarded += s.discarded;
    lost += s.lost();
    entries += s.entries;
    rd += s.read;
  }
  const uint64_t attempts = uint64_t{kWriters} * kPer + g_sig_written.load() + g_sig_failed.load();
  CHECK(entries == 0);
  CHECK(rd == read);
  CHECK(discarded == discards.load());
  // written = read + overrun (0: drop-newest) + lost + discarded + entries
  CHECK(attempts == read + lost + discarded + entries);
  CHECK(rb.lost_bad_cpu() == 0);
  INFO("read " << read << ", lost " << lost << ", signals " << sent);
}
