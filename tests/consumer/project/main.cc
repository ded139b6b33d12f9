// A project that only did find_package(tracepipe): the README's quickstart,
// compiled at this project's default C++ standard (the target brings C++20).
#include <tracepipe/core/convert/converter.h>
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

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
  // A conversion's output error, caught by its type from the installed
  // converter.h (it was declared only in an internal header).
  const auto tmp = std::filesystem::temp_directory_path();
  const auto in = tmp / ("tracepipe_consumer_" + std::to_string(::getpid()) + ".dat");
  tracepipe::write_trace_dat(inst, in);
  const auto reader = tracepipe::TraceDatReader::open(in);
  try {
    (void)tracepipe::convert::convert(reader, tmp / "tracepipe_consumer_no_dir" / "out.pftrace");
    return 1;
  } catch (const tracepipe::convert::ConvertOutputError& e) {
    std::printf("convert: ConvertOutputError code=%d\n", e.code());
  }
  std::filesystem::remove(in);
  return 0;
}
