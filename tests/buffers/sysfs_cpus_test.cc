// buffers/sysfs_cpus.h: nr_cpu_ids from /sys/devices/system/cpu/possible and
// a CPU's online state, against the one CPU-list parser (filters/cpulist.h).
#include "tracepipe/buffers/sysfs_cpus.h"

#include <sys/sysinfo.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "test_support.h"
#include "tracepipe/filters/cpulist.h"

using namespace tracepipe::buffers;

TEST_CASE("sysfs cpus: the last CPU of a list as the kernel prints it", "[buffers][cpu_list]") {
  CHECK(last_cpu_in_list("0") == 0u);
  CHECK(last_cpu_in_list("0-1\n") == 1u);
  CHECK(last_cpu_in_list("0-3,8,10-11\n") == 11u);
  CHECK(last_cpu_in_list("0,2,4,6") == 6u);
  CHECK(last_cpu_in_list("0-4095 \n") == 4095u);
  CHECK_FALSE(last_cpu_in_list(""));
  CHECK_FALSE(last_cpu_in_list("\n"));
  CHECK_FALSE(last_cpu_in_list("0-"));
  CHECK_FALSE(last_cpu_in_list("0-1x"));
  CHECK_FALSE(last_cpu_in_list("99999999999"));
}

TEST_CASE("sysfs cpus: reading a file, with a bound", "[buffers][cpu_list]") {
  char buf[16];
  CHECK_FALSE(read_sysfs_file("/nonexistent/cpu/possible", buf, sizeof buf));
  const std::string path =
      std::string(TP_BINARY_DIR) + "/sysfs_cpus_test_" + std::to_string(getpid());
  std::ofstream(path) << "0-3,8\n";
  const auto text = read_sysfs_file(path.c_str(), buf, sizeof buf);
  REQUIRE(text);
  CHECK(*text == "0-3,8\n");
  std::ofstream(path) << "0,1,2,3,4,5,6,7,8,9\n";  // longer than the buffer: refused, not cut
  CHECK_FALSE(read_sysfs_file(path.c_str(), buf, sizeof buf));
  std::remove(path.c_str());
}

TEST_CASE("sysfs cpus: nr_cpu_ids and online CPUs of this machine agree with the CPU-list parser",
          "[buffers][cpu_list]") {
  const auto n = nr_cpu_ids_from_sysfs();
  REQUIRE(n);
  CHECK(*n >= static_cast<uint32_t>(get_nprocs_conf()));
  char buf[4096];
  const auto possible = read_sysfs_file("/sys/devices/system/cpu/possible", buf, sizeof buf);
  REQUIRE(possible);
  const auto parsed = tracepipe::filters::parse_cpulist(*possible, 1u << 16);
  REQUIRE(parsed);
  uint32_t highest = 0;
  for (uint32_t c = 0; c < parsed->nbits; ++c)
    if (parsed->test(c)) highest = c;
  CHECK(*n == highest + 1);

  char obuf[4096];
  const auto online = read_sysfs_file("/sys/devices/system/cpu/online", obuf, sizeof obuf);
  REQUIRE(online);
  const auto on = tracepipe::filters::parse_cpulist(*online, *n);
  REQUIRE(on);
  for (uint32_t c = 0; c < *n; ++c) {
    INFO("cpu " << c);
    CHECK(cpu_online(c) == on->test(c));
  }
  CHECK_FALSE(cpu_online(*n + 1000));  // no such CPU
}
