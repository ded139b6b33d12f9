// The write path: stage -> filter -> commit or discard, per staging policy.
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <numeric>
#include <string>
#include <thread>

#include "test_events.h"
#include "test_support.h"
#include "tracepipe/core/instance/raw_emit.h"

using namespace tracepipe;
using namespace tp_core_test;

namespace {

const Staging kAllStaging[] = {Staging::off, Staging::per_cpu, Staging::per_thread,
                               Staging::adaptive};

std::string pad_of(uint32_t i) { return "p" + std::to_string(i); }

}  // namespace

TEST_CASE("fast path: an unfiltered event lands with the common header filled in",
          "[core][fastpath]") {
  Instance inst(small_options(Staging::per_thread));
  CHECK(emit_sample(inst, 1, 2, "x") == EmitResult::disabled);  // not enabled yet
  inst.enable(Sample::desc());
  REQUIRE(emit_sample(inst, 7, 42, "hello") == EmitResult::kept);
  const auto recs = drain(inst);
  REQUIRE(recs.size() == 1);
  const Rec& r = recs[0];
  REQUIRE(r.bytes.size() == 64);
  const CommonHeader h = r.header();
  CHECK(h.common_type == Sample::desc().id());
  CHECK(h.common_type >= Registry::kFirstDeclaredId);
  CHECK(h.common_flags == 0);
  CHECK(h.common_preempt_count == 0);
  CHECK(h.common_pid == static_cast<int32_t>(gettid()));
  CHECK(r.at<uint32_t>(8) == 7);
  CHECK(r.at<uint32_t>(12) == 42);
  CHECK(std::string(reinterpret_cast<const char*>(r.bytes.data() + 16)) == "hello");
  CHECK(r.bytes[16 + 47] == std::byte{0});
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.kept == 1);
  CHECK(s.unfiltered == 1);
  CHECK(s.emitted() == 1);
  CHECK(s.staged == 0);
  CHECK(r.ts > 0);
}

TEST_CASE("fast path: filtered events per staging policy (counts, paths, records)",
          "[core][fastpath]") {
  for (Staging st : kAllStaging) {
    INFO("staging " << to_string(st));
    Instance inst(small_options(st));
    inst.enable(Sample::desc());
    REQUIRE(inst.set_filter(Sample::desc(), "value > 10 && seq != 3").ok());
    CHECK(inst.filter(Sample::desc()) == "value > 10 && seq != 3");
    uint32_t expect_kept = 0;
    for (uint32_t i = 0; i < 200; ++i) {
      const uint32_t value = i % 20;
      const bool accept = value > 10 && i != 3;
      const EmitResult res = emit_sample(inst, value, i, pad_of(i));
      REQUIRE(res == (accept ? EmitResult::kept : EmitResult::discarded));
      expect_kept += accept;
    }
    const EventStats s = inst.event_stats(Sample::desc());
    CHECK(s.kept == expect_kept);
    CHECK(s.discarded == 200 - expect_kept);
    CHECK(s.lost == 0);
    CHECK(s.unfiltered == 0);
    CHECK(s.staged + s.direct == 200);
    CHECK(s.nested == 0);
    CHECK(s.too_big == 0);
    switch (st) {
      case Staging::off:
        CHECK(s.direct == 200);
        CHECK(s.ring_discards == 200 - expect_kept);
        break;
      case Staging::per_cpu:
      case Staging::per_thread:
        CHECK(s.staged == 200);
        CHECK(s.ring_discards == 0);
        break;
      case Staging::adaptive:
        // 45% accepted, far below the 90% threshold: staged, and any direct
        // one was chosen by the policy (nothing was nested or too big).
        CHECK(s.adaptive_direct == s.direct);
        CHECK(s.staged > 190);
        break;
    }
    const auto recs = drain(inst);
    REQUIRE(recs.size() == expect_kept);
    for (const Rec& r : recs) {
      CHECK(r.at<uint32_t>(8) > 10);
      CHECK(r.at<uint32_t>(12) != 3);
      CHECK(std::string(reinterpret_cast<const char*>(r.bytes.data() + 16)) ==
            pad_of(r.at<uint32_t>(12)));
    }
    // Conservation across the ring buffer: every reserve attempt accounted.
    CHECK(total_accounted(inst) == inst.ring_attempts());
    CHECK(inst.ring_attempts() == s.ring_attempts());
  }
}

