#pragma once
// What an application uses, in one include:
//
//   #include <tracepipe/tracepipe.h>      // target tracepipe::tracepipe
//
// Instance (enable, filters, emit, stats), EventDecl (the event's layout,
// format file and emit call), the options and the TOML config, the exports
// (text, trace.dat) and the Recorder. The rest has its own installed header
// (cmake/public_headers.txt lists them):
//   tracepipe/core/tracedat/tracedat_reader.h   trace.dat v6/v7, as trace-cmd writes it
//   tracepipe/core/tracedat/tracedat_writer.h   trace.dat v6 for trace-cmd and KernelShark
//   tracepipe/core/tracedat/trace_report.h      `trace-cmd report` text of a trace.dat
//   tracepipe/core/instance/raw_emit.h          records built elsewhere (replay)
//   tracepipe/core/recover/recover.h            flight recorder files after a crash
//   tracepipe/core/triggers/triggers.h          event triggers and hist triggers, with
//                                               synthetic events and the snapshot file
//   tracepipe/core/convert/converter.h          trace.dat -> Perfetto protobuf, CTF 1.8
//   tracepipe/core/sideband/sideband.h          task names and mappings in the trace, and
//                                               read back (SidebandState)
//   tracepipe/buffers/readers.h                 consuming reader, iterator, snapshot
//
// The design (stage -> filter -> commit, invariants F1-F6) is described at
// the top of core/instance/instance.h; the guides start at docs/core.md.
#include "tracepipe/core/clock/trace_clock.h"  // local, global, counter, mono, mono_raw, boot, ...
#include "tracepipe/core/config/config.h"      // TOML configuration -> InstanceConfig
#include "tracepipe/core/export/instance_export.h"  // trace_text, write_trace_dat
#include "tracepipe/core/instance/event_decl.h"  // EventDecl<"sys", "name", Int<...>, Chars<...>, Str<...>>
#include "tracepipe/core/instance/instance.h"  // Instance: enable, filters, emit, stats
#include "tracepipe/core/instance/version.h"   // version()
#include "tracepipe/core/record/recorder.h"  // Recorder: a growing trace.dat while the application runs
