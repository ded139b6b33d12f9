// The stack lane of EventDecl::trace / TRACEPIPE_TRACE ((D4) in
// core/instance/event_decl.h, Instance::stage_on_stack in fast_path.h): a
// fixed-size filtered event staged per thread is built on the caller's stack,
// only the fields the filter reads before it decides. Checked here against
// the path it replaces (the thread's staging slot, which EventDecl::emit
// still takes): the same records byte for byte, the same counts, and nesting
// from a signal handler raised in the middle of the lane's build.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "test_events.h"
#include "test_support.h"

using namespace tracepipe;
using namespace tp_core_test;

namespace {

// Alignment gaps (after `flag`, after `name`), a short and a long char
// array, signed and unsigned integers: 8 + 1 + 1 (gap) + 2 + 4 + 16 + 5 + 3
// (gap) + 8 + 24 = 72 bytes.
using Wide =
    EventDecl<"tplane", "wide", Int<"flag", uint8_t>, Int<"code", int16_t>, Int<"id", uint32_t>,
              Chars<"name", 16>, Chars<"tag", 5>, Int<"big", int64_t>, Chars<"text", 24>>;
static_assert(Wide::fixed_size == 72);

// The texts cover each branch of load_short / copy_short: empty, 1..3, 4..7,
// 8, 9..16, longer than the field.
const std::vector<std::string> kTexts = {"",
                                         "a",
                                         "ab",
                                         "abc",
                                         "abcd",
                                         "abcdefg",
                                         "abcdefgh",
                                         "abcdefghi",
                                         "abcdefghijklmnop",
                                         "abcdefghijklmnopqrstuvwxyz0123456789"};

void trace_wide(uint32_t i) {
  const std::string& t = kTexts[i % kTexts.size()];
  const std::string& u = kTexts[(i / 3) % kTexts.size()];
  TRACEPIPE_TRACE(Wide, static_cast<uint8_t>(i), static_cast<int16_t>(-static_cast<int32_t>(i)), i,
                  t, u, static_cast<int64_t>(i) * -1000003, u + t);
}

[[gnu::noinline]] void emit_wide(Instance& inst, uint32_t i) {
  const std::string& t = kTexts[i % kTexts.size()];
  const std::string& u = kTexts[(i / 3) % kTexts.size()];
  (void)Wide::emit(inst, static_cast<uint8_t>(i), static_cast<int16_t>(-static_cast<int32_t>(i)), i,
                   t, u, static_cast<int64_t>(i) * -1000003, u + t);
}

// Records without their time stamps, in buffer order.
std::vector<std::vector<std::byte>> bytes_of(Instance& inst) {
  std::vector<std::vector<std::byte>> out;
  for (const Rec& r : drain(inst)) out.push_back(r.bytes);
  return out;
}

}  // namespace

TEST_CASE("stack lane: accepted records are byte-identical to the slot's, rejects counted the same",
          "[core][stack_lane]") {
  // Filters that read the header, one integer, a char array (inline string
  // path), several integers (truth table), and mixes that need the general
  // evaluator (filter_from_stack) or the context, each accepting some
  // records and rejecting others.
  const std::vector<std::string> filters = {
      "id & 1",                                  // one integer compare
      "id < 7",                                  // one 4-byte compare: the reject-first step
      "id != 3",                                 // reject-first, accepting all but one
      "id > 150",                                // reject-first
      "common_pid != 0 && id < 7",               // the header (common_pid) and a field: truth table
      "name ~ \"abc*\"",                         // char[16] prefix (inline string path)
      "tag == \"abcd\"",                         // char[5] whole string
      "text ~ \"*mno*\"",                        // general evaluator (filter_from_stack)
      "big < -5000000 || name == \"abcdefgh\"",  // general: integer or string
      "flag == 3 || code == -4 || id == 9",      // three lanes
      "CPU >= 0 && id != 2",                     // reads the CPU from the context
      "comm != \"no such thread\" && big > -9000000",  // comm from the context
  };
  for (const std::string& f : filters) {
    SECTION(f) {
      // lane: per_thread staging, reached by TRACEPIPE_TRACE (one subscriber);
      // slot: per_thread staging too, reached by EventDecl::emit.
      Instance lane(small_options(Staging::per_thread));
      Instance slot(small_options(Staging::per_thread));
      lane.enable(Wide::desc());
      slot.enable(Wide::desc());
      REQUIRE(lane.set_filter(Wide::desc(), f).ok());
      REQUIRE(slot.set_filter(Wide::desc(), f).ok());
      // The lane sees only its instance: `slot` has the event enabled too,
      // so trace() would fan out to both. Emit into `slot` first, then
      // disable it there while tracing into `lane`.
      for (uint32_t i = 0; i < 200; ++i) emit_wide(slot, i);
      slot.enable(Wide::desc(), false);
      for (uint32_t i = 0; i < 200; ++i) trace_wide(i);

      const auto a = bytes_of(lane), b = bytes_of(slot);
      CHECK(a == b);
      CHECK_FALSE(a.empty());
      CHECK(a.size() < 200);
      const EventStats sa = lane.event_stats(Wide::desc()), sb = slot.event_stats(Wide::desc());
      CHECK(sa.kept == sb.kept);
      CHECK(sa.discarded == sb.discarded);
      CHECK(sa.kept == a.size());
      CHECK(sa.staged == 200);
      CHECK(sb.staged == 200);
      CHECK(sa.direct == 0);
      CHECK(sa.ring_discards == 0);
      CHECK(sa.lost == 0);
      CHECK(lane.ring_attempts() == total_accounted(lane));
    }
  }
}