TEST_CASE("fast path: a failed filter keeps the previous one, 0 clears, blank is an error",
          "[core][fastpath][filter]") {
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
  const FilterStatus bad = inst.set_filter(Sample::desc(), "valu == 1");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code == filters::FilterErr::field_not_found);
  CHECK(bad.render() ==
        "event filter parse error: error: Field not found\n  Command: valu == 1\n                "
        "^\n");
  CHECK(inst.filter(Sample::desc()) == "value == 1");  // still in force
  // Blank is not a clear: the kernel's EINVAL "Error" at 0 (only "0" clears).
  for (const char* blank : {"", "   ", "\n"}) {
    const FilterStatus b = inst.set_filter(Sample::desc(), blank);
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().code == filters::FilterErr::errno_error);
    CHECK(b.error().caret() == 0);
    CHECK(b.error().err == EINVAL);
    CHECK(inst.filter(Sample::desc()) == "value == 1");
  }
  CHECK(emit_sample(inst, 1, 0, "") == EmitResult::kept);
  CHECK(emit_sample(inst, 2, 0, "") == EmitResult::discarded);
  REQUIRE(inst.set_filter(Sample::desc(), " 0 ").ok());
  CHECK(inst.filter(Sample::desc()) == "none");
  CHECK(emit_sample(inst, 2, 0, "") == EmitResult::kept);
  CHECK(inst.event_stats(Sample::desc()).unfiltered == 1);
  REQUIRE(inst.set_filter(Sample::desc(), "seq == 5").ok());
  inst.clear_filter(Sample::desc());
  CHECK(inst.filter(Sample::desc()) == "none");
  CHECK(emit_sample(inst, 2, 0, "") == EmitResult::kept);
}

TEST_CASE(
    "fast path: filter() shows the kernel's text, and every form of \"0\" the kernel takes clears",
    "[core][fastpath][filter]") {
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  // Asked of the kernel: cut at a NUL, trailing whitespace (\v, \f, 0xA0
  // too) removed, leading kept.
  const std::pair<std::string, std::string> shown[] = {
      {std::string("value == 1\0 garbage", 19), "value == 1"},
      {"value == 1\v", "value == 1"},
      {"  value == 1 \xa0", "  value == 1"},
  };
  for (const auto& [in, out] : shown) {
    REQUIRE(inst.set_filter(Sample::desc(), in).ok());
    CHECK(inst.filter(Sample::desc()) == out);
  }
  // Each clears: the event goes back to the unfiltered path.
  for (const std::string& z :
       {std::string("0\v"), std::string("\f0"), std::string("0\xa0"), std::string("0\0junk", 6)}) {
    REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
    const uint64_t before = inst.event_stats(Sample::desc()).unfiltered;
    REQUIRE(inst.set_filter(Sample::desc(), z).ok());
    CHECK(inst.filter(Sample::desc()) == "none");
    CHECK(emit_sample(inst, 2, 0, "") == EmitResult::kept);
    CHECK(inst.event_stats(Sample::desc()).unfiltered == before + 1);
  }
}

TEST_CASE(
    "fast path: an event's program is never null, and a writer that saw kFiltered after a clear "
    "accepts",
    "[core][fastpath][filter]") {
  for (Staging stg : kAllStaging) {
    INFO("staging " << to_string(stg));
    Instance inst(small_options(stg));
    inst.enable(Sample::desc());
    // The instance's state of the event, from the event's subscriber list
    // (as EventDecl::trace_slow_path finds it).
    detail::EventState* st = nullptr;
    const detail::Subscribers* subs = Sample::desc().subscribers_for_fast_path().load();
    REQUIRE(subs != nullptr);
    for (uint32_t k = 0; k < subs->count; ++k)
      if (subs->states[k]->instance == &inst) st = subs->states[k];
    REQUIRE(st != nullptr);
    const filters::Program* accept_all = &detail::accept_all_program();
    CHECK(accept_all->predicate_count() == 0);
    CHECK(st->program.load() == accept_all);  // no filter yet
    REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
    CHECK(st->program.load() != accept_all);
    CHECK(emit_sample(inst, 2, 0, "") == EmitResult::discarded);
    inst.clear_filter(Sample::desc());
    CHECK(st->program.load() == accept_all);
    // The race of a clear, made deterministic: a writer that loaded the flags
    // (kFiltered set) before the clear then loads the program after it.
    st->flags.fetch_or(detail::EventState::kFiltered);
    CHECK(emit_sample(inst, 2, 0, "") == EmitResult::kept);
    CHECK(emit_sample(inst, 3, 0, "") == EmitResult::kept);
    st->flags.fetch_and(~detail::EventState::kFiltered);
    CHECK(drain(inst).size() == 2);
  }
}

