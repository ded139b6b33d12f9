// Triggers: the trigger-file syntax and readback (the verdicts below are
// what this machine's kernel answered, tests/core/triggers/live_kernel_test.cc
// asks it again), the actions on the write path, counts under concurrency,
// and hist triggers (format and counts).
#include "tracepipe/core/triggers/triggers.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "test_support.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/hist.h"

using namespace tracepipe;

namespace {

using Req = EventDecl<"tptrig", "req", Int<"id", uint32_t>, Int<"lat", int32_t>, Chars<"name", 16>>;
using Wake = EventDecl<"tptrig", "wake", Int<"seq", uint32_t>>;

std::string fmt_key(const std::string& name, const std::string& value, size_t width) {
  std::string v = value;
  v.resize(std::max(width, v.size()), ' ');
  return name + ": " + v;
}

InstanceOptions small() {
  InstanceOptions o;
  o.buffer_size_kb = 64;
  o.cpus = 2;
  return o;
}

}  // namespace

TEST_CASE("triggers: syntax, readback and errors as the kernel's trigger file",
          "[triggers][parser]") {
  Instance inst(small());
  const EventDesc& ev = Req::desc();
  CHECK(trigger_file(inst, ev) ==
        "# Available triggers:\n# traceon traceoff snapshot stacktrace enable_event disable_event "
        "enable_hist disable_hist "
        "hist\n");

  REQUIRE(set_trigger(inst, ev, "traceoff").ok());
  CHECK(trigger_file(inst, ev) == "traceoff:unlimited\n");
  // traceon and traceoff are one kind: EEXIST, whatever the count or filter.
  CHECK(set_trigger(inst, ev, "traceoff:5").error().err == EEXIST);
  CHECK(set_trigger(inst, ev, "traceon:3 if id == 1").error().err == EEXIST);
  REQUIRE(set_trigger(inst, ev, "stacktrace:2 if id > 10 && lat < 5").ok());
  CHECK(trigger_file(inst, ev) == "stacktrace:count=2 if id > 10 && lat < 5\ntraceoff:unlimited\n");
  REQUIRE(set_trigger(inst, ev, "enable_event:tptrig:wake:2").ok());
  CHECK(set_trigger(inst, ev, "disable_event:tptrig:wake").error().err ==
        EEXIST);  // one per target
  CHECK(trigger_file(inst, ev) ==
        "enable_event:tptrig:wake:count=2\nstacktrace:count=2 if id > 10 && lat < "
        "5\ntraceoff:unlimited\n");
  // Removal: by kind (and target), whatever count or filter is written.
  REQUIRE(set_trigger(inst, ev, "!traceon:5").ok());
  REQUIRE(set_trigger(inst, ev, "!stacktrace if bogus==1").ok());
  REQUIRE(set_trigger(inst, ev, "!disable_event:tptrig:wake").ok());
  REQUIRE(set_trigger(inst, ev, "!traceoff").ok());  // not there: still ok
  CHECK(trigger_file(inst, ev).starts_with("# Available triggers:"));

  struct Case {
    const char* cmd;
    const char* shown;  // readback, or nullptr
    int err;
  };
  const Case cases[] = {
      {"traceoff:5   if    id==1   ", "traceoff:count=5 if    id==1\n", 0},
      {" traceoff", "traceoff:unlimited\n", 0},
      {"traceoff ", "traceoff:unlimited\n", 0},
      {"traceoff :5", nullptr, EINVAL},
      {"traceoff: 5", "traceoff:count=5\n", 0},
      {"traceoff:5:6", "traceoff:count=5\n", 0},
      {"TRACEOFF", nullptr, EINVAL},
      {"traceoff:count=3", nullptr, EINVAL},
      {"traceoff:0x10", "traceoff:count=16\n", 0},
      {"traceoff:010", "traceoff:count=8\n", 0},
      {"traceoff:+5", nullptr, EINVAL},
      {"traceoff:99999999999999999999", nullptr, ERANGE},
      {"traceoff:4294967296", "traceoff:count=4294967296\n", 0},
      {"traceoff:0", "traceoff:count=0\n", 0},
      {"traceoff:-1", nullptr, EINVAL},
      {"traceoff ifx id==1", nullptr, EINVAL},
      {"traceoff:5if id==1", nullptr, EINVAL},
      {"traceoff if", nullptr, EINVAL},
      {"traceoff:", "traceoff:unlimited\n", 0},
      {"foo", nullptr, EINVAL},
      {"!foo", nullptr, EINVAL},
      {"enable_event:tptrig", nullptr, EINVAL},
      {"enable_event:tptrig:nope", nullptr, EINVAL},
      {"enable_event::wake", nullptr, EINVAL},
      {"enable_event:tptrig:wake:", nullptr, EINVAL},
      {"enable_event:tptrig:req", "enable_event:tptrig:req:unlimited\n", 0},
      {"enable_event:tptrig:wake:0", "enable_event:tptrig:wake:count=0\n", 0},
      {"enable_event:tptrig:wake:5 if id == 0", "enable_event:tptrig:wake:count=5 if id == 0\n", 0},
      {"traceoff if name ~ \"a*\"", "traceoff:unlimited if name ~ \"a*\"\n", 0},
  };
  for (const Case& c : cases) {
    INFO(c.cmd);
    clear_triggers(inst, ev);
    const TriggerStatus st = set_trigger(inst, ev, c.cmd);
    CHECK((st.ok() ? 0 : st.error().err) == c.err);
    if (c.shown) CHECK(trigger_file(inst, ev) == c.shown);
  }
  clear_triggers(inst, ev);

  // A filter error: the kernel's message, and its caret in the filter alone.
  TriggerStatus st = set_trigger(inst, ev, "traceoff if bogus == 1");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().err == EINVAL);
  CHECK(st.render() ==
        "event filter parse error: error: Field not found\n  Command: bogus == 1\n                 "
        "^\n");
  st = set_trigger(inst, ev, "traceoff if id ==");
  CHECK(st.error().message == "Invalid value (did you forget quotes)?");
  CHECK(st.error().pos == 6);  // one past the end, as the kernel
  // Several lines: each in turn (the second conflicts with the first).
  CHECK(set_trigger(inst, ev, "traceoff\ntraceon").error().err == EEXIST);
  CHECK(trigger_file(inst, ev) == "traceoff:unlimited\n");
}

