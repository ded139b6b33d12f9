// A project that only did find_package(tracepipe): the README's quickstart,
// compiled at this project's default C++ standard (the target brings C++20).
#include <tracepipe/tracepipe.h>

#include <cstdio>

using RequestDone =
    tracepipe::EventDecl<"app", "request_done", tracepipe::Int<"latency_us", uint32_t>,
                         tracepipe::Str<"path">>;

int main() {
  tracepipe::Instance inst;
  inst.enable(RequestDone::desc());
  if (auto st = inst.set_filter(RequestDone::desc(), "latency_us > 1000"); !st) return 1;
  RequestDone::emit(inst, 1500, "/slow");
  RequestDone::emit(inst, 20, "/fast");
  const auto s = inst.event_stats(RequestDone::desc());
  std::printf("tracepipe %s kept=%llu discarded=%llu\n", tracepipe::version(),
              static_cast<unsigned long long>(s.kept),
              static_cast<unsigned long long>(s.discarded));
  return 0;
}
