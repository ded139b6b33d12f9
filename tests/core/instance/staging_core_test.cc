// Break-it: per-CPU staging through the core API (Instance with
// Staging::per_cpu, a filtered EventDecl event, TRACEPIPE_TRACE from
// oversubscribed threads whose affinity flips, SA_NODEFER signal handlers
// that trace the same event). A slot shared by two emits would copy a mixed
// record into the ring or lose one: every kept record is decoded and checked
// field by field (value, tag, check word, padding bytes, common_pid), every
// kept event must appear exactly once, EventStats must conserve, and every
// per-CPU slot must be free at the end. Runs with the rseq claim
// (cpu_local) when the process has rseq, with the locked exchange otherwise
// (ThreadSanitizer builds); a hidden test re-run in a child with
// GLIBC_TUNABLES=glibc.pthread.rseq=0 checks the fallback explicitly.
// Also checks adaptive staging's score and the derived
// adaptive_direct against an exact simulation of the score.
// Label "concurrency".
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "adaptive_rule.h"
#include "test_support.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/temp_buffer.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/thread_context.h"

using namespace tracepipe;

namespace {

constexpr uint32_t kPad = 48;
using Claimed = EventDecl<"tpbreak", "claimed", Int<"value", uint32_t>, Int<"tag", uint32_t>,
                          Int<"check", uint32_t>, Chars<"pad", kPad>>;
constexpr uint32_t kHandlerTag = 0xFFFFu;

uint32_t check_of(uint32_t value, uint32_t tag) {
  return value * 2654435761u ^ (tag << 7) ^ 0x5bd1e995u;
}
char pad_of(uint32_t value, uint32_t tag) {
  return static_cast<char>(((value * 31 + tag) & 0x7f) | 1);
}

[[gnu::always_inline]] inline void trace_one(uint32_t value, uint32_t tag) {
  char pad[kPad];
  std::memset(pad, pad_of(value, tag), kPad);
  TRACEPIPE_TRACE(Claimed, value, tag, check_of(value, tag), std::string_view(pad, kPad));
}

uint32_t online_cpu_count() { return static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)); }

std::atomic<uint32_t> g_handler_seq{0};
std::atomic<uint64_t> g_handled{0};
thread_local int t_core_depth = 0;

void trace_in_handler(int sig) {
  const int saved = errno;
  if (t_core_depth < 3) {
    ++t_core_depth;
    {
      SignalScope scope;
      const uint32_t v =
          g_handler_seq.fetch_add(1, std::memory_order_relaxed) * 2 + 1;  // odd: kept
      trace_one(v, kHandlerTag);
      g_handled.fetch_add(1, std::memory_order_relaxed);
    }
    if (t_core_depth == 1 && (g_handler_seq.load(std::memory_order_relaxed) % 4) == 0)
      raise(sig);  // nest
    --t_core_depth;
  }
  errno = saved;
}

using tp_test::set_thread_affinity;

