// Quickstart: declare an event, record it with a kernel filter, print the
// buffer as the kernel's `trace` file, save a trace.dat for trace-cmd.
//
//   build/examples/example_quickstart
//   trace-cmd report /tmp/tracepipe-quickstart.dat
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <filesystem>

// One declaration: the record layout, the format file, the emit call.
using RequestDone = tracepipe::EventDecl<"app", "request_done",                   //
                                         tracepipe::Int<"id", uint32_t>,          //
                                         tracepipe::Int<"latency_us", uint32_t>,  //
                                         tracepipe::Int<"status", uint16_t>,      //
                                         tracepipe::Str<"path">>;  // __data_loc char[]

int main() {
  tracepipe::Instance inst;  // kernel defaults: 1408 KiB per CPU, 4 KiB sub-buffers, clock "local"
  inst.enable(RequestDone::desc());

  // The kernel's filter language, with the kernel's errors.
  const tracepipe::FilterStatus st =
      inst.set_filter(RequestDone::desc(), "latency_us > 1000 || status >= 500");
  if (!st) {
    std::fputs(st.render().c_str(), stderr);
    return 1;
  }

  uint64_t expected = 0;
  for (uint32_t i = 0; i < 100; ++i) {
    const uint32_t latency = (i * 137) % 3000;
    const uint16_t status = i % 10 == 0 ? 503 : 200;
    RequestDone::emit(inst, i, latency, status, "/api/items");  // no allocation, lock or syscall
    expected += latency > 1000 || status >= 500;
  }

  // Like `cat /sys/kernel/tracing/trace`.
  std::fputs(tracepipe::trace_text(inst).c_str(), stdout);

  const tracepipe::EventStats s = inst.event_stats(RequestDone::desc());
  std::printf("\n%s: kept %llu, discarded %llu (staged %llu)\n",
              RequestDone::desc().full_name().c_str(), static_cast<unsigned long long>(s.kept),
              static_cast<unsigned long long>(s.discarded),
              static_cast<unsigned long long>(s.staged));

  // trace.dat for trace-cmd report / KernelShark.
  const auto path = std::filesystem::temp_directory_path() / "tracepipe-quickstart.dat";
  tracepipe::write_trace_dat(inst, path);
  std::printf("wrote %s\n", path.c_str());
  return s.kept == expected && s.discarded == 100 - expected ? 0 : 1;
}
