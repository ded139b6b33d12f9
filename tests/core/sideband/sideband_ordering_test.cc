// Ordering of sideband records against the events around them:
//  * S1: threads renaming themselves while they (and their signal handlers,
//    and other threads) write events: replaying the trace names every event
//    with the comm its writer's COMM filter saw.
//  * S2: a rename that races a synthesis waits for it, so the synthesized
//    name is never newer than a later rename record says.
//  * Events written while another thread synthesizes are all there, and
//    every writer is named.
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "sideband_test_util.h"
#include "test_support.h"
#include "tracepipe/core/sideband/testing/hooks.h"

using namespace tracepipe;
using namespace tp_sideband_test;

namespace {

std::atomic<Instance*> g_inst{nullptr};
std::atomic<uint32_t> g_handler_events{0};

void on_usr1(int) {
  Instance* inst = g_inst.load();
  if (inst == nullptr) return;
  SignalScope s;
  emit_seen(*inst, 0xffffffffu);
  g_handler_events.fetch_add(1);
}

struct Usr1Handler {
  struct sigaction old {};
  Usr1Handler() {
    struct sigaction sa {};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, &old);
  }
  ~Usr1Handler() { sigaction(SIGUSR1, &old, nullptr); }
};

struct RenameHook {
  explicit RenameHook(std::function<void(RenameStep, int32_t)> f) {
    set_rename_hook_for_testing(std::move(f));
  }
  ~RenameHook() { set_rename_hook_for_testing(nullptr); }
};

// Replays the trace; returns the number of Seen events checked. Fails the
// test for any Seen event whose writer is not named, or named differently
// from the comm the event carries.
size_t check_attribution(const std::vector<Rec>& recs, const Registry& reg) {
  SidebandState sb(reg);
  size_t checked = 0;
  for (const Rec& r : recs) {
    if (sb.observe(r.span())) continue;
    if (r.type() != Seen::desc().id()) continue;
    const auto name = sb.comm(r.common_pid());
    INFO("event seq " << r.at<uint32_t>(8) << " of tid " << r.common_pid() << " at " << r.ts);
    REQUIRE(name.has_value());
    REQUIRE(*name == r.chars(12, 16));
    ++checked;
  }
  CHECK(sb.malformed() == 0);
  return checked;
}

}  // namespace

TEST_CASE(
    "sideband ordering: events racing renames are named as their writer's COMM filter saw them "
    "(S1)",
    "[sideband][ordering]") {
  KeepName keep;
  prepare_thread();
  Instance inst(small_options(4096));
  inst.enable(Seen::desc());
  enable_sideband(inst, false);
  Usr1Handler handler;
  g_inst = &inst;
  g_handler_events = 0;
  // Between the name change and its record, send ourselves a signal whose
  // handler writes an event: signals are blocked there, so it runs after
  // the record (S1). Without the blocking it would land before the record
  // carrying the new name, and the replay below would fail.
  std::atomic<uint32_t> raised{0};
  RenameHook hook([&](RenameStep s, int32_t) {
    if (s == RenameStep::renamed || s == RenameStep::locked) {
      pthread_kill(pthread_self(), SIGUSR1);
      raised.fetch_add(1);
    }
  });
  constexpr int kThreads = 3;
  constexpr uint32_t kEvents = 1500, kRenameEvery = 100;
  std::atomic<int> started{0};
  std::atomic<int> failures{0};  // Catch assertions are not thread-safe
  std::vector<std::thread> ts;
  for (int k = 0; k < kThreads; ++k)
    ts.emplace_back([&, k] {
      if (set_thread_name("w" + std::to_string(k)))
        failures.fetch_add(1);  // registers and names it
      started.fetch_add(1);
      while (started.load() < kThreads) std::this_thread::yield();
      for (uint32_t i = 0; i < kEvents; ++i) {
        if (i % kRenameEvery == kRenameEvery - 1)
          if (set_thread_name("w" + std::to_string(k) + "-" + std::to_string(i / kRenameEvery)))
            failures.fetch_add(1);
        if (emit_seen(inst, i) != EmitResult::kept) failures.fetch_add(1);
      }
    });
  // The main thread writes too, and renames itself once.
  REQUIRE_FALSE(set_thread_name("sb-main"));
  for (uint32_t i = 0; i < kEvents; ++i) {
    if (i == kEvents / 2) REQUIRE_FALSE(set_thread_name("sb-main-2"));
    REQUIRE(emit_seen(inst, i) == EmitResult::kept);
  }
  for (auto& t : ts) t.join();
  g_inst = nullptr;
  CHECK(failures.load() == 0);
  const uint32_t renames = kThreads * (1 + kEvents / kRenameEvery) + 2;
  CHECK(raised.load() == 2 * renames);
  // Both signals of one rename were raised while blocked: they merge into
  // one delivery, after the record.
  CHECK(g_handler_events.load() == renames);
  const auto recs = snapshot(inst);
  const size_t checked = check_attribution(recs, inst.registry());
  CHECK(checked == (kThreads + 1) * kEvents + g_handler_events.load());
  CHECK(of_type(recs, SidebandEvents::global().task_comm()).size() >= renames);
  for (const auto& s : inst.cpu_stats()) CHECK(s.lost() + s.overrun == 0);
}