TEST_CASE("triggers: a trigger on a disabled event enables it soft-disabled, removal restores",
          "[triggers]") {
  Instance inst(small());
  CHECK_FALSE(inst.enabled(Req::desc()));
  REQUIRE(set_trigger(inst, Req::desc(), "traceoff:0").ok());
  CHECK(inst.enabled(Req::desc()));
  CHECK(inst.soft_disabled(Req::desc()));
  Req::emit(inst, 1, 2, "x");
  CHECK(inst.event_stats(Req::desc()).soft_discarded == 1);  // seen, not recorded
  clear_triggers(inst, Req::desc());
  CHECK_FALSE(inst.enabled(Req::desc()));
  CHECK_FALSE(inst.soft_disabled(Req::desc()));
}

// The enable file's text (event_enable_read): "1" when enabled and not
// soft-disabled, else "0"; "*" in soft mode or when soft-disabled.
std::string enable_file(const Instance& inst, const EventDesc& ev) {
  std::string s = inst.enabled(ev) && !inst.soft_disabled(ev) ? "1" : "0";
  if (inst.soft_disabled(ev) || inst.in_soft_mode(ev)) s += "*";
  return s;
}

TEST_CASE("triggers: soft mode: the user's enable and disable while a trigger holds the event",
          "[triggers]") {
  Instance inst(small());
  const EventDesc& ev = Req::desc();
  REQUIRE(set_trigger(inst, ev, "traceoff:0").ok());
  CHECK(enable_file(inst, ev) == "0*");
  inst.enable(ev);  // the user's enable clears the soft-disable
  CHECK(enable_file(inst, ev) == "1*");
  Req::emit(inst, 1, 2, "x");
  CHECK(inst.event_stats(ev).kept == 1);
  inst.enable(ev, false);  // in soft mode a disable only soft-disables: triggers still run
  CHECK(enable_file(inst, ev) == "0*");
  CHECK(inst.enabled(ev));
  Req::emit(inst, 1, 2, "x");
  CHECK(inst.event_stats(ev).kept == 1);
  CHECK(inst.event_stats(ev).soft_discarded == 1);
  clear_triggers(inst, ev);  // the last reference: still soft-disabled, so it goes off
  CHECK(enable_file(inst, ev) == "0");
  CHECK_FALSE(inst.enabled(ev));

  inst.enable(ev);  // enabled by the user first: the trigger leaves it as it is
  REQUIRE(set_trigger(inst, ev, "traceoff:0").ok());
  CHECK(enable_file(inst, ev) == "1*");
  clear_triggers(inst, ev);
  CHECK(enable_file(inst, ev) == "1");
}

