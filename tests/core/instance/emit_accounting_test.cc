// Every emit counted once, on every staging mode, including the paths where
// a full ring sends an adaptive event back to staging, where kCpuStaging
// picks the direct path by one flag test, and where the adaptive average
// moves at rejects only (its values: tests/core/instance/adaptive_average_test.cc):
// EventStats::emitted() equals the number of emits that were not
// `disabled`, kept/discarded/lost equal the emits' own results, and the
// ring's accounting (CpuStats::accounted summed) equals ring_attempts().
// Filtered, soft-disabled, nested (an emit inside a fill, and a signal
// handler), too-big (for staging and for the ring) and ring-full emits;
// threads emitting into an adaptive drop-newest ring drained by a consumer;
// per_cpu staging with soft-disable and the filter toggled concurrently.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_events.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/fast_path.h"

using namespace tracepipe;
using namespace tp_core_test;

namespace {

// 5016 bytes: too big for a staging slot (4088), fits an 8 KiB sub-buffer.
using Big =
    EventDecl<"tpacct", "big", Int<"value", uint32_t>, Chars<"pad", 4096>, Chars<"pad2", 904>>;
[[gnu::noinline]] EmitResult emit_big(Instance& inst, uint32_t value, std::string_view pad,
                                      std::string_view pad2) {
  return Big::emit(inst, value, pad, pad2);
}
static_assert(Big::fixed_size > kMaxStagedRecord && Big::fixed_size < 8000);

struct Tally {
  uint64_t kept = 0, discarded = 0, lost = 0, disabled = 0;
  void add(EmitResult r) {
    switch (r) {
      case EmitResult::kept:
        ++kept;
        break;
      case EmitResult::discarded:
        ++discarded;
        break;
      case EmitResult::lost:
        ++lost;
        break;
      case EmitResult::disabled:
        ++disabled;
        break;
    }
  }
  uint64_t counted() const { return kept + discarded + lost; }
  Tally& operator+=(const Tally& o) {
    kept += o.kept, discarded += o.discarded, lost += o.lost, disabled += o.disabled;
    return *this;
  }
};

struct ATally {
  std::atomic<uint64_t> kept{0}, discarded{0}, lost{0}, disabled{0};
  void add(EmitResult r) {
    switch (r) {
      case EmitResult::kept:
        kept.fetch_add(1, std::memory_order_relaxed);
        break;
      case EmitResult::discarded:
        discarded.fetch_add(1, std::memory_order_relaxed);
        break;
      case EmitResult::lost:
        lost.fetch_add(1, std::memory_order_relaxed);
        break;
      case EmitResult::disabled:
        disabled.fetch_add(1, std::memory_order_relaxed);
        break;
    }
  }
  Tally get() const { return {kept.load(), discarded.load(), lost.load(), disabled.load()}; }
};

const char* staging_name(Staging s) {
  switch (s) {
    case Staging::off:
      return "off";
    case Staging::per_cpu:
      return "per_cpu";
    case Staging::per_thread:
      return "per_thread";
    default:
      return "adaptive";
  }
}

uint64_t drain_count(Instance& inst) {
  uint64_t n = 0;
  for (uint32_t c = 0; c < inst.cpus(); ++c) {
    buffers::ConsumingReader rd(inst.ring(), c);
    while (rd.next()) ++n;
  }
  return n;
}

void check_stats(Instance& inst, const EventDesc& d, const Tally& t) {
  const EventStats s = inst.event_stats(d);
  CHECK(s.kept == t.kept);
  CHECK(s.discarded == t.discarded);
  CHECK(s.lost == t.lost);
  CHECK(s.emitted() == t.counted());
  CHECK(s.staged + s.direct + s.unfiltered == s.emitted());
  CHECK(total_accounted(inst) == inst.ring_attempts());
}

// An emit whose fill emits `inner` more Sample events (nested: depth 1).
EmitResult emit_nesting(Instance& inst, uint32_t value, int inner, Tally& t_inner,
                        uint32_t inner_value) {
  auto fill = [&](std::span<std::byte> rec) noexcept {
    for (int k = 0; k < inner; ++k) t_inner.add(emit_sample(inst, inner_value, 7, ""));
    Sample::write_fields(rec.data(), value, 1, "outer");
  };
  return inst.emit_fill(Sample::desc(), Sample::fixed_size, fill);
}

}  // namespace

