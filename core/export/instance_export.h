#pragma once
// Getting records out of an instance: trace.dat for trace-cmd and
// KernelShark, and text in the kernel's `trace` layout.
//
//   Instance ─▶ per-CPU readers (buffers/readers.h) ─▶ TraceDatWriter
//   (core/tracedat/tracedat_writer.h)
//                                                   └▶ TextFormatter  (core/export/text_output.h)
//
// trace.dat: one stream per CPU buffer, records in buffer order with their
// ring time stamps; the formats of every event of the instance's registry;
// saved_cmdlines from Instance::cmdlines(); the trace clock's name; CPUs
// whose oldest records were overwritten start with a "missed events" mark
// carrying the overrun count (trace-cmd prints "[N EVENTS DROPPED]").
//
// Both read without consuming by default (like the `trace` file); with
// consume = true they drain the buffers (like trace_pipe).
//
// Thread-safety: may run while writers emit; records committed during the
// export may or may not be included. Two consuming exports of one instance
// at once split the records between them.
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "tracepipe/core/export/field_style.h"
#include "tracepipe/core/instance/instance.h"

namespace tracepipe {

struct ExportOptions {
  bool consume = false;  ///< drain the buffers (trace_pipe) instead of iterating (trace)
};

/// Writes a trace.dat (v6) of the instance's buffered records. Throws
/// std::system_error on I/O failure.
void write_trace_dat(const Instance& instance, const std::filesystem::path& path,
                     const ExportOptions& options = {});
/// The same file as bytes.
std::vector<std::byte> trace_dat_bytes(const Instance& instance, const ExportOptions& options = {});

struct TextOptions {
  bool consume = false;
  bool header = true;  ///< the "# tracer: nop" block
  FieldStyle style = FieldStyle::print_fmt;
};

/// The instance's records as the kernel's `trace` file shows them, merged
/// over CPUs by time stamp.
std::string trace_text(const Instance& instance, const TextOptions& options = {});
/// Same, written to `out` line by line. Returns the number of records.
size_t write_trace_text(const Instance& instance, std::FILE* out, const TextOptions& options = {});

}  // namespace tracepipe
