// bench/engine/mix: the replayed event mix (a kernel capture or the embedded
// pattern) and the paired, interleaved block order.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "test_support.h"
#include "tracepipe/bench/engine/mix.h"

using namespace tracepipe::bench;

TEST_CASE("bench mix: every round runs each cell once, as an adjacent (cell, off) pair",
          "[tools][bench]") {
  const uint32_t cells = 13, rounds = 50;
  const auto order = interleave_order(cells, rounds, 7);
  REQUIRE(order.size() == size_t{2} * (cells - 1) * rounds);
  std::set<std::vector<uint32_t>> round_orders;
  size_t base_first = 0;
  for (uint32_t round = 0; round < rounds; ++round) {
    std::multiset<uint32_t> seen;
    std::vector<uint32_t> pair_order;
    for (size_t i = 0; i < size_t{2} * (cells - 1); i += 2) {
      const BlockSlot& a = order[size_t{round} * 2 * (cells - 1) + i];
      const BlockSlot& b = order[size_t{round} * 2 * (cells - 1) + i + 1];
      // The pair's two blocks are adjacent, of the same cell and round, one
      // of them the base.
      CHECK(a.round == round);
      CHECK(b.round == round);
      CHECK(a.cell == b.cell);
      CHECK(a.base != b.base);
      CHECK(a.cell >= 1);
      CHECK(a.cell < cells);
      seen.insert(a.cell);
      pair_order.push_back(a.cell);
      base_first += a.base;
    }
    // Every traced cell exactly once per round.
    CHECK(seen.size() == cells - 1);
    CHECK(std::set<uint32_t>(seen.begin(), seen.end()).size() == cells - 1);
    round_orders.insert(pair_order);
  }
  // The order is drawn anew each round, and so is which block of a pair
  // runs first (600 coin flips: far from all one way).
  CHECK(round_orders.size() > rounds / 2);
  CHECK(base_first > 200);
  CHECK(base_first < 400);
  // Deterministic for a seed; another seed, another order.
  CHECK(interleave_order(cells, rounds, 7) == order);
  CHECK(interleave_order(cells, rounds, 8) != order);
  CHECK(interleave_order(1, rounds, 7).empty());
  CHECK(interleave_order(cells, 0, 7).empty());
}

TEST_CASE("bench mix: the embedded mix is the hackbench pattern, on every lane", "[tools][bench]") {
  const EventMix m = embedded_mix(3, 10);
  CHECK(m.source == "embedded");
  CHECK(m.fallback_reason.empty());
  REQUIRE(m.lanes.size() == 3);
  CHECK(m.records() == 3 * 60);
  CHECK(m.per_kind[size_t(EventKind::sys_enter)] == 60);
  CHECK(m.per_kind[size_t(EventKind::sys_exit)] == 60);
  CHECK(m.per_kind[size_t(EventKind::sched_switch)] == 30);
  CHECK(m.per_kind[size_t(EventKind::sched_wakeup)] == 30);
  for (const auto& lane : m.lanes) {
    REQUIRE(lane.size() == 60);
    CHECK(lane[0].kind == EventKind::sys_enter);
    CHECK(lane[1].kind == EventKind::sched_wakeup);
    CHECK(lane[4].kind == EventKind::sched_switch);
    for (const MixRecord& r : lane) {
      CHECK(r.size == event_info(r.kind).size);
      uint16_t type = 0;
      std::memcpy(&type, r.bytes.data(), 2);
      CHECK(type == event_info(r.kind).id);
    }
  }
}

TEST_CASE("bench mix: the kernel capture's four kinds, per CPU, with their payloads",
          "[tools][bench]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const EventMix m = load_mix(path, 2);
  CHECK(m.fallback_reason.empty());
  CHECK(m.file_cpus >= 1);
  CHECK(m.file_records > m.records());  // kmalloc, kfree, ... are not replayed
  CHECK(m.records() > 0);
  for (uint64_t n : m.per_kind) CHECK(n > 0);
  REQUIRE(m.lanes.size() == 2);
  uint64_t total = 0;
  for (const auto& lane : m.lanes) {
    CHECK_FALSE(lane.empty());
    if (m.file_cpus >= 2) total += lane.size();
    for (const MixRecord& r : lane) {
      uint16_t type = 0;
      std::memcpy(&type, r.bytes.data(), 2);
      REQUIRE(type == event_info(r.kind).id);  // the file's IDs are the kernel's
      REQUIRE(r.size == event_info(r.kind).size);
    }
  }
  if (m.file_cpus >= 2) CHECK(total == m.records());
  // More lanes than CPUs: lanes repeat the CPUs.
  const EventMix wide = load_mix(path, m.file_cpus + 1);
  CHECK(wide.lanes.back().size() == wide.lanes.front().size());
  // find_mix with the path reads the same file.
  CHECK(find_mix(path.string(), 2).records() == m.records());
}

TEST_CASE(
    "bench mix: a missing default capture falls back to the embedded mix, a named one "
    "that cannot be read is an error",
    "[tools][bench]") {
  const EventMix e = find_mix("embedded", 2);
  CHECK(e.source == "embedded");
  CHECK(e.fallback_reason.empty());
  // The default: the capture if it is there, else the embedded mix saying why.
  const EventMix d = find_mix("", 2);
  if (d.source == "embedded")
    CHECK_FALSE(d.fallback_reason.empty());
  else
    CHECK(d.fallback_reason.empty());
  CHECK(d.records() > 0);
  const auto dir = std::filesystem::temp_directory_path() / "tp_bench_mix_test";
  std::filesystem::create_directories(dir);
  CHECK_THROWS(find_mix((dir / "absent.dat").string(), 2));
  const auto junk = dir / "junk.dat";
  std::ofstream(junk) << "not a trace.dat file";
  CHECK_THROWS(load_mix(junk, 2));
  std::filesystem::remove_all(dir);
}