TEST_CASE("stack lane: fan-out to two instances, each with its own filter", "[core][stack_lane]") {
  Instance odd(small_options(Staging::per_thread));
  Instance small(small_options(Staging::adaptive));  // stages at first: the lane too
  odd.enable(Wide::desc());
  small.enable(Wide::desc());
  REQUIRE(odd.set_filter(Wide::desc(), "id & 1").ok());
  REQUIRE(small.set_filter(Wide::desc(), "id < 10").ok());
  for (uint32_t i = 0; i < 40; ++i) trace_wide(i);
  const auto ro = drain(odd), rs = drain(small);
  REQUIRE(ro.size() == 20);
  REQUIRE(rs.size() == 10);
  for (size_t k = 0; k < ro.size(); ++k) CHECK(ro[k].at<uint32_t>(Wide::offsets[2]) == 2 * k + 1);
  for (size_t k = 0; k < rs.size(); ++k) CHECK(rs[k].at<uint32_t>(Wide::offsets[2]) == k);
  CHECK(odd.event_stats(Wide::desc()).discarded == 20);
  CHECK(small.event_stats(Wide::desc()).discarded == 30);
  CHECK(odd.event_stats(Wide::desc()).staged == 40);
  CHECK(small.event_stats(Wide::desc()).staged == 40);
}

namespace {

// An integer field whose put() raises SIGUSR1 once when armed: a signal in
// the middle of the lane's build, before the filter (the filter reads this
// field) or after it (it does not).
std::atomic<bool> g_armed{false};
template <FixedString Name>
struct RaisingInt : Int<Name, uint32_t> {
  [[gnu::noinline]] static void put(std::byte* rec, uint32_t off, uint32_t& dyn,
                                    uint32_t v) noexcept {
    if (g_armed.exchange(false)) raise(SIGUSR1);
    Int<Name, uint32_t>::put(rec, off, dyn, v);
  }
};
// value in chunk 1 (bytes 8..16), probe in chunk 3 (24..32): a filter on
// one does not build the other before it decides.
using Outer =
    EventDecl<"tplane", "outer", Int<"value", uint32_t>, Chars<"pad", 16>, RaisingInt<"probe">>;
using Inner = EventDecl<"tplane", "inner", Int<"value", uint32_t>, Chars<"pad", 16>>;

void handler(int) { TRACEPIPE_TRACE(Inner, 1u, "nested"); }

struct Handler {
  struct sigaction old {};
  Handler() {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
  }
  ~Handler() { sigaction(SIGUSR1, &old, nullptr); }
};

}  // namespace