TEST_CASE(
    "triggers: an instance made where a destroyed one was starts with no soft mode or named hist",
    "[triggers]") {
  const EventDesc& ev = Req::desc();
  alignas(Instance) unsigned char storage[sizeof(Instance)];
  auto* a = new (storage) Instance(small());
  REQUIRE(set_trigger(*a, ev, "traceoff:0").ok());
  REQUIRE(set_trigger(*a, ev, "hist:name=h1:keys=id").ok());
  Req::emit(*a, 4, 0, "x");
  a->~Instance();
  auto* b = new (storage) Instance(small());  // the same address
  CHECK(enable_file(*b, ev) == "0");
  REQUIRE(set_trigger(*b, ev, "hist:name=h1:keys=id").ok());
  CHECK(hist_file(*b, ev).find("Hits: 0\n") != std::string::npos);  // a fresh map, not the old one
  b->~Instance();
}

TEST_CASE("triggers: traceoff with a count and a filter, on kept and discarded records",
          "[triggers][fastpath]") {
  Instance inst(small());
  inst.enable(Req::desc());
  REQUIRE(inst.set_filter(Req::desc(), "lat > 1000").ok());  // rejects every emit below
  REQUIRE(set_trigger(inst, Req::desc(), "traceoff:1 if id == 7").ok());
  for (uint32_t i = 0; i < 7; ++i) Req::emit(inst, i, 5, "a");
  CHECK_FALSE(inst.paused());
  Req::emit(inst, 7, 5, "a");  // discarded by the event filter, but the trigger sees it
  CHECK(inst.paused());
  CHECK(trigger_file(inst, Req::desc()) == "traceoff:count=0 if id == 7\n");
  inst.resume();
  Req::emit(inst, 7, 5, "a");  // count spent
  CHECK_FALSE(inst.paused());
  // traceon: decrements only when it changes the state.
  REQUIRE(set_trigger(inst, Req::desc(), "!traceoff").ok());
  REQUIRE(set_trigger(inst, Req::desc(), "traceon:2").ok());
  Req::emit(inst, 1, 1, "a");
  CHECK(trigger_file(inst, Req::desc()) == "traceon:count=2\n");
  inst.pause();
  Req::emit(inst, 1, 1, "a");
  CHECK_FALSE(inst.paused());
  CHECK(trigger_file(inst, Req::desc()) == "traceon:count=1\n");
  const EventStats s = inst.event_stats(Req::desc());
  CHECK(s.kept == 0);
  CHECK(s.emitted() == 11);
}

