// Fuzz target: the whole trace.dat reader on untrusted bytes.
//
// Property: for any input, TraceDatReader either throws TraceDatError or
// parses; every cursor (per CPU and merged) then either ends or throws
// TraceDatError. Nothing else may happen: no other exception, no crash,
// no out-of-bounds read (ASan), no hang.
//
// The reader's sources are compiled into this file so that they carry the
// fuzzer's coverage instrumentation and ASan checks (the tracepipe
// libraries linked next to it are built without them). The linker then
// never pulls these objects from libtracepipe_core.a.
#include <cstddef>
#include <cstdint>
#include <span>

#include "tracepipe/core/events/event_format.cc"
#include "tracepipe/core/files/mapped_file.cc"
#include "tracepipe/core/tracedat/kernel_page.cc"
#include "tracepipe/core/tracedat/tracedat_decompress.cc"
#include "tracepipe/core/tracedat/tracedat_reader.cc"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tracepipe;
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const TraceDatReader r(MappedFile::copy_of(bytes));
    // Touch what report and replay touch.
    for (const auto& f : r.formats()) (void)to_format_text(f);
    (void)r.clock_name();
    uint64_t sum = 0;
    for (size_t i = 0; i < r.cpu_data().size(); ++i) {
      auto c = r.cpu_records(i);
      try {
        while (auto rec = c.next()) {
          sum += rec->ts + rec->payload.size();
          if (const auto id = rec->event_id()) {
            if (const auto* f = r.format(*id)) sum += f->fixed_size();
          }
          if (!rec->payload.empty()) sum += static_cast<uint8_t>(rec->payload.back());
        }
      } catch (const TraceDatError&) {
      }
      (void)c.stats();
    }
    auto m = r.records();
    while (auto rec = m.next()) sum += rec->ts;
    // Every buffer (top and named instances), per CPU and merged.
    for (size_t b = 0; b < r.buffers().size(); ++b) {
      sum += r.buffers()[b].cpu_count;
      for (size_t i = 0; i < r.buffers()[b].cpu_data.size(); ++i) {
        try {
          auto c = r.buffer_cpu_records(b, i);
          while (auto rec = c.next()) sum += rec->ts + rec->payload.size();
        } catch (const TraceDatError&) {
        }
      }
      try {
        auto mb = r.buffer_records(b);
        while (auto rec = mb.next()) sum += rec->ts;
      } catch (const TraceDatError&) {
      }
    }
    if (sum == 42) return 0;  // keep the loop observable
  } catch (const TraceDatError&) {
  }
  return 0;
}
