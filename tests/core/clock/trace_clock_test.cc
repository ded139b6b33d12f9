// Trace clocks: names as the kernel's trace_clock file, ns units, no syscall.
#include "tracepipe/core/clock/trace_clock.h"

#include <sys/sysinfo.h>
#include <time.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../instance/test_events.h"
#include "test_support.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/raw_emit.h"

using namespace tracepipe;

TEST_CASE("trace_clock: kernel names round-trip and the list matches the kernel's layout",
          "[core][clock]") {
  std::set<std::string> names;
  for (const TraceClock& c : trace_clocks()) {
    names.insert(std::string(c.name));
    REQUIRE(parse_trace_clock(c.name) == c.id);
    REQUIRE(trace_clock_name(c.id) == c.name);
  }
  for (const char* required : {"local", "global", "counter", "uptime", "perf", "mono", "mono_raw",
                               "boot", "tai", "x86-tsc"})
    CHECK(names.count(required) == 1);
  CHECK_FALSE(parse_trace_clock("jiffies").has_value());
  CHECK_FALSE(parse_trace_clock("").has_value());
  // The kernel's /sys/kernel/tracing/trace_clock on 6.18, selected clock in brackets.
  CHECK(trace_clock_list(ClockId::local) ==
        "[local] global counter uptime perf mono mono_raw boot tai x86-tsc");
  CHECK(trace_clock_list(ClockId::x86_tsc) ==
        "local global counter uptime perf mono mono_raw boot tai [x86-tsc]");
}

namespace {
uint64_t now(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}
}  // namespace

TEST_CASE("trace_clock: ns clocks agree with their clock_gettime source", "[core][clock]") {
  struct Case {
    ClockId id;
    clockid_t ref;
  };
  for (Case c : {Case{ClockId::mono, CLOCK_MONOTONIC}, Case{ClockId::global, CLOCK_MONOTONIC},
                 Case{ClockId::mono_raw, CLOCK_MONOTONIC_RAW}, Case{ClockId::boot, CLOCK_BOOTTIME},
                 Case{ClockId::tai, CLOCK_TAI}}) {
    const TraceClock& tc = trace_clock(c.id);
    REQUIRE(tc.in_nanoseconds);
    const uint64_t before = now(c.ref);
    const uint64_t t = tc.read();
    const uint64_t after = now(c.ref);
    CHECK(t >= before);
    CHECK(t <= after);
  }
}