// Registered before the program's first use, so it runs after anything a
// first use registers with atexit (a static's destructor would be): under
// ASan (label fastpath) a program freed at exit fails here. CTest runs each
// case in its own process, so this one makes the first use.
namespace {
void use_accept_all_at_exit() {
  if (detail::accept_all_program().predicate_count() != 0) _exit(3);
}
}  // namespace

TEST_CASE("fast path: the accept-all program outlives static destructors",
          "[core][fastpath][filter]") {
  REQUIRE(std::atexit(use_accept_all_at_exit) == 0);
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());  // the first event state: the program's first use
  CHECK(detail::accept_all_program().predicate_count() == 0);
  CHECK(emit_sample(inst, 1, 0, "") == EmitResult::kept);
}

TEST_CASE("fast path: soft-disabled events are staged and always discarded", "[core][fastpath]") {
  for (Staging st : kAllStaging) {
    INFO("staging " << to_string(st));
    Instance inst(small_options(st));
    inst.enable(Sample::desc());
    inst.set_soft_disabled(Sample::desc(), true);
    CHECK(inst.soft_disabled(Sample::desc()));
    for (int i = 0; i < 10; ++i) CHECK(emit_sample(inst, 1, 1, "") == EmitResult::discarded);
    const EventStats s = inst.event_stats(Sample::desc());
    CHECK(s.discarded == 10);
    CHECK(s.soft_discarded == 10);
    CHECK(s.kept == 0);
    CHECK(drain(inst).empty());
    inst.set_soft_disabled(Sample::desc(), false);
    CHECK(emit_sample(inst, 1, 1, "") == EmitResult::kept);
  }
}

TEST_CASE("fast path: the staging boundary is the slot minus header and length word",
          "[core][fastpath]") {
  for (Staging st : {Staging::per_cpu, Staging::per_thread}) {
    INFO("staging " << to_string(st));
    // 8 KiB sub-buffers, so that the ring takes records on both sides of the
    // staging limit (a 4 KiB sub-buffer holds at most 4080 bytes of payload).
    InstanceOptions o = small_options(st);
    o.subbuf_size_kb = 8;
    Instance inst(o);
    inst.enable(Other::desc());
    REQUIRE(inst.set_filter(Other::desc(), "level >= 0").ok());
    REQUIRE(Other::fixed_size == 16);
    // Str fields are capped at kMaxStrLen bytes, so build the records by size.
    const auto emit_sized = [&](uint32_t size) {
      return inst.emit_fill(Other::desc(), size, [](std::span<std::byte> rec) {
        std::memset(rec.data() + 8, 0, rec.size() - 8);  // level 0, empty data_loc
      });
    };
    CHECK(emit_sized(kMaxStagedRecord) == EmitResult::kept);
    EventStats s = inst.event_stats(Other::desc());
    CHECK(s.staged == 1);
    CHECK(s.too_big == 0);
    CHECK(emit_sized(kMaxStagedRecord + 1) == EmitResult::kept);
    s = inst.event_stats(Other::desc());
    CHECK(s.staged == 1);
    CHECK(s.direct == 1);
    CHECK(s.too_big == 1);
    const auto recs = drain(inst);
    REQUIRE(recs.size() == 2);
    CHECK(recs[0].bytes.size() + recs[1].bytes.size() == 2 * kMaxStagedRecord + 1);
  }
}

