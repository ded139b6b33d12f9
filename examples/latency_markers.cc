// The user-space latency recipe of Documentation/trace/histogram.rst
// (section 3: two markers, "start" and "end", and the latency between them)
// on an application's own declared event instead of ftrace:print.
//
//   latency u64 lat                                          synthetic_events
//   hist:keys=common_pid:ts0=common_timestamp.usecs if buf == "start"
//   hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(app.marker).latency($lat) if buf
//   == "end" hist:keys=lat,common_pid:sort=lat                        on synthetic:latency
//
// Each thread marks the start and the end of a piece of work; the pair is
// matched per thread (common_pid is the thread id) and the latency in
// microseconds is counted per value. See docs/triggers.md.
#include <tracepipe/core/triggers/triggers.h>
#include <tracepipe/tracepipe.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using namespace tracepipe;

using Marker = EventDecl<"app", "marker", Chars<"buf", 16>>;

int main() {
  Instance inst;
  auto check = [](const TriggerStatus& st) {
    if (!st) {
      std::fputs(st.render().c_str(), stderr);
      std::exit(1);
    }
  };
  check(set_synthetic_event(inst, "latency u64 lat"));
  check(set_trigger(inst, Marker::desc(),
                    "hist:keys=common_pid:ts0=common_timestamp.usecs if buf == \"start\""));
  check(set_trigger(
      inst, Marker::desc(),
      "hist:keys=common_pid:lat=common_timestamp.usecs-$ts0:onmatch(app.marker).latency($lat) "
      "if buf == \"end\""));
  const EventDesc* latency = synthetic_event(inst, "latency");
  check(set_trigger(inst, *latency, "hist:keys=lat,common_pid:sort=lat"));

  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t)
    workers.emplace_back([&inst] {
      for (int i = 0; i < 20; ++i) {
        Marker::emit(inst, "start");
        std::this_thread::sleep_for(std::chrono::microseconds(250));  // the work being timed
        Marker::emit(inst, "end");
      }
    });
  for (auto& w : workers) w.join();

  const std::string hist = hist_file(inst, *latency);
  std::fputs(hist.c_str(), stdout);
  // 40 pairs, each matched once: "Hits: 40".
  return hist.find("Hits: 40\n") != std::string::npos ? 0 : 1;
}