TEST_CASE("accounting: every staging mode x filtered/soft/nested/too-big/full",
          "[core][accounting][accounting]") {
  prepare_thread();
  const Staging staging =
      GENERATE(Staging::off, Staging::per_cpu, Staging::per_thread, Staging::adaptive);
  const BufferMode mode = GENERATE(BufferMode::drop_newest, BufferMode::overwrite);
  const uint32_t subbuf = GENERATE(4u, 8u);
  CAPTURE(staging_name(staging), static_cast<int>(mode), subbuf);
  InstanceOptions o = small_options(staging, mode);
  o.buffer_size_kb = 64;
  o.subbuf_size_kb = subbuf;
  Instance inst(o);
  inst.enable(Sample::desc());
  inst.enable(Big::desc());
  Tally ts, tb;
  std::mt19937 rng(static_cast<uint32_t>(staging) * 100 + static_cast<uint32_t>(mode) * 10 +
                   subbuf);
  const std::string pad(5000, 'x');
  uint64_t emits = 0;
  for (int phase = 0; phase < 12; ++phase) {
    switch (phase % 6) {
      case 0:
        inst.clear_filter(Sample::desc());
        inst.clear_filter(Big::desc());
        break;
      case 1:
        REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
        REQUIRE(inst.set_filter(Big::desc(), "value != 0").ok());
        break;
      case 2:
        inst.set_soft_disabled(Sample::desc(), true);
        inst.set_soft_disabled(Big::desc(), true);
        break;
      case 3:
        inst.clear_filter(Sample::desc());
        inst.clear_filter(Big::desc());
        break;  // soft, unfiltered
      case 4:
        inst.set_soft_disabled(Sample::desc(), false);
        inst.set_soft_disabled(Big::desc(), false);
        REQUIRE(inst.set_filter(Sample::desc(), "!(value < 1)").ok());
        REQUIRE(inst.set_filter(Big::desc(), "value >= 1").ok());
        break;
      case 5:
        REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
        break;
    }
    // Acceptance: mostly 100% with stretches of 0% and 50%, so adaptive flips.
    for (int i = 0; i < 3000; ++i) {
      const int stretch = (i / 200) % 4;
      const uint32_t v = stretch == 0   ? 1
                         : stretch == 1 ? 0
                         : stretch == 2 ? (rng() & 1)
                                        : (rng() % 20 != 0);
      const uint32_t what = rng() % 16;
      if (what == 0) {
        tb.add(emit_big(inst, v, pad, pad));
        ++emits;
      } else if (what == 1) {
        ts.add(emit_nesting(inst, v, 1 + static_cast<int>(rng() % 3), ts, rng() & 1));
        ++emits;
      } else {
        ts.add(emit_sample(inst, v, static_cast<uint32_t>(i), ""));
        ++emits;
      }
      if (rng() % 1500 == 0) drain_count(inst);  // sometimes the ring has room again
    }
    check_stats(inst, Sample::desc(), ts);
    check_stats(inst, Big::desc(), tb);
  }
  CHECK(ts.disabled == 0);
  CHECK(tb.disabled == 0);
  const EventStats sb = inst.event_stats(Big::desc());
  if (staging != Staging::off) CHECK(sb.staged == 0);  // never fits a slot
  if (staging == Staging::per_thread) CHECK(inst.event_stats(Sample::desc()).adaptive_direct == 0);
  // Everything drained equals what the ring says it holds.
  const uint64_t entries = [&] {
    uint64_t n = 0;
    for (const auto& c : inst.cpu_stats()) n += c.entries;
    return n;
  }();
  CHECK(drain_count(inst) == entries);
  CHECK(total_accounted(inst) == inst.ring_attempts());
}

