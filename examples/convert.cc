// Record a few events, then convert the trace.dat for Perfetto's UI and for
// babeltrace2 / Trace Compass, as `tracepipe convert` does:
//
//   tracepipe convert /tmp/tracepipe-convert.dat -o /tmp/tracepipe-convert.pftrace --to perfetto
//   tracepipe convert /tmp/tracepipe-convert.dat -o /tmp/tracepipe-convert.ctf --to ctf
//
// Then open the .pftrace at https://ui.perfetto.dev, or run
// `babeltrace2 /tmp/tracepipe-convert.ctf`. Guide: docs/convert.md.
#include <tracepipe/core/convert/converter.h>
#include <tracepipe/core/sideband/sideband.h>
#include <tracepipe/core/tracedat/tracedat_reader.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <filesystem>

using Request =
    tracepipe::EventDecl<"app", "request", tracepipe::Int<"id", uint32_t>,
                         tracepipe::Int<"latency_us", uint32_t>, tracepipe::Str<"path">>;

int main() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path();
  const fs::path dat = dir / "tracepipe-convert.dat";
  {
    tracepipe::Instance inst;
    tracepipe::enable_sideband(inst);  // thread names for Perfetto's process tree
    inst.enable(Request::desc());
    for (uint32_t id = 0; id < 1000; ++id)
      Request::emit(inst, id, 100 + id % 900, id % 2 ? "/api/items" : "/");
    tracepipe::write_trace_dat(inst, dat);
  }

  const auto reader = tracepipe::TraceDatReader::open(dat);
  tracepipe::convert::ConvertOptions opt;
  opt.format = tracepipe::convert::Format::perfetto;
  const auto pf = tracepipe::convert::convert(reader, dir / "tracepipe-convert.pftrace", opt);
  opt.format = tracepipe::convert::Format::ctf;
  const auto ctf = tracepipe::convert::convert(reader, dir / "tracepipe-convert.ctf", opt);

  std::printf(
      "perfetto: %llu records, %llu bytes\nctf:      %llu records, %llu bytes\n",
      static_cast<unsigned long long>(pf.records), static_cast<unsigned long long>(pf.bytes_out),
      static_cast<unsigned long long>(ctf.records), static_cast<unsigned long long>(ctf.bytes_out));
  // Every record of the file (the 1000 requests and the sideband's) in both.
  return pf.records == ctf.records && pf.records >= 1000 ? 0 : 1;
}