TEST_CASE("trace_clock: local is TSC calibrated to ns and tracks mono_raw", "[core][clock]") {
  const TscCalibration& cal = tsc_calibration();
  const TraceClock& local = trace_clock(ClockId::local);
  REQUIRE(local.in_nanoseconds);
  if (cal.invariant_tsc) {
    CHECK(cal.tsc_hz > 100'000'000ull);     // > 100 MHz
    CHECK(cal.tsc_hz < 10'000'000'000ull);  // < 10 GHz
  }
  // Over 20 ms, local and mono_raw advance by the same amount within 0.1%
  // and stay within 1 ms of each other in absolute value. Each end point is
  // the tightest of several mono_raw / local / mono_raw brackets, so that a
  // preemption between two reads (a busy CI machine: 160 us is 0.8% of
  // 20 ms) does not count as clock error.
  const auto pair = [&] {
    uint64_t best_l = 0, best_r = 0, best_w = ~0ull;
    for (int i = 0; i < 9; ++i) {
      const uint64_t ra = now(CLOCK_MONOTONIC_RAW), l = local.read(), rb = now(CLOCK_MONOTONIC_RAW);
      if (rb >= ra && rb - ra < best_w) {
        best_w = rb - ra;
        best_l = l;
        best_r = ra + (rb - ra) / 2;
      }
    }
    return std::pair{best_l, best_r};
  };
  const auto [l0, r0] = pair();
  const timespec wait{0, 20'000'000};
  nanosleep(&wait, nullptr);
  const auto [l1, r1] = pair();
  const double dl = static_cast<double>(l1 - l0), dr = static_cast<double>(r1 - r0);
  CHECK(dl / dr == Approx(1.0).epsilon(0.001));
  const int64_t skew = static_cast<int64_t>(l1 - r1);
  CHECK(std::llabs(skew) < 1'000'000);
  // Monotonic on one thread over many reads.
  uint64_t prev = local.read();
  for (int i = 0; i < 100000; ++i) {
    const uint64_t t = local.read();
    REQUIRE(t >= prev);
    prev = t;
  }
}

TEST_CASE("trace_clock: the inline TSC scale is local's own conversion", "[core][clock]") {
  for (ClockId id : {ClockId::global, ClockId::counter, ClockId::uptime, ClockId::mono,
                     ClockId::mono_raw, ClockId::boot, ClockId::tai, ClockId::x86_tsc})
    CHECK_FALSE(tracepipe::detail::inline_tsc_scale(id).has_value());
  const TscCalibration& cal = tsc_calibration();
  const bool inline_expected = buffers::kHaveTsc && cal.invariant_tsc;
  REQUIRE(tracepipe::detail::inline_tsc_scale(ClockId::local).has_value() == inline_expected);
  REQUIRE(tracepipe::detail::inline_tsc_scale(ClockId::perf).has_value() == inline_expected);
  // ring_clock: what an Instance stamps with, and tools that build rings.
  for (ClockId id :
       {ClockId::local, ClockId::perf, ClockId::mono, ClockId::counter, ClockId::x86_tsc}) {
    const buffers::FunctionClock rc = tracepipe::detail::ring_clock(id);
    INFO(trace_clock_name(id));
    CHECK(rc.fn == trace_clock(id).read);
    CHECK(rc.inline_tsc == (inline_expected && (id == ClockId::local || id == ClockId::perf)));
  }
  if (!inline_expected)
    TP_SKIP("no invariant TSC here: local and perf read mono_raw through their function");
  const buffers::TscScale s = *tracepipe::detail::inline_tsc_scale(ClockId::local);
  CHECK(cal.shift == buffers::TscScale::kShift);
  CHECK(s.mult < (uint64_t{1} << 63));
  // Before, at and after the base, a second and an hour away, and the ends
  // of the counter's range: the same ns as tsc_to_ns (which `local` reads).
  const uint64_t hour = cal.tsc_hz * 3600;
  for (uint64_t t : {cal.base_tsc, cal.base_tsc + 1, cal.base_tsc - 1, cal.base_tsc + cal.tsc_hz,
                     cal.base_tsc - cal.tsc_hz, cal.base_tsc + hour, uint64_t{0}, ~uint64_t{0}}) {
    INFO("tsc " << t);
    CHECK(buffers::scale_tsc(s, t) == tsc_to_ns(t));
  }
}

namespace {
std::vector<std::byte> sample_record(uint32_t value) {
  std::vector<std::byte> rec(64);
  const CommonHeader h{tp_core_test::Sample::desc().id(), 0, 0, 4242};
  std::memcpy(rec.data(), &h, sizeof h);
  std::memcpy(rec.data() + 8, &value, 4);
  return rec;
}
}  // namespace

TEST_CASE("trace_clock: an external_time instance on local keeps the caller's stamps",
          "[core][clock]") {
  for (ClockId id : {ClockId::local, ClockId::perf, ClockId::global}) {
    InstanceOptions o = tp_core_test::small_options(Staging::per_thread);
    o.clock = id;
    o.external_time = true;
    Instance inst(o);
    inst.enable(tp_core_test::Sample::desc());
    const uint64_t stamps[] = {5, 424242, 424243, uint64_t{1} << 40};
    for (uint32_t i = 0; i < 4; ++i)
      REQUIRE(tracepipe::RawEmit::emit_at(inst, sample_record(i), 0, stamps[i]) ==
              EmitResult::kept);
    const auto recs = tp_core_test::drain_cpu(inst, 0);
    REQUIRE(recs.size() == 4);
    for (uint32_t i = 0; i < 4; ++i) CHECK(recs[i].ts == stamps[i]);
  }
}

namespace {
struct Bracketed {
  uint64_t before, after;
  std::vector<tp_core_test::Rec> recs;
};
// Five emits into an instance stamped by `id`, between two reads of `id`.
Bracketed emit_bracketed(ClockId id) {
  InstanceOptions o = tp_core_test::small_options(Staging::per_thread);
  o.clock = id;
  Instance inst(o);
  inst.enable(tp_core_test::Sample::desc());
  const TraceClock& c = trace_clock(id);
  Bracketed b{c.read(), 0, {}};
  for (uint32_t i = 0; i < 5; ++i)
    REQUIRE(tp_core_test::Sample::emit(inst, i, i, "x") == EmitResult::kept);
  b.after = c.read();
  b.recs = tp_core_test::drain(inst);
  REQUIRE(b.recs.size() == 5);
  return b;
}
}  // namespace

TEST_CASE("trace_clock: instances on other clocks stamp with that clock, not the TSC",
          "[core][clock]") {
  // counter: every read is a new value, so the stamps lie strictly inside.
  const Bracketed cb = emit_bracketed(ClockId::counter);
  for (const auto& r : cb.recs) {
    CHECK(r.ts > cb.before);
    CHECK(r.ts < cb.after);
  }
  for (ClockId id : {ClockId::global, ClockId::mono, ClockId::mono_raw, ClockId::boot}) {
    const Bracketed b = emit_bracketed(id);
    for (const auto& r : b.recs) {
      INFO(trace_clock_name(id));
      CHECK(r.ts >= b.before);
      CHECK(r.ts <= b.after);
    }
  }
}

TEST_CASE("trace_clock: each warm emit on local is stamped between the local reads around it",
          "[core][clock]") {
  // Each warm emit on its own: a bracket around several emits, the first of
  // which registers the thread (microseconds), would pass a ring scale whose
  // base is off by a few hundred ns.
  InstanceOptions o = tp_core_test::small_options(Staging::per_thread);
  o.clock = ClockId::local;
  Instance inst(o);
  inst.enable(tp_core_test::Sample::desc());
  const TraceClock& local = trace_clock(ClockId::local);
  for (uint32_t i = 0; i < 100; ++i)
    REQUIRE(tp_core_test::Sample::emit(inst, i, i, "warm") == EmitResult::kept);
  tp_core_test::drain(inst);
  std::vector<std::pair<uint64_t, uint64_t>> brackets;
  for (uint32_t i = 0; i < 200; ++i) {
    const uint64_t before = local.read();
    REQUIRE(tp_core_test::Sample::emit(inst, i, i, "x") == EmitResult::kept);
    const uint64_t after = local.read();
    brackets.emplace_back(before, after);
  }
  const auto recs = tp_core_test::drain(inst);
  REQUIRE(recs.size() == brackets.size());
  // Records come back in time order (one thread); the i-th is the i-th emit.
  int outside = 0;
  for (size_t i = 0; i < recs.size(); ++i)
    outside += recs[i].ts < brackets[i].first || recs[i].ts > brackets[i].second;
  CHECK(outside == 0);
}

TEST_CASE("trace_clock: counter counts and x86-tsc/uptime are not ns", "[core][clock]") {
  const TraceClock& c = trace_clock(ClockId::counter);
  CHECK_FALSE(c.in_nanoseconds);
  const uint64_t a = c.read(), b = c.read(), d = c.read();
  CHECK(b == a + 1);
  CHECK(d == a + 2);
  CHECK_FALSE(trace_clock(ClockId::x86_tsc).in_nanoseconds);
  CHECK_FALSE(trace_clock(ClockId::uptime).in_nanoseconds);
  // uptime counts 10 ms ticks: about (mono / 1e7).
  const uint64_t up = trace_clock(ClockId::uptime).read();
  const uint64_t mono_ticks = now(CLOCK_MONOTONIC) / 10'000'000u;
  CHECK(up + 2 >= mono_ticks);
  CHECK(up <= mono_ticks + 2);
}
