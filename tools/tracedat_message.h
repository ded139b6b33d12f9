#pragma once
// The message the commands print for a malformed trace.dat: the reader's
// TraceDatError reads "trace.dat: <section> at offset <N> ...", whatever
// the file is called; the commands name the path the user gave instead:
//   tracepipe: app/toml/good.toml: file header at offset 0 (0x0): expected the trace.dat magic ...
#include <string>
#include <string_view>

#include "core/tracedat_error.h"

namespace tracepipe::tools {

/// "<path>: <section> at offset <N> (0x<hex>): <reason>" for an error of
/// the trace.dat at `path` (the reader's fixed "trace.dat: " label, see
/// core/tracedat_error.h, replaced by the path).
inline std::string tracedat_message(const TraceDatError& e, const std::string& path) {
  constexpr std::string_view kLabel = "trace.dat: ";
  std::string_view what = e.what();
  if (what.starts_with(kLabel)) what.remove_prefix(kLabel.size());
  return path + ": " + std::string(what);
}

}  // namespace tracepipe::tools