// The storm: `nthreads` unpinned writers trace kIters events each (value i,
// tag t; odd values pass the filter), an affinity flipper and a signaller
// (handlers trace odd values with kHandlerTag). Then every check.
void storm_and_check(uint32_t nthreads, uint32_t iters) {
  InstanceOptions o;
  o.staging = Staging::per_cpu;
  o.mode = BufferMode::drop_newest;
  o.buffer_size_kb = 12288;  // every kept record fits even if one CPU gets all of them
  Instance inst(o);
  inst.enable(Claimed::desc());
  REQUIRE(inst.set_filter(Claimed::desc(), "value & 1").ok());
  buffers::TempBuffer& slots = tracepipe::detail::InstanceAccess::stager(inst).cpu_slots();
  CHECK(slots.writers() ==
        (buffers::detail::rseq_usable() ? buffers::Writers::cpu_local : buffers::Writers::any_cpu));
  const uint64_t bad0 = slots.bad_cpu_fallbacks();

  g_handler_seq = 0;
  g_handled = 0;
  struct sigaction sa {
  }, old{};
  sa.sa_handler = trace_in_handler;
  sa.sa_flags = SA_NODEFER | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);

  std::vector<int32_t> tids(nthreads, 0);
  std::atomic<uint32_t> ready{0}, finished{0};
  std::atomic<bool> stop{false}, go{false};
  std::vector<std::thread> writers;
  std::vector<pthread_t> handles;
  for (uint32_t t = 0; t < nthreads; ++t) {
    writers.emplace_back([&, t] {
      prepare_thread();  // the handlers must not register (they would drop)
      tids[t] = static_cast<int32_t>(syscall(SYS_gettid));
      ready.fetch_add(1);
      while (!go.load() || g_handled.load() < 20) std::this_thread::yield();  // the storm is on
      for (uint32_t i = 0; i < iters; ++i) {
        trace_one(i, t);
        if (i % 1024 == 0) sched_yield();
      }
      finished.fetch_add(1);
      while (!stop.load()) std::this_thread::yield();  // no signal during thread exit
    });
    handles.push_back(writers.back().native_handle());
  }
  while (ready.load() < nthreads) std::this_thread::yield();
  std::atomic<bool> writers_done{false};
  std::thread flipper([&] {
    std::mt19937 rng(11);
    const uint32_t n = online_cpu_count();
    while (!writers_done.load()) {
      for (pthread_t th : handles) {
        const uint32_t pick = rng() % (n + 1);
        set_thread_affinity(th, pick == n ? UINT32_MAX : pick);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
  });
  std::thread signaller([&] {
    uint32_t n = 0;
    while (!writers_done.load()) {
      pthread_kill(handles[n++ % handles.size()], SIGUSR1);
      for (int k = 0; k < 2000; ++k) asm volatile("" ::: "memory");
    }
  });
  go = true;
  while (finished.load() < nthreads) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  writers_done = true;
  flipper.join();
  signaller.join();
  stop = true;
  for (auto& w : writers) w.join();
  sigaction(SIGUSR1, &old, nullptr);

  const uint64_t handled = g_handled.load();
  const uint64_t emitted = uint64_t{nthreads} * iters + handled;
  const EventStats es = inst.event_stats(Claimed::desc());
  INFO("cpu_local " << (slots.writers() == buffers::Writers::cpu_local) << " handled " << handled
                    << " staged " << es.staged << " direct " << es.direct << " nested " << es.nested
                    << " contended " << es.contended << " kept " << es.kept << " lost " << es.lost);
  CHECK(es.emitted() == emitted);
  CHECK(es.kept + es.discarded + es.lost == emitted);
  CHECK(es.unfiltered == 0);
  CHECK(es.staged + es.direct == emitted);
  CHECK(es.staged > 0);
  CHECK(es.too_big == 0);
  // per_cpu: direct only when the slot was busy: held by this thread's outer
  // emit (nested: only a handler can be inside an emit here) or by another
  // thread preempted on this CPU (contended).
  CHECK(es.direct == es.nested + es.contended);
  CHECK(es.nested <= handled);
  CHECK(es.lost == 0);
  CHECK(es.discarded == uint64_t{nthreads} * (iters / 2));  // the even values, exactly
  CHECK(handled > 0);
  CHECK(slots.bad_cpu_fallbacks() == bad0);  // every CPU has a slot
  for (uint32_t c = 0; c < slots.cpus(); ++c) CHECK_FALSE(slots.busy_for_testing(c));

  // Every kept record, whole and once.
  std::vector<std::vector<uint8_t>> seen(nthreads, std::vector<uint8_t>(iters, 0));
  std::vector<uint8_t> seen_handler(g_handler_seq.load() + 1, 0);
  uint64_t records = 0, torn = 0, dup = 0, bad_pid = 0, rejected_seen = 0, unknown = 0;
  auto m = buffers::merged_consumer(inst.ring());
  while (auto r = m.next()) {
    ++records;
    if (r->payload.size() < Claimed::fixed_size) {
      ++torn;
      continue;
    }
    CommonHeader h{};
    uint32_t value = 0, tag = 0, check = 0;
    std::memcpy(&h, r->payload.data(), sizeof h);
    std::memcpy(&value, r->payload.data() + Claimed::offsets[0], 4);
    std::memcpy(&tag, r->payload.data() + Claimed::offsets[1], 4);
    std::memcpy(&check, r->payload.data() + Claimed::offsets[2], 4);
    bool whole = check == check_of(value, tag);
    for (uint32_t k = 0; k < kPad; ++k)
      if (static_cast<char>(r->payload[Claimed::offsets[3] + k]) != pad_of(value, tag))
        whole = false;
    if (!whole) {
      ++torn;
      continue;
    }
    if ((value & 1) == 0) ++rejected_seen;
    if (tag == kHandlerTag) {
      const uint32_t k = value / 2;
      if (k >= seen_handler.size()) {
        ++unknown;
      } else if (seen_handler[k]++ != 0) {
        ++dup;
      }
      bool known_pid = false;
      for (int32_t p : tids) known_pid |= p == h.common_pid;
      if (!known_pid) ++bad_pid;
    } else if (tag < nthreads && value < iters) {
      if (seen[tag][value]++ != 0) ++dup;
      if (h.common_pid != tids[tag]) ++bad_pid;
    } else {
      ++unknown;
    }
  }
  CHECK(torn == 0);
  CHECK(dup == 0);
  CHECK(bad_pid == 0);
  CHECK(rejected_seen == 0);
  CHECK(unknown == 0);
  CHECK(records == es.kept);
  uint64_t missing = 0;
  for (uint32_t t = 0; t < nthreads; ++t)
    for (uint32_t i = 1; i < iters; i += 2) missing += seen[t][i] == 0;
  for (uint64_t k = 0; k < handled; ++k) missing += seen_handler[k] == 0;
  CHECK(missing == 0);
}

}  // namespace

