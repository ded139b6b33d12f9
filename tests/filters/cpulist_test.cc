// CPUS{...} lists: lib/bitmap-str.c bitmap_parselist semantics.
#include "tracepipe/filters/cpulist.h"

#include <catch2/catch.hpp>

using namespace tracepipe::filters;

namespace {
std::vector<uint32_t> cpus(std::string_view text, uint32_t nbits) {
  auto l = parse_cpulist(text, nbits);
  REQUIRE(l);
  std::vector<uint32_t> out;
  for (uint32_t c = 0; c < nbits; ++c)
    if (l->test(c)) out.push_back(c);
  return out;
}
}  // namespace

TEST_CASE("cpulist: numbers, ranges, groups, N and all", "[filters][cpulist]") {
  CHECK(cpus("1", 4) == std::vector<uint32_t>{1});
  CHECK(cpus("0-2", 4) == std::vector<uint32_t>{0, 1, 2});
  CHECK(cpus("0,3", 4) == std::vector<uint32_t>{0, 3});
  CHECK(cpus(" 1", 4) == std::vector<uint32_t>{1});
  CHECK(cpus("1,", 4) == std::vector<uint32_t>{1});
  CHECK(cpus(",,1 ,2", 4) == std::vector<uint32_t>{1, 2});
  CHECK(cpus("N", 4) == std::vector<uint32_t>{3});
  CHECK(cpus("1-N", 4) == std::vector<uint32_t>{1, 2, 3});
  CHECK(cpus("all", 3) == std::vector<uint32_t>{0, 1, 2});
  CHECK(cpus("ALL", 2) == std::vector<uint32_t>{0, 1});
  CHECK(cpus("0-7:2/4", 8) == std::vector<uint32_t>{0, 1, 4, 5});
  CHECK(cpus("all:1/2", 6) == std::vector<uint32_t>{0, 2, 4});
  CHECK(cpus("0-1023:2/256", 1024) == std::vector<uint32_t>{0, 1, 256, 257, 512, 513, 768, 769});
  CHECK(cpus("1\n3", 4) == std::vector<uint32_t>{1});  // a newline ends the list
  CHECK(cpus("", 4).empty());
  const auto l = parse_cpulist("0-1", 2);
  CHECK(l->weight() == 2);
  CHECK(l->first() == 0);
  CHECK(parse_cpulist("70", 128)->first() == 70);
}

TEST_CASE("cpulist: what the kernel rejects", "[filters][cpulist]") {
  for (const char* bad : {"a", "1-", "-1", "2-1", "4", "0-4", "1:1/2", "0-3:3/2", "0-3:1/0",
                          "0-3:1", "1 - 2", "99999999999", "1.5", "0x1", "allx", "N-1"}) {
    INFO(bad);
    CHECK_FALSE(parse_cpulist(bad, 4));
  }
  CHECK_FALSE(parse_cpulist("0", 0));
}