TEST_CASE("stack lane: an event from a signal handler in the middle of the lane",
          "[core][stack_lane]") {
  // "probe == 7": the signal comes while the lane builds the filter's
  // fields; "value == 7": after the reject-first step accepted, while the
  // record is built in the ring.
  for (const char* f : {"probe == 7", "value == 7"}) {
    SECTION(f) {
      prepare_thread();
      const uint32_t cpu = current_cpu();
      tp_test::PinToCpu pin(cpu);  // both records in one CPU's buffer, in buffer order
      REQUIRE(pin.ok());
      Handler h;
      Instance inst(small_options(Staging::per_thread));
      inst.enable(Outer::desc());
      inst.enable(Inner::desc());
      REQUIRE(inst.set_filter(Outer::desc(), f).ok());
      REQUIRE(inst.set_filter(Inner::desc(), "value == 1").ok());
      g_armed = true;
      TRACEPIPE_TRACE(Outer, 7u, "outer", 7u);
      CHECK_FALSE(g_armed.load());  // it fired
      const auto recs = drain_cpu(inst, cpu);
      REQUIRE(recs.size() == 2);
      // "probe == 7" (RaisingInt is not the library's Int: decided on the
      // record): the nested record lands first, the outer one being copied
      // into the ring after its build ends. "value == 7" (decided on the
      // argument by the reject-first step): the outer record is reserved
      // before its build, in the ring, so the nested one lands after it, as
      // after a direct emit. The nested one is marked as interrupting:
      // hardirq, depth 1.
      const bool decided = std::string_view(f) == "value == 7";
      const auto& in = recs[decided ? 1 : 0];
      const auto& out = recs[decided ? 0 : 1];
      CHECK(in.header().common_type == Inner::desc().id());
      CHECK((in.header().common_flags & TraceFlag::hardirq) != 0);
      CHECK(in.header().common_preempt_count == 1);
      CHECK(out.header().common_type == Outer::desc().id());
      CHECK(out.header().common_flags == 0);
      CHECK(out.header().common_preempt_count == 0);
      CHECK(recs[0].ts <= recs[1].ts);
      CHECK(out.at<uint32_t>(Outer::offsets[0]) == 7);
      CHECK(out.at<uint32_t>(Outer::offsets[2]) == 7);
      // Neither went direct or nested (the stack lane, or the decided accept).
      const EventStats so = inst.event_stats(Outer::desc()), si = inst.event_stats(Inner::desc());
      CHECK(so.kept == 1);
      CHECK(si.kept == 1);
      CHECK(so.staged == 1);
      CHECK(si.staged == 1);
      CHECK(so.nested + si.nested == 0);
      CHECK(so.direct + si.direct == 0);
    }
  }
}

TEST_CASE("stack lane: triggers and soft-disable keep the slot path", "[core][stack_lane]") {
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Wide::desc());
  REQUIRE(inst.set_filter(Wide::desc(), "id & 1").ok());
  inst.soft_mode(Wide::desc(), true);  // soft mode: enabled, and enable(false) only soft-disables
  inst.enable(Wide::desc(), false);
  for (uint32_t i = 0; i < 10; ++i) trace_wide(i);
  const EventStats s = inst.event_stats(Wide::desc());
  CHECK(s.discarded == 10);
  CHECK(s.soft_discarded == 10);
  CHECK(s.staged == 10);
  CHECK(drain(inst).empty());
  inst.soft_mode(Wide::desc(), false);
}

namespace {

// Fields whose put() counts its calls: the reject-first step decides on the
// argument, so a rejected event writes no field at all. A field of its own
// type never takes that step (its put() may transform the value), so the
// filtered fields pid and mode are the library's Int, each with a counting
// neighbour in its 8-byte chunk (lo, hi): the record's path, which builds
// the chunks its filter reads, would call that neighbour's put().
std::atomic<uint32_t> g_puts{0};
template <FixedString Name, class T>
struct CountingInt : Int<Name, T> {
  static void put(std::byte* rec, uint32_t off, uint32_t& dyn, T v) noexcept {
    g_puts.fetch_add(1, std::memory_order_relaxed);
    Int<Name, T>::put(rec, off, dyn, v);
  }
};
enum class LaneMode : uint32_t { idle = 0, busy = 7, gone = 0xfffffff0u };
// lo 8, pid 12 (chunk 1); hi 16, mode 20 (chunk 2); big 24 (chunk 3); comm 32.
using Signed = EventDecl<"tplane", "signed", CountingInt<"lo", uint16_t>, Int<"pid", int32_t>,
                         CountingInt<"hi", uint16_t>, Int<"mode", LaneMode>,
                         CountingInt<"big", int64_t>, Chars<"comm", 16>>;
static_assert(Signed::offsets[1] == 12 && Signed::offsets[3] == 20 && Signed::offsets[4] == 24);

void trace_signed(int32_t pid, LaneMode m) {
  TRACEPIPE_TRACE(Signed, uint16_t{1}, pid, uint16_t{2}, m, int64_t{pid} * 3, "comm");
}
void emit_signed(Instance& inst, int32_t pid, LaneMode m) {
  (void)Signed::emit(inst, uint16_t{1}, pid, uint16_t{2}, m, int64_t{pid} * 3, "comm");
}

}  // namespace

