#include "tracepipe/filters/field.h"

namespace tracepipe::filters {

FieldDesc make_field(std::string_view type, std::string_view name, uint32_t offset, uint32_t size,
                     bool is_signed) {
  FieldDesc f;
  f.name.assign(name);
  f.type.assign(type);
  f.offset = offset;
  f.size = size;
  f.is_signed = is_signed;
  auto has = [&](std::string_view s) { return type.find(s) != std::string_view::npos; };
  // Same tests, same order, as the kernel's filter_assign_type().
  if (has("__data_loc") && has("char")) {
    f.kind = FieldKind::data_loc_string;
  } else if (has("__data_loc") && has("cpumask_t")) {
    f.kind = FieldKind::cpumask;
  } else if (has("__rel_loc") && has("char")) {
    f.kind = FieldKind::rel_loc_string;
  } else if (has("[") && has("char")) {
    f.kind = FieldKind::char_array;
  } else if (has("char") && has(" *")) {
    f.kind = FieldKind::string_ptr;
  } else if (!has("[") && (size == 1 || size == 2 || size == 4 || size == 8)) {
    f.kind = FieldKind::integer;  // the kernel's FILTER_OTHER, compared by value
  } else {
    f.kind = FieldKind::other;  // FILTER_OTHER of another size: compares are never true
  }
  return f;
}

}  // namespace tracepipe::filters
