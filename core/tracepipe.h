#pragma once
// Everything an application needs, in one include:
//
//   #include <tracepipe/tracepipe.h>      // target tracepipe::tracepipe
//
// The design (stage -> filter -> commit, invariants F1-F6) is described at
// the top of core/instance/instance.h; the guides start at docs/core.md.
#include "tracepipe/core/clock/trace_clock.h"        // local, global, counter, mono, mono_raw, boot, ...
#include "tracepipe/core/config/config.h"            // TOML configuration -> InstanceConfig
#include "tracepipe/core/convert/converter.h"        // trace.dat -> Perfetto protobuf, CTF 1.8 (docs/convert.md)
#include "tracepipe/core/events/registry.h"          // kernel format files, SYSTEM:EVENT names, IDs
#include "tracepipe/core/export/instance_export.h"   // trace_text, write_trace_dat
#include "tracepipe/core/instance/event_decl.h"      // EventDecl<"sys", "name", Int<...>, Chars<...>, Str<...>>
#include "tracepipe/core/instance/instance.h"        // Instance: enable, filters, emit, stats
#include "tracepipe/core/instance/version.h"         // version()
#include "tracepipe/core/record/recorder.h"          // Recorder: a growing trace.dat while the application runs
#include "tracepipe/core/sideband/sideband.h"        // task names and mappings in the trace
#include "tracepipe/buffers/readers.h"               // consuming reader, iterator, snapshot
#include "tracepipe/core/sideband/sideband_state.h"  // task names and mappings, read back
#include "tracepipe/core/tracedat/trace_report.h"    // `trace-cmd report` text of a trace.dat
#include "tracepipe/core/tracedat/tracedat_reader.h" // trace.dat v6/v7, as trace-cmd writes it
#include "tracepipe/core/tracedat/tracedat_writer.h" // trace.dat v6 for trace-cmd and KernelShark
#include "tracepipe/core/recover/recover.h"         // flight recorder files after a crash: records, trace.dat
#include "tracepipe/core/triggers/triggers.h"        // event triggers and hist triggers (trigger, hist files)
#include "tracepipe/core/triggers/synthetic.h"       // synthetic events (synthetic_events file) for latency recipes
#include "tracepipe/core/triggers/snapshot.h"        // the snapshot file (spare buffer, swap)
