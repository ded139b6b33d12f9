// Writes a trace.dat with one tracepipe-declared event, reads it back, and
// prints it the way `trace-cmd report` (and `tracepipe report`) would.
// See docs/tracedat.md. Exit 0 = the records came back intact.
#include <tracepipe/core/tracedat/trace_report.h>
#include <tracepipe/core/tracedat/tracedat_reader.h>
#include <tracepipe/core/tracedat/tracedat_writer.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using namespace tracepipe;

int main() {
  // 1. The schema, in the kernel's format-file terms.
  EventFormat ev;
  ev.system = "myapp";
  ev.name = "request";
  ev.id = 1000;  // stored in each record's common_type
  ev.common_fields = kernel_common_fields();
  ev.fields = {{"u64", "latency_ns", 8, 8, false}, {"__data_loc char[]", "path", 16, 4, false}};
  ev.print_fmt = "\"latency=%llu path=%s\", REC->latency_ns, __get_str(path)";
  std::fputs(to_format_text(ev).c_str(), stdout);  // what events/myapp/request/format would say

  // 2. Records: the common header, the fields, then the string the
  //    __data_loc word points at (offset 20, length with the NUL).
  auto record = [](uint64_t latency, const char* path) {
    std::vector<std::byte> p(20 + std::strlen(path) + 1);
    const uint16_t id = 1000;
    const int32_t pid = 4242;
    const uint32_t loc = (static_cast<uint32_t>(std::strlen(path) + 1) << 16) | 20u;
    std::memcpy(&p[0], &id, 2);
    std::memcpy(&p[4], &pid, 4);
    std::memcpy(&p[8], &latency, 8);
    std::memcpy(&p[16], &loc, 4);
    std::memcpy(&p[20], path, std::strlen(path) + 1);
    return p;
  };

  // 3. Write trace.dat version 6: formats, cmdlines, per-CPU records.
  TraceDatWriter w({.cpus = 2});
  w.add_format(ev);
  w.set_cmdline(4242, "myapp");
  w.add_record(0, 5'000'000'000, record(1200, "/index.html"));
  w.add_record(1, 5'000'000'750, record(56000, "/api/users"));
  w.add_record(0, 5'000'002'000, record(800, "/favicon.ico"));
  const auto path = std::filesystem::temp_directory_path() / "tracepipe_example.dat";
  w.write(path);

  // 4. Read it back (mmap, zero-copy) and print like trace-cmd report.
  const auto r = TraceDatReader::open(path);
  TraceReport report(r);
  std::fputs(report.header().c_str(), stdout);
  const PrintFmt printer(*r.format(1000));
  auto records = r.records();  // all CPUs merged by time stamp
  int n = 0;
  bool ok = true;
  while (auto rec = records.next()) {
    fmt::memory_buffer line;
    report.format(*rec, line);
    std::fwrite(line.data(), 1, line.size(), stdout);
    ++n;
    ok = ok && printer.render(rec->payload).rfind("latency=", 0) == 0;
  }
  std::filesystem::remove(path);
  ok = ok && n == 3;
  std::printf("%s\n", ok ? "round trip ok" : "round trip FAILED");
  return ok ? 0 : 1;
}