TEST_CASE("triggers: enable_event and disable_event flip the target's soft-disable",
          "[triggers][fastpath]") {
  Instance inst(small());
  inst.enable(Req::desc());
  REQUIRE(set_trigger(inst, Req::desc(), "enable_event:tptrig:wake:1 if id == 3").ok());
  CHECK(inst.enabled(Wake::desc()));
  CHECK(inst.soft_disabled(Wake::desc()));  // soft mode: armed, not recorded
  Wake::emit(inst, 1);
  CHECK(inst.event_stats(Wake::desc()).kept == 0);
  Req::emit(inst, 2, 0, "a");
  CHECK(inst.soft_disabled(Wake::desc()));
  Req::emit(inst, 3, 0, "a");
  CHECK_FALSE(inst.soft_disabled(Wake::desc()));
  Wake::emit(inst, 2);
  CHECK(inst.event_stats(Wake::desc()).kept == 1);
  CHECK(trigger_file(inst, Req::desc()) == "enable_event:tptrig:wake:count=0 if id == 3\n");
  // Removed after it fired: the target stays enabled, as in the kernel.
  REQUIRE(set_trigger(inst, Req::desc(), "!enable_event:tptrig:wake").ok());
  CHECK(inst.enabled(Wake::desc()));

  REQUIRE(set_trigger(inst, Req::desc(), "disable_event:tptrig:wake").ok());
  Req::emit(inst, 9, 0, "a");
  CHECK(inst.soft_disabled(Wake::desc()));
  Wake::emit(inst, 3);
  CHECK(inst.event_stats(Wake::desc()).kept == 1);
}

TEST_CASE("triggers: a count is taken exactly once per action under concurrent writers",
          "[triggers][concurrency]") {
  InstanceOptions o = small();
  o.mode = BufferMode::overwrite;
  Instance inst(o);
  inst.enable(Req::desc());
  REQUIRE(set_trigger(inst, Req::desc(), "snapshot:37 if lat >= 0").ok());
  constexpr int kThreads = 4, kPer = 20000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i) Req::emit(inst, static_cast<uint32_t>(i), t, "c");
    });
  for (auto& t : ts) t.join();
  // Each action is one swap, or, when another writer's swap was running,
  // one skipped swap: 37 in all.
  const auto& ring = detail::InstanceAccess::live_ring(inst);
  CHECK(ring.swaps() + ring.busy_skips() == 37);
  CHECK(trigger_counts(inst, Req::desc()).snapshots == ring.swaps());
  CHECK(trigger_file(inst, Req::desc()) == "snapshot:count=0 if lat >= 0\n");
  CHECK_FALSE(inst.paused());  // tracing went on in the swapped-in ring
  CHECK(inst.event_stats(Req::desc()).emitted() == uint64_t{kThreads} * kPer);
}

TEST_CASE("triggers: stacktrace writes a kernel_stack record per action", "[triggers]") {
  Instance inst(small());
  inst.enable(Req::desc());
  REQUIRE(set_trigger(inst, Req::desc(), "stacktrace:3").ok());
  for (uint32_t i = 0; i < 5; ++i) Req::emit(inst, i, 0, "s");
  const EventDesc* us = inst.registry().find("ftrace", "kernel_stack");
  REQUIRE(us != nullptr);
  CHECK(us->id() == 4);
  CHECK(inst.event_stats(*us).kept == 3);
  CHECK(trigger_counts(inst, Req::desc()).stacktraces == 3);
  CHECK(inst.event_stats(Req::desc()).kept == 5);
}

TEST_CASE("hist: one key, the kernel's output format and Totals", "[triggers][hist]") {
  Instance inst(small());
  inst.enable(Req::desc());
  REQUIRE(inst.set_filter(Req::desc(), "id > 1000000").ok());  // nothing is kept: the hist sees all
  REQUIRE(set_trigger(inst, Req::desc(), "hist:keys=id:vals=lat").ok());
  for (uint32_t i = 0; i < 10; ++i) Req::emit(inst, i % 3, static_cast<int32_t>(i), "h");
  CHECK(trigger_file(inst, Req::desc()) ==
        "hist:keys=id:vals=hitcount,lat:sort=hitcount:size=2048 [active]\n");
  CHECK(hist_file(inst, Req::desc()) ==
        "# event histogram\n"
        "#\n"
        "# trigger info: hist:keys=id:vals=hitcount,lat:sort=hitcount:size=2048 [active]\n"
        "#\n"
        "\n"
        "{ id:          1 } hitcount:          3  lat:         12\n"
        "{ id:          2 } hitcount:          3  lat:         15\n"
        "{ id:          0 } hitcount:          4  lat:         18\n"
        "\n"
        "Totals:\n"
        "    Hits: 10\n"
        "    Entries: 3\n"
        "    Dropped: 0\n");
  CHECK(inst.event_stats(Req::desc()).kept == 0);
}

