#pragma once
// Renders a record through its event's `print fmt`, the way the kernel's
// trace output and libtraceevent (trace-cmd report) do.
//
//   print fmt: "prev_comm=%s prev_pid=%d ...", REC->prev_comm, REC->prev_pid, ...
//              └──── format string ─────────┘  └──── C argument expressions ───┘
//
// PrintFmt compiles the text once (format string split into literal runs
// and conversions; each argument parsed into an expression tree with the
// fields resolved to their offsets), then render() evaluates the arguments
// on a payload and formats them.
//
// Supported, as seen in kernel format files:
//   * conversions %d %i %u %x %X %o %c %s %p %% with flags "-+ #0", width,
//     precision, '*', length modifiers hh h l ll z j t L q;
//     %p extensions: %pS %ps %pF %pf %pB (kallsyms; "0x<hex>" without),
//     %pM %pm (MAC), %pI4 %pi4 %pI6 %pi6 (IP addresses); plain %p prints
//     "0x<hex>", or "(nil)" for 0, like glibc;
//   * expressions: REC->field, REC->array[i], (REC)->field, integer and
//     string literals, casts "(unsigned long)", "(u64)", "(void *)",
//     unary - ! ~, binary * / % + - << >> < > <= >= == != & ^ | && ||, ?:;
//   * helpers: __get_str, __get_rel_str, __get_dynamic_array(_len),
//     __get_rel_dynamic_array(_len), __get_bitmask, __get_cpumask,
//     __get_rel_bitmask, __get_rel_cpumask, __print_flags(_u64),
//     __print_symbolic(_u64), __print_hex, __print_hex_str, __print_array.
//     Symbolic/flag table entries whose value is an unresolved identifier
//     (an enum the kernel did not define) never match, as in libtraceevent.
// Anything else (an unknown helper or identifier, a field the format does
// not have, a malformed expression) makes the event "unparsable": render()
// then prints "[FAILED TO PARSE]" and every event field as " name=value",
// like libtraceevent. A record too short for a field prints the same.
//
// Differences from libtraceevent that are deliberate: signed fields are
// sign-extended before a conversion narrows them (C semantics, as the
// kernel's own output): a `short` holding -2 printed with "%d" gives "-2",
// where libtraceevent prints 65534.
//
// Thread-safety: a PrintFmt is immutable; render() may run concurrently.
// Mirrors libtraceevent src/event-parse.c: process_fields/pretty_print/
// print_str_arg (behaviour, not code), kernel/trace/trace_output.c:
// trace_print_flags_seq, trace_print_symbols_seq, trace_print_hex_seq,
// trace_print_array_seq, trace_print_bitmask_seq.
#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/tracedat/trace_symbols.h"

namespace tracepipe {

/// Tables used while rendering; all optional.
struct PrintContext {
  const KallsymsTable* kallsyms = nullptr;  ///< for %pS/%ps/%pF/%pf
  const PrintkTable* printk = nullptr;      ///< for "%s" of a kernel string pointer
};

namespace detail {
struct PrintProgram;
}

class PrintFmt {
 public:
  /// Compiles `format.print_fmt` against `format`'s fields. Never throws for
  /// a bad print fmt: ok() is then false and error() says why (render()
  /// falls back to the field list).
  explicit PrintFmt(const EventFormat& format);

  bool ok() const noexcept;
  /// Why compilation failed ("" when ok()).
  const std::string& error() const noexcept;

  /// Appends the rendered fields of `payload` (which starts at common_type)
  /// to `out`. Never reads outside `payload`.
  void render(std::span<const std::byte> payload, fmt::memory_buffer& out,
              const PrintContext& ctx = {}) const;
  std::string render(std::span<const std::byte> payload, const PrintContext& ctx = {}) const;

 private:
  std::shared_ptr<const detail::PrintProgram> prog_;
};

/// Appends " name=value" for each event field of `format` (common fields
/// excluded), libtraceevent's fallback layout: strings as text (or
/// ARRAY[..] bytes when unprintable), signed integers in decimal, unsigned
/// in decimal ("long"-typed fields in hex). Never reads outside `payload`.
/// Mirrors libtraceevent src/event-parse.c: tep_print_fields.
void render_field_list(const EventFormat& format, std::span<const std::byte> payload,
                       fmt::memory_buffer& out);

}  // namespace tracepipe
