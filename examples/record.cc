// Recording: an application's events stream into a trace.dat while it runs
// (core/record/recorder.h). Two threads emit; the recorder drains whole
// sub-buffers into the file; stop() finalizes it. The file opens in
// `trace-cmd report` and KernelShark. Exit 0 = pass.
#include <tracepipe/core/tracedat/tracedat_reader.h>
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;

using Request =
    EventDecl<"myapp", "request", Int<"id", uint64_t>, Int<"bytes", uint32_t>, Str<"path">>;

int main() {
  // Drop-newest: nothing is overwritten; if the recorder could not keep
  // up, writers would drop and the file would say where ([N EVENTS DROPPED]).
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  inst.enable(Request::desc());

  const std::filesystem::path out =
      std::filesystem::temp_directory_path() /
      ("tracepipe_example_record_" + std::to_string(getpid()) + ".dat");
  record::RecorderOptions ro;
  ro.output = out;
  ro.watermark_percent = 25;  // drain a CPU when a quarter of its buffer is full
  record::Recorder rec(inst, ro);

  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t)
    workers.emplace_back([&inst, t] {
      for (uint64_t i = 0; i < 50000; ++i) {
        (void)Request::emit(inst, i, static_cast<uint32_t>(100 + t),
                            t == 0 ? "/index.html" : "/api/v1");
        if (i % 1000 == 0) std::this_thread::yield();
      }
    });
  for (auto& w : workers) w.join();

  const record::RecorderStats s = rec.stop();
  std::printf("recorded %llu events in %llu pages (%llu dropped in the ring, %llu unwritten)\n",
              static_cast<unsigned long long>(s.records), static_cast<unsigned long long>(s.pages),
              static_cast<unsigned long long>(s.dropped),
              static_cast<unsigned long long>(s.unwritten));

  // Read it back: every event emitted is either in the file or counted. A
  // tracepipe:lost_at_end record, if any, marks losses after a CPU's last
  // record: it is a mark, not an event of ours.
  const TraceDatReader r = TraceDatReader::open(out);
  uint64_t n = 0;
  auto m = r.records();
  const EventFormat* mark = r.find_format("tracepipe", "lost_at_end");
  while (const auto got = m.next())
    if (mark == nullptr || got->event_id() != mark->id) ++n;
  std::printf("%s holds %llu records; try: trace-cmd report -i %s\n", out.c_str(),
              static_cast<unsigned long long>(n), out.c_str());
  const bool ok = n == s.records && s.records + s.dropped == 100000 && !rec.error();
  std::filesystem::remove(out);
  return ok ? 0 : 1;
}
