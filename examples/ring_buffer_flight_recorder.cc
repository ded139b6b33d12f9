// A flight recorder: an overwrite ring buffer keeps the newest records; on a
// trigger, pause it, take a snapshot and print the last events newest first,
// then all CPUs merged by time stamp. Exit 0 = pass.
#include <tracepipe/buffers/readers.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <string>

using namespace tracepipe::buffers;

int main() {
  OverwriteRingBuffer rb(RingBufferConfig{.cpus = 2, .size_per_cpu = 8192, .subbuf_size = 1024});

  // Far more events than fit: the oldest sub-buffers are recycled (overrun).
  for (int i = 0; i < 10000; ++i) {
    const std::string ev = "event " + std::to_string(i);
    rb.write(static_cast<uint32_t>(i % 2), std::as_bytes(std::span(ev.data(), ev.size())));
  }

  rb.pause();  // perf's PAUSE_OUTPUT: writers now drop (counted lost_paused)
  auto snap = Snapshot::take(rb, 0);
  if (!snap) return 1;
  std::printf("cpu 0 holds %zu events; the last three, newest first:\n", snap->size());
  int shown = 0;
  std::string newest;
  for (const RecordView& v : snap->newest_first()) {
    const std::string text(reinterpret_cast<const char*>(v.payload.data()), v.payload.size());
    if (shown == 0) newest = text;
    std::printf("  %s\n", text.c_str());
    if (++shown == 3) break;
  }
  snap.reset();  // releases the sub-buffers

  // Every CPU, oldest first, merged by time stamp (non-consuming).
  auto all = merged_iterator(rb);
  size_t merged = 0;
  uint64_t prev = 0;
  bool ordered = true;
  while (auto v = all.next()) {
    ordered &= v->ts >= prev;
    prev = v->ts;
    ++merged;
  }
  rb.resume();

  const CpuStats s0 = rb.stats(0), s1 = rb.stats(1);
  std::printf("merged %zu events in time order; cpu0 overrun %llu entries %llu\n", merged,
              static_cast<unsigned long long>(s0.overrun),
              static_cast<unsigned long long>(s0.entries));
  return newest == "event 9998" && ordered && merged == s0.entries + s1.entries &&
                 s0.conserved(5000) && s1.conserved(5000)
             ? 0
             : 1;
}