TEST_CASE("per-CPU staging: records stay whole and counts exact under migration and signal storms",
          "[staging][core][breakit]") {
  storm_and_check(3 * online_cpu_count() + 1, 20000);
}

// Run only in a child started by the next test (GLIBC_TUNABLES disables rseq).
TEST_CASE("per-CPU staging without rseq: the claim is the locked exchange and still stages",
          "[.breakit-norseq]") {
  REQUIRE(__rseq_size == 0);  // glibc registered no rseq area
  CHECK_FALSE(buffers::detail::rseq_usable());
  CHECK_FALSE(buffers::detail::rseq_registered());
  CHECK_THROWS_AS(buffers::TempBuffer(
                      buffers::TempBufferConfig{.cpus = 2, .writers = buffers::Writers::cpu_local}),
                  buffers::ConfigError);
  CHECK_THROWS_WITH(buffers::TempBuffer(buffers::TempBufferConfig{
                        .cpus = 2, .writers = buffers::Writers::cpu_local}),
                    Catch::Contains("cpu_local needs rseq"));
  // any_cpu: try_claim_local reads the CPU with sched_getcpu().
  buffers::TempBuffer tb(
      buffers::TempBufferConfig{.cpus = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF))});
  CHECK(tb.writers() == buffers::Writers::any_cpu);
  for (uint32_t c = 0; c < online_cpu_count() && c < 4; ++c) {
    tp_test::PinToCpu pin(c);
    REQUIRE(pin.ok());
    const buffers::StagedRecord h = tb.try_claim_local(16);
    REQUIRE(h);
    CHECK(h.cpu() == c);
    CHECK(tb.try_claim_local(8).error() == buffers::StageError::busy);
    CHECK(tb.try_claim(c, 8).error() == buffers::StageError::busy);
    buffers::TempBuffer::release(h);
    CHECK_FALSE(tb.busy_for_testing(c));
  }
  CHECK(tb.bad_cpu_fallbacks() == 0);
  storm_and_check(2 * online_cpu_count() + 1, 10000);
}

TEST_CASE(
    "per-CPU staging: a process started without rseq stages with the locked exchange, no hang",
    "[staging][core][norseq][breakit]") {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path scratch =
      std::filesystem::temp_directory_path() / ("tp-breakclaim-norseq-" + std::to_string(getpid()));
  std::filesystem::create_directories(scratch);
  const tp_test::CommandResult r = tp_test::run_command(
      {"env", "GLIBC_TUNABLES=glibc.pthread.rseq=0", self.string(),
       "per-CPU staging without rseq: the claim is the locked exchange and still stages"},
      scratch, 120);
  std::filesystem::remove_all(scratch);
  INFO("child stdout:\n" << r.out << "\nchild stderr:\n" << r.err);
  CHECK(r.status == 0);  // 124 (timeout): a hang
  CHECK(r.out.find("All tests passed") != std::string::npos);
}

