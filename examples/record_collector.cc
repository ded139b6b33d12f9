// Recording to a collector: an application's events go to an unmodified
// `trace-cmd listen` (on another host in real use; here one this example
// starts on a loopback port), as `trace-cmd record -N HOST:PORT` sends the
// kernel's (core/record/net_sink.h). The collector writes DIR/trace.*.dat,
// which `trace-cmd report` opens. Exit 0 = pass, 77 = trace-cmd not installed.
//
//   on the collector:  trace-cmd listen -p 12345 -d /var/traces
//   in the app:        ro.collector = "collector:12345";
//   or without code:   tracepipe record -N collector:12345 -- ./myapp
#include <tracepipe/core/tracedat/tracedat_reader.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <thread>

#include "tracepipe/core/record/local_collector.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;

using Request =
    EventDecl<"myapp", "request", Int<"id", uint64_t>, Int<"bytes", uint32_t>, Str<"path">>;

int main() {
  if (!record::LocalCollector::available()) {
    std::printf("trace-cmd is not installed (Debian package trace-cmd): nothing to send to\n");
    return 77;
  }
  // The collector: trace-cmd listen on a free loopback port, in a directory
  // of its own (record::LocalCollector; on another host, start it by hand).
  record::LocalCollector collector;
  if (!collector.ok()) {
    std::printf("cannot start trace-cmd listen: %s\n", collector.why().c_str());
    return 1;
  }

  // The application: records to the collector instead of a file.
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  o.buffer_size_kb = 4096;  // per CPU: holds this example's whole burst, however the network goes
  Instance inst(o);
  inst.enable(Request::desc());
  record::RecorderOptions ro;
  ro.collector = collector.address();
  ro.file_version = 7;  // the collector writes trace-cmd 3.x's zstd-compressed format
  record::Recorder rec(inst, ro);
  // Optional: start emitting once the collector takes data (bounded). Without
  // it, events emitted while connecting wait in the ring, or drop (counted)
  // when it fills first.
  if (!rec.wait_ready(std::chrono::seconds(2)))
    std::printf("collector not ready: %s\n", rec.error().value_or("timed out").c_str());
  for (uint64_t i = 0; i < 50000; ++i) {
    (void)Request::emit(inst, i, 512, "/index.html");
    if (i % 1000 == 0) std::this_thread::yield();
  }
  const record::RecorderStats s = rec.stop();  // ends the session: the collector joins its file
  std::printf("sent %llu events in %llu pages to %s (%llu dropped in the ring, %llu unsent)\n",
              static_cast<unsigned long long>(s.records), static_cast<unsigned long long>(s.pages),
              ro.collector.c_str(), static_cast<unsigned long long>(s.dropped),
              static_cast<unsigned long long>(s.unwritten));

  // Wait (bounded) for the collector's session to end, then read its file.
  uint64_t n = 0;
  const std::optional<std::filesystem::path> file = collector.wait_file(std::chrono::seconds(15));
  if (file) {
    const TraceDatReader r = TraceDatReader::open(*file);
    auto m = r.records();
    while (m.next()) ++n;
    std::printf("the collector wrote %s (version 7, %s): %llu records\n", file->filename().c_str(),
                r.compression().c_str(), static_cast<unsigned long long>(n));
  }
  return n == s.records && s.records + s.dropped == 50000 && !rec.error() ? 0 : 1;
}
