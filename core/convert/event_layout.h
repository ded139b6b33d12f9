#pragma once
// How each field of a kernel event record is read, decided once per event
// format and shared by the Perfetto and CTF writers.
//
//   record payload (starts at common_type, 4-byte padded)
//   ┌──────────── fixed part: fields at their format offsets ───────────┬─ dynamic data ─┐
//   │ u16 common_type │ u8 flags │ u8 preempt │ s32 pid │ ... │ u32 loc │ ... │ "name\0"  │
//   └──────────────────────────────────────────────────────────┬────────┴─────┴───────────┘
//                        __data_loc word: low 16 bits offset, high 16 bits length ┘
//
// Kinds (what `trace-cmd report -R` distinguishes, libtraceevent's field
// flags): an integer of 1, 2, 4 or 8 bytes (signed or not); a string held in
// a fixed char array (`char comm[16]`), in dynamic data (`__data_loc char[]`)
// or in the rest of the record (`char buf[]`, ftrace's print); an array of
// integers, fixed (`unsigned long args[6]`), dynamic (`__data_loc u32[]`) or
// the rest of the record; bytes for anything else (a field whose size is
// not an integer's, `__data_loc cpumask_t`).
//
// Reads are bounds-checked against the payload: a record shorter than its
// format, or a dynamic field pointing outside it, yields an empty value
// (FieldView::present false), never a read outside the record.
//
// Mirrors libtraceevent src/event-parse.c: event_read_fields (flags),
// tep_print_field (what -R prints). Thread-safety: immutable after build.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/events/event_format.h"

namespace tracepipe::convert {

enum class FieldKind : uint8_t {
  integer,         ///< size 1/2/4/8, `is_signed`
  fixed_string,    ///< char[N]: text up to the first NUL within N bytes
  dynamic_string,  ///< __data_loc/__rel_loc char[]: text up to the first NUL within its length
  tail_string,     ///< char buf[] (no length): the rest of the record, up to the first NUL
  fixed_array,     ///< T[N] of integers (elem_size, is_signed)
  dynamic_array,   ///< __data_loc T[]
  tail_array,      ///< T name[] (no length, not char): the rest of the record
  bytes,           ///< anything else: raw bytes (`size` of them; a dynamic one: its length)
};

/// One field of an event, as the writers read it.
struct FieldLayout {
  std::string name;
  FieldKind kind = FieldKind::integer;
  uint32_t offset = 0;     ///< format offset (for dynamic fields: of the loc word)
  uint32_t size = 0;       ///< format size (bytes)
  uint32_t elem_size = 1;  ///< element size for arrays (1, 2, 4, 8)
  bool is_signed = false;  ///< integer or array element signedness
  bool dynamic = false;    ///< __data_loc/__rel_loc: the fixed part holds a loc word
  bool rel_loc = false;    ///< __rel_loc: offset counted from the end of the word
  bool hex = false;        ///< printed in hex by trace-cmd (unsigned long, pointers)
  bool common = false;     ///< a common field (common_type, common_pid, ...)
};

/// A field's bytes in one record.
struct FieldView {
  std::span<const std::byte> data;  ///< the value's bytes (strings: without the NUL)
  bool present = false;             ///< false when the record is too short for it
};

/// The layout of one event format: common fields first, then the event's.
struct EventLayout {
  const EventFormat* format = nullptr;
  std::vector<FieldLayout> fields;  ///< common fields, then event fields, in format order
  uint32_t common_count = 0;        ///< how many of `fields` are common fields
  bool has_dynamic = false;         ///< any dynamic or tail field

  /// Builds the layout of `format`. `long_size` is the kernel's long (4 or 8),
  /// for the element size of `long[]` dynamic arrays.
  static EventLayout build(const EventFormat& format, uint32_t long_size = 8);
};

/// Reads a little-endian integer of 1, 2, 4 or 8 bytes, sign-extended when
/// `is_signed`; the result is the 64-bit pattern.
inline uint64_t load_int(const std::byte* p, uint32_t size, bool is_signed) noexcept {
  switch (size) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(v))) : v;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(v))) : v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))) : v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

/// The bytes of `f` in `payload` (bounds-checked; see FieldView).
FieldView field_bytes(const FieldLayout& f, std::span<const std::byte> payload) noexcept;

/// The string of a string field: up to the first NUL within its bytes.
inline std::string_view as_text(FieldView v) noexcept {
  const char* p = reinterpret_cast<const char*>(v.data.data());
  const void* nul = v.data.empty() ? nullptr : std::memchr(p, 0, v.data.size());
  return {p, nul ? static_cast<size_t>(static_cast<const char*>(nul) - p) : v.data.size()};
}

/// Whether a kind holds text.
constexpr bool is_text(FieldKind k) noexcept {
  return k == FieldKind::fixed_string || k == FieldKind::dynamic_string ||
         k == FieldKind::tail_string;
}
/// Whether a kind holds an integer array.
constexpr bool is_int_array(FieldKind k) noexcept {
  return k == FieldKind::fixed_array || k == FieldKind::dynamic_array || k == FieldKind::tail_array;
}

}  // namespace tracepipe::convert
