#include "tracepipe/bench/engine/model.h"

#include <algorithm>

namespace tracepipe::bench {

std::string_view name(Case c) {
  switch (c) {
    case Case::off:
      return "off";
    case Case::all:
      return "all";
    case Case::reject:
      return "reject";
    case Case::accept:
      return "accept";
    case Case::half:
      return "half";
  }
  return "?";
}

std::string_view name(Staging s) {
  switch (s) {
    case Staging::per_cpu:
      return "on";
    case Staging::off:
      return "off";
    case Staging::adaptive:
      return "adaptive";
    case Staging::per_thread:
      return "per_thread";
  }
  return "?";
}

std::string_view name(Staging s, std::string_view on_name) {
  return s == Staging::per_cpu ? on_name : name(s);
}

std::string_view name(PerfCase c) {
  switch (c) {
    case PerfCase::base:
      return "base";
    case PerfCase::drop_consumer:
      return "drop+consumer";
    case PerfCase::overwrite:
      return "overwrite";
    case PerfCase::overwrite_snapshot:
      return "overwrite+snapshot";
  }
  return "?";
}

std::optional<Case> parse_case(std::string_view s) {
  for (Case c : kAllCases)
    if (name(c) == s) return c;
  return std::nullopt;
}

std::optional<Staging> parse_staging(std::string_view s) {
  if (s == "per_cpu") return Staging::per_cpu;  // the config file's and replay's name
  for (Staging g : {Staging::per_cpu, Staging::off, Staging::adaptive, Staging::per_thread})
    if (name(g) == s) return g;
  return std::nullopt;
}

}  // namespace tracepipe::bench