TEST_CASE("sideband ordering: a rename racing a synthesis waits for it (S2)",
          "[sideband][ordering]") {
  prepare_thread();
  Instance inst(small_options());
  enable_sideband(inst, false);
  std::atomic<int32_t> tid{0};
  std::atomic<bool> go{false}, entered{false}, renamed_ok{false};
  std::thread t([&] {
    prepare_thread();
    pthread_setname_np(pthread_self(), "sb-before");
    refresh_thread_comm();
    tid = static_cast<int32_t>(gettid());
    while (!go) std::this_thread::yield();
    renamed_ok = !set_thread_name("sb-after");
  });
  while (tid == 0) std::this_thread::yield();
  RenameHook hook([&](RenameStep s, int32_t who) {
    if (s == RenameStep::entered && who == tid) entered = true;
  });
  SynthesisOptions o;
  o.mappings = false;
  bool released = false;
  o.hook = [&](SynthesisStep s, int32_t who) {
    // Right after reading the thread's name, let it rename itself: its
    // rename reaches the lock while synthesis still holds it.
    if (s == SynthesisStep::comm_read && who == tid) {
      go = true;
      while (!entered) std::this_thread::yield();
      released = true;
    }
  };
  const SynthesisReport rep = synthesize_sideband(inst, o);
  t.join();
  REQUIRE(released);
  REQUIRE(renamed_ok);
  REQUIRE(rep.complete());
  const SidebandEvents& ev = SidebandEvents::global();
  const auto recs = snapshot(inst);
  ptrdiff_t state_at = -1, rename_at = -1, done_at = -1;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (recs[i].type() == ev.task_newtask().id() && recs[i].at<int32_t>(12) == tid) {
      state_at = static_cast<ptrdiff_t>(i);
      CHECK(recs[i].chars(24, 16) == "sb-before");
    }
    if (recs[i].type() == ev.task_comm().id() && recs[i].at<int32_t>(12) == tid &&
        recs[i].at<uint8_t>(48) == static_cast<uint8_t>(CommReason::rename)) {
      rename_at = static_cast<ptrdiff_t>(i);
      CHECK(recs[i].chars(16, 16) == "sb-after");
      CHECK(recs[i].chars(32, 16) == "sb-before");
    }
    if (recs[i].type() == ev.synth_done().id()) done_at = static_cast<ptrdiff_t>(i);
  }
  REQUIRE(state_at >= 0);
  REQUIRE(rename_at >= 0);
  CHECK(state_at < done_at);
  CHECK(done_at < rename_at);  // the rename waited for the whole synthesis
  SidebandState sb(inst.registry());
  for (const Rec& r : recs) sb.observe(r.span());
  CHECK(sb.comm(tid) == "sb-after");
}

TEST_CASE("sideband ordering: events written during a synthesis are all kept and all named",
          "[sideband][ordering]") {
  prepare_thread();
  Instance inst(small_options(4096));
  inst.enable(Seen::desc());
  enable_sideband(inst, false);
  constexpr int kThreads = 3;
  constexpr uint32_t kEvents = 3000;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> ts;
  for (int k = 0; k < kThreads; ++k)
    ts.emplace_back([&, k] {
      pthread_setname_np(pthread_self(), ("racer-" + std::to_string(k)).c_str());
      announce_thread();  // named before its first event, hook or not
      ready.fetch_add(1);
      while (!go) std::this_thread::yield();
      for (uint32_t i = 0; i < kEvents; ++i)
        if (emit_seen(inst, i) != EmitResult::kept) failures.fetch_add(1);
    });
  while (ready.load() < kThreads) std::this_thread::yield();
  go = true;
  SynthesisReport reps[3];
  for (auto& r : reps) r = synthesize_sideband(inst);
  for (auto& t : ts) t.join();
  CHECK(failures.load() == 0);
  for (const auto& r : reps) {
    INFO(r.summary());
    CHECK(r.complete());
  }
  const auto recs = snapshot(inst);
  CHECK(check_attribution(recs, inst.registry()) == kThreads * kEvents);
  std::map<int32_t, uint32_t> next;
  for (const Rec& r : of_type(recs, Seen::desc())) {
    uint32_t& n = next[r.common_pid()];
    CHECK(r.at<uint32_t>(8) == n);
    ++n;
  }
  CHECK(next.size() == kThreads);
  SidebandState sb(inst.registry());
  for (const Rec& r : recs) sb.observe(r.span());
  const auto rounds = sb.rounds();
  REQUIRE(rounds.size() == 3);
  for (const auto& r : rounds) CHECK(r.complete());
}