TEST_CASE("hist: keys, sort, modifiers and a full map", "[triggers][hist]") {
  Instance inst(small());
  inst.enable(Req::desc());
  const EventDesc& ev = Req::desc();
  REQUIRE(set_trigger(inst, ev,
                      "hist:keys=name,id.hex:vals=lat:sort=lat.descending,id:size=100 if lat >= 0")
              .ok());
  Req::emit(inst, 255, 10, "bash");
  Req::emit(inst, 16, 30, "sshd");
  Req::emit(inst, 16, 5, "sshd");
  Req::emit(inst, 1, -1, "skip");  // the trigger's filter rejects it
  const std::string h = hist_file(inst, ev);
  CHECK(h.find("# trigger info: "
               "hist:keys=name,id.hex:vals=hitcount,lat:sort=lat.descending,id.hex:size=128 if lat "
               ">= 0 [active]\n") != std::string::npos);
  const std::string bash = fmt_key("name", "bash", 50);
  CHECK(h.find("{ " + fmt_key("name", "sshd", 50) +
               ", id: 10 } hitcount:          2  lat:         35\n"
               "{ " +
               bash + ", id: ff } hitcount:          1  lat:         10\n") != std::string::npos);
  CHECK(h.find("    Hits: 3\n    Entries: 2\n    Dropped: 0\n") != std::string::npos);

  clear_triggers(inst, ev);
  REQUIRE(set_trigger(inst, ev, "hist:keys=lat.log2").ok());
  REQUIRE(set_trigger(inst, ev, "hist:keys=lat.buckets=10:sort=lat").ok());
  for (int v : {0, 1, 2, 3, 4, 5, 9, 10, 19, 1000}) Req::emit(inst, 0, v, "l");
  const std::string l = hist_file(inst, ev);
  CHECK(l.find("{ lat: ~ 2^0  } hitcount:          2\n") != std::string::npos);  // 0, 1
  CHECK(l.find("{ lat: ~ 2^2  } hitcount:          2\n") != std::string::npos);  // 3, 4
  CHECK(l.find("{ lat: ~ 2^10 } hitcount:          1\n") != std::string::npos);  // 1000
  CHECK(l.find("{ lat: ~ 0-9 } hitcount:          7\n{ lat: ~ 10-19 } hitcount:          2\n"
               "{ lat: ~ 1000-1009 } hitcount:          1\n") != std::string::npos);
  CHECK(l.find("\n\n# event histogram\n") !=
        std::string::npos);  // two hists, one blank pair between

  // A full map: further keys count as Dropped, never lost silently.
  clear_triggers(inst, ev);
  REQUIRE(set_trigger(inst, ev, "hist:keys=id:size=128").ok());
  for (uint32_t i = 0; i < 300; ++i) Req::emit(inst, i, 0, "d");
  const std::string d = hist_file(inst, ev);
  CHECK(d.find("    Hits: 128\n    Entries: 128\n    Dropped: 172\n") != std::string::npos);
}

