#include "tracepipe/filters/errors.h"

#include "tracepipe/filters/parser.h"

namespace tracepipe::filters {

static_assert(kFilterErrText.size() == static_cast<size_t>(FilterErr::count_));
static_assert(kFilterErrText[static_cast<size_t>(FilterErr::errno_error)] == "Error");

// Mirrors kernel/trace/trace.c: tracing_log_err + err_pos (error_log entry
// "loc: error: text\n  Command: cmd\n" and the caret line).
std::string FilterError::render(std::string_view expr) const {
  const std::string_view cmd = kernel_command(expr);
  std::string out = "event filter parse error: error: ";
  out += message();
  if (!detail.empty()) {
    out += ": ";
    out += detail;
  }
  out += "\n  Command: ";
  out += cmd;
  out += '\n';
  out.append(sizeof("  Command: ") - 1 + static_cast<size_t>(caret()), ' ');
  out += "^\n";
  return out;
}

}  // namespace tracepipe::filters
