// Hist variables, expressions, synthetic events and handlers
// (Documentation/trace/histogram.rst, section 2.2) on the kernel's own
// sched_waking / sched_switch formats, with records whose time stamps the
// test chooses: the trigger info lines, the hist text, read-once pairing,
// the kernel's division rules and its error_log messages and carets.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>

#include "test_support.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/raw_emit.h"
#include "tracepipe/core/triggers/snapshot.h"
#include "tracepipe/core/triggers/synthetic.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {

struct Sched {
  Registry reg;
  std::unique_ptr<Instance> inst;
  const EventDesc* waking = nullptr;
  const EventDesc* switch_ = nullptr;
  Sched() {
    const auto dir = tp_test::shared_data_or_skip("kernel/formats");
    reg.add_format_dir(dir);
    waking = reg.find("sched", "sched_waking");
    switch_ = reg.find("sched", "sched_switch");
    InstanceOptions o;
    o.buffer_size_kb = 64;
    o.cpus = 2;
    o.external_time = true;
    inst = std::make_unique<Instance>(o, reg);
  }
  // sched_waking: comm, pid, prio, target_cpu (common_pid = `by`)
  void wake(uint64_t ts, const char* comm, int32_t pid, int32_t prio, int32_t by = 0,
            uint32_t cpu = 0) {
    std::byte r[36]{};
    put_common(r, waking->id(), by);
    std::strncpy(reinterpret_cast<char*>(r + 8), comm, 16);
    std::memcpy(r + 24, &pid, 4);
    std::memcpy(r + 28, &prio, 4);
    std::memcpy(r + 32, &cpu, 4);
    RawEmit::emit_at(*inst, std::span<const std::byte>(r, sizeof r), cpu, ts);
  }
  // sched_switch: prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio
  void sw(uint64_t ts, const char* prev, int32_t prev_pid, int32_t prev_prio, const char* next,
          int32_t next_pid, int32_t next_prio, uint32_t cpu = 0) {
    std::byte r[64]{};
    put_common(r, switch_->id(), prev_pid);
    std::strncpy(reinterpret_cast<char*>(r + 8), prev, 16);
    std::memcpy(r + 24, &prev_pid, 4);
    std::memcpy(r + 28, &prev_prio, 4);
    std::strncpy(reinterpret_cast<char*>(r + 40), next, 16);
    std::memcpy(r + 56, &next_pid, 4);
    std::memcpy(r + 60, &next_prio, 4);
    RawEmit::emit_at(*inst, std::span<const std::byte>(r, sizeof r), cpu, ts);
  }
  static void put_common(std::byte* r, uint16_t id, int32_t pid) {
    std::memcpy(r, &id, 2);
    std::memcpy(r + 4, &pid, 4);
  }
  std::string trig(const EventDesc& ev, const std::string& cmd) {
    return set_trigger(*inst, ev, cmd).render();
  }
};

constexpr uint64_t us = 1000;  // the records' stamps are in ns

