// Building instances from a TOML file (examples/tracepipe.toml): buffer
// geometry, clock, staging and per-event filters, the kernel's strings. The
// file defines two instances that record the same event with different
// filters, as /sys/kernel/tracing/instances does.
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <memory>
#include <vector>

// The events the file names (they register themselves at start-up).
using Request = tracepipe::EventDecl<"app", "request", tracepipe::Int<"latency_us", uint32_t>,
                                     tracepipe::Int<"status", uint16_t>, tracepipe::Str<"path">>;
using Log =
    tracepipe::EventDecl<"app", "log", tracepipe::Int<"level", uint8_t>, tracepipe::Str<"msg">>;

int main(int argc, char** argv) {
  const char* file = argc > 1 ? argv[1] : "tracepipe.toml";  // run from examples/
  std::vector<std::unique_ptr<tracepipe::Instance>> instances;
  try {
    for (const tracepipe::InstanceConfig& ic : tracepipe::load_config(file).instances)
      instances.push_back(tracepipe::Instance::from_config(ic));
  } catch (const tracepipe::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());  // "FILE:LINE: KEY: what is wrong"
    return 1;
  }

  for (uint32_t i = 0; i < 1000; ++i) {
    const uint16_t status = i % 50 == 0 ? 500 : 200;
    Request::trace(i * 7 % 2000, status, "/index.html");  // into every instance that enabled it
    Log::trace(static_cast<uint8_t>(i % 8), i % 100 == 0 ? "upstream timeout" : "ok");
  }

  int rc = 0;
  for (const auto& inst : instances) {
    const auto& o = inst->options();
    const tracepipe::EventStats rs = inst->event_stats(Request::desc());
    const tracepipe::EventStats ls = inst->event_stats(Log::desc());
    std::printf(
        "[%s] %s, %s, staging %s: request kept %llu/%llu, log kept %llu/%llu\n", o.name.c_str(),
        std::string(tracepipe::to_string(o.mode)).c_str(),
        std::string(tracepipe::trace_clock_name(o.clock)).c_str(),
        std::string(tracepipe::to_string(o.staging)).c_str(),
        static_cast<unsigned long long>(rs.kept), static_cast<unsigned long long>(rs.emitted()),
        static_cast<unsigned long long>(ls.kept), static_cast<unsigned long long>(ls.emitted()));
    if (o.name == "errors" && rs.kept != 20) rc = 1;  // status >= 500: every 50th request
  }
  std::printf("\n%s", tracepipe::trace_text(*instances.back(), {.header = false}).c_str());
  return rc;
}
