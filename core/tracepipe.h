#pragma once
// Everything an application needs, in one include:
//
//   #include "core/tracepipe.h"            // or <tracepipe/core/tracepipe.h> when installed
//
// The design (stage -> filter -> commit, invariants F1-F6) is described at
// the top of core/instance.h; the guide is docs/core.md.
#include "core/config.h"           // TOML configuration -> InstanceConfig
#include "core/event_decl.h"       // EventDecl<"sys", "name", Int<...>, Chars<...>, Str<...>>
#include "core/instance.h"         // Instance: enable, filters, emit, stats
#include "core/instance_export.h"  // trace_text, write_trace_dat
#include "core/registry.h"         // kernel format files, SYSTEM:EVENT names, IDs
#include "core/trace_clock.h"      // local, global, counter, mono, mono_raw, boot, ...
