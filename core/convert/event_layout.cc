#include "tracepipe/core/convert/event_layout.h"

#include <algorithm>

namespace tracepipe::convert {
namespace {

// Size of a C scalar type name as the kernel's formats spell them; 0 when
// unknown (a struct, cpumask_t, ...).
uint32_t scalar_size(std::string_view t, uint32_t long_size) {
  if (t.find('*') != std::string_view::npos) return long_size;
  // Drop qualifiers.
  for (std::string_view q : {"const ", "volatile ", "signed ", "unsigned ", "__u", "__s"}) {
    if (t.starts_with(q)) t.remove_prefix(q.size());
  }
  if (t == "char" || t == "u8" || t == "s8" || t == "8" || t == "bool" || t == "_Bool") return 1;
  if (t == "short" || t == "u16" || t == "s16" || t == "16" || t == "short int") return 2;
  if (t == "int" || t == "u32" || t == "s32" || t == "32" || t == "unsigned" || t == "signed" ||
      t == "pid_t" || t == "gfp_t")
    return 4;
  if (t == "long long" || t == "u64" || t == "s64" || t == "64" || t == "long long int") return 8;
  if (t == "long" || t == "long int" || t == "size_t" || t == "ssize_t") return long_size;
  return 0;
}

bool is_pow2_int(uint32_t n) { return n == 1 || n == 2 || n == 4 || n == 8; }

FieldLayout layout_of(const FormatField& f, bool common, uint32_t long_size) {
  FieldLayout l;
  l.name = f.name;
  l.offset = f.offset;
  l.size = f.size;
  l.is_signed = f.is_signed;
  l.common = common;
  l.dynamic = f.is_dynamic();
  l.rel_loc = f.is_rel_loc();
  // libtraceevent: unsigned "long" types and pointers print in hex.
  const bool pointer = f.type.find('*') != std::string::npos;
  l.hex = !f.is_signed && (pointer || f.type.find("long") != std::string::npos);
  const std::string elem = f.element_type();
  if (f.is_dynamic()) {
    if (f.is_string()) {
      l.kind = FieldKind::dynamic_string;
    } else if (const uint32_t es = scalar_size(elem, long_size); is_pow2_int(es)) {
      l.kind = FieldKind::dynamic_array;
      l.elem_size = es;
    } else {
      l.kind = FieldKind::bytes;  // __data_loc cpumask_t and other structs: raw bytes
    }
    return l;
  }
  if (f.is_array()) {
    const auto n = f.array_length();
    if (!n) {  // T name[]: the rest of the record (ftrace's print: char buf[])
      if (f.is_string()) {
        l.kind = FieldKind::tail_string;
      } else if (const uint32_t es = scalar_size(elem, long_size); is_pow2_int(es)) {
        l.kind = FieldKind::tail_array;
        l.elem_size = es;
      } else {
        l.kind = FieldKind::tail_array;
        l.elem_size = 1;
      }
      return l;
    }
    if (f.is_string()) {
      l.kind = FieldKind::fixed_string;
      return l;
    }
    const uint32_t es = *n ? f.size / *n : 0;
    if (*n && f.size % *n == 0 && is_pow2_int(es)) {
      l.kind = FieldKind::fixed_array;
      l.elem_size = es;
    } else {
      l.kind = FieldKind::bytes;
    }
    return l;
  }
  l.kind = is_pow2_int(f.size) ? FieldKind::integer : FieldKind::bytes;
  return l;
}

}  // namespace

EventLayout EventLayout::build(const EventFormat& format, uint32_t long_size) {
  EventLayout e;
  e.format = &format;
  e.fields.reserve(format.common_fields.size() + format.fields.size());
  for (const auto& f : format.common_fields) e.fields.push_back(layout_of(f, true, long_size));
  e.common_count = static_cast<uint32_t>(e.fields.size());
  for (const auto& f : format.fields) e.fields.push_back(layout_of(f, false, long_size));
  e.has_dynamic = std::any_of(e.fields.begin(), e.fields.end(), [](const FieldLayout& f) {
    return f.dynamic || f.kind == FieldKind::tail_string || f.kind == FieldKind::tail_array;
  });
  return e;
}

FieldView field_bytes(const FieldLayout& f, std::span<const std::byte> payload) noexcept {
  const size_t n = payload.size();
  if (f.kind == FieldKind::tail_string || f.kind == FieldKind::tail_array) {
    if (f.offset > n) return {};
    return {payload.subspan(f.offset), true};
  }
  if (f.offset + static_cast<uint64_t>(f.size) > n) return {};
  if (!f.dynamic) return {payload.subspan(f.offset, f.size), true};
  if (f.size < 4) return {};
  uint32_t word;
  std::memcpy(&word, payload.data() + f.offset, 4);
  uint64_t at = word & 0xffffu;
  const uint32_t len = word >> 16;
  if (f.rel_loc) at += f.offset + 4ull;  // __rel_loc: from the end of the word
  if (at + len > n) return {};
  return {payload.subspan(static_cast<size_t>(at), len), true};
}

}  // namespace tracepipe::convert