uint64_t records(const buffers::RingBufferBase& rb) {
  uint64_t n = 0;
  for (uint32_t cpu = 0; cpu < rb.cpus(); ++cpu) {
    buffers::Iterator it(rb, cpu);
    while (it.next()) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE(
    "hist vars: the wakeup latency recipe of section 2.2.3 (onmatch, synthetic event, hist on it)",
    "[triggers][hist][vars]") {
  Sched s;
  REQUIRE(set_synthetic_event(*s.inst, "wakeup_latency u64 lat; pid_t pid; int prio").ok());
  CHECK(synthetic_events(*s.inst) == "wakeup_latency\tu64 lat; pid_t pid; int prio\n");
  REQUIRE(s.trig(*s.waking,
                 "hist:keys=$saved_pid:saved_pid=pid:ts0=common_timestamp.usecs if "
                 "comm==\"cyclictest\"") == "");
  REQUIRE(s.trig(*s.switch_,
                 "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_"
                 "waking).wakeup_latency("
                 "$wakeup_lat,$saved_pid,next_prio) if next_comm==\"cyclictest\"") == "");
  const EventDesc* lat = synthetic_event(*s.inst, "wakeup_latency");
  REQUIRE(lat != nullptr);
  REQUIRE(s.trig(*lat, "hist:keys=pid,prio,lat:sort=pid,lat") == "");

  // The trigger files read back as the kernel prints them.
  CHECK(trigger_file(*s.inst, *s.waking) ==
        "hist:keys=pid:vals=hitcount:saved_pid=pid,ts0=common_timestamp.usecs:sort=hitcount:size="
        "2048:clock=local "
        "if comm==\"cyclictest\" [active]\n");
  CHECK(trigger_file(*s.inst, *s.switch_) ==
        "hist:keys=next_pid:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:sort=hitcount:"
        "size=2048:clock=local:"
        "onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,$saved_pid,next_prio) if "
        "next_comm==\"cyclictest\" "
        "[active]\n");

  s.wake(1000 * us, "cyclictest", 2035, 9);
  s.sw(1004 * us, "swapper/0", 0, 120, "cyclictest", 2035, 9);    // 4 us
  s.sw(1010 * us, "cyclictest", 2035, 9, "cyclictest", 2035, 9);  // ts0 was read once: no match
  s.wake(2000 * us, "cyclictest", 2035, 9);
  s.sw(2003 * us, "swapper/0", 0, 120, "cyclictest", 2035, 9);  // 3 us
  s.wake(3000 * us, "cyclictest", 2034, 120);
  s.wake(3100 * us, "other", 2034, 120);                             // filtered out: ts0 stays 3000
  s.sw(3130 * us, "swapper/1", 0, 120, "cyclictest", 2034, 120, 1);  // 130 us
  s.sw(3200 * us, "swapper/1", 0, 120, "other", 77, 120, 1);         // filtered out

  CHECK(hist_file(*s.inst, *lat) ==
        "# event histogram\n#\n# trigger info: "
        "hist:keys=pid,prio,lat:vals=hitcount:sort=pid,lat:size=2048 [active]\n#\n\n"
        "{ pid:       2034, prio:        120, lat:        130 } hitcount:          1\n"
        "{ pid:       2035, prio:          9, lat:          3 } hitcount:          1\n"
        "{ pid:       2035, prio:          9, lat:          4 } hitcount:          1\n"
        "\nTotals:\n    Hits: 3\n    Entries: 3\n    Dropped: 0\n");
  // The switch hist counts only the matched switches (the unmatched one
  // stopped before its entry was touched).
  const std::string sw = hist_file(*s.inst, *s.switch_);
  CHECK(sw.find("{ next_pid:       2035 } hitcount:          2\n") != std::string::npos);
  CHECK(sw.find("{ next_pid:       2034 } hitcount:          1\n") != std::string::npos);

  // A synthetic event in use cannot be removed; its variables' hist neither.
  CHECK(set_synthetic_event(*s.inst, "!wakeup_latency").error().err == EBUSY);
  CHECK(
      set_trigger(
          *s.inst, *s.waking,
          "!hist:keys=$saved_pid:saved_pid=pid:ts0=common_timestamp.usecs if comm==\"cyclictest\"")
          .error()
          .err == EBUSY);
}

TEST_CASE("hist vars: onmax().save() keeps the max and the saved fields per entry",
          "[triggers][hist][vars]") {
  Sched s;
  REQUIRE(s.trig(*s.waking, "hist:keys=pid:ts0=common_timestamp.usecs if comm==\"cyclictest\"") ==
          "");
  REQUIRE(s.trig(*s.switch_,
                 "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmax($wakeup_lat)."
                 "save(next_comm,prev_pid,"
                 "prev_prio,prev_comm) if next_comm==\"cyclictest\"") == "");
  s.wake(100 * us, "cyclictest", 2255, 19);
  s.sw(127 * us, "swapper/1", 0, 120, "cyclictest", 2255, 19);  // 27: the max
  s.wake(200 * us, "cyclictest", 2255, 19);
  s.sw(210 * us, "kworker/1:1", 31, 120, "cyclictest", 2255, 19);  // 10: not a new max
  s.wake(300 * us, "cyclictest", 2256, 19);
  s.sw(349 * us, "swapper/0", 0, 120, "cyclictest", 2256, 19);  // 49
  CHECK(hist_file(*s.inst, *s.switch_) ==
        "# event histogram\n#\n# trigger info: "
        "hist:keys=next_pid:vals=hitcount:wakeup_lat=common_timestamp.usecs-$ts0:"
        "sort=hitcount:size=2048:clock=local:onmax($wakeup_lat).save(next_comm,prev_pid,prev_prio,"
        "prev_comm) if "
        "next_comm==\"cyclictest\" [active]\n#\n\n"
        "{ next_pid:       2256 } hitcount:          1\n"
        "\tmax:         49  next_comm: cyclictest                        prev_pid:          0  "
        "prev_prio:        120  "
        "prev_comm: swapper/0                       \n"
        "{ next_pid:       2255 } hitcount:          2\n"
        "\tmax:         27  next_comm: cyclictest                        prev_pid:          0  "
        "prev_prio:        120  "
        "prev_comm: swapper/1                       \n"
        "\nTotals:\n    Hits: 3\n    Entries: 2\n    Dropped: 0\n");
}

TEST_CASE("hist vars: onchange(), snapshot() and its 'Snapshot taken' block",
          "[triggers][hist][vars]") {
  Sched s;
  s.inst->enable(*s.waking);
  s.inst->enable(*s.switch_);
  REQUIRE(s.trig(*s.waking, "hist:keys=pid:ts0=common_timestamp.usecs") == "");
  REQUIRE(s.trig(*s.switch_,
                 "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onchange($wakeup_lat)."
                 "save(prev_pid):"
                 "onmax($wakeup_lat).snapshot()") == "");
  s.wake(0, "a", 10, 120);
  s.sw(5 * us, "b", 11, 120, "a", 10, 120);  // 5
  s.wake(10 * us, "a", 10, 120);
  s.sw(15 * us, "c", 12, 120, "a", 10, 120);  // 5 again: no change, prev_pid stays 11
  s.wake(20 * us, "z", 20, 120);
  s.sw(92 * us, "d", 13, 120, "z", 20, 120);  // 72: the hist-wide max
  const std::string h = hist_file(*s.inst, *s.switch_);
  CHECK(h.find("{ next_pid:         10 } hitcount:          2\n\tchanged:          5  prev_pid:    "
               "     11\n") != std::string::npos);
  CHECK(h.find("\nSnapshot taken (see tracing/snapshot).  Details:\n\ttriggering value { "
               "onmax($wakeup_lat) }:         72"
               "\ttriggered by event with key: { next_pid:         20 }\n\nTotals:\n") !=
        std::string::npos);
  // snapshot() swapped the live ring with the spare (twice: the first
  // latency, 5, was a new max too): tracing went on in the other ring.
  CHECK_FALSE(s.inst->paused());
  const buffers::RingBufferBase* snap = snapshot_ring(*s.inst);
  REQUIRE(snap != nullptr);
  const uint64_t in_snapshot = records(*snap);
  CHECK(in_snapshot >= 3);  // wake(10), switch(15), wake(20): between the two swaps
  const uint64_t live = records(s.inst->ring());
  s.wake(100 * us, "a", 10, 120);
  CHECK(records(s.inst->ring()) == live + 1);
  CHECK(records(*snapshot_ring(*s.inst)) == in_snapshot);
  // One conditional snapshot per instance (tracing_snapshot_cond_enable).
  CHECK(set_trigger(*s.inst, *s.waking, "hist:keys=pid:p=prio:onmax($p).snapshot()").error().err ==
        EBUSY);
}

TEST_CASE("hist vars: constants, + - * / and the kernel's division rules",
          "[triggers][hist][vars]") {
  Sched s;
  // The params are pid_t expressions (the first operand's type), which the
  // synthetic fields must match.
  REQUIRE(
      set_synthetic_event(*s.inst, "divtest pid_t d; pid_t q; pid_t e; pid_t p2; pid_t big").ok());
  // q: pid/3 takes the kernel's multiply-and-shift path (below 2^20 it may
  // round up by one: 10/3 -> 4); d: a zero divisor at run time gives -1;
  // e: a-b-c is (a-b)-c; big: 2^21+1 divides exactly.
  REQUIRE(s.trig(*s.waking,
                 "hist:keys=pid:d=pid/prio,q=pid/3,e=pid-4-2*3,p2=pid/8,big=pid/2097153:"
                 "onmatch(sched.sched_waking).divtest($d,$q,$e,$p2,$big)") == "");
  const EventDesc* dt = synthetic_event(*s.inst, "divtest");
  REQUIRE(s.trig(*dt, "hist:keys=d,q,e:vals=p2,big") == "");
  s.wake(0, "x", 10, 0);
  const std::string h = hist_file(*s.inst, *dt);
  CHECK(h.find("{ d: 18446744073709551615, q:          4, e:          0 } hitcount:          1  "
               "p2:          1  big:  "
               "        0\n") != std::string::npos);
  INFO(trigger_file(*s.inst, *s.waking));
  CHECK(trigger_file(*s.inst, *s.waking)
            .starts_with("hist:keys=pid:vals=hitcount:d=pid/prio,q=pid/3,e=pid-4-6,p2=pid/"
                         "8,big=pid/2097153:sort=hitcount:size=2048:"
                         "onmatch(sched.sched_waking).divtest($d,$q,$e,$p2,$big) [active]"));
}

TEST_CASE("hist vars: errors carry the kernel's error_log message and caret",
          "[triggers][hist][vars][parser]") {
  Sched s;
  REQUIRE(set_synthetic_event(*s.inst, "lat1 u64 lat").ok());
  REQUIRE(set_synthetic_event(*s.inst, "lat2 u64 lat; int prio").ok());
  struct Row {
    const char* cmd;
    int err;
    const char* message;
    const char* caret_at;  // the text the caret points at ("" = position 0)
  };
  const Row rows[] = {
      {"hist:keys=next_pid:lat=common_timestamp-$nope", EINVAL, "Couldn't find variable", "nope"},
      {"hist:keys=next_pid:x=next_prio/0", EDOM, "Division by zero", "0"},
      {"hist:keys=next_pid:x=common_timestamp.usecs-common_timestamp", EINVAL,
       "Timestamp units in expression don't match", ""},
      {"hist:keys=next_pid:x=next_pid+next_prio-next_pid+1+2", EINVAL,
       "Too many subexpressions (3 max)", "next_pid"},
      {"hist:keys=next_pid:x=next_comm+1", EINVAL,
       "String type can not be an operand in expression", "next_comm"},
      {"hist:keys=next_pid:x=0xzz+1", EINVAL, "Expecting numeric literal", "0xzz"},
      {"hist:keys=next_pid:x=", EINVAL, "Empty assignment", "x="},
      {"hist:keys=next_pid:x=next_pid,y", EINVAL, "Malformed assignment", "y"},
      {"hist:keys=next_pid:x=next_pid,x=next_prio", EINVAL, "Variable already defined", "x"},
      {"hist:keys=next_pid:x=next_pid:onmax(x).save(prev_pid)", EINVAL,
       "For onmax(x) or onchange(x), x must be a variable", "x"},
      {"hist:keys=next_pid:x=next_pid:onmax($y).save(prev_pid)", EINVAL,
       "Couldn't find onmax or onchange variable", "y"},
      {"hist:keys=next_pid:x=next_pid:onmatch(sched.nosuch).lat1($x)", EINVAL,
       "Invalid subsystem or event name", "nosuch"},
      {"hist:keys=next_pid:x=next_pid:onmatch(sched).lat1($x)", EINVAL, "Missing subsystem",
       "sched"},
      {"hist:keys=next_pid:x=next_pid:onmatch(sched.sched_waking).nosynth($x)", EINVAL,
       "Couldn't find synthetic event", "nosynth"},
      {"hist:keys=next_pid:x=common_timestamp:onmatch(sched.sched_waking).lat2($x)", EINVAL,
       "Param count doesn't match synthetic event field count", "lat2"},
      // One param too many fails the type check of a field that is not there.
      {"hist:keys=next_pid:x=common_timestamp:onmatch(sched.sched_waking).lat1($x,next_prio)",
       EINVAL, "Param type doesn't match synthetic event field type", "next_prio"},
      {"hist:keys=next_pid:x=next_pid:onmatch(sched.sched_waking).lat1($x)", EINVAL,
       "Param type doesn't match synthetic event field type", "$x"},
      {"hist:keys=next_pid:x=next_pid:onmatch(sched.sched_waking).lat1(next_comm)", EINVAL,
       "Param type doesn't match synthetic event field type", "next_comm"},
      {"hist:keys=next_pid:x=next_pid:onmatch(sched.sched_waking).save(prev_pid)", EINVAL,
       "Handler doesn't support action", "save"},
      {"hist:keys=next_pid:x=next_pid:onmax($x).save(prev_pid):onmax($x).save(next_prio)", EINVAL,
       "Can't have more than one save() action per hist", ""},
      {"hist:keys=next_pid:x=next_pid:onmax($x).save(nosuch)", EINVAL,
       "Couldn't create field variable", "nosuch"},
      {"hist:keys=next_pid.bogus", EINVAL, "Invalid field modifier", "bogus"},
      {"hist:keys=next_pid:clock=mono", EINVAL, "Couldn't set trace_clock", "mono"},
  };
  for (const Row& r : rows) {
    INFO(r.cmd);
    const TriggerStatus st = set_trigger(*s.inst, *s.switch_, r.cmd);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().err == r.err);
    CHECK(st.error().message == r.message);
    CHECK(st.error().location == "hist:sched:sched_switch");
    const std::string cmd = st.error().command;
    const size_t want = r.caret_at[0] == '\0' ? 0 : cmd.find(r.caret_at);
    CHECK(st.error().pos == static_cast<int>(want));
  }
  // The rendered entry: message, command, caret under the offending text.
  CHECK(
      set_trigger(*s.inst, *s.switch_, "hist:keys=next_pid:lat=common_timestamp-$nope").render() ==
      "hist:sched:sched_switch: error: Couldn't find variable\n"
      "  Command: hist:keys=next_pid:lat=common_timestamp-$nope\n"
      "                                                    ^\n");
  // Keys cannot hold references.
  REQUIRE(s.trig(*s.waking, "hist:keys=pid:ts0=common_timestamp") == "");
  CHECK(set_trigger(*s.inst, *s.switch_, "hist:keys=$ts0").error().message ==
        "Using variable references in keys not supported");
}

TEST_CASE("synthetic events: the synthetic_events file's syntax, format and errors",
          "[triggers][synthetic][parser]") {
  Sched s;
  REQUIRE(set_synthetic_event(*s.inst, "strs char name[16]; char path[]; unsigned int n; u8 flag")
              .ok());
  CHECK(synthetic_events(*s.inst) == "strs\tchar[16] name; char[] path; unsigned int n; u8 flag\n");
  const EventDesc* d = synthetic_event(*s.inst, "strs");
  REQUIRE(d != nullptr);
  CHECK(d->system() == "synthetic");
  const std::string fmt = d->format_text();
  CHECK(fmt.find("\tfield:char name[16];\toffset:8;\tsize:16;\tsigned:1;\n") != std::string::npos);
  CHECK(fmt.find("\tfield:__data_loc char[] path;\toffset:264;\tsize:8;\tsigned:1;\n") !=
        std::string::npos);
  CHECK(fmt.find("\tfield:unsigned int n;\toffset:272;\tsize:4;\tsigned:0;\n") !=
        std::string::npos);
  CHECK(fmt.find("\tfield:u8 flag;\toffset:280;\tsize:1;\tsigned:0;\n") != std::string::npos);
  CHECK(fmt.find("print fmt: \"name=%s, path=%s, n=%u, flag=%u\", REC->name, __get_str(path), "
                 "REC->n, REC->flag") != std::string::npos);

  auto err = [&](const char* cmd) { return set_synthetic_event(*s.inst, cmd).render(); };
  CHECK(err("strs u64 x") ==
        "synthetic_events: error: Event already exists\n  Command: strs u64 x\n           ^\n");
  CHECK(err("9bad u64 x") ==
        "synthetic_events: error: Illegal name\n  Command: 9bad u64 x\n           ^\n");
  CHECK(err("e1 float x") ==
        "synthetic_events: error: Invalid type\n  Command: e1 float x\n              ^\n");
  CHECK(err("e2 char s[300]") ==
        "synthetic_events: error: Invalid array specification\n  Command: e2 char s[300]\n         "
        "          ^\n");
  CHECK(err("e3 unsigned x") ==
        "synthetic_events: error: Incomplete type\n  Command: e3 unsigned x\n              ^\n");
  CHECK(err("e4 u64") ==
        "synthetic_events: error: Invalid field\n  Command: e4 u64\n              ^\n");
  CHECK(set_synthetic_event(*s.inst, "!nosuch").error().err == ENOENT);
  REQUIRE(set_synthetic_event(*s.inst, "!strs").ok());
  CHECK(synthetic_events(*s.inst).empty());
  CHECK(synthetic_event(*s.inst, "strs") == nullptr);
  // The same definition again brings the same event back.
  REQUIRE(set_synthetic_event(*s.inst, "strs char name[16]; char path[]; unsigned int n; u8 flag")
              .ok());
  CHECK(synthetic_event(*s.inst, "strs") == d);
}

TEST_CASE("hist vars: enable_hist / disable_hist continue and pause another event's hists",
          "[triggers][hist]") {
  Sched s;
  REQUIRE(s.trig(*s.switch_, "hist:keys=next_pid:pause") == "");
  REQUIRE(s.trig(*s.waking, "enable_hist:sched:sched_switch if pid == 5") == "");
  CHECK(trigger_file(*s.inst, *s.waking) ==
        "enable_hist:sched:sched_switch:unlimited if pid == 5\n");
  // enable_hist and disable_hist of one target are one kind, as in the kernel.
  CHECK(
      set_trigger(*s.inst, *s.waking, "disable_hist:sched:sched_switch if pid == 6").error().err ==
      EEXIST);
  s.sw(1, "a", 1, 120, "b", 2, 120);  // paused: not counted
  s.wake(2, "x", 5, 120);             // continues it
  s.sw(3, "a", 1, 120, "b", 2, 120);
  REQUIRE(s.trig(*s.waking, "!enable_hist:sched:sched_switch") == "");
  REQUIRE(s.trig(*s.waking, "disable_hist:sched:sched_switch:1 if pid == 6") == "");
  s.wake(4, "x", 6, 120);  // pauses it (count 1 -> 0)
  s.sw(5, "a", 1, 120, "b", 2, 120);
  const std::string h = hist_file(*s.inst, *s.switch_);
  CHECK(h.find("{ next_pid:          2 } hitcount:          1\n") != std::string::npos);
  CHECK(h.find("[paused]") != std::string::npos);
  CHECK(trigger_file(*s.inst, *s.waking) ==
        "disable_hist:sched:sched_switch:count=0 if pid == 6\n");
}

TEST_CASE("hist vars: onmatch params that name fields of the matched event (create_field_var_hist)",
          "[triggers][hist][vars]") {
  Sched s;
  REQUIRE(set_synthetic_event(*s.inst, "wakeup_latency u64 lat; pid_t pid; int prio").ok());
  REQUIRE(set_synthetic_event(*s.inst, "wl2 u64 lat; int prio").ok());
  REQUIRE(s.trig(*s.waking, "hist:keys=pid:ts0=common_timestamp.usecs if comm==\"cyclictest\"") ==
          "");
  // next_pid: a field of this event; sched.sched_waking.prio: of the matched
  // one, through a hist the kernel adds there with the same keys and filter.
  const std::string sw_cmd =
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking)."
      "wakeup_latency("
      "$wakeup_lat,next_pid,sched.sched_waking.prio)";
  REQUIRE(s.trig(*s.switch_, sw_cmd) == "");
  CHECK(
      trigger_file(*s.inst, *s.waking) ==
      "hist:keys=pid:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=local "
      "if comm==\"cyclictest\" [active]\n"
      "hist:keys=pid:vals=hitcount:synthetic_prio=prio:sort=hitcount:size=2048 if "
      "comm==\"cyclictest\" [active]\n");
  // An unqualified name that is no field of sched_switch is the matched
  // event's: the same variable, found again.
  REQUIRE(s.trig(*s.switch_,
                 "hist:keys=next_pid:l2=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking)."
                 "wl2($l2,prio)") == "");
  const std::string tf = trigger_file(*s.inst, *s.waking);
  CHECK(std::count(tf.begin(), tf.end(), '\n') == 2);
  REQUIRE(s.trig(*s.switch_,
                 "!hist:keys=next_pid:l2=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking)."
                 "wl2($l2,prio)") == "");
  const EventDesc* lat = synthetic_event(*s.inst, "wakeup_latency");
  REQUIRE(s.trig(*lat, "hist:keys=pid,prio,lat:sort=pid,lat") == "");

  s.wake(1000 * us, "cyclictest", 2035, 9);
  s.sw(1004 * us, "swapper/0", 0, 120, "cyclictest", 2035, 120);  // 4 us, prio of the wakeup: 9
  s.wake(2000 * us, "cyclictest", 2034, 98);
  s.sw(2030 * us, "swapper/1", 0, 120, "cyclictest", 2034, 120, 1);  // 30 us
  CHECK(hist_file(*s.inst, *lat) ==
        "# event histogram\n#\n# trigger info: "
        "hist:keys=pid,prio,lat:vals=hitcount:sort=pid,lat:size=2048 [active]\n#\n\n"
        "{ pid:       2034, prio:         98, lat:         30 } hitcount:          1\n"
        "{ pid:       2035, prio:          9, lat:          4 } hitcount:          1\n"
        "\nTotals:\n    Hits: 2\n    Entries: 2\n    Dropped: 0\n");

  // Removing the hist removes the one it added (destroy_field_var_hists).
  REQUIRE(s.trig(*lat, "!hist:keys=pid,prio,lat:sort=pid,lat") == "");
  REQUIRE(s.trig(*s.switch_, "!" + sw_cmd) == "");
  CHECK(
      trigger_file(*s.inst, *s.waking) ==
      "hist:keys=pid:vals=hitcount:ts0=common_timestamp.usecs:sort=hitcount:size=2048:clock=local "
      "if comm==\"cyclictest\" [active]\n");
}