TEST_CASE("hist: errors as the kernel's error_log", "[triggers][hist][parser]") {
  Instance inst(small());
  const EventDesc& ev = Req::desc();
  TriggerStatus st = set_trigger(inst, ev, "hist:keys=bogus");
  REQUIRE_FALSE(st.ok());
  CHECK(st.render() ==
        "hist:tptrig:req: error: Couldn't find field\n  Command: hist:keys=bogus\n                 "
        "    ^\n");
  CHECK(set_trigger(inst, ev, "hist:keys=id.foo").error().message == "Invalid field modifier");
  CHECK(set_trigger(inst, ev, "hist:keys=id:sort=lat").error().message ==
        "Sort field must be a key or a val");
  CHECK(set_trigger(inst, ev, "hist:keys=id:sort=id.up").error().message ==
        "Invalid sort modifier");
  CHECK(set_trigger(inst, ev, "hist:keys=id:vals=lat:sort=id,lat,hitcount").error().message ==
        "Too many sort fields (Max = 2)");
  CHECK(set_trigger(inst, ev, "hist:keys=id,lat,name,id").error().err == EINVAL);  // 3 keys at most
  CHECK(set_trigger(inst, ev, "hist:keys=id:size=64").error().err == EINVAL);      // 128..131072
  CHECK(set_trigger(inst, ev, "hist:keys=id:cont").error().message ==
        "Can't clear or continue a nonexistent hist trigger");
  REQUIRE(set_trigger(inst, ev, "hist:keys=id").ok());
  CHECK(set_trigger(inst, ev, "hist:keys=id").error().message == "Hist trigger already exists");
  REQUIRE(set_trigger(inst, ev, "hist:keys=id:pause").ok());
  CHECK(trigger_file(inst, ev) == "hist:keys=id:vals=hitcount:sort=hitcount:size=2048 [paused]\n");
  inst.enable(ev);
  Req::emit(inst, 1, 0, "p");
  REQUIRE(set_trigger(inst, ev, "hist:keys=id:cont").ok());
  Req::emit(inst, 1, 0, "p");
  CHECK(hist_file(inst, ev).find("Hits: 1\n") != std::string::npos);
  REQUIRE(set_trigger(inst, ev, "hist:keys=id:clear").ok());
  CHECK(hist_file(inst, ev).find("Hits: 0\n    Entries: 0\n") != std::string::npos);
  REQUIRE(set_trigger(inst, ev, "!hist:keys=id").ok());
  CHECK(hist_file(inst, ev).empty());
}

TEST_CASE(
    "hist: counts are exact under concurrent writers (per-CPU shards and the atomic fallback)",
    "[triggers][hist][concurrency]") {
  Instance inst(small());
  inst.enable(Req::desc());
  REQUIRE(set_trigger(inst, Req::desc(), "hist:keys=lat:vals=id").ok());
  constexpr int kThreads = 4, kPer = 25000;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i) Req::emit(inst, 2, t, "c");
    });
  for (auto& t : ts) t.join();
  const std::string h = hist_file(inst, Req::desc());
  for (int t = 0; t < kThreads; ++t) {
    char line[96];
    std::snprintf(line, sizeof line, "{ lat: %10d } hitcount: %10d  id: %10d\n", t, kPer, 2 * kPer);
    CHECK(h.find(line) != std::string::npos);
  }
  CHECK(h.find("    Hits: 100000\n    Entries: 4\n    Dropped: 0\n") != std::string::npos);
}

// The map itself, both counter kinds: per-CPU counters added in rseq
// sections (a thread preempted or migrated inside one restarts it) and the
// shared row's locked adds. Eight threads on however many CPUs the test has,
// so sections are preempted; every hit must be there.
TEST_CASE("hist map: per-CPU and shared counters are exact under concurrent writers",
          "[triggers][hist][concurrency]") {
  using namespace tracepipe::triggers;
  TriggerError err;
  err.command = "hist:keys=lat:vals=id";
  std::optional<HistSpec> spec = parse_hist("keys=lat:vals=id", Req::desc(), err, 5);
  REQUIRE(spec.has_value());
  for (const bool per_cpu : {true, false}) {
    HistMap map(*spec, per_cpu);
    if (per_cpu && !map.per_cpu_counters())
      WARN("rseq not usable here: both runs use the shared counters");
    if (!per_cpu) CHECK_FALSE(map.per_cpu_counters());
    constexpr int kThreads = 8, kPer = 50000;
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        std::byte rec[Req::fixed_size] = {};
        const uint32_t id = 3;
        const int32_t lat = t % 4;
        std::memcpy(rec + spec->vals[0].offset, &id, 4);
        std::memcpy(rec + spec->keys[0].offset, &lat, 4);
        for (int i = 0; i < kPer; ++i) map.update(*spec, rec, 0, 0);
      });
    for (auto& t : ts) t.join();
    std::vector<HistMap::Row> rows = map.rows();
    REQUIRE(rows.size() == 4);
    uint64_t hits = 0;
    for (const HistMap::Row& r : rows) {
      CHECK(r.hitcount == 2u * kPer);  // two threads per key
      CHECK(r.vals[0] == 3u * 2u * kPer);
      hits += r.hitcount;
    }
    CHECK(hits == uint64_t{kThreads} * kPer);
    CHECK(map.dropped() == 0);
    map.clear();
    CHECK(map.rows().empty());
  }
}

