#pragma once
// Text output in the kernel's `trace` file layout:
//
//   # tracer: nop
//   #
//   # entries-in-buffer/entries-written: 107/107   #P:2
//   #
//   #                                _-----=> irqs-off/BH-disabled
//   ...
//   #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
//   #              | |         |   |||||     |         |
//               bash-16480   [000] d..2.   754.440826: sched_switch: prev_comm=bash ...
//
// Each line: the comm right-aligned in 16 columns, '-', the pid left-aligned
// in 7, the CPU in three digits, the five latency columns decoded from
// common_flags and common_preempt_count, the time stamp (seconds.microseconds
// for ns clocks, a raw count otherwise), the event name, then the fields:
//   * FieldStyle::print_fmt: rendered through the event's print fmt (the
//     kernel's default output), falling back to `fields` when the print fmt
//     cannot be rendered;
//   * FieldStyle::fields: every field as name=value, like the kernel's
//     options/fields: integers as "0x<hex> (<decimal>)", strings as text.
// Mirrors kernel/trace/trace_output.c: trace_print_context,
// trace_print_lat_fmt, print_fields; kernel/trace/trace.c: print_event_info,
// print_func_help_header_irq.
//
// Thread-safety: set_cmdlines/set_comm are set-up calls; afterwards const
// methods may run concurrently (compiled print fmts are cached under a mutex).
#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracepipe/core/events/event.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/export/field_style.h"
#include "tracepipe/core/instance/thread_context.h"
#include "tracepipe/core/tracedat/print_fmt.h"

namespace tracepipe {

/// The five latency columns for these common fields: irqs-off, need-resched,
/// hardirq/softirq, preempt depth, migrate-disable ("d..2.", ".....", "..h1.").
/// Mirrors kernel/trace/trace_output.c: trace_print_lat_fmt (6.12+ flag bits).
std::string latency_columns(uint8_t common_flags, uint8_t common_preempt_count);

/// The header of the `trace` file. `entries` = records in the buffer,
/// `written` = entries + overrun, `cpus` = number of CPU buffers.
std::string trace_header(uint64_t entries, uint64_t written, uint32_t cpus);

class TextFormatter {
 public:
  /// `ts_in_ns`: false for the counter and x86-tsc clocks (raw counts).
  explicit TextFormatter(const Registry& registry, FieldStyle style = FieldStyle::print_fmt,
                         bool ts_in_ns = true);

  /// pid -> comm for the TASK column; unknown pids print "<...>", pid 0
  /// prints "<idle>", as the kernel does.
  void set_cmdlines(const std::vector<Cmdline>& cmdlines);
  void set_comm(int32_t pid, std::string_view comm);
  /// address -> "symbol+0xoff/0xsize" for the frames of ftrace:kernel_stack
  /// records (printed as the kernel's trace file does: "<stack trace>",
  /// then one " => frame" line each). Unset: frames print in hex.
  void set_symbolizer(std::function<std::string(uint64_t addr)> fn) { symbolize_ = std::move(fn); }

  /// Appends one line, with its final '\n'. A payload shorter than the
  /// common header, or with an unknown common_type, prints a line saying so
  /// (never reads outside `payload`).
  void format(uint32_t cpu, uint64_t ts, std::span<const std::byte> payload,
              fmt::memory_buffer& out) const;
  std::string format(uint32_t cpu, uint64_t ts, std::span<const std::byte> payload) const;

  /// The fields part only ("prev_comm=bash prev_pid=..."), per the style.
  void format_fields(const EventDesc& event, std::span<const std::byte> payload,
                     fmt::memory_buffer& out) const;

 private:
  const PrintFmt& print_fmt(const EventDesc& event) const;

  const Registry& registry_;
  FieldStyle style_;
  bool ts_in_ns_;
  std::map<int32_t, std::string> comms_;
  std::function<std::string(uint64_t)> symbolize_;
  mutable std::mutex mu_;
  mutable std::unordered_map<const EventDesc*, std::unique_ptr<PrintFmt>> fmts_;
};

/// name=value rendering of every non-common field (the kernel's
/// options/fields layout). Bounds-checked against `payload`.
void format_fields_raw(const EventDesc& event, std::span<const std::byte> payload,
                       fmt::memory_buffer& out);

}  // namespace tracepipe
