// A signal handler that emits, run between every two instructions of an
// outer filtered emit: the read section (read_section's epoch), the nesting count and
// the per-thread staging slot are each opened once and closed once, the
// handler leaves all three as it found them, its fallbacks are counted
// exactly once (nested == steps at which the slot was busy), F4 holds for
// both events and the outer record is never clobbered.
//
// Deterministic, no timing: single_stepped() (the x86 trap flag) calls the
// handler after each instruction of the outer emit, WriterScope's
// constructor and destructor, the per-thread lane's claim and release and
// the filter included (core/instance/fast_path.h, core/instance/grace_period.h). The rings
// are any_cpu (cpus = 1): a trap inside an rseq section restarts it, so a
// cpu_local reserve would never finish. The handler emits into a second
// instance: a nested writer on the outer's ring at every instruction would
// fill it before the outer's own reserve.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "single_step.h"
#include "test_events.h"
#include "test_support.h"
#include "tracepipe/buffers/sanitizers.h"
#include "tracepipe/buffers/temp_buffer.h"
#include "tracepipe/core/instance/instance.h"

namespace {

using namespace tracepipe;
using tp_core_test::Nested;
using tp_core_test::Sample;

struct Snapshot {
  uint64_t epoch;
  uint32_t nesting;
  bool busy;
};

// Written by the SIGTRAP handler only (SIGTRAP is blocked inside it).
Instance* g_handler_inst = nullptr;
ThreadContext* g_ctx = nullptr;
std::vector<Snapshot> g_steps;  // reserved up front: no allocation in the handler
uint32_t g_seq = 0;
uint64_t g_changed = 0;  // steps where the handler did not restore the state
uint64_t g_handler_emits = 0;

Snapshot snap() {
  return {g_ctx->section_epoch(), g_ctx->nesting(),
          buffers::PerThreadTempBuffer::busy_for_testing()};
}

void on_step() {
  const Snapshot before = snap();
  if (g_steps.size() < g_steps.capacity()) g_steps.push_back(before);
  {
    SignalScope sig;
    (void)Nested::emit(*g_handler_inst, g_seq++);
    ++g_handler_emits;
  }
  const Snapshot after = snap();
  if (after.epoch != before.epoch || after.nesting != before.nesting || after.busy != before.busy)
    ++g_changed;
}

// The sequence is 0...0 X...X 0...0: opened once, closed once, never reopened.
template <class Get>
bool opened_once(Get get) {
  size_t i = 0;
  while (i < g_steps.size() && get(g_steps[i]) == 0) ++i;
  size_t j = i;
  while (j < g_steps.size() && get(g_steps[j]) != 0) ++j;
  size_t k = j;
  while (k < g_steps.size() && get(g_steps[k]) == 0) ++k;
  return k == g_steps.size() && j > i;
}

// How many times the value went from 0 to non-zero (sections opened, one
// after the other), when it also ends at 0.
template <class Get>
int opened_times(Get get) {
  int n = 0;
  uint64_t last = 0;
  for (const Snapshot& s : g_steps) {
    const uint64_t v = get(s);
    n += last == 0 && v != 0;
    last = v;
  }
  return last == 0 ? n : -1;
}

// The outer instance (filter `value == 1`) at `staging`, and the handler's
// (per_thread, `seq & 1`: half kept, half discarded), one CPU each.
struct Stepped {
  static InstanceOptions options(Staging staging) {
    InstanceOptions o = tp_core_test::small_options(staging);
    o.cpus = 1;
    o.buffer_size_kb = 8192;
    return o;
  }
  static InstanceOptions handler_options(Staging staging) {
    InstanceOptions o = options(staging);
    o.staging = Staging::per_thread;
    return o;
  }
  explicit Stepped(Staging staging)
      : inst(options(staging)), handler_inst(handler_options(staging)) {
    inst.enable(Sample::desc());
    handler_inst.enable(Nested::desc());
    REQUIRE(inst.set_filter(Sample::desc(), "value == 1").ok());
    REQUIRE(handler_inst.set_filter(Nested::desc(), "seq & 1").ok());
  }
  // Points the step handler at this pair and clears what it records; last
  // thing before the stepped call.
  void arm() {
    g_handler_inst = &handler_inst;
    g_ctx = thread_context();
    g_steps.clear();
    g_steps.reserve(200000);
    g_seq = 0;
    g_changed = 0;
    g_handler_emits = 0;
  }
  Instance inst;
  Instance handler_inst;
};

}  // namespace