TEST_CASE("fast path: a busy staging slot sends the event direct", "[core][fastpath]") {
  SECTION("per thread") {
    Instance inst(small_options(Staging::per_thread));
    inst.enable(Sample::desc());
    REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
    auto held = tracepipe::detail::InstanceAccess::stager(inst).thread_slots().try_claim(
        0, 8);  // force busy
    REQUIRE(held);
    CHECK(emit_sample(inst, 1, 1, "") == EmitResult::kept);
    CHECK(emit_sample(inst, 2, 2, "") == EmitResult::discarded);
    buffers::PerThreadTempBuffer::release(held);
    const EventStats s = inst.event_stats(Sample::desc());
    CHECK(s.nested == 2);
    CHECK(s.direct == 2);
    CHECK(s.ring_discards == 1);
    // The direct reject was the last record: reclaimed, not padding.
    uint64_t discarded = 0, reclaimed = 0;
    for (const auto& c : inst.cpu_stats()) {
      discarded += c.discarded;
      reclaimed += c.reclaimed;
    }
    CHECK(discarded == 1);
    CHECK(reclaimed == 1);
    CHECK(emit_sample(inst, 1, 3, "") == EmitResult::kept);  // slot free again: staged
    CHECK(inst.event_stats(Sample::desc()).staged == 1);
    CHECK(drain(inst).size() == 2);
  }
  SECTION("per cpu") {
    Instance inst(small_options(Staging::per_cpu));
    inst.enable(Sample::desc());
    REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
    // Hold the slot of the CPU we are pinned to: the emit finds it busy. (A
    // slot is claimed only from its own CPU when the claim is an rseq
    // section, so the test stays on one CPU.)
    auto& slots = tracepipe::detail::InstanceAccess::stager(inst).cpu_slots();
    tp_test::PinToCpu pin(current_cpu());
    REQUIRE(pin.ok());
    buffers::StagedRecord held = slots.try_claim_local(8);
    REQUIRE(static_cast<bool>(held));
    CHECK(held.cpu() == current_cpu());
    CHECK(emit_sample(inst, 1, 1, "") == EmitResult::kept);
    buffers::TempBuffer::release(held);
    // Held by something other than an emit of this thread: contended, the
    // case of another thread preempted on this CPU with the slot.
    CHECK(inst.event_stats(Sample::desc()).contended == 1);
    CHECK(inst.event_stats(Sample::desc()).nested == 0);
    CHECK(inst.event_stats(Sample::desc()).direct == 1);
    CHECK(emit_sample(inst, 1, 1, "") == EmitResult::kept);
    CHECK(inst.event_stats(Sample::desc()).staged == 1);
  }
}

TEST_CASE("fast path: adaptive staging goes direct for accepted events and stages rejected ones",
          "[core][fastpath][adaptive]") {
  Instance inst(small_options(Staging::adaptive));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  for (uint32_t i = 0; i < 1000; ++i) REQUIRE(emit_sample(inst, 1, i, "") == EmitResult::kept);
  EventStats s = inst.event_stats(Sample::desc());
  // The 32nd accepted staged event checks the rate since the start: 32 of
  // 32 is above 90%, so the event goes direct from the 33rd on.
  CHECK(s.staged == 32);
  CHECK(s.adaptive_direct == 968);
  CHECK(s.direct == s.adaptive_direct);
  CHECK(s.ring_discards == 0);
  for (uint32_t i = 0; i < 1000; ++i) REQUIRE(emit_sample(inst, 0, i, "") == EmitResult::discarded);
  s = inst.event_stats(Sample::desc());
  // Direct, the moving average starts at 65536 and loses 1/32 per reject:
  // 63488, 61504, 59582, then 57720, at or below 0.9 * 65536 (58982): the
  // 4th reject turns staging back on; the other 996 are staged.
  CHECK(s.ring_discards == 4);
  CHECK(s.staged == 32 + 996);
  CHECK(s.adaptive_direct == 968 + 4);
  CHECK(drain(inst).size() == 1000);

  // A busy slot sends an event direct too, but that is nesting, not the
  // policy's choice: adaptive_direct leaves it out.
  const uint64_t chosen = s.adaptive_direct;
  buffers::StagedRecord held =
      tracepipe::detail::InstanceAccess::stager(inst).thread_slots().try_claim(0, 8);
  REQUIRE(held);
  CHECK(emit_sample(inst, 0, 1, "") == EmitResult::discarded);
  buffers::PerThreadTempBuffer::release(held);
  s = inst.event_stats(Sample::desc());
  CHECK(s.nested == 1);
  CHECK(s.adaptive_direct == chosen);
  CHECK(s.direct == s.adaptive_direct + s.nested);
}