TEST_CASE(
    "stack lane: the reject-first step decides on the argument, as the filter on the record would",
    "[core][stack_lane]") {
  // Signed and unsigned (enum) 4-byte fields, each compare operator, values
  // around the sign bit and both ends of the range.
  const std::vector<int32_t> pids = {
      0, 1, -1, 2, -2, 100, -100, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1};
  const std::vector<LaneMode> modes = {LaneMode::idle, LaneMode::busy, LaneMode::gone};
  const std::vector<std::string> filters = {
      "pid < 0",     "pid >= 0",          "pid == -1",         "pid != 2",
      "pid <= -100", "pid > 1",           "mode == 7",         "mode > 7",
      "mode < 8",    "pid == 2147483647", "pid < -2147483647", "mode != 4294967280"};
  for (const std::string& f : filters) {
    SECTION(f) {
      Instance lane(small_options(Staging::per_thread));
      Instance slot(small_options(Staging::per_thread));
      lane.enable(Signed::desc());
      slot.enable(Signed::desc());
      REQUIRE(lane.set_filter(Signed::desc(), f).ok());
      REQUIRE(slot.set_filter(Signed::desc(), f).ok());
      for (int32_t p : pids)
        for (LaneMode m : modes) emit_signed(slot, p, m);
      slot.enable(Signed::desc(), false);
      uint64_t rejected_puts = 0;
      for (int32_t p : pids)
        for (LaneMode m : modes) {
          const uint64_t before_kept = lane.event_stats(Signed::desc()).kept;
          const uint32_t puts = g_puts.load();
          trace_signed(p, m);
          if (lane.event_stats(Signed::desc()).kept == before_kept)
            rejected_puts += g_puts.load() - puts;
        }
      const auto a = bytes_of(lane), b = bytes_of(slot);
      CHECK(a == b);
      const EventStats sa = lane.event_stats(Signed::desc()), sb = slot.event_stats(Signed::desc());
      CHECK(sa.kept == sb.kept);
      CHECK(sa.discarded == sb.discarded);
      CHECK(sa.staged == pids.size() * modes.size());
      CHECK(sa.direct == 0);
      // A rejected event wrote no field: not even the counting neighbour of
      // the one the filter reads.
      CHECK(rejected_puts == 0);
      CHECK(sa.discarded > 0);
    }
  }
}

TEST_CASE(
    "stack lane: the reject-first step leaves other filters, nesting and fan-out to the record",
    "[core][stack_lane]") {
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Signed::desc());
  SECTION("an 8-byte field: the record is built and filtered") {
    REQUIRE(inst.set_filter(Signed::desc(), "big < 0").ok());
    const uint32_t puts = g_puts.load();
    trace_signed(5, LaneMode::idle);
    CHECK(g_puts.load() > puts);
    CHECK(inst.event_stats(Signed::desc()).discarded == 1);
  }
  SECTION("two compares: the record is built and filtered") {
    REQUIRE(inst.set_filter(Signed::desc(), "pid < 0 && mode == 7").ok());
    const uint32_t puts = g_puts.load();
    trace_signed(5, LaneMode::busy);
    CHECK(g_puts.load() > puts);
    CHECK(inst.event_stats(Signed::desc()).discarded == 1);
  }
  SECTION("two instances: each filter on its own record") {
    Instance other(small_options(Staging::per_thread));
    other.enable(Signed::desc());
    REQUIRE(inst.set_filter(Signed::desc(), "pid < 0").ok());
    REQUIRE(other.set_filter(Signed::desc(), "pid >= 0").ok());
    trace_signed(5, LaneMode::busy);
    trace_signed(-5, LaneMode::busy);
    CHECK(inst.event_stats(Signed::desc()).kept == 1);
    CHECK(inst.event_stats(Signed::desc()).discarded == 1);
    CHECK(other.event_stats(Signed::desc()).kept == 1);
    CHECK(other.event_stats(Signed::desc()).discarded == 1);
    const auto ri = drain(inst), ro = drain(other);
    REQUIRE(ri.size() == 1);
    REQUIRE(ro.size() == 1);
    CHECK(ri[0].at<int32_t>(Signed::offsets[1]) == -5);  // pid
    CHECK(ro[0].at<int32_t>(Signed::offsets[1]) == 5);
  }
  SECTION("soft-disabled: discarded as soft, not by the filter") {
    REQUIRE(inst.set_filter(Signed::desc(), "pid < 0").ok());
    inst.soft_mode(Signed::desc(), true);
    inst.enable(Signed::desc(), false);
    trace_signed(5, LaneMode::idle);
    trace_signed(-5, LaneMode::idle);
    const EventStats s = inst.event_stats(Signed::desc());
    CHECK(s.discarded == 2);
    CHECK(s.soft_discarded == 2);
    CHECK(drain(inst).empty());
    inst.soft_mode(Signed::desc(), false);
  }
}

