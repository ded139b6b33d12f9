// The current CPU (rseq, one load) and the number of possible CPUs.
#include "tracepipe/buffers/current_cpu.h"

#include <sched.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>

#include "test_support.h"
#include "tracepipe/buffers/sysfs_cpus.h"

using namespace tracepipe;
using namespace tracepipe::buffers;

TEST_CASE("current_cpu: reads rseq and agrees with sched_getcpu", "[buffers][cpu]") {
  CHECK(current_cpu_uses_rseq());  // glibc 2.36 registers rseq for every thread
  const uint32_t n = possible_cpus();
  REQUIRE(n >= 1);
  for (int i = 0; i < 1000; ++i) {
    const int ref = sched_getcpu();
    const uint32_t c = current_cpu();
    REQUIRE(c < n);
    // The thread may migrate between the two reads; pin the check by
    // retrying until both agree, which must happen almost always.
    if (static_cast<int>(c) == ref) return;
  }
  FAIL("current_cpu() never agreed with sched_getcpu() in 1000 tries");
}

TEST_CASE("possible_cpus: per-CPU structures are sized by nr_cpu_ids, not by a CPU count",
          "[buffers][cpu]") {
  // The rule: the highest possible CPU + 1, never below get_nprocs_conf().
  static_assert(detail::cpu_slots(5u, 3) == 5);    // possible "0,2,4": CPU 4 exists, a count says 3
  static_assert(detail::cpu_slots(64u, 2) == 64);  // hot-pluggable: 2 present, 64 possible
  static_assert(detail::cpu_slots(2u, 2) == 2);
  static_assert(detail::cpu_slots(std::nullopt, 8) == 8);  // no sysfs: the count
  static_assert(detail::cpu_slots(std::nullopt, -1) == 1);
  static_assert(detail::cpu_slots(1u, 4) == 4);
  const auto ids = buffers::nr_cpu_ids_from_sysfs();
  REQUIRE(ids);
  CHECK(possible_cpus() == std::max(*ids, static_cast<uint32_t>(get_nprocs_conf())));
}