// The adaptive choice is per event, and each thread flips it on its own
// evidence: one thread that only accepts sends the event direct, one that
// only rejects brings staging back. Whatever the interleaving, every emit
// is counted once, on the path it took, and nothing is lost.
TEST_CASE("fast path: adaptive threads that disagree flip the event's choice, counts stay exact",
          "[core][fastpath][adaptive]") {
  InstanceOptions o = small_options(Staging::adaptive);
  Instance inst(o);
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  constexpr uint32_t kEach = 20000;
  std::atomic<int> ready{0};
  auto run = [&](uint32_t value) {
    prepare_thread();
    ready.fetch_add(1);
    while (ready.load() < 2) {
    }
    for (uint32_t i = 0; i < kEach; ++i) (void)emit_sample(inst, value, i, "");
  };
  std::thread accepting(run, 1), rejecting(run, 0);
  accepting.join();
  rejecting.join();
  const EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.kept + s.lost == kEach);
  CHECK(s.discarded == kEach);
  CHECK(s.staged + s.direct == 2 * kEach);
  CHECK(s.staged >= 32);  // the accepting thread's first check needs 32 staged accepts
  CHECK(s.direct >= 1);   // and the emit after its flip goes direct
  CHECK(s.nested == 0);
  CHECK(s.contended == 0);
  CHECK(s.too_big == 0);
  CHECK(s.adaptive_direct == s.direct);
  CHECK(total_accounted(inst) == inst.ring_attempts());
}

// The rate check comes at every 32nd accept of a thread's lifetime, but the
// window it judges restarts when staging comes back: it must hold at least
// 32 accepts, or one accept right after a flip back would send the event
// direct again (seen with thread B at ~23% kept).
TEST_CASE("fast path: adaptive judges at least 32 accepts after staging comes back",
          "[core][fastpath][adaptive]") {
  Instance inst(small_options(Staging::adaptive));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  auto on_thread = [&](auto&& f) {
    std::thread t([&] {
      prepare_thread();
      f();
    });
    t.join();
  };
  std::atomic<bool> b_go{false}, b_next{false}, b_done{false};
  std::atomic<int> b_phase{0};
  // Thread B keeps its context across phases: it waits between them.
  std::thread b([&] {
    prepare_thread();
    for (uint32_t i = 0; i < 31; ++i) (void)emit_sample(inst, 1, i, "");   // 31 staged accepts
    for (uint32_t i = 0; i < 100; ++i) (void)emit_sample(inst, 0, i, "");  // 100 staged rejects
    b_phase = 1;
    while (!b_go.load()) std::this_thread::yield();
    for (uint32_t i = 0; i < 4; ++i)
      (void)emit_sample(inst, 0, i, "");  // direct: the 4th brings staging back
    (void)emit_sample(inst, 1, 0, "");    // B's 32nd accept of its lifetime, 1st of the new window
    b_phase = 2;
    while (!b_next.load()) std::this_thread::yield();
    for (uint32_t i = 0; i < 4; ++i) (void)emit_sample(inst, 0, i, "");  // must still stage
    b_done = true;
  });
  while (b_phase.load() != 1) std::this_thread::yield();
  on_thread([&] {
    for (uint32_t i = 0; i < 40; ++i)
      (void)emit_sample(inst, 1, i, "");  // A: 32 staged, then 8 direct
  });
  EventStats s = inst.event_stats(Sample::desc());
  CHECK(s.staged == 31 + 100 + 32);
  CHECK(s.adaptive_direct == 8);
  b_go = true;
  while (b_phase.load() != 2) std::this_thread::yield();
  s = inst.event_stats(Sample::desc());
  CHECK(s.adaptive_direct == 8 + 4);
  CHECK(s.staged == 31 + 100 + 32 + 1);  // the accept was staged and judged nothing
  b_next = true;
  b.join();
  s = inst.event_stats(Sample::desc());
  CHECK(b_done.load());
  CHECK(s.adaptive_direct == 8 + 4);  // still staging: the rejects did not go direct
  CHECK(s.staged == 31 + 100 + 32 + 1 + 4);
}

