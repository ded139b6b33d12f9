#pragma once
// The message the commands print for a malformed trace.dat, naming the path
// the user gave:
//   tracepipe: app/toml/good.toml: file header at offset 0 (0x0): expected the trace.dat magic ...
// A reader opened from that path already names it (TraceDatError::file());
// one made from bytes says "trace.dat".
#include <string>

#include "tracepipe/core/tracedat/tracedat_error.h"

namespace tracepipe::tools {

/// "<path>: <section> at offset <N> (0x<hex>): <reason>" for an error of
/// the trace.dat at `path`.
inline std::string tracedat_message(const TraceDatError& e, const std::string& path) {
  return path + ": " + e.detail();
}

}  // namespace tracepipe::tools
