// buffers/cpu_list.h: the kernel's CPU list text, and nr_cpu_ids from
// /sys/devices/system/cpu/possible.
#include <sys/sysinfo.h>
#include <unistd.h>

#include <cstdio>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "tracepipe/buffers/cpu_list.h"
#include "test_support.h"

using namespace tracepipe::buffers;

TEST_CASE("cpu_list: the highest CPU of a list", "[buffers][cpu_list]") {
  CHECK(cpu_list_max("0") == 0u);
  CHECK(cpu_list_max("0-1\n") == 1u);
  CHECK(cpu_list_max("0-3,8,10-11\n") == 11u);
  CHECK(cpu_list_max("8,0-3") == 8u);  // not sorted: still the maximum
  CHECK(cpu_list_max("0,2,4,6") == 6u);
  CHECK(cpu_list_max("0-4095") == 4095u);
  CHECK_FALSE(cpu_list_max(""));
  CHECK_FALSE(cpu_list_max("\n"));
  CHECK_FALSE(cpu_list_max("3-1"));  // a range that goes down
  CHECK_FALSE(cpu_list_max("0-"));
  CHECK_FALSE(cpu_list_max("0,,1"));
  CHECK_FALSE(cpu_list_max("0-1x"));
  CHECK_FALSE(cpu_list_max("99999999999"));
}

TEST_CASE("cpu_list: membership", "[buffers][cpu_list]") {
  CHECK(cpu_list_contains("0-3,8,10-11", 2) == true);
  CHECK(cpu_list_contains("0-3,8,10-11", 8) == true);
  CHECK(cpu_list_contains("0-3,8,10-11", 9) == false);
  CHECK(cpu_list_contains("0-3,8,10-11", 12) == false);
  CHECK(cpu_list_contains("1", 0) == false);
  CHECK_FALSE(cpu_list_contains("1-", 0));
}

TEST_CASE("cpu_list: reading a file, with a bound", "[buffers][cpu_list]") {
  char buf[16];
  CHECK_FALSE(read_cpu_list_file("/nonexistent/cpu/possible", buf, sizeof buf));
  const std::string path = std::string(TP_BINARY_DIR) + "/cpu_list_test_" + std::to_string(getpid());
  std::ofstream(path) << "0-3,8\n";
  const auto text = read_cpu_list_file(path.c_str(), buf, sizeof buf);
  REQUIRE(text);
  CHECK(*text == "0-3,8\n");
  std::ofstream(path) << "0,1,2,3,4,5,6,7,8,9\n";  // longer than the buffer: refused, not cut
  CHECK_FALSE(read_cpu_list_file(path.c_str(), buf, sizeof buf));
  std::remove(path.c_str());
}

TEST_CASE("cpu_list: nr_cpu_ids of this machine covers every CPU id", "[buffers][cpu_list]") {
  const auto n = nr_cpu_ids_from_sysfs();
  REQUIRE(n);
  CHECK(*n >= static_cast<uint32_t>(get_nprocs_conf()));
  char buf[4096];
  const auto possible = read_cpu_list_file("/sys/devices/system/cpu/possible", buf, sizeof buf);
  REQUIRE(possible);
  CHECK(*n == *cpu_list_max(*possible) + 1);
}