TEST_CASE("hist: .percent, .graph and nohitcount print as hist_trigger_print_val",
          "[triggers][hist]") {
  Instance inst(small());
  inst.enable(Req::desc());
  const EventDesc& ev = Req::desc();
  REQUIRE(set_trigger(inst, ev, "hist:keys=id:vals=hitcount.percent,lat.graph:sort=id").ok());
  REQUIRE(set_trigger(inst, ev, "hist:keys=id:vals=lat.percent:sort=id:NOHC").ok());
  Req::emit(inst, 1, 10, "a");
  Req::emit(inst, 2, 20, "b");
  Req::emit(inst, 2, 20, "b");
  Req::emit(inst, 3, 5, "c");
  CHECK(trigger_file(inst, ev) ==
        "hist:keys=id:vals=hitcount,hitcount.percent,lat.graph:sort=id:size=2048 [active]\n"
        "hist:keys=id:vals=lat.percent:sort=id:size=2048:nohitcount [active]\n");
  // hitcount (%): of the 4 hits; lat: 20 columns scaled to the largest sum (40).
  CHECK(hist_file(inst, ev) ==
        "# event histogram\n#\n"
        "# trigger info: hist:keys=id:vals=hitcount,hitcount.percent,lat.graph:sort=id:size=2048 "
        "[active]\n#\n\n"
        "{ id:          1 } hitcount:          1  hitcount (%):  25.00  lat: #####               \n"
        "{ id:          2 } hitcount:          2  hitcount (%):  50.00  lat: ####################\n"
        "{ id:          3 } hitcount:          1  hitcount (%):  25.00  lat: ##                  \n"
        "\nTotals:\n    Hits: 4\n    Entries: 3\n    Dropped: 0\n"
        "\n\n"
        "# event histogram\n#\n"
        "# trigger info: hist:keys=id:vals=lat.percent:sort=id:size=2048:nohitcount [active]\n#\n\n"
        "{ id:          1 }  lat (%):  18.18\n"
        "{ id:          2 }  lat (%):  72.72\n"
        "{ id:          3 }  lat (%):   9.09\n"
        "\nTotals:\n    Hits: 4\n    Entries: 3\n    Dropped: 0\n");
  CHECK(triggers::format_hist_val("v", triggers::kPercent, 3, 0, 0) == " v (%):[ERROR]");
  CHECK(triggers::format_hist_val("v", triggers::kPercent, 0, 0, 0) == " v (%):   0.00");
  CHECK(triggers::format_hist_val("v", triggers::kGraph, 1, 0, 0) == " v:              [ERROR]");

  // Misuse, with the kernel's message and caret.
  struct Row {
    const char* cmd;
    int err;
    const char* message;
    const char* caret_at;  // "" = position 0
  };
  const Row rows[] = {
      {"hist:keys=id.percent", EINVAL, "Invalid field modifier", "percent"},
      {"hist:keys=id:x=lat.graph", EINVAL, "Invalid field modifier", "graph"},
      {"hist:keys=id:nohitcount", ENOENT, "Non-hitcount value is required for 'nohitcount'", ""},
      {"hist:keys=id:vals=hitcount:NOHC", ENOENT, "Non-hitcount value is required for 'nohitcount'",
       ""},
      {"hist:keys=id:vals=lat.log2", EINVAL, "Invalid field modifier", "lat.log2"},
      {"hist:keys=id:vals=lat.buckets=10", EINVAL, "Invalid field modifier", "lat.buckets=10"},
      {"hist:keys=id:x=lat.log2", EINVAL, "Invalid field modifier", "lat.log2"},
  };
  for (const Row& r : rows) {
    INFO(r.cmd);
    const TriggerStatus st = set_trigger(inst, ev, r.cmd);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().err == r.err);
    CHECK(st.error().message == r.message);
    CHECK(st.error().pos ==
          (r.caret_at[0] == '\0' ? 0 : static_cast<int>(st.error().command.find(r.caret_at))));
  }
}
