#pragma once
// A trace.dat's records as a Perfetto trace: a protobuf perfetto.protos.Trace
// (protos/perfetto/trace/perfetto_trace.proto) that ui.perfetto.dev and
// trace_processor open.
//
//   Trace
//   ├─ packet { ftrace_stats { phase START_OF_TRACE, cpu_stats per CPU } }
//   ├─ packet { system_info { utsname } }                (when the file has UNAME)
//   ├─ packet { timestamp, process_tree { threads: saved_cmdlines (tid, name) } }
//   ├─ packet { ftrace_events: FtraceEventBundle {       one per run of one CPU's records
//   │            cpu, lost_events (a loss precedes the bundle),
//   │            ftrace_clock + ftrace_timestamp/boot_timestamp (not for "boot"),
//   │            event: FtraceEvent { timestamp, pid, common_flags,
//   │                                 sched_switch {...} | ... | generic {...} } } }
//   ├─ packet { timestamp, process_tree { thread {tid, tgid, name} } }   per tracepipe sideband
//   │                                                   task_comm / task_newtask record
//   └─ packet { ftrace_stats { phase END_OF_TRACE, cpu_stats { entries, overrun = lost } } }
//
// Typed messages are used for the events Perfetto's views are built on
// (sched_switch, sched_wakeup, sched_waking, sched_wakeup_new, the
// sched_process_* and task_* events, print, softirq_*, irq_handler_*,
// sys_enter/sys_exit, cpu_frequency, cpu_idle) when every field of the
// event's format has a place in the typed message; any other event, or a
// kernel whose format differs, goes to GenericFtraceEvent with one field per
// format field: int_value (signed), uint_value (unsigned), str_value
// (strings; arrays as trace-cmd report -R prints them, "ARRAY[04, 00, ...]").
//
// Clock: "boot" is Perfetto's default and is not declared; "local" and
// "global" are declared (FTRACE_CLOCK_LOCAL / _GLOBAL), "mono_raw" as
// FTRACE_CLOCK_MONO_RAW; other clocks are declared GLOBAL. For the declared
// per-CPU clocks each bundle carries the pair (first record's time stamp,
// same value) as ftrace_timestamp/boot_timestamp, so trace_processor puts
// the trace at its own time stamps.
//
// Streaming (WriterOptions::stream, a recording): the packets before the
// first bundle are written at begin(), each bundle at its end_chunk(), so
// the file is a valid Trace at every chunk boundary; saved cmdlines that
// reload() brings (names learnt while recording) follow in another
// process_tree packet stamped like the first one.
//
// Mirrors what Perfetto's own ftrace reader writes (src/traced/probes/ftrace:
// a bundle per read of a CPU's pages, lost_events, ftrace_clock), behaviour
// not code. Encoding: core/convert/proto_encoder.h (no libprotobuf on this path).
// Thread-safety: one thread drives a writer.
#include <filesystem>
#include <memory>

#include "tracepipe/core/convert/converter.h"

namespace tracepipe::convert {

class PerfettoWriter final : public TraceSink {
 public:
  /// Creates (truncates) `out`. Throws ConvertOutputError.
  explicit PerfettoWriter(const std::filesystem::path& out, WriterOptions options = {});
  ~PerfettoWriter() override;

  void begin(const TraceDatReader& reader, size_t buffer, uint64_t first_ts,
             const std::vector<uint32_t>& cpus) override;
  void record(const TraceRecord& rec) override;
  void end_chunk(uint32_t cpu) override;
  void finish(ConvertStats& stats) override;
  void reload(const TraceDatReader& reader) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tracepipe::convert