// A drop-newest ring that fills while an adaptive event goes direct: the
// refused emit is lost (the kernel's loss too), and the event stages again,
// so that while the ring stays full its rejects are discarded in the slot
// instead of being refused by the ring and counted lost. Once the ring has
// room, kept accepts send it direct again.
TEST_CASE("fast path: a full ring sends an adaptive event back to staging",
          "[core][fastpath][adaptive]") {
  Instance inst(small_options(Staging::adaptive));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value != 0").ok());
  uint32_t n = 0;
  while (emit_sample(inst, 1, n, "") == EmitResult::kept) REQUIRE(++n < 1000000);
  EventStats s = inst.event_stats(Sample::desc());
  REQUIRE(s.lost == 1);
  CHECK(s.staged == 32);
  CHECK(s.adaptive_direct == n - 32 + 1);  // the refused emit went direct too
  for (uint32_t i = 0; i < 1000; ++i) CHECK(emit_sample(inst, 0, i, "") == EmitResult::discarded);
  s = inst.event_stats(Sample::desc());
  CHECK(s.lost == 1);
  CHECK(s.discarded == 1000);
  CHECK(s.ring_discards == 0);  // staged: none reached the ring
  CHECK(s.staged == 32 + 1000);
  CHECK(total_accounted(inst) == inst.ring_attempts());

  CHECK(drain(inst).size() == n);
  for (uint32_t i = 0; i < 100; ++i) CHECK(emit_sample(inst, 1, i, "") == EmitResult::kept);
  s = inst.event_stats(Sample::desc());
  // The check at the 64th staged accept judges a window that holds the 1000
  // rejects (stay staged); the one at the 96th judges 32 of 32: direct.
  CHECK(s.staged == 32 + 1000 + 64);
  CHECK(s.adaptive_direct == n - 32 + 1 + 36);
  CHECK(s.lost == 1);
  CHECK(total_accounted(inst) == inst.ring_attempts());
}

TEST_CASE("fast path: emit_raw replays kernel-layout records unchanged", "[core][fastpath][raw]") {
  InstanceOptions o = small_options(Staging::per_thread);
  o.writers = WriterMode::any_cpu;  // records go to the CPU given, not the caller's
  Instance inst(o);
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "common_pid == 4242 && value < 5").ok());
  std::vector<std::byte> rec(64);
  const CommonHeader h{Sample::desc().id(), 0x09, 0x21, 4242};
  std::memcpy(rec.data(), &h, sizeof h);
  for (uint32_t v : {1u, 9u, 3u}) {
    std::memcpy(rec.data() + 8, &v, 4);
    tracepipe::RawEmit::emit(inst, rec, 1);
  }
  CHECK(inst.event_stats(Sample::desc()).kept == 2);
  CHECK(inst.event_stats(Sample::desc()).discarded == 1);
  const auto recs = drain_cpu(inst, 1 % inst.cpus());
  REQUIRE(recs.size() == 2);
  const CommonHeader got = recs[0].header();
  CHECK(got.common_pid == 4242);    // recorded pid kept
  CHECK(got.common_flags == 0x09);  // recorded flags kept
  CHECK(got.common_preempt_count == 0x21);
  CHECK(recs[0].at<uint32_t>(8) == 1);
  CHECK(recs[1].at<uint32_t>(8) == 3);
  // Unknown IDs and short records are refused and counted.
  std::vector<std::byte> bad(64);
  const uint16_t unknown = 65535;
  std::memcpy(bad.data(), &unknown, 2);
  CHECK(tracepipe::RawEmit::emit(inst, bad, 0) == EmitResult::lost);
  CHECK(tracepipe::RawEmit::emit(inst, std::span(rec).first(4), 0) == EmitResult::lost);
  CHECK(inst.raw_refused() == 2);
}

