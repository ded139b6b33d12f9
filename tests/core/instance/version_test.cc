#include "tracepipe/core/instance/version.h"

#include <catch2/catch.hpp>
#include <cstring>

TEST_CASE("version: matches the project version", "[core]") {
  REQUIRE(std::strcmp(tracepipe::version(), "0.1.0") == 0);
}
