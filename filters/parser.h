#pragma once
// Filter expression -> Ast, with the kernel's errors.
//
// Mirrors kernel/trace/trace_events_filter.c: calc_stack (quotes and
// parentheses first, with their positions), then predicate_parse's first-pass
// token loop (#1..#12 in the kernel's comment), which here builds a tree
// instead of the program directly:
//
//   expr   := or
//   or     := and ( "||" and )*
//   and    := unary ( "&&" unary )*          ("&&" binds tighter, as in the kernel)
//   unary  := "!" unary | "(" or ")" | pred  ("!" negates one predicate or group)
//
// Kernel quirks kept on purpose (each pinned by a test):
//   - a trailing "&&" or "||" (optionally followed by "!"s) is "Meaningless
//     filter expression" at the end of the command; with
//     TrailingOperator::ignore (an earlier kernel build) it is ignored, but a
//     trailing "&&" when the top level also has "||" is rejected with "Error"
//     (EINVAL): there that kernel indexes before its program array, warns in
//     dmesg and rejects;
//   - errno leaks the kernel's internal codes: EPERM for "Too few '('", "Too
//     many terms ..." and a missing field name, ENOENT for "Too many '('",
//     ESRCH for "Missing matching quote".
#include <span>
#include <string_view>
#include <variant>

#include "tracepipe/filters/ast.h"
#include "tracepipe/filters/compile.h"
#include "tracepipe/filters/errors.h"
#include "tracepipe/filters/field.h"

namespace tracepipe::filters {

/// The kernel's limit on a filter write: PAGE_SIZE - 1 bytes.
inline constexpr size_t kMaxExpressionBytes = 4095;

class ParseResult {
 public:
  ParseResult(Ast a) : v_(std::move(a)) {}
  ParseResult(FilterError e) : v_(std::move(e)) {}
  bool ok() const noexcept { return v_.index() == 0; }
  Ast& ast() { return std::get<0>(v_); }
  const Ast& ast() const { return std::get<0>(v_); }
  const FilterError& error() const { return std::get<1>(v_); }

 private:
  std::variant<Ast, FilterError> v_;
};

/// The expression as the kernel keeps it: cut at the first NUL, trailing
/// whitespace removed (event_filter_write + strstrip), leading kept. It is
/// also what the kernel's filter file shows.
std::string_view kernel_command(std::string_view expr) noexcept;

/// True when writing `expr` clears the filter: its kernel_command(), leading
/// whitespace removed too, is "0" (apply_event_filter). "0\v", "\f0" and
/// "0\0junk" clear; a blank string does not (compile() rejects it with the
/// kernel's EINVAL "Error" at 0). Whitespace is the kernel's Latin-1 set.
bool clears_filter(std::string_view expr) noexcept;

/// Parses expr for an event with these fields. An expression that is "0"
/// after stripping gives an empty Ast (the kernel clears the filter).
ParseResult parse(std::string_view expr, std::span<const FieldDesc> fields,
                  const CompileOptions& options);

/// nr_cpu_ids as compile() uses it: options.nr_cpu_ids or this machine's
/// possible CPUs.
uint32_t effective_nr_cpu_ids(const CompileOptions& options);

}  // namespace tracepipe::filters