TEST_CASE(
    "emit: a handler that emits between any two instructions of a filtered emit leaves it intact",
    "[core][staging][signal][concurrency]") {
#if !defined(__x86_64__) || TRACEPIPE_TSAN || TRACEPIPE_ASAN
  TP_SKIP(
      "single-stepping needs x86-64 and an uninstrumented build (sanitizers step through their "
      "runtime)");
#else
  // Not per_cpu: its claim is an rseq section, which every trap restarts.
  const Staging staging = GENERATE(Staging::per_thread, Staging::adaptive, Staging::off);
  const uint32_t value = GENERATE(0u, 1u);  // the outer filter rejects 0, accepts 1
  CAPTURE(static_cast<int>(staging), value);

  prepare_thread();
  Stepped st(staging);
  Instance& inst = st.inst;
  Instance& handler_inst = st.handler_inst;  // the handler's filter keeps half, discards half
  st.arm();
  const EmitResult r =
      tp_test::single_stepped(on_step, [&] { return Sample::emit(inst, value, 7, "outer"); });

  REQUIRE(g_steps.size() < g_steps.capacity());
  REQUIRE(g_handler_emits > 50);  // the emit was really stepped
  CHECK(r == (value == 1 ? EmitResult::kept : EmitResult::discarded));
  CHECK(g_changed == 0);
  CHECK(opened_once([](const Snapshot& s) { return s.epoch; }));
  CHECK(opened_once([](const Snapshot& s) { return uint64_t{s.nesting}; }));
  uint64_t busy_steps = 0;
  for (const Snapshot& s : g_steps) {
    busy_steps += s.busy;
    if (s.busy)
      CHECK((s.epoch != 0 && s.nesting != 0));  // the slot is held only inside the section
  }
  if (staging == Staging::per_thread || staging == Staging::adaptive) CHECK(busy_steps > 0);
  if (staging == Staging::off) CHECK(busy_steps == 0);

  // F4 for both events; every handler emit that found the thread's slot busy
  // went direct and was counted once as nested.
  const EventStats outer = inst.event_stats(Sample::desc());
  const EventStats nested = handler_inst.event_stats(Nested::desc());
  CHECK(outer.kept + outer.discarded + outer.lost == 1);
  CHECK(nested.kept + nested.discarded + nested.lost == g_handler_emits);
  CHECK(nested.lost == 0);
  CHECK(nested.nested == busy_steps);
  CHECK(nested.kept == g_handler_emits / 2);

  const std::vector<tp_core_test::Rec> recs = tp_core_test::drain(inst);
  REQUIRE(recs.size() == (value == 1 ? 1u : 0u));
  if (value == 1) {
    CHECK(recs[0].at<uint32_t>(8) == 1);
    CHECK(recs[0].at<uint32_t>(12) == 7);
    CHECK(std::memcmp(recs[0].bytes.data() + 16, "outer", 5) == 0);
  }
  CHECK(tp_core_test::drain(handler_inst).size() == nested.kept);
#endif
}

TEST_CASE(
    "trace: a handler that emits between any two instructions of the stack lane leaves it intact",
    "[core][staging][signal][concurrency]") {
#if !defined(__x86_64__) || TRACEPIPE_TSAN || TRACEPIPE_ASAN
  TP_SKIP(
      "single-stepping needs x86-64 and an uninstrumented build (sanitizers step through their "
      "runtime)");
#else
  // TRACEPIPE_TRACE into one instance, filter "value == 1" (one compare of a
  // 4-byte field): the reject-first step decides on the argument (value 0:
  // nothing built; value 1: the record is built in the ring and committed,
  // trace_in_section()). No slot is held, and the read-side section opens
  // once. With a prefix glob on the char array instead, the string match
  // decides in trace_chars_first() inside the section the step opened, and
  // its accept is committed as decided in that same section
  // (trace_chars_passed(), trace_in_section(); event_decl.h, (D4)): one
  // section too.
  const Staging staging = GENERATE(Staging::per_thread, Staging::adaptive);
  const uint32_t value = GENERATE(0u, 1u);
  const bool glob = GENERATE(false, true);
  CAPTURE(static_cast<int>(staging), value, glob);

  prepare_thread();
  Stepped st(staging);
  Instance& inst = st.inst;
  Instance& handler_inst = st.handler_inst;
  if (glob)
    REQUIRE(inst.set_filter(Sample::desc(), value == 1 ? "pad ~ \"out*\"" : "pad ~ \"zz*\"").ok());
  st.arm();
  tp_test::single_stepped(on_step, [&] {
    TRACEPIPE_TRACE(Sample, value, 7u, "outer");
    return 0;
  });

  REQUIRE(g_steps.size() < g_steps.capacity());
  REQUIRE(g_handler_emits > 20);  // the call was really stepped
  CHECK(g_changed == 0);
  CHECK(opened_times([](const Snapshot& s) { return s.epoch; }) == 1);
  CHECK(opened_times([](const Snapshot& s) { return uint64_t{s.nesting}; }) == 1);
  for (const Snapshot& s : g_steps) {
    CHECK_FALSE(s.busy);  // the lane stages on its stack
    CHECK(s.nesting <= 1);
  }

  const EventStats outer = inst.event_stats(Sample::desc());
  const EventStats nested = handler_inst.event_stats(Nested::desc());
  CHECK(outer.kept == (value == 1 ? 1u : 0u));
  CHECK(outer.discarded == (value == 1 ? 0u : 1u));
  CHECK(outer.staged == 1);
  CHECK(nested.kept + nested.discarded + nested.lost == g_handler_emits);
  CHECK(nested.nested == 0);
  CHECK(nested.kept == g_handler_emits / 2);

  const std::vector<tp_core_test::Rec> recs = tp_core_test::drain(inst);
  REQUIRE(recs.size() == (value == 1 ? 1u : 0u));
  if (value == 1) {
    CHECK(recs[0].header().common_preempt_count == 0);
    CHECK(recs[0].at<uint32_t>(8) == 1);
    CHECK(recs[0].at<uint32_t>(12) == 7);
    CHECK(std::memcmp(recs[0].bytes.data() + 16, "outer", 5) == 0);
  }
#endif
}
