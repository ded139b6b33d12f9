#pragma once
// What a trace.dat says about the machine and clock it was recorded on, for
// the converters' headers (Perfetto SystemInfo, CTF env and clock).
// Internal to core/convert. Thread-safety: plain data.
#include <cstddef>
#include <string>

#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tracepipe::convert {

struct TraceEnv {
  std::string sysname, hostname, release, version,
      machine;        ///< from the UNAME option; empty if absent
  std::string clock;  ///< the buffer's trace clock ("local"); "local" when the file does not say
  /// True for clocks counted in nanoseconds (local, global, mono, mono_raw,
  /// boot, perf, tai); counter and x86-tsc count other units.
  bool ns_clock = true;

  /// Reads buffer `buffer` of `reader` (its clock; the file's UNAME option:
  /// "sysname nodename release version... machine", as trace-cmd stores uname).
  static TraceEnv of(const TraceDatReader& reader, size_t buffer);
};

}  // namespace tracepipe::convert
