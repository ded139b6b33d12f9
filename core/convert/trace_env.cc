#include "tracepipe/core/convert/trace_env.h"

#include <string_view>
#include <vector>

namespace tracepipe::convert {

TraceEnv TraceEnv::of(const TraceDatReader& reader, size_t buffer) {
  TraceEnv e;
  if (buffer < reader.buffers().size()) e.clock = reader.buffers()[buffer].clock;
  if (e.clock.empty()) e.clock = reader.clock_name();
  if (e.clock.empty()) e.clock = "local";
  e.ns_clock = e.clock != "counter" && e.clock != "x86-tsc" && e.clock != "uptime";
  if (const TraceDatOption* o = reader.option(TraceDatOptionId::uname)) {
    std::string_view s(reinterpret_cast<const char*>(o->data.data()), o->data.size());
    if (const auto nul = s.find('\0'); nul != std::string_view::npos) s = s.substr(0, nul);
    std::vector<std::string_view> words;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && s[i] == ' ') ++i;
      const size_t j = s.find(' ', i);
      const size_t end = j == std::string_view::npos ? s.size() : j;
      if (end > i) words.push_back(s.substr(i, end - i));
      i = end;
    }
    if (words.size() >= 5) {
      e.sysname = words[0];
      e.hostname = words[1];
      e.release = words[2];
      e.machine = words.back();
      const size_t vb = static_cast<size_t>(words[3].data() - s.data());
      const size_t ve = static_cast<size_t>(words[words.size() - 2].data() - s.data()) +
                        words[words.size() - 2].size();
      e.version = s.substr(vb, ve - vb);
    }
  }
  return e;
}

}  // namespace tracepipe::convert