TEST_CASE("fast path: emit_raw's filter sees the CPU as given, also at or above the buffer count",
          "[core][fastpath][raw]") {
  InstanceOptions o = small_options(Staging::per_thread);
  o.cpus = 2;  // any_cpu writers: records placed by the CPU given
  Instance inst(o);
  REQUIRE(inst.cpus() == 2);
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "CPU == 5 || cpu == 1").ok());
  std::vector<std::byte> rec(64);
  const CommonHeader h{Sample::desc().id(), 0, 0, 77};
  std::memcpy(rec.data(), &h, sizeof h);
  auto emit = [&](uint32_t value, uint32_t cpu) {
    std::memcpy(rec.data() + 8, &value, 4);
    return tracepipe::RawEmit::emit(inst, rec, cpu);
  };
  CHECK(emit(5, 5) == EmitResult::kept);       // the filter saw 5, not 5 % 2
  CHECK(emit(3, 3) == EmitResult::discarded);  // 3, not 3 % 2 == 1
  CHECK(emit(1, 1) == EmitResult::kept);
  CHECK(emit(7, 7) == EmitResult::discarded);
  // Placed in buffer cpu % 2: both kept records are in buffer 1.
  CHECK(drain_cpu(inst, 0).empty());
  const auto recs = drain_cpu(inst, 1);
  REQUIRE(recs.size() == 2);
  CHECK(recs[0].at<uint32_t>(8) == 5);
  CHECK(recs[1].at<uint32_t>(8) == 1);
}

TEST_CASE("fast path: several instances record one event with different filters",
          "[core][fastpath][instances]") {
  Instance a(small_options(Staging::per_thread));
  Instance b(small_options(Staging::per_cpu));
  Instance c(small_options(Staging::off));  // never enabled
  a.enable(Sample::desc());
  b.enable(Sample::desc());
  REQUIRE(a.set_filter(Sample::desc(), "value & 1").ok());
  REQUIRE(b.set_filter(Sample::desc(), "value < 4").ok());
  for (uint32_t v = 0; v < 10; ++v) Sample::trace(v, v, "");
  const auto ra = drain(a), rb = drain(b);
  REQUIRE(ra.size() == 5);  // 1 3 5 7 9
  REQUIRE(rb.size() == 4);  // 0 1 2 3
  for (const Rec& r : ra) CHECK((r.at<uint32_t>(8) & 1) == 1);
  for (const Rec& r : rb) CHECK(r.at<uint32_t>(8) < 4);
  CHECK(drain(c).empty());
  a.enable(Sample::desc(), false);
  Sample::trace(1, 1, "");
  CHECK(drain(a).empty());
  CHECK(drain(b).size() == 1);
}

TEST_CASE("fast path: system filters apply to the events that have the fields",
          "[core][fastpath][filter]") {
  Instance inst(small_options(Staging::per_thread));
  REQUIRE(inst.enable("tptest:*") == 2);
  const SystemFilterResult r = inst.set_system_filter("tptest", "value == 3");
  REQUIRE(r.applied.size() == 1);
  CHECK(r.applied[0] == &Sample::desc());
  REQUIRE(r.rejected.size() == 1);
  CHECK(r.rejected[0].first == &Other::desc());
  CHECK(r.rejected[0].second.code == filters::FilterErr::field_not_found);
  CHECK(inst.filter(Sample::desc()) == "value == 3");
  CHECK(inst.filter(Other::desc()) == "none");
  // The kernel's filter file of such an event: the subsystem error at 0.
  const auto err = inst.filter_error(Other::desc());
  REQUIRE(err.has_value());
  CHECK(err->code == filters::FilterErr::bad_subsys_filter);
  CHECK(err->message() == "Couldn't find or set field in one of a subsystem's events");
  CHECK(err->caret() == 0);
  CHECK_FALSE(inst.filter_error(Sample::desc()).has_value());
  CHECK(emit_sample(inst, 3, 0, "") == EmitResult::kept);
  CHECK(emit_sample(inst, 4, 0, "") == EmitResult::discarded);
  CHECK(Other::emit(inst, 1, "x") == EmitResult::kept);  // left unfiltered
  // A filter on a field both events have.
  const SystemFilterResult all = inst.set_system_filter("tptest", "common_pid > 0");
  CHECK(all.applied.size() == 2);
  CHECK(all.rejected.empty());
  inst.set_system_filter("tptest", "0");
  CHECK(inst.filter(Sample::desc()) == "none");
  CHECK_THROWS_AS(inst.set_system_filter("nosuchsystem", "a == 1"), std::invalid_argument);
}

