// Integer literals: lib/kstrtox.c semantics.
#include "tracepipe/filters/number.h"

#include <catch2/catch.hpp>
#include <climits>

using namespace tracepipe::filters;

TEST_CASE("number: kstrtoull bases and prefixes", "[filters][number]") {
  CHECK(kstrtoull("0") == 0u);
  CHECK(kstrtoull("42") == 42u);
  CHECK(kstrtoull("0x2a") == 42u);
  CHECK(kstrtoull("0X2A") == 42u);
  CHECK(kstrtoull("052") == 42u);
  CHECK(kstrtoull("+7") == 7u);
  CHECK(kstrtoull("7\n") == 7u);
  CHECK(kstrtoull("18446744073709551615") == UINT64_MAX);
  CHECK(kstrtoull("0xffffffffffffffff") == UINT64_MAX);
  CHECK(kstrtoull("0x0000000000000000000000001") == 1u);  // leading zeros do not overflow
}

TEST_CASE("number: kstrtoull rejections", "[filters][number]") {
  CHECK_FALSE(kstrtoull(""));
  CHECK_FALSE(kstrtoull("-1"));
  CHECK_FALSE(kstrtoull("0x"));  // base 8, then 'x' is left over
  CHECK_FALSE(kstrtoull("08"));
  CHECK_FALSE(kstrtoull("12abc"));
  CHECK_FALSE(kstrtoull("1 "));
  CHECK_FALSE(kstrtoull("18446744073709551616"));
  CHECK_FALSE(kstrtoull("0x1ffffffffffffffff"));
  CHECK_FALSE(kstrtoull("7\n\n"));
}

TEST_CASE("number: kstrtoll range", "[filters][number]") {
  CHECK(kstrtoll("-1") == UINT64_MAX);
  CHECK(kstrtoll("-0x10") == static_cast<uint64_t>(-16));
  CHECK(kstrtoll("-9223372036854775808") == static_cast<uint64_t>(INT64_MIN));
  CHECK(kstrtoll("9223372036854775807") == static_cast<uint64_t>(INT64_MAX));
  CHECK(kstrtoll("-0") == 0u);
  CHECK_FALSE(kstrtoll("9223372036854775808"));
  CHECK_FALSE(kstrtoll("-9223372036854775809"));
  CHECK_FALSE(kstrtoll("-"));
  CHECK_FALSE(kstrtoll("--1"));
  CHECK_FALSE(kstrtoll("-+1"));
}

TEST_CASE("number: parse_integer counts digits and flags overflow", "[filters][number]") {
  auto p = parse_integer("123x", 10);
  CHECK(p.value == 123u);
  CHECK(p.chars == 3);
  CHECK_FALSE(p.overflow);
  CHECK(parse_integer("ff", 16).value == 255u);
  CHECK(parse_integer("99999999999999999999", 10).overflow);
  CHECK(parse_integer("x", 10).chars == 0);
}