// Adaptive staging keeps a per-event choice that writers flip (instance.h,
// "Staging policies"): while staging, every 32nd accepted staged event checks
// the thread's rate since its last check; while direct, a moving average,
// moved at rejects (each first catches up the run of accepts before it),
// turns staging back on. adaptive_direct is derived (direct - nested -
// too_big). An exact model of both rules (its arithmetic from
// tests/support/adaptive_rule.h, not the library's), run next to one
// thread's emits, predicts every count.
namespace {
using Small = EventDecl<"tpbreak", "adapt_small", Int<"value", uint32_t>>;
using Big = EventDecl<"tpbreak", "adapt_big", Int<"value", uint32_t>, Chars<"blob", 4096>>;

struct Model {
  uint64_t threshold;
  bool staging = true;
  uint64_t gen = 0, s_gen = 0;
  int64_t s = 0;
  uint64_t run = 0;  // accepts since s was set, in period s_gen
  uint64_t kept_staged = 0, rejected_staged = 0, kept_mark = 0, rejected_mark = 0;
  uint64_t staged = 0, direct = 0, chosen = 0, too_big = 0, kept = 0, discarded = 0, flips = 0;
  void check() {
    const uint64_t dk = kept_staged - kept_mark, dr = rejected_staged - rejected_mark;
    if (dk < 32) return;  // a window restarted by a flip back: wait for 32 accepts
    kept_mark = kept_staged;
    rejected_mark = rejected_staged;
    const uint64_t rate = (dk << 16) / (dk + dr);
    if (rate <= threshold) return;
    staging = false;
    ++flips;
    s = static_cast<int64_t>(rate);
    s_gen = ++gen;
    run = 0;
  }
  void emit(bool accept, bool fits) {
    if (staging && fits) {
      ++staged;
      if (!accept) {
        ++rejected_staged;
      } else if (++kept_staged % 32 == 0) {
        check();
      }
    } else if (staging) {  // too big for the slot: direct, not by choice
      ++direct;
      ++too_big;
    } else {
      ++direct;
      ++chosen;
      if (accept) {
        if (s_gen == gen)
          ++run;  // another period's run is not caught up: the reject starts at 65536
      } else {
        s = tp_test::rule_reject_step(s_gen == gen ? tp_test::rule_after_accepts(s, run) : 65536);
        s_gen = gen;
        run = 0;
        if (static_cast<uint64_t>(s) <= threshold) {
          staging = true;
          kept_mark = kept_staged;
          rejected_mark = rejected_staged;
        }
      }
    }
    accept ? ++kept : ++discarded;
  }
};
}  // namespace

TEST_CASE("adaptive staging: counts match an exact model of its score",
          "[staging][adaptive][breakit]") {
  InstanceOptions o;
  o.staging = Staging::adaptive;
  o.mode = BufferMode::overwrite;
  o.buffer_size_kb = 256;
  o.subbuf_size_kb = 8;  // the big record (> a staging slot) must fit a sub-buffer
  // Seeds 9 and 30 once told the per-run catch-up from single steps at 0.5.
  const uint32_t seed = GENERATE(42u, 9u, 30u);
  CAPTURE(seed);
  for (double thr : {0.9, 0.5, 0.0, 1.0}) {
    o.adaptive_threshold = thr;
    Instance inst(o);
    inst.enable(Small::desc());
    inst.enable(Big::desc());
    REQUIRE(inst.set_filter(Small::desc(), "value & 1").ok());
    REQUIRE(inst.set_filter(Big::desc(), "value & 1").ok());
    Model small{static_cast<uint64_t>(thr * 65536.0)}, big{static_cast<uint64_t>(thr * 65536.0)};
    std::mt19937 rng(seed);
    std::string blob(4096, 'b');
    std::thread w([&] {
      prepare_thread();
      // Phases: all accepted (the score climbs past the threshold), all
      // rejected (it falls back), then 95%, 50%, 5% accepted at random.
      const int phases[][2] = {{400, 100}, {400, 0}, {600, 95}, {600, 50}, {600, 5}, {300, 100}};
      uint32_t seq = 0;
      for (const auto& ph : phases)
        for (int i = 0; i < ph[0]; ++i) {
          const bool accept = static_cast<int>(rng() % 100) < ph[1];
          const uint32_t v = seq++ * 2 + (accept ? 1 : 0);
          (void)Small::emit(inst, v);
          small.emit(accept, true);
          (void)Big::emit(inst, v, blob);
          big.emit(accept, false);
        }
    });
    w.join();
    INFO("threshold " << thr);
    const EventStats s = inst.event_stats(Small::desc());
    CHECK(s.staged == small.staged);
    CHECK(s.direct == small.direct);
    CHECK(s.adaptive_direct == small.chosen);
    CHECK(s.too_big == 0);
    CHECK(s.nested == 0);
    CHECK(s.contended == 0);
    CHECK(s.kept == small.kept);
    CHECK(s.discarded == small.discarded);
    const EventStats b = inst.event_stats(Big::desc());
    CHECK(b.lost == 0);
    CHECK(s.lost == 0);
    CHECK(b.staged == 0);
    CHECK(b.direct == big.direct);
    CHECK(b.too_big == big.too_big);
    CHECK(b.adaptive_direct == big.chosen);
    CHECK(b.kept == big.kept);
    CHECK(b.discarded == big.discarded);
    if (thr == 0.9) {  // the phases exercise both choices, and both flips more than once
      CHECK(small.chosen > 0);
      CHECK(small.staged > 0);
      CHECK(small.flips >= 2);
      CHECK(big.too_big > 0);
      CHECK(big.chosen == 0);  // never staged, so never evidence to go direct by
    }
  }
}
