#pragma once
// Fixtures for filter tests: event layouts written out by hand (no shared data
// needed) and a builder that stages a record field by field.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/filters/compile.h"

namespace tp_test {

using tracepipe::filters::FieldDesc;
using tracepipe::filters::make_field;

/// The four common fields (64-bit kernel layout).
inline std::vector<FieldDesc> common_fields() {
  return {make_field("unsigned short", "common_type", 0, 2, false),
          make_field("unsigned char", "common_flags", 2, 1, false),
          make_field("unsigned char", "common_preempt_count", 3, 1, false),
          make_field("int", "common_pid", 4, 4, true)};
}

/// sched:sched_switch as in Linux 6.18.
inline std::vector<FieldDesc> sched_switch_fields() {
  auto f = common_fields();
  f.push_back(make_field("char[16]", "prev_comm", 8, 16, false));
  f.push_back(make_field("pid_t", "prev_pid", 24, 4, true));
  f.push_back(make_field("int", "prev_prio", 28, 4, true));
  f.push_back(make_field("long", "prev_state", 32, 8, true));
  f.push_back(make_field("char[16]", "next_comm", 40, 16, false));
  f.push_back(make_field("pid_t", "next_pid", 56, 4, true));
  f.push_back(make_field("int", "next_prio", 60, 4, true));
  return f;
}

/// A synthetic event with one field of every integer width and signedness,
/// every string kind and a cpumask. Fixed part is 96 bytes.
inline std::vector<FieldDesc> all_kinds_fields() {
  auto f = common_fields();
  f.push_back(make_field("s8", "s8", 8, 1, true));
  f.push_back(make_field("u8", "u8", 9, 1, false));
  f.push_back(make_field("s16", "s16", 10, 2, true));
  f.push_back(make_field("u16", "u16", 12, 2, false));
  f.push_back(make_field("s32", "s32", 16, 4, true));
  f.push_back(make_field("u32", "u32", 20, 4, false));
  f.push_back(make_field("s64", "s64", 24, 8, true));
  f.push_back(make_field("u64", "u64", 32, 8, false));
  f.push_back(make_field("char[8]", "arr", 40, 8, false));
  f.push_back(make_field("__data_loc char[]", "dyn", 48, 4, false));
  f.push_back(make_field("__rel_loc char[]", "rel", 52, 4, false));
  f.push_back(make_field("const char *", "ptr", 56, 8, false));
  f.push_back(make_field("__data_loc cpumask_t", "mask", 64, 4, false));
  f.push_back(make_field("unsigned long[2]", "longs", 72, 16, false));
  f.push_back(make_field("unsigned long", "call_site", 88, 8, false));
  return f;
}

/// Builds a record: fixed part of `size` bytes (zeroed), dynamic data appended.
class Record {
 public:
  explicit Record(size_t fixed_size) : bytes_(fixed_size, std::byte{0}) {}

  template <typename T>
  Record& set(uint32_t offset, T value) {
    std::memcpy(bytes_.data() + offset, &value, sizeof value);
    return *this;
  }
  Record& chars(uint32_t offset, std::string_view s) {
    std::memcpy(bytes_.data() + offset, s.data(), s.size());
    return *this;
  }
  /// Appends s plus a NUL and stores a __data_loc word (len << 16 | offset) at `at`.
  Record& data_loc(uint32_t at, std::string_view s, bool with_nul = true) {
    const auto loc = static_cast<uint32_t>(bytes_.size());
    append(s, with_nul);
    return set<uint32_t>(at, static_cast<uint32_t>((s.size() + with_nul) << 16 | loc));
  }
  /// Same for __rel_loc (offset counted from the end of the 4-byte word).
  Record& rel_loc(uint32_t at, std::string_view s) {
    const auto loc = static_cast<uint32_t>(bytes_.size()) - (at + 4);
    append(s, true);
    return set<uint32_t>(at, static_cast<uint32_t>((s.size() + 1) << 16 | loc));
  }
  Record& raw_append(std::span<const std::byte> b) {
    bytes_.insert(bytes_.end(), b.begin(), b.end());
    return *this;
  }
  std::span<const std::byte> span() const { return bytes_; }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  void append(std::string_view s, bool nul) {
    for (char c : s) bytes_.push_back(static_cast<std::byte>(c));
    if (nul) bytes_.push_back(std::byte{0});
  }
  std::vector<std::byte> bytes_;
};

/// compile() with a fixed nr_cpu_ids (tests must not depend on the machine);
/// throws with the rendered error if it fails.
inline std::shared_ptr<const tracepipe::filters::Program> must_compile(
    std::string_view expr, std::span<const FieldDesc> fields,
    tracepipe::filters::CompileOptions opt = {}) {
  if (opt.nr_cpu_ids == 0) opt.nr_cpu_ids = 4;
  auto r = tracepipe::filters::compile(expr, fields, opt);
  if (!r.ok()) throw std::runtime_error(r.error().render(expr));
  return r.program();
}

/// compile() expected to fail: the error.
inline tracepipe::filters::FilterError must_fail(std::string_view expr,
                                                 std::span<const FieldDesc> fields,
                                                 tracepipe::filters::CompileOptions opt = {}) {
  if (opt.nr_cpu_ids == 0) opt.nr_cpu_ids = 4;
  auto r = tracepipe::filters::compile(expr, fields, opt);
  if (r.ok()) throw std::runtime_error("accepted: " + std::string(expr));
  return r.error();
}

}  // namespace tp_test