TEST_CASE("fast path: drop-newest loses when full and counts it, pause drops", "[core][fastpath]") {
  InstanceOptions o = small_options(Staging::per_thread, BufferMode::drop_newest);
  o.buffer_size_kb = 8;
  o.cpus = 1;
  Instance inst(o);
  inst.enable(Sample::desc());
  uint64_t kept = 0, lost = 0;
  for (uint32_t i = 0; i < 1000; ++i) {
    const EmitResult r = emit_sample(inst, i, i, "");
    kept += r == EmitResult::kept;
    lost += r == EmitResult::lost;
  }
  CHECK(kept > 0);
  CHECK(lost > 0);
  CHECK(kept + lost == 1000);
  const buffers::CpuStats cs = inst.cpu_stats(0);
  CHECK(cs.lost_full == lost);
  CHECK(cs.entries == kept);
  CHECK(cs.conserved(inst.ring_attempts()));
  const auto recs = drain(inst);
  REQUIRE(recs.size() == kept);
  for (size_t i = 0; i < recs.size(); ++i)
    CHECK(recs[i].at<uint32_t>(12) == i);  // the oldest survive
  inst.pause();
  CHECK(emit_sample(inst, 1, 1, "") == EmitResult::lost);
  CHECK(inst.cpu_stats(0).lost_paused == 1);
  inst.resume();
  CHECK(emit_sample(inst, 1, 1, "") == EmitResult::kept);
}

TEST_CASE("fast path: writers are cpu_local by default, any_cpu when cpus or external_time is set",
          "[core][fastpath][writers]") {
  if (!buffers::detail::rseq_usable()) {
    Instance inst(small_options(Staging::per_thread));
    CHECK_FALSE(inst.cpu_local_writers());
    InstanceOptions o = small_options(Staging::per_thread);
    o.writers = WriterMode::cpu_local;
    CHECK_THROWS_AS(Instance(o), std::invalid_argument);
    return;
  }
  Instance inst(small_options(Staging::per_thread));
  CHECK(inst.cpu_local_writers());
  CHECK(inst.ring().cpu_local());
  InstanceOptions with_cpus = small_options(Staging::per_thread);
  with_cpus.cpus = 2;
  CHECK_FALSE(Instance(with_cpus).cpu_local_writers());
  InstanceOptions ext = small_options(Staging::per_thread);
  ext.external_time = true;
  CHECK_FALSE(Instance(ext).cpu_local_writers());
  with_cpus.writers = WriterMode::cpu_local;
  CHECK_THROWS_AS(Instance(with_cpus), std::invalid_argument);

  // Each record lands in the buffer of the CPU its writer runs on.
  inst.enable(Sample::desc());
  const uint32_t n =
      std::min<uint32_t>(inst.cpus(), static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  for (uint32_t cpu = 0; cpu < n && cpu < 4; ++cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    REQUIRE(sched_setaffinity(0, sizeof set, &set) == 0);
    REQUIRE(emit_sample(inst, cpu, 100 + cpu, "local") == EmitResult::kept);
    const auto recs = drain_cpu(inst, cpu);
    REQUIRE(recs.size() == 1);
    CHECK(recs[0].at<uint32_t>(8) == cpu);
  }
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &all);
  sched_setaffinity(0, sizeof all, &all);
}

TEST_CASE("instance: a buffer for every CPU id a writer can have (possible_cpus)", "[core][cpu]") {
  Instance inst;
  CHECK(inst.cpus() == possible_cpus());
  CHECK(inst.ring().cpus() == possible_cpus());
}
