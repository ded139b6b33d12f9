// Break-it: filters that read the CPU or the comm, mixed with integer
// predicates, across staging policies and writer modes, with threads pinned
// to CPUs and renamed. Each filter lives in its own instance; all instances
// subscribe to one event (the TRACEPIPE_TRACE fan-out), so one loop checks
// every filter's verdicts against the kernel's semantics.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/thread_context.h"

using namespace tracepipe;

namespace {

using Ev = EventDecl<"tpbreak", "ctxev", Int<"value", uint32_t>, Int<"seq", uint32_t>>;

struct Who {
  uint32_t cpu;
  std::string comm;
};

struct Case {
  const char* expr;
  std::function<bool(const Who&, uint32_t value)> expect;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"CPU == 0", [](const Who& w, uint32_t) { return w.cpu == 0; }},
      {"common_cpu != 1", [](const Who& w, uint32_t) { return w.cpu != 1; }},
      {"cpu == 1 && value > 5", [](const Who& w, uint32_t v) { return w.cpu == 1 && v > 5; }},
      {"comm == \"foo\"", [](const Who& w, uint32_t) { return w.comm == "foo"; }},
      {"COMM ~ \"ab*\"", [](const Who& w, uint32_t) { return w.comm.rfind("ab", 0) == 0; }},
      {"comm != \"foo\" || value < 3",
       [](const Who& w, uint32_t v) { return w.comm != "foo" || v < 3; }},
      {"(CPU == 1 && comm == \"abc\") || (value == 7 && CPU == 0)",
       [](const Who& w, uint32_t v) {
         return (w.cpu == 1 && w.comm == "abc") || (v == 7 && w.cpu == 0);
       }},
      {"value > 2 && value < 8 && comm ~ \"f*\"",
       [](const Who& w, uint32_t v) { return v > 2 && v < 8 && w.comm.rfind("f", 0) == 0; }},
      {"CPU & CPUS{1}", [](const Who& w, uint32_t) { return w.cpu == 1; }},
      {"value & 1 && !(CPU == 0)",
       [](const Who& w, uint32_t v) { return (v & 1) != 0 && w.cpu != 0; }},
      {"seq >= 0 && CPU <= 0", [](const Who& w, uint32_t) { return w.cpu == 0; }},
  };
  return c;
}

constexpr uint32_t kRounds = 50;

bool pin(uint32_t cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

void run_matrix(Staging staging, WriterMode writers, bool via_trace) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) TP_SKIP("needs two online CPUs");
  std::vector<std::unique_ptr<Instance>> insts;
  for (const Case& c : cases()) {
    InstanceOptions o;
    o.buffer_size_kb = 256;
    o.mode = BufferMode::drop_newest;
    o.staging = staging;
    o.writers = writers;
    auto inst = std::make_unique<Instance>(o);
    inst->enable(Ev::desc());
    const FilterStatus st = inst->set_filter(Ev::desc(), c.expr);
    INFO(c.expr << ": " << st.render());
    REQUIRE(st.ok());
    insts.push_back(std::move(inst));
  }
  struct Thread {
    Who who;
    int32_t tid = 0;
  };
  std::vector<Thread> ts = {{{0, "foo"}}, {{1, "foo"}}, {{0, "abc"}}, {{1, "abc"}}, {{1, "xyz"}}};
  for (Thread& t : ts) {
    std::thread th([&] {
      REQUIRE(pin(t.who.cpu));
      pthread_setname_np(pthread_self(), t.who.comm.c_str());
      prepare_thread();
      refresh_thread_comm();
      t.tid = gettid();
      for (uint32_t r = 0; r < kRounds; ++r)
        for (uint32_t v = 0; v < 10; ++v) {
          if (via_trace) {
            TRACEPIPE_TRACE(Ev, v, r);
          } else {
            for (auto& i : insts) Ev::emit(*i, v, r);
          }
        }
    });
    th.join();
  }
  for (size_t k = 0; k < cases().size(); ++k) {
    const Case& c = cases()[k];
    std::map<int32_t, uint64_t> got, want;
    for (const Thread& t : ts)
      for (uint32_t v = 0; v < 10; ++v)
        if (c.expect(t.who, v)) want[t.tid] += kRounds;
    auto m = buffers::merged_consumer(insts[k]->ring());
    while (auto r = m.next()) {
      CommonHeader h{};
      std::memcpy(&h, r->payload.data(), sizeof h);
      uint32_t value = 0;
      std::memcpy(&value, r->payload.data() + 8, 4);
      const auto it = std::find_if(ts.begin(), ts.end(),
                                   [&](const Thread& t) { return t.tid == h.common_pid; });
      REQUIRE(it != ts.end());
      CHECK(c.expect(it->who, value));
      CHECK(r->cpu == it->who.cpu);
      ++got[h.common_pid];
    }
    INFO("filter " << c.expr << " staging " << to_string(staging) << " writers "
                   << to_string(writers));
    CHECK(got == want);
    const EventStats s = insts[k]->event_stats(Ev::desc());
    CHECK(s.emitted() == ts.size() * kRounds * 10);
    uint64_t kept = 0;
    for (auto& [pid, n] : want) kept += n;
    CHECK(s.kept == kept);
    CHECK(s.lost == 0);
  }
}

}  // namespace

TEST_CASE("filter context: CPU/comm filters give the kernel's verdicts (fan-out)",
          "[filter_ctx][breakit]") {
  for (Staging s : {Staging::off, Staging::per_cpu, Staging::per_thread, Staging::adaptive})
    for (WriterMode w : {WriterMode::any_cpu, WriterMode::automatic}) {
      DYNAMIC_SECTION("staging " << to_string(s) << " writers " << to_string(w)) {
        run_matrix(s, w, true);
      }
    }
}

TEST_CASE("filter context: CPU/comm filters give the kernel's verdicts (emit per instance)",
          "[filter_ctx][breakit]") {
  for (Staging s : {Staging::off, Staging::per_cpu, Staging::per_thread, Staging::adaptive})
    for (WriterMode w : {WriterMode::any_cpu, WriterMode::automatic}) {
      DYNAMIC_SECTION("staging " << to_string(s) << " writers " << to_string(w)) {
        run_matrix(s, w, false);
      }
    }
}