namespace {

// Field types of their own whose put() stores a transform of the argument:
// the record holds the transformed value and the filter reads the record,
// so the verdict must be the transformed value's. Each derives from Int or
// Chars (same arg_type, size and offset as the library's field), which is
// what a comparison of the raw argument would have been fooled by.
template <FixedString Name>
struct NetU32 : Int<Name, uint32_t> {  // stored in network byte order
  static void put(std::byte* rec, uint32_t off, uint32_t& dyn, uint32_t v) noexcept {
    Int<Name, uint32_t>::put(rec, off, dyn, __builtin_bswap32(v));
  }
};
template <FixedString Name>
struct LowByte : Int<Name, int32_t> {  // only the low byte kept
  static void put(std::byte* rec, uint32_t off, uint32_t& dyn, int32_t v) noexcept {
    Int<Name, int32_t>::put(rec, off, dyn, v & 0xff);
  }
};
template <FixedString Name, uint32_t N>
struct UpperChars : Chars<Name, N> {  // ASCII upper case
  static void put(std::byte* rec, uint32_t off, uint32_t& dyn, std::string_view v) noexcept {
    char up[N];
    const size_t n = std::min<size_t>(v.size(), N);
    for (size_t i = 0; i < n; ++i)
      up[i] = (v[i] >= 'a' && v[i] <= 'z') ? static_cast<char>(v[i] - 32) : v[i];
    Chars<Name, N>::put(rec, off, dyn, std::string_view(up, n));
  }
};
using Custom = EventDecl<"tplane", "custom", NetU32<"port">, LowByte<"low">, UpperChars<"cmd", 8>>;

constexpr uint32_t kPort = 8080;
const std::vector<uint32_t> kPorts = {kPort, __builtin_bswap32(kPort), 0, 80};
const std::vector<int32_t> kLows = {5, 0x105, 0x200, -251};  // stored 5, 5, 0, 5
const std::vector<std::string> kCmds = {"get", "GET", "put", "post"};

}  // namespace

TEST_CASE("stack lane: a field type of its own is filtered on what its put() stored",
          "[core][stack_lane]") {
  // Each filter accepts an argument whose raw value it would reject (and
  // rejects one it would accept): a verdict on the raw argument differs.
  struct Row {
    std::string filter;
    uint32_t kept;  // of kPorts x kLows x kCmds (64 events)
  };
  const std::vector<Row> rows = {
      {"port == 8080", 16},                      // only bswap(8080) is stored as 8080
      {"port != 8080", 48},   {"low == 5", 48},  // 5, 0x105 and -251 are stored as 5
      {"low < 4", 16},                           // 0x200 is stored as 0
      {"cmd == \"GET\"", 32},                    // "get" and "GET"
      {"cmd ~ \"PO*\"", 16},                     // "post"
      {"cmd != \"PUT\"", 48},
  };
  for (const Row& row : rows) {
    SECTION(row.filter) {
      Instance slot(small_options(Staging::per_thread));   // EventDecl::emit: the record's verdict
      Instance macro(small_options(Staging::per_thread));  // TRACEPIPE_TRACE
      Instance fn(small_options(Staging::per_thread));     // EventDecl::trace()
      for (Instance* i : {&slot, &macro, &fn})
        REQUIRE(i->set_filter(Custom::desc(), row.filter).ok());
      const auto each = [&](auto&& call) {
        for (uint32_t p : kPorts)
          for (int32_t l : kLows)
            for (const std::string& c : kCmds) call(p, l, c);
      };
      slot.enable(Custom::desc());
      each([&](uint32_t p, int32_t l, const std::string& c) { (void)Custom::emit(slot, p, l, c); });
      slot.enable(Custom::desc(), false);
      macro.enable(Custom::desc());
      each([](uint32_t p, int32_t l, const std::string& c) { TRACEPIPE_TRACE(Custom, p, l, c); });
      macro.enable(Custom::desc(), false);
      fn.enable(Custom::desc());
      each([](uint32_t p, int32_t l, const std::string& c) { Custom::trace(p, l, c); });
      fn.enable(Custom::desc(), false);

      const auto rs = bytes_of(slot), rm = bytes_of(macro), rf = bytes_of(fn);
      CHECK(rs.size() == row.kept);
      CHECK(rm == rs);
      CHECK(rf == rs);
      for (Instance* i : {&slot, &macro, &fn}) {
        const EventStats st = i->event_stats(Custom::desc());
        CHECK(st.kept == row.kept);
        CHECK(st.discarded == 64 - row.kept);
        CHECK(st.staged == 64);
      }
    }
  }
}
