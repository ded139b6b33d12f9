// The wakeup latency recipe of Documentation/trace/histogram.rst (section
// 2.2.3) over a recorded kernel trace: what `tracepipe replay FILE.dat
// --synthetic ... --trigger ...` does, in library code.
//
//   1. open the trace.dat and register its formats (records keep their IDs);
//   2. an Instance that takes each record's recorded time stamp;
//   3. the synthetic event and the three hist triggers, as written to tracefs;
//   4. every record, all CPUs merged in time order (pairing needs the order
//      the kernel saw), through RawEmit::emit_at();
//   5. the synthetic event's hist file.
//
// Usage: example_wakeup_latency_replay [FILE.dat [COMM]]; by default the
// hackbench capture of the shared data folder (skipped when absent).
#include <tracepipe/core/instance/raw_emit.h>
#include <tracepipe/core/tracedat/tracedat_reader.h>
#include <tracepipe/core/triggers/triggers.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <filesystem>
#include <string>

using namespace tracepipe;

int main(int argc, char** argv) {
  const std::filesystem::path file = argc > 1 ? argv[1] : "../../shared/data/kernel/hackbench.dat";
  const std::string comm = argc > 2 ? argv[2] : "hackbench";
  if (!std::filesystem::exists(file)) {
    std::printf("SKIPPED: %s not found\n", file.c_str());
    return 77;
  }
  const TraceDatReader reader = TraceDatReader::open(file);
  Registry registry;
  registry.add_all(reader.formats());
  InstanceOptions o;
  o.cpus = reader.cpu_count();
  o.external_time = true;  // the records' own stamps are common_timestamp
  Instance inst(o, registry);

  auto check = [](const TriggerStatus& st) {
    if (!st) {
      std::fputs(st.render().c_str(), stderr);
      std::exit(1);
    }
  };
  check(set_synthetic_event(inst, "wakeup_latency u64 lat; pid_t pid; int prio"));
  check(set_trigger(
      inst, "sched:sched_waking",
      "hist:keys=$saved_pid:saved_pid=pid:ts0=common_timestamp.usecs if comm==\"" + comm + "\""));
  check(set_trigger(
      inst, "sched:sched_switch",
      "hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking)."
      "wakeup_latency($wakeup_lat,$saved_pid,next_prio) if next_comm==\"" +
          comm + "\""));
  const EventDesc* lat = synthetic_event(inst, "wakeup_latency");
  check(set_trigger(inst, *lat, "hist:keys=lat.log2:sort=lat"));

  MergedRecordCursor records = reader.records();
  while (const auto r = records.next())
    tracepipe::RawEmit::emit_at(inst, r->payload, r->cpu, r->ts);

  const std::string hist = hist_file(inst, *lat);
  std::fputs(hist.c_str(), stdout);
  return hist.find("Hits: 0\n") == std::string::npos ? 0 : 1;
}