TEST_CASE("hist vars: field params the kernel refuses, with its last error_log entry",
          "[triggers][hist][vars][parser]") {
  Sched s;
  REQUIRE(set_synthetic_event(*s.inst, "wl2 u64 lat; int prio").ok());
  REQUIRE(s.trig(*s.waking, "hist:keys=pid:ts0=common_timestamp.usecs") == "");
  const std::string before = trigger_file(*s.inst, *s.waking);
  struct Row {
    const char* cmd;
    const char* message;  // "" = plain EINVAL, nothing logged
    const char* caret_at;
  };
  const Row rows[] = {
      // event.field: the kernel reads "sched_waking" as the system and
      // finds no field after the event name.
      {"hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wl2($l,sched_"
       "waking.prio)",
       "", ""},
      // No such field on either event: the hist it would add fails.
      {"hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wl2($l,"
       "nosuch)",
       "Couldn't create histogram for field", "nosuch"},
      {"hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wl2($l,sched."
       "nosuch_ev.prio)",
       "Event file not found", "prio"},
      // No hist with sched_switch's keys on sched_wakeup.
      {"hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wl2($l,sched."
       "sched_wakeup.prio)",
       "Matching event histogram not found", "prio"},
      // onmax(): only this event's fields.
      {"hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmax($l).wl2($l,prio)",
       "Couldn't parse field variable", "prio"},
      // A field of the matched event of the wrong type: its hist goes again.
      {"hist:keys=next_pid:l=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wl2($l,comm)",
       "Param type doesn't match synthetic event field type", "comm"},
  };
  for (const Row& r : rows) {
    INFO(r.cmd);
    const TriggerStatus st = set_trigger(*s.inst, *s.switch_, r.cmd);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().err == EINVAL);
    CHECK(st.error().message == r.message);
    if (r.message[0] != '\0') {
      const std::string cmd = st.error().command;
      CHECK(st.error().pos == static_cast<int>(cmd.find(r.caret_at)));
    }
    CHECK(trigger_file(*s.inst, *s.waking) == before);
  }
}
