#pragma once
// How a record's fields are printed in the kernel's `trace` layout
// (core/export/text_output.h, trace_text in core/export/instance_export.h).
#include <cstdint>

namespace tracepipe {

/// print_fmt: through the event's print fmt (the kernel's default output),
/// falling back to `fields` when the print fmt cannot be rendered. fields:
/// every field as name=value, like the kernel's options/fields.
enum class FieldStyle : uint8_t { print_fmt, fields };

}  // namespace tracepipe
