#pragma once
// CLI11 checks for the subcommands' numeric options, beyond CLI::Range
// (which suits integers): their error names the option and the allowed
// range in plain numbers, e.g.
//   --subbuf-size-kb: Value 12 is not a power of two in 4 to 1024
//   --warn-spread: Value 0 not in range 0.01 to 1000
// CLI11 prefixes the option's name and exits with its ValidationError code.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace tracepipe::tools {

/// A number (integer or not) in [lo, hi]; bounds printed without trailing
/// zeros (CLI::Range prints doubles with six decimals).
inline CLI::Validator number_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& in) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(in, v) || !(v >= lo && v <= hi))
          return fmt::format("Value {} not in range {} to {}", in, lo, hi);
        return {};
      },
      fmt::format("NUMBER in [{} - {}]", lo, hi));
}

/// An integer power of two in [lo, hi] (sub-buffer sizes).
inline CLI::Validator power_of_two_range(uint64_t lo, uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& in) -> std::string {
        uint64_t v = 0;
        if (!CLI::detail::lexical_cast(in, v) || v < lo || v > hi || (v & (v - 1)) != 0)
          return fmt::format("Value {} is not a power of two in {} to {}", in, lo, hi);
        return {};
      },
      fmt::format("POWER OF TWO in [{} - {}]", lo, hi));
}

}  // namespace tracepipe::tools
