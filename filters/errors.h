#pragma once
// One table of filter errors, with the kernel's exact texts.
//
// Mirrors kernel/trace/trace_events_filter.c: the ERRORS table (err_text[]),
// parse_error() (code + position) and append_filter_err()/tracing_log_err()
// (the error_log layout with a caret under the command).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tracepipe::filters {

/// Error codes. The first block is the kernel's table in the kernel's order
/// (FILT_ERR_*); the tail holds tracepipe extensions, whose texts say so.
enum class FilterErr : uint8_t {
  none,                 ///< "No error"
  invalid_op,           ///< "Invalid operator"
  too_many_open,        ///< "Too many '('"
  too_many_close,       ///< "Too few '('"
  missing_quote,        ///< "Missing matching quote"
  missing_brace_open,   ///< "Missing '{'"
  missing_brace_close,  ///< "Missing '}'"
  operand_too_long,     ///< "Operand too long"
  expect_string,        ///< "Expecting string field"
  expect_digit,         ///< "Expecting numeric field"
  illegal_field_op,     ///< "Illegal operation for field type"
  field_not_found,      ///< "Field not found"
  illegal_intval,       ///< "Illegal integer value"
  bad_subsys_filter,    ///< "Couldn't find or set field in one of a subsystem's events"
  too_many_preds,       ///< "Too many terms in predicate expression"
  invalid_filter,       ///< "Meaningless filter expression"
  invalid_cpulist,      ///< "Invalid cpulist"
  ip_field_only,        ///< "Only 'ip' field is supported for function trace"
  invalid_value,        ///< "Invalid value (did you forget quotes)?"
  no_function,          ///< "Function not found"
  errno_error,          ///< "Error": the kernel logs this for internal negative codes, caret 0
  no_filter,            ///< "No filter found"
  // --- tracepipe extensions (not kernel errors) ---
  expression_too_long,  ///< the kernel refuses writes >= PAGE_SIZE with EINVAL and logs nothing
  invalid_regex,        ///< RE2 rejected an =~ / !~ pattern
  count_
};

/// Kernel text of each code, indexed by FilterErr.
inline constexpr std::array<std::string_view, static_cast<size_t>(FilterErr::count_)>
    kFilterErrText = {
        "No error",
        "Invalid operator",
        "Too many '('",
        "Too few '('",
        "Missing matching quote",
        "Missing '{'",
        "Missing '}'",
        "Operand too long",
        "Expecting string field",
        "Expecting numeric field",
        "Illegal operation for field type",
        "Field not found",
        "Illegal integer value",
        "Couldn't find or set field in one of a subsystem's events",
        "Too many terms in predicate expression",
        "Meaningless filter expression",
        "Invalid cpulist",
        "Only 'ip' field is supported for function trace",
        "Invalid value (did you forget quotes)?",
        "Function not found",
        "Error",
        "No filter found",
        "Filter string too long (tracepipe: the kernel refuses >= 4096 bytes)",
        "Invalid regular expression (tracepipe extension =~/!~)",
};

/// A rejected filter: which error, where, and the errno the kernel's write(2)
/// would have failed with. Value type, cheap to copy.
struct FilterError {
  FilterErr code = FilterErr::none;
  /// The kernel's parse position (pe->lasterr_pos): a byte offset into the
  /// expression as the kernel saw it (trailing whitespace removed, leading kept).
  /// For parser errors the kernel reports one past the offending byte in many
  /// places; this value is exactly what the kernel reports.
  int pos = 0;
  /// errno of the failed write(2), positive (EINVAL, EPERM, ENOENT, ESRCH, ...).
  /// The kernel leaks internal negative codes here; see docs/filters.md.
  int err = 0;
  /// Extra detail for extensions (e.g. RE2's message); empty for kernel errors.
  std::string detail;

  /// The kernel's text for code (plus ": detail" for extensions).
  std::string_view message() const noexcept { return kFilterErrText[static_cast<size_t>(code)]; }
  /// Column of '^' under the command in error_log (0-based, from the first
  /// byte of the expression). The kernel logs pos for positive codes and 0
  /// for "Error".
  int caret() const noexcept { return code == FilterErr::errno_error ? 0 : pos; }
  /// errno (positive), as returned by the kernel's write(2).
  int errno_value() const noexcept { return err; }
  /// The kernel's error_log entry without its "[timestamp] " prefix:
  ///   "event filter parse error: error: MSG\n  Command: EXPR\n<caret line>^\n"
  /// expr is the expression as given to compile() (trailing whitespace is
  /// removed here as the kernel does).
  std::string render(std::string_view expr) const;
};

}  // namespace tracepipe::filters