// Adaptive, drop-newest, small ring: writers with different acceptance rates
// fill it while a consumer drains it, so the event flips between staging and
// direct on full-ring losses and on its averages.
TEST_CASE("accounting: adaptive drop-newest ring filled and drained concurrently",
          "[core][accounting][concurrency]") {
  const int kWriters = 4;
  constexpr uint64_t kIters = 60000;  // every phase, several times over, per writer
  const WriterMode writers = GENERATE(WriterMode::automatic, WriterMode::any_cpu);
  CAPTURE(static_cast<int>(writers));
  InstanceOptions o = small_options(Staging::adaptive, BufferMode::drop_newest);
  o.writers = writers;
  o.buffer_size_kb = 16;
  Instance inst(o);
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  std::atomic<bool> writers_done{false};
  std::atomic<uint64_t> consumed{0};
  std::thread consumer([&] {
    std::vector<buffers::ConsumingReader> rds;
    for (uint32_t c = 0; c < inst.cpus(); ++c) rds.emplace_back(inst.ring(), c);
    uint64_t n = 0;
    std::mt19937 rng(3);
    uint64_t loops = 0;
    while (!writers_done.load(std::memory_order_acquire)) {
      for (auto& rd : rds)
        while (rd.next()) ++n;
      if (++loops % 64 == 0)
        std::this_thread::sleep_for(std::chrono::microseconds(500 + rng() % 1500));  // let it fill
    }
    for (auto& rd : rds)
      while (rd.next()) ++n;
    consumed.store(n);
  });
  ATally t[kWriters];
  std::atomic<uint64_t> emits[kWriters] = {};
  std::vector<std::thread> ws;
  for (int id = 0; id < kWriters; ++id)
    ws.emplace_back([&, id] {
      prepare_thread();
      // Writer 0 (100% accepted at first) goes first, alone: its 32nd staged
      // accept sends the event direct, its 33rd emit goes so. Else a loaded
      // machine may run the others first, and they can fill the ring while
      // the consumer sleeps: lost accepts are no evidence to go direct, and
      // adaptive_direct could stay 0.
      if (id != 0)
        while (emits[0].load() < 34) std::this_thread::yield();  // the 34th started: the 33rd ended
      std::mt19937 rng(id);
      for (uint64_t i = 0; i < kIters; ++i) {
        emits[id].fetch_add(1, std::memory_order_relaxed);
        // Phases of 100%, 97%, 50%, 0% acceptance, different per writer.
        const uint64_t phase = (i / 5000 + id) % 4;
        const uint32_t v = phase == 0   ? 1
                           : phase == 1 ? (rng() % 32 != 0)
                           : phase == 2 ? (rng() & 1)
                                        : 0;
        t[id].add(emit_sample(inst, v, static_cast<uint32_t>(i), ""));
      }
    });
  for (auto& w : ws) w.join();
  writers_done.store(true, std::memory_order_release);
  consumer.join();
  Tally sum;
  for (auto& x : t) sum += x.get();
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(sum.disabled == 0);
  uint64_t total = 0;
  for (auto& e : emits) total += e.load();
  CHECK(sum.counted() == total);
  CHECK(s.emitted() == total);
  CHECK(s.kept == sum.kept);
  CHECK(s.discarded == sum.discarded);
  CHECK(s.lost == sum.lost);
  CHECK(consumed.load() == s.kept);
  CHECK(total_accounted(inst) == inst.ring_attempts());
  CHECK(s.adaptive_direct > 0);
  CHECK(s.staged > 0);
}

