#pragma once
// Bounds-checked sequential reads of untrusted trace.dat bytes (internal to
// the reader). Every read checks the remaining length first and throws
// TraceDatError(section, offset) when the file ends early; no read can go
// outside the span. Little-endian only.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "tracepipe/core/tracedat/tracedat_error.h"

namespace tracepipe::detail {

class ByteCursor {
 public:
  ByteCursor(std::span<const std::byte> file, uint64_t pos, std::string section)
      : file_(file), pos_(pos), section_(std::move(section)) {}
  /// A cursor over `data` whose first byte has offset `base`: pos(), seek()
  /// and error offsets are base-relative (e.g. an option's bytes, reported
  /// at their file offsets). `note` is appended to every error's reason.
  static ByteCursor over(std::span<const std::byte> data, uint64_t base, std::string section,
                         std::string note = {}) {
    ByteCursor c(data, 0, std::move(section));
    c.base_ = base;
    c.note_ = std::move(note);
    return c;
  }

  uint64_t pos() const noexcept { return base_ + pos_; }
  void seek(uint64_t pos) {
    if (pos < base_ || pos - base_ > file_.size())
      fail(pos, "offset is beyond the end of the file");
    pos_ = pos - base_;
  }
  void set_section(std::string s) { section_ = std::move(s); }
  const std::string& section() const noexcept { return section_; }
  uint64_t remaining() const noexcept { return pos_ <= file_.size() ? file_.size() - pos_ : 0; }

  uint8_t u8() { return static_cast<uint8_t>(take(1)[0]); }
  uint16_t u16() { return load<uint16_t>(); }
  uint32_t u32() { return load<uint32_t>(); }
  uint64_t u64() { return load<uint64_t>(); }

  /// `n` raw bytes.
  std::span<const std::byte> bytes(uint64_t n) { return take(n); }
  /// `n` raw bytes as text (may contain NULs).
  std::string_view text(uint64_t n) {
    const auto b = take(n);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  /// A NUL-terminated string (the NUL is consumed, not returned).
  std::string_view cstr() {
    const auto* begin = reinterpret_cast<const char*>(file_.data()) + pos_;
    const auto* nul = static_cast<const char*>(std::memchr(begin, 0, remaining()));
    if (!nul) fail(pos(), "string lacks its terminating NUL before the end of the file");
    const std::string_view s(begin, static_cast<size_t>(nul - begin));
    pos_ += s.size() + 1;
    return s;
  }
  /// Consumes `magic` exactly or throws "expected <what>".
  void expect(std::string_view magic, std::string_view what) {
    const uint64_t at = pos();
    if (remaining() < magic.size() ||
        std::memcmp(file_.data() + pos_, magic.data(), magic.size()) != 0)
      fail(at, "expected " + std::string(what));
    pos_ += magic.size();
  }
  /// True if the next bytes are `magic` (nothing consumed).
  bool peek(std::string_view magic) const noexcept {
    return remaining() >= magic.size() &&
           std::memcmp(file_.data() + pos_, magic.data(), magic.size()) == 0;
  }

  [[noreturn, gnu::cold]] void fail(uint64_t at, const std::string& why) const {
    throw TraceDatError(section_, at, note_.empty() ? why : why + " " + note_);
  }

 private:
  std::span<const std::byte> take(uint64_t n) {
    if (n > remaining())
      fail(pos(), "truncated: needs " + std::to_string(n) + " bytes, " +
                      std::to_string(remaining()) + " left in the file");
    const auto s = file_.subspan(static_cast<size_t>(pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }
  template <typename T>
  T load() {
    T v;
    std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
    return v;
  }

  std::span<const std::byte> file_;
  uint64_t pos_;  // index into file_
  uint64_t base_ = 0;
  std::string section_;
  std::string note_;
};

}  // namespace tracepipe::detail
