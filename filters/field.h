#pragma once
// Field descriptions of an event format, as a filter compiler needs them.
#include <cstdint>
#include <string>
#include <string_view>

namespace tracepipe::filters {

/// How the filter reads a field. Classified from the kernel type string by
/// make_field(). Mirrors kernel/trace/trace_events.c: filter_assign_type.
enum class FieldKind : uint8_t {
  integer,          ///< signed/unsigned 1, 2, 4 or 8 bytes, read by value
  char_array,       ///< char NAME[N]: N bytes inline, NUL-terminated if shorter
  data_loc_string,  ///< __data_loc char[]: u32 = (len << 16) | offset from record start
  rel_loc_string,   ///< __rel_loc char[]: u32 = (len << 16) | offset from end of this field
  string_ptr,       ///< char * / const char *: a pointer value (see docs/filters.md)
  cpumask,          ///< __data_loc cpumask_t / cpumask_t: a bitmap of CPUs
  other,            ///< anything else (arrays of integers, structs): only == != compare
};

/// One field of an event format. Offsets are in bytes from the start of the
/// record (common_type at 0); size in bytes.
struct FieldDesc {
  std::string name;
  std::string type;  ///< type as in the format file, e.g. "__data_loc char[]", "pid_t"
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
  FieldKind kind = FieldKind::other;
};

/// Builds a FieldDesc and classifies its kind from the kernel type string,
/// like the kernel does when it registers a format field.
/// Mirrors kernel/trace/trace_events.c: filter_assign_type.
FieldDesc make_field(std::string_view type, std::string_view name, uint32_t offset, uint32_t size,
                     bool is_signed);

}  // namespace tracepipe::filters
