#pragma once
// The hist trigger's error_log messages: one table, the kernel's text, in
// the kernel's order. Internal to core/triggers.
//
// Mirrors kernel/trace/trace_events_hist.c: the ERRORS list (err_text[]) and
// hist_err(); the caret is placed by errpos(), the first occurrence of the
// offending text in the command, as the kernel's err_pos().
#include <array>
#include <cstdint>
#include <string_view>

namespace tracepipe::triggers {

enum class HistErr : uint8_t {
  none,
  duplicate_var,
  var_not_unique,
  too_many_vars,
  malformed_assignment,
  named_mismatch,
  trigger_eexist,
  trigger_enoent_clear,
  set_clock_fail,
  bad_field_modifier,
  too_many_subexpr,
  timestamp_mismatch,
  too_many_field_vars,
  event_file_not_found,
  hist_not_found,
  hist_create_fail,
  synth_var_not_found,
  synth_event_not_found,
  synth_type_mismatch,
  synth_count_mismatch,
  field_var_parse_fail,
  var_create_find_fail,
  onx_not_var,
  onx_var_not_found,
  onx_var_create_fail,
  field_var_create_fail,
  too_many_params,
  param_not_found,
  invalid_param,
  action_not_found,
  no_save_params,
  too_many_save_actions,
  action_mismatch,
  no_closing_paren,
  subsys_not_found,
  invalid_subsys_event,
  invalid_ref_key,
  var_not_found,
  field_not_found,
  empty_assignment,
  invalid_sort_modifier,
  empty_sort_field,
  too_many_sort_fields,
  invalid_sort_field,
  invalid_str_operand,
  expect_number,
  unary_minus_subexpr,
  division_by_zero,
  need_nohc_val,
  count_,
};

inline constexpr std::array<std::string_view, static_cast<size_t>(HistErr::count_)> kHistErrText = {
    "No error",
    "Variable already defined",
    "Variable name not unique, need to use fully qualified name (subsys.event.var) for variable",
    "Too many variables defined",
    "Malformed assignment",
    "Named hist trigger doesn't match existing named trigger (includes variables)",
    "Hist trigger already exists",
    "Can't clear or continue a nonexistent hist trigger",
    "Couldn't set trace_clock",
    "Invalid field modifier",
    "Too many subexpressions (3 max)",
    "Timestamp units in expression don't match",
    "Too many field variables defined",
    "Event file not found",
    "Matching event histogram not found",
    "Couldn't create histogram for field",
    "Couldn't find synthetic variable",
    "Couldn't find synthetic event",
    "Param type doesn't match synthetic event field type",
    "Param count doesn't match synthetic event field count",
    "Couldn't parse field variable",
    "Couldn't create or find variable",
    "For onmax(x) or onchange(x), x must be a variable",
    "Couldn't find onmax or onchange variable",
    "Couldn't create onmax or onchange variable",
    "Couldn't create field variable",
    "Too many action params",
    "Couldn't find param",
    "Invalid action param",
    "No action found",
    "No params found for save()",
    "Can't have more than one save() action per hist",
    "Handler doesn't support action",
    "No closing paren found",
    "Missing subsystem",
    "Invalid subsystem or event name",
    "Using variable references in keys not supported",
    "Couldn't find variable",
    "Couldn't find field",
    "Empty assignment",
    "Invalid sort modifier",
    "Empty sort field",
    "Too many sort fields (Max = 2)",
    "Sort field must be a key or a val",
    "String type can not be an operand in expression",
    "Expecting numeric literal",
    "Unary minus not supported in sub-expressions",
    "Division by zero",
    "Non-hitcount value is required for 'nohitcount'",
};

inline constexpr std::string_view hist_err_text(HistErr e) noexcept {
  return kHistErrText[static_cast<size_t>(e)];
}

}  // namespace tracepipe::triggers
