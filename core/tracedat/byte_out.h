#pragma once
// Little-endian appends into a byte vector: how the trace.dat writers
// (version 6 and 7) build headers, sections and options before writing them.
// Internal to core/tracedat. Not thread-safe (one writer owns one ByteOut).
#include <cstddef>
#include <cstring>
#include <string_view>
#include <vector>

namespace tracepipe::detail {

struct ByteOut {
  std::vector<std::byte> b;
  void raw(const void* p, size_t n) {
    const auto* c = static_cast<const std::byte*>(p);
    b.insert(b.end(), c, c + n);
  }
  void str(std::string_view s) { raw(s.data(), s.size()); }
  /// The string and its NUL.
  void cstr(std::string_view s) {
    str(s);
    b.push_back(std::byte{0});
  }
  template <typename T>
  void num(T v) {
    raw(&v, sizeof(T));
  }
  /// Overwrites sizeof(T) bytes at `at` (a size field written as 0 first).
  template <typename T>
  void patch(size_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof(T));
  }
};

}  // namespace tracepipe::detail
