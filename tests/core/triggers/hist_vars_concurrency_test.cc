// Hist variables under concurrent writers: threads pair start/end events
// through a variable (onmatch into a synthetic event) on keys of their own
// and on keys they share. Each thread's own pairs all match exactly once;
// on shared keys a stored stamp is consumed by at most one reader (the
// read-once exchange), so the synthetic events never outnumber the starts.
// Run under TSan and ASan by CI (label concurrency).
#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/synthetic.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {

using Start = EventDecl<"tpvarsmt", "start", Int<"id", uint32_t>>;
using End = EventDecl<"tpvarsmt", "end", Int<"id", uint32_t>>;

uint64_t total_hits(const std::string& hist) {
  const size_t at = hist.find("Hits: ");
  return at == std::string::npos ? 0 : std::stoull(hist.substr(at + 6));
}

}  // namespace

TEST_CASE("hist vars concurrency: pairs through variables, own keys exact, shared keys read once",
          "[triggers][hist][concurrency]") {
  InstanceOptions o;
  o.buffer_size_kb = 64;
  Instance inst(o);
  REQUIRE(set_synthetic_event(inst, "tpvarsmt_lat u64 lat; u32 id").ok());
  const EventDesc* lat = synthetic_event(inst, "tpvarsmt_lat");
  REQUIRE(set_trigger(inst, Start::desc(), "hist:keys=id:t0=common_timestamp").ok());
  REQUIRE(
      set_trigger(inst, End::desc(),
                  "hist:keys=id:d=common_timestamp-$t0:onmatch(tpvarsmt.start).tpvarsmt_lat($d,id)")
          .ok());
  REQUIRE(set_trigger(inst, *lat, "hist:keys=id:vals=hitcount").ok());

  constexpr uint32_t kThreads = 4, kIters = 3000;
  std::atomic<uint32_t> go{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      go.fetch_add(1);
      while (go.load() < kThreads) {
      }
      for (uint32_t i = 0; i < kIters; ++i) {
        const uint32_t own = 1000 * (t + 1) + i % 8;  // this thread's keys
        Start::emit(inst, own);
        End::emit(inst, own);
        const uint32_t shared = i % 4;  // every thread's
        Start::emit(inst, shared);
        End::emit(inst, shared);
      }
    });
  for (auto& th : threads) th.join();

  const std::string h = hist_file(inst, *lat);
  for (uint32_t t = 0; t < kThreads; ++t)
    for (uint32_t k = 0; k < 8; ++k) {
      const std::string line =
          "{ id: " + std::string(10 - std::to_string(1000 * (t + 1) + k).size(), ' ') +
          std::to_string(1000 * (t + 1) + k) + " } hitcount: ";
      INFO(line);
      const size_t at = h.find(line);
      REQUIRE(at != std::string::npos);
      CHECK(std::stoull(h.substr(at + line.size())) == kIters / 8);
    }
  const uint64_t hits = total_hits(h);
  CHECK(hits >= uint64_t{kThreads} * kIters);      // every own pair
  CHECK(hits <= uint64_t{kThreads} * kIters * 2);  // never more than the starts
}

TEST_CASE("hist vars concurrency: onchange().snapshot() swaps the rings under concurrent writers",
          "[triggers][hist][concurrency]") {
  InstanceOptions o;
  o.buffer_size_kb = 64;
  Instance inst(o);
  inst.enable(Start::desc());
  inst.enable(End::desc());
  REQUIRE(set_trigger(inst, Start::desc(), "hist:keys=id:t0=common_timestamp").ok());
  REQUIRE(
      set_trigger(inst, End::desc(), "hist:keys=id:d=common_timestamp-$t0:onchange($d).snapshot()")
          .ok());
  constexpr uint32_t kThreads = 4, kIters = 2000;
  std::atomic<uint32_t> go{0};
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      go.fetch_add(1);
      while (go.load() < kThreads) {
      }
      for (uint32_t i = 0; i < kIters; ++i) {
        const uint32_t own = 1000 * (t + 1) + i % 8;
        Start::emit(inst, own);
        End::emit(inst, own);
      }
    });
  for (auto& th : threads) th.join();
  // The staged emits run their triggers before the ring: every own pair is
  // counted across the swaps; tracing went on (never paused).
  const std::string h = hist_file(inst, End::desc());
  CHECK(total_hits(h) == uint64_t{kThreads} * kIters);
  CHECK(h.find("\nSnapshot taken (see tracing/snapshot).  Details:\n\ttriggering value { "
               "onchange($d) }: ") != std::string::npos);
  CHECK_FALSE(inst.paused());
}
