// tracepipe_capi_bench: what an event costs through the C API against the
// same event through TRACEPIPE_TRACE, measured as paired blocks in one run.
//
//   tracepipe_capi_bench [ROUNDS]        (default 201)
//
// Legs, each its own event (value u32, seq u32, char pad[48]: a 64-byte
// record) in its own instance (per-thread staging, overwrite), so a leg's
// site reaches one instance:
//   reject     filter "value == 1", every event rejected (the staged discard)
//   commit     filter "value == 0", every event accepted (staged, then copied)
//   direct     no filter (reserved in the ring, built there, committed)
//   disabled   the event enabled nowhere (the site's check only)
// each as TRACEPIPE_TRACE(Decl, value, seq, "bench") in C++ (cpp_*) and as
// TRACEPIPE_C_TRACE(tp, event, &body, sizeof body) in C through
// libtracepipe_c.so (c_*), the body the caller's struct with value and seq
// set per event. The legs run interleaved in blocks of 4096 events, their
// order rotating every round; each figure is the median over rounds (ns per
// event), and c-cpp the median of the per-round differences, with quartiles.
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capi_bench_c.h"
#include "tracepipe/core/instance/event_decl.h"

namespace {

using namespace tracepipe;

template <FixedString Name>
using BenchEvent =
    EventDecl<"tpbench", Name, Int<"value", uint32_t>, Int<"seq", uint32_t>, Chars<"pad", 48>>;

constexpr uint32_t kBlock = 4096;

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

template <class E>
[[gnu::noinline]] uint64_t cpp_block(uint32_t value, uint32_t& seq, uint32_t n) {
  uint32_t i = seq;
  const uint64_t t0 = now_ns();
  for (uint32_t k = 0; k < n; ++k, ++i) {
    TRACEPIPE_TRACE(E, value, i, "bench");
    asm volatile("" ::: "memory");
  }
  const uint64_t t1 = now_ns();
  seq = i;
  return t1 - t0;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

struct Leg {
  std::string name;
  std::function<uint64_t(uint32_t&)> run;
  uint32_t seq = 0;
  std::vector<double> ns;
};

enum class Kind { reject, commit, direct, disabled };
const char* filter_of(Kind k) {
  return k == Kind::reject ? "value == 1" : k == Kind::commit ? "value == 0" : nullptr;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "tracepipe_capi_bench: %s: %s\n", what.c_str(), tracepipe_last_error());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 201;
  InstanceOptions o;
  o.staging = Staging::per_thread;
  o.mode = BufferMode::overwrite;
  std::vector<std::unique_ptr<Instance>> cpp_insts;
  std::vector<tracepipe_instance*> c_insts;
  std::vector<Leg> legs;

  const auto cpp_leg = [&]<class E>(const char* name, Kind k) {
    if (k != Kind::disabled) {
      auto& inst = cpp_insts.emplace_back(std::make_unique<Instance>(o));
      inst->enable(E::desc());
      if (const char* f = filter_of(k); f != nullptr && !inst->set_filter(E::desc(), f).ok())
        die("filter");
    }
    legs.push_back({name, [](uint32_t& s) { return cpp_block<E>(0, s, kBlock); }, 0, {}});
  };
  const auto c_leg = [&](int idx, const char* name, Kind k) {
    tracepipe_event* ev = capi_bench_declare(idx, name);
    if (ev == nullptr) die("declare");
    if (k != Kind::disabled) {
      tracepipe_instance_options co = TRACEPIPE_INSTANCE_OPTIONS_INIT;
      co.staging = TRACEPIPE_STAGING_PER_THREAD;
      tracepipe_instance* inst;
      if (tracepipe_instance_create(&co, &inst) != TRACEPIPE_OK) die("instance");
      c_insts.push_back(inst);
      if (tracepipe_instance_enable(inst, ev, 1) != TRACEPIPE_OK) die("enable");
      if (const char* f = filter_of(k);
          f != nullptr && tracepipe_instance_set_filter(inst, ev, f) != TRACEPIPE_OK)
        die("filter");
    }
    legs.push_back(
        {name, [idx](uint32_t& s) { return capi_bench_block(idx, 0, &s, kBlock); }, 0, {}});
  };
  cpp_leg.operator()<BenchEvent<"cpp_reject">>("cpp_reject", Kind::reject);
  c_leg(0, "c_reject", Kind::reject);
  cpp_leg.operator()<BenchEvent<"cpp_commit">>("cpp_commit", Kind::commit);
  c_leg(1, "c_commit", Kind::commit);
  cpp_leg.operator()<BenchEvent<"cpp_direct">>("cpp_direct", Kind::direct);
  c_leg(2, "c_direct", Kind::direct);
  cpp_leg.operator()<BenchEvent<"cpp_disabled">>("cpp_disabled", Kind::disabled);
  c_leg(3, "c_disabled", Kind::disabled);

  // Pinned to the CPU we start on: every leg writes the same per-CPU ring slot.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(std::max(sched_getcpu(), 0), &one);
  sched_setaffinity(0, sizeof one, &one);
  prepare_thread();
  tracepipe_thread_prepare();
  for (Leg& l : legs)
    for (int w = 0; w < 3; ++w) (void)l.run(l.seq);
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < legs.size(); ++k) {
      Leg& l = legs[(static_cast<size_t>(r) + k) % legs.size()];
      l.ns.push_back(static_cast<double>(l.run(l.seq)) / kBlock);
    }

  std::printf("tracepipe_capi_bench: %d rounds of %u events per leg, pinned to CPU %d\n", rounds,
              kBlock, sched_getcpu());
  std::printf("%-10s %10s %10s %12s %10s %10s\n", "case", "cpp ns", "c ns", "c-cpp ns", "p25",
              "p75");
  for (size_t i = 0; i + 1 < legs.size(); i += 2) {
    std::vector<double> d(legs[i].ns.size());
    for (size_t r = 0; r < d.size(); ++r) d[r] = legs[i + 1].ns[r] - legs[i].ns[r];
    std::printf("%-10s %10.2f %10.2f %12.2f %10.2f %10.2f\n", legs[i].name.substr(4).c_str(),
                quantile(legs[i].ns, 0.5), quantile(legs[i + 1].ns, 0.5), quantile(d, 0.5),
                quantile(d, 0.25), quantile(d, 0.75));
  }
  // Each leg did what it claims: rejects kept nothing, commits kept everything.
  tracepipe_event_stats st = TRACEPIPE_EVENT_STATS_INIT;
  tracepipe_instance_event_stats(c_insts[0], tracepipe_event_find("tpbench:c_reject", nullptr),
                                 &st);
  const bool c_ok = st.kept == 0 && st.discarded > 0;
  tracepipe_instance_event_stats(c_insts[1], tracepipe_event_find("tpbench:c_commit", nullptr),
                                 &st);
  const bool c_ok2 = st.kept > 0 && st.discarded == 0;
  const EventStats cr = cpp_insts[0]->event_stats(BenchEvent<"cpp_reject">::desc());
  const EventStats cc = cpp_insts[1]->event_stats(BenchEvent<"cpp_commit">::desc());
  if (!c_ok || !c_ok2 || cr.kept != 0 || cc.discarded != 0) {
    std::fprintf(stderr, "tracepipe_capi_bench: a leg did not do what it measures\n");
    return 1;
  }
  for (tracepipe_instance* i : c_insts) tracepipe_instance_destroy(i);
  return 0;
}