namespace {
Instance* g_sig_inst = nullptr;
std::atomic<uint64_t> g_sig_kept{0}, g_sig_discarded{0}, g_sig_lost{0}, g_sig_disabled{0},
    g_sig_calls{0};
void on_sigusr1(int) {
  const int saved = errno;
  g_sig_calls.fetch_add(1, std::memory_order_relaxed);
  const EmitResult r =
      emit_sample(*g_sig_inst, g_sig_calls.load(std::memory_order_relaxed) & 1, 99, "sig");
  switch (r) {
    case EmitResult::kept:
      g_sig_kept.fetch_add(1, std::memory_order_relaxed);
      break;
    case EmitResult::discarded:
      g_sig_discarded.fetch_add(1, std::memory_order_relaxed);
      break;
    case EmitResult::lost:
      g_sig_lost.fetch_add(1, std::memory_order_relaxed);
      break;
    case EmitResult::disabled:
      g_sig_disabled.fetch_add(1, std::memory_order_relaxed);
      break;
  }
  errno = saved;
}
}  // namespace

// per_cpu (and the other modes): writers, a signal handler that emits the
// same event inside their emits, and a control thread toggling soft-disable
// and setting/clearing the filter, all at once; the counts stay exact.
TEST_CASE("accounting: control toggles, signals and writers on every staging mode",
          "[core][accounting][concurrency]") {
  const Staging staging =
      GENERATE(Staging::per_cpu, Staging::off, Staging::per_thread, Staging::adaptive);
  CAPTURE(staging_name(staging));
  const int kWriters = 3;
  constexpr uint64_t kIters = 60000;  // every phase, several times over, per writer
  std::atomic<uint64_t> emits{0};
  InstanceOptions o = small_options(staging, BufferMode::drop_newest);
  o.buffer_size_kb = 32;
  Instance inst(o);
  inst.enable(Sample::desc());
  g_sig_inst = &inst;
  g_sig_kept = g_sig_discarded = g_sig_lost = g_sig_disabled = g_sig_calls = 0;
  struct sigaction sa {};
  sa.sa_handler = on_sigusr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  struct sigaction old {};
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);

  std::atomic<bool> stop{false};
  std::atomic<int> running{0};
  std::thread consumer([&] {
    std::vector<buffers::ConsumingReader> rds;
    for (uint32_t c = 0; c < inst.cpus(); ++c) rds.emplace_back(inst.ring(), c);
    while (!stop.load(std::memory_order_acquire)) {
      for (auto& rd : rds)
        while (rd.next()) {
        }
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  ATally t[kWriters];
  std::vector<pthread_t> handles(kWriters);
  std::vector<std::thread> ws;
  std::atomic<int> ready{0};
  for (int id = 0; id < kWriters; ++id)
    ws.emplace_back([&, id] {
      prepare_thread();
      handles[id] = pthread_self();
      ready.fetch_add(1);
      running.fetch_add(1);
      std::mt19937 rng(id + 10);
      for (uint64_t i = 0; i < kIters; ++i) {
        emits.fetch_add(1, std::memory_order_relaxed);
        const uint32_t v = (i / 3000 + id) % 3 == 0 ? 1 : (rng() % 3 != 0);
        t[id].add(emit_sample(inst, v, static_cast<uint32_t>(i), ""));
      }
      // Block the signal before leaving, so no handler runs on a dying thread.
      sigset_t s;
      sigemptyset(&s);
      sigaddset(&s, SIGUSR1);
      pthread_sigmask(SIG_BLOCK, &s, nullptr);
      running.fetch_sub(1);
    });
  while (ready.load() < kWriters) std::this_thread::yield();
  std::vector<bool> alive(kWriters, true);
  std::thread signaller([&] {
    std::mt19937 rng(5);
    while (running.load() > 0) {
      pthread_kill(handles[rng() % kWriters], SIGUSR1);  // a blocked signal stays pending: harmless
      for (int k = 0; k < 200; ++k) std::atomic_signal_fence(std::memory_order_seq_cst);
    }
  });
  std::mt19937 rng(11);
  uint64_t toggles = 0;
  while (running.load() > 0) {
    switch (rng() % 5) {
      case 0:
        inst.set_soft_disabled(Sample::desc(), true);
        break;
      case 1:
        inst.set_soft_disabled(Sample::desc(), false);
        break;
      case 2:
        REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
        break;
      case 3:
        inst.clear_filter(Sample::desc());
        break;
      case 4:
        REQUIRE(inst.set_filter(Sample::desc(), "!(value == 0)").ok());
        break;
    }
    ++toggles;
    std::this_thread::sleep_for(std::chrono::microseconds(5));
  }
  for (auto& w : ws) w.join();
  signaller.join();
  stop.store(true, std::memory_order_release);
  consumer.join();
  Tally sum;
  for (auto& x : t) sum += x.get();
  sum += Tally{g_sig_kept.load(), g_sig_discarded.load(), g_sig_lost.load(), g_sig_disabled.load()};
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(sum.disabled == 0);
  CHECK(sum.counted() == emits.load() + g_sig_calls.load());
  CHECK(s.emitted() == sum.counted());
  CHECK(s.kept == sum.kept);
  CHECK(s.discarded == sum.discarded);
  CHECK(s.lost == sum.lost);
  CHECK(total_accounted(inst) == inst.ring_attempts());
  if (staging == Staging::per_thread) CHECK(s.adaptive_direct == 0);
  REQUIRE(sigaction(SIGUSR1, &old, nullptr) == 0);
  g_sig_inst = nullptr;
}

namespace {
// Sends an adaptive event direct: 32 staged accepts (the first check).
void go_direct(Instance& inst) {
  for (int i = 0; i < 32; ++i) REQUIRE(emit_sample(inst, 1, 0, "") == EmitResult::kept);
}
}  // namespace

// A full ring sends the event back to staging, here a paused ring (drop-newest and
// overwrite): the refused direct
// emit is lost and the event stages; its rejects are then discarded in the
// slot (never reach the ring); accepts while paused are lost staged; after
// resume, 32 kept staged accepts send it direct again.
TEST_CASE("accounting: a paused ring sends an adaptive event back to staging",
          "[core][accounting][adaptive]") {
  prepare_thread();
  const BufferMode mode = GENERATE(BufferMode::drop_newest, BufferMode::overwrite);
  InstanceOptions o = small_options(Staging::adaptive, mode);
  Instance inst(o);
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  go_direct(inst);
  REQUIRE(emit_sample(inst, 1, 0, "") == EmitResult::kept);
  EventStats s = inst.event_stats(Sample::desc());
  REQUIRE(s.staged == 32);
  REQUIRE(s.adaptive_direct == 1);
  inst.pause();
  CHECK(emit_sample(inst, 1, 0, "") == EmitResult::lost);  // direct, refused: flips
  for (int i = 0; i < 100; ++i) CHECK(emit_sample(inst, 0, 0, "") == EmitResult::discarded);
  for (int i = 0; i < 10; ++i)
    CHECK(emit_sample(inst, 1, 0, "") == EmitResult::lost);  // staged, paused
  s = inst.event_stats(Sample::desc());
  CHECK(s.adaptive_direct == 2);
  CHECK(s.ring_discards == 0);
  CHECK(s.staged == 32 + 100 + 10);
  CHECK(s.lost == 11);
  CHECK(total_accounted(inst) == inst.ring_attempts());
  inst.resume();
  // The window holds the 100 rejects: the 32nd kept accept judges 32/132,
  // stays staged; the 64th judges 32/32: direct.
  for (int i = 0; i < 64; ++i) CHECK(emit_sample(inst, 1, 0, "") == EmitResult::kept);
  for (int i = 0; i < 5; ++i) CHECK(emit_sample(inst, 1, 0, "") == EmitResult::kept);
  s = inst.event_stats(Sample::desc());
  CHECK(s.staged == 32 + 100 + 10 + 64);
  CHECK(s.adaptive_direct == 2 + 5);
  CHECK(s.emitted() == 32 + 1 + 1 + 100 + 10 + 64 + 5);
  CHECK(total_accounted(inst) == inst.ring_attempts());
}

// A record too big for the ring (and for a slot) is refused by size and
// does not send a direct adaptive event back to staging.
TEST_CASE("accounting: a too-big refusal keeps an adaptive event direct",
          "[core][accounting][adaptive]") {
  prepare_thread();
  InstanceOptions o = small_options(Staging::adaptive, BufferMode::drop_newest);
  o.subbuf_size_kb = 4;  // Big (5004 bytes) does not fit a sub-buffer
  Instance inst(o);
  inst.enable(Sample::desc());
  inst.enable(Big::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  REQUIRE(inst.set_filter(Big::desc(), "value != 0").ok());
  go_direct(inst);
  for (int i = 0; i < 32; ++i) REQUIRE(emit_big(inst, 1, "", "") == EmitResult::lost);
  // Big: never staged (too big for a slot); Sample still direct.
  const EventStats sb0 = inst.event_stats(Big::desc());
  CHECK(sb0.staged == 0);
  CHECK(emit_sample(inst, 0, 0, "") == EmitResult::discarded);
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.ring_discards == 1);  // direct: reserved, then discarded
  CHECK(s.adaptive_direct == 1);
  CHECK(total_accounted(inst) == inst.ring_attempts());
  const auto lost_too_big = [&] {
    uint64_t n = 0;
    for (const auto& c : inst.cpu_stats()) n += c.lost_too_big;
    return n;
  }();
  CHECK(lost_too_big == 32);
}

// Sample::trace() into three instances at once (adaptive drop-newest, per_cpu,
// off; each its own filter) from several threads while one consumer drains
// the adaptive one: each instance counts every trace() exactly once.
TEST_CASE("accounting: trace() fans out to adaptive, per_cpu and off instances",
          "[core][accounting][concurrency]") {
  const int kWriters = 3;
  InstanceOptions oa = small_options(Staging::adaptive, BufferMode::drop_newest);
  oa.buffer_size_kb = 16;
  oa.name = "acct_adaptive";
  InstanceOptions oc = small_options(Staging::per_cpu, BufferMode::overwrite);
  oc.name = "acct_per_cpu";
  InstanceOptions oo = small_options(Staging::off, BufferMode::drop_newest);
  oo.name = "acct_off";
  Instance ia(oa), ic(oc), io(oo);
  for (Instance* i : {&ia, &ic, &io}) i->enable(Sample::desc());
  REQUIRE(ia.set_filter(Sample::desc(), "value != 0").ok());
  REQUIRE(ic.set_filter(Sample::desc(), "value > 1").ok());
  REQUIRE(io.set_filter(Sample::desc(), "!(value & 1)").ok());
  std::atomic<bool> done{false};
  std::atomic<uint64_t> calls{0};
  std::thread consumer([&] {
    std::vector<buffers::ConsumingReader> rds;
    for (uint32_t c = 0; c < ia.cpus(); ++c) rds.emplace_back(ia.ring(), c);
    uint64_t loops = 0;
    while (!done.load(std::memory_order_acquire)) {
      for (auto& rd : rds)
        while (rd.next()) {
        }
      if (++loops % 32 == 0) std::this_thread::sleep_for(std::chrono::microseconds(700));
    }
  });
  std::vector<std::thread> ws;
  for (int id = 0; id < kWriters; ++id)
    ws.emplace_back([&, id] {
      prepare_thread();
      std::mt19937 rng(id + 100);
      for (uint64_t i = 0; i < 36000; ++i) {  // three rounds of the three phases
        const uint64_t phase = (i / 4000 + id) % 3;
        const uint32_t v = phase == 0   ? 1 + (rng() & 1)
                           : phase == 1 ? (rng() % 16 != 0) * (1 + (rng() & 3))
                                        : 0;
        Sample::trace(v, static_cast<uint32_t>(i), "");
        calls.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (auto& w : ws) w.join();
  done.store(true, std::memory_order_release);
  consumer.join();
  for (Instance* i : {&ia, &ic, &io}) {
    INFO(i->name());
    const EventStats s = i->event_stats(Sample::desc());
    CHECK(s.emitted() == calls.load());
    CHECK(total_accounted(*i) == i->ring_attempts());
  }
}
