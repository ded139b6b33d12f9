// Adaptive staging's flips against a signal handler that emits the same
// event into the same instance, at every single instruction of the flipping
// emit (one handler emit per run, at step k, for every k): the 32nd
// accepted staged emit (adaptive_check_staged sends the event direct), the
// first direct emit of a new period, and the 4th direct reject
// (adaptive_back_to_staging). Each run checks the outcomes, the counts, the
// ring's conservation and the records, then that the event still behaves.
//
// Deterministic (the x86 trap flag, tests/support/single_step.h); any_cpu
// ring with cpus = 1, as in emit_single_step_test.cc (an rseq section would
// restart at every trap).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "single_step.h"
#include "test_events.h"
#include "test_support.h"
#include "tracepipe/buffers/sanitizers.h"
#include "tracepipe/core/instance/instance.h"

namespace {

using namespace tracepipe;
using tp_core_test::Sample;
using tp_core_test::total_accounted;

Instance* g_inst = nullptr;
uint64_t g_step = 0, g_at = 0;
uint32_t g_value = 0;
bool g_emitted = false;
EmitResult g_result = EmitResult::disabled;

void on_step() {
  if (g_step++ != g_at) return;
  SignalScope sig;
  g_result = Sample::emit(*g_inst, g_value, 0xabcdef, "handler");
  g_emitted = true;
}

enum class Scenario { check_flips_direct, first_direct, back_to_staging };

}  // namespace

TEST_CASE("adaptive: a same-event handler emit at any instruction of a flipping emit",
          "[core][adaptive][signal][concurrency]") {
#if !defined(__x86_64__) || TRACEPIPE_TSAN || TRACEPIPE_ASAN
  TP_SKIP("single-stepping needs x86-64 and an uninstrumented build");
#else
  const Scenario sc =
      GENERATE(Scenario::check_flips_direct, Scenario::first_direct, Scenario::back_to_staging);
  const uint32_t hvalue = GENERATE(0u, 1u);
  CAPTURE(static_cast<int>(sc), hvalue);
  prepare_thread();
  uint64_t runs = 0, bad = 0;
  for (uint64_t k = 0;; ++k) {
    InstanceOptions o = tp_core_test::small_options(Staging::adaptive, BufferMode::overwrite);
    o.cpus = 1;
    o.writers = WriterMode::any_cpu;
    o.buffer_size_kb = 1024;
    auto inst = std::make_unique<Instance>(o);
    inst->enable(Sample::desc());
    REQUIRE(inst->set_filter(Sample::desc(), "value != 0").ok());
    uint64_t pre_kept = 0, pre_disc = 0;
    for (uint32_t i = 0; i < 31; ++i, ++pre_kept)
      REQUIRE(Sample::emit(*inst, 1, i, "pre") == EmitResult::kept);
    uint32_t outer_value = 1;
    if (sc != Scenario::check_flips_direct) {
      REQUIRE(Sample::emit(*inst, 1, 31, "pre") == EmitResult::kept);  // the 32nd: direct now
      ++pre_kept;
    }
    if (sc == Scenario::back_to_staging) {
      REQUIRE(Sample::emit(*inst, 1, 32, "pre") == EmitResult::kept);
      ++pre_kept;
      for (uint32_t i = 0; i < 3; ++i, ++pre_disc)
        REQUIRE(Sample::emit(*inst, 0, 40 + i, "pre") == EmitResult::discarded);
      outer_value = 0;  // the 4th reject turns staging back on
    }
    g_inst = inst.get();
    g_step = 0;
    g_at = k;
    g_value = hvalue;
    g_emitted = false;
    g_result = EmitResult::disabled;
    const EmitResult r = tp_test::single_stepped(
        on_step, [&] { return Sample::emit(*inst, outer_value, 777, "outer"); });
    if (!g_emitted) break;  // k is past the last instruction
    ++runs;
    const EventStats s = inst->event_stats(Sample::desc());
    const bool ok = r == (outer_value ? EmitResult::kept : EmitResult::discarded) &&
                    g_result == (hvalue ? EmitResult::kept : EmitResult::discarded) &&
                    s.kept == pre_kept + (outer_value != 0) + (hvalue != 0) &&
                    s.discarded == pre_disc + (outer_value == 0) + (hvalue == 0) && s.lost == 0 &&
                    s.unfiltered + s.staged + s.direct == s.emitted() &&
                    s.adaptive_direct + s.nested == s.direct &&
                    total_accounted(*inst) == inst->ring_attempts();
    if (!ok) {
      ++bad;
      UNSCOPED_INFO("step " << k << ": outer " << static_cast<int>(r) << " handler "
                            << static_cast<int>(g_result) << " kept " << s.kept << " discarded "
                            << s.discarded << " staged " << s.staged << " direct " << s.direct
                            << " nested " << s.nested << " accounted " << total_accounted(*inst)
                            << " attempts " << inst->ring_attempts());
    }
    // The records: the pre ones, the outer (if kept), the handler's (if kept), whole.
    const auto recs = tp_core_test::drain(*inst);
    uint64_t outer_seen = 0, handler_seen = 0;
    for (const auto& rec : recs) {
      const uint32_t seq = rec.at<uint32_t>(12);
      if (seq == 777) {
        ++outer_seen;
        if (std::memcmp(rec.bytes.data() + 16, "outer", 6) != 0) ++bad;
      }
      if (seq == 0xabcdef) {
        ++handler_seen;
        if (std::memcmp(rec.bytes.data() + 16, "handler", 8) != 0) ++bad;
      }
    }
    if (recs.size() != s.kept || outer_seen != (outer_value != 0) ||
        handler_seen != (hvalue != 0)) {
      ++bad;
      UNSCOPED_INFO("step " << k << ": records " << recs.size() << " outer " << outer_seen
                            << " handler " << handler_seen);
    }
    // Still whole: 64 accepts then 8 rejects, exact outcomes, exact counts.
    for (uint32_t i = 0; i < 64; ++i)
      if (Sample::emit(*inst, 1, i, "") != EmitResult::kept) ++bad;
    for (uint32_t i = 0; i < 8; ++i)
      if (Sample::emit(*inst, 0, i, "") != EmitResult::discarded) ++bad;
    const EventStats e = inst->event_stats(Sample::desc());
    if (e.unfiltered + e.staged + e.direct != e.emitted() ||
        total_accounted(*inst) != inst->ring_attempts())
      ++bad;
    if (bad > 20) break;
  }
  INFO("runs " << runs);
  CHECK(runs > 50);
  CHECK(bad == 0);
#endif
}
