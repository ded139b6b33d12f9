#include "tracepipe/core/tracedat/cpu_stat_text.h"

#include <fmt/format.h>

namespace tracepipe {

namespace {
std::string stat_time(uint64_t t, bool ns) {
  if (!ns) return fmt::format("{}", t);
  return fmt::format("{:5}.{:06}", t / 1'000'000'000, t / 1000 % 1'000'000);
}
}  // namespace

std::string cpu_stat_text(uint32_t cpu, const CpuStatLines& s, bool in_ns) {
  return fmt::format(
      "CPU: {}\nentries: {}\noverrun: {}\ncommit overrun: {}\nbytes: {}\noldest event ts: {}\nnow "
      "ts: {}\ndropped events: {}\nread events: {}\n",
      cpu, s.entries, s.overrun, s.commit_overrun, s.bytes, stat_time(s.oldest_ts, in_ns),
      stat_time(s.now_ts, in_ns), s.dropped, s.read);
}

}  // namespace tracepipe
