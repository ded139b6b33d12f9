#pragma once
// A protobuf wire-format encoder into a growable byte buffer: varints,
// tags, length-delimited fields and nested messages whose length is
// back-patched when the message ends.
//
//   ProtoBuffer b;
//   const size_t ev = b.begin(2);        // tag of field 2, wire type 2, one length byte reserved
//   b.field_varint(1, ts);
//   b.field_string(2, "comm");
//   b.end(ev);                           // writes the length; a body >= 128 bytes is moved
//                                        // right by the extra length bytes (rare for an event)
//   const size_t pk = b.begin_padded(1); // four length bytes reserved: never moved
//   ...
//   b.end_padded(pk);                    // a redundant 4-byte varint (0x80|..., 0x80|..., ...)
//
// Redundant varint lengths are valid protobuf: every decoder reads them
// (protozero writes its nested messages the same way). Wire format:
// https://protobuf.dev/programming-guides/encoding/ . Negative int32/int64
// values are encoded as their 64-bit two's complement (10 bytes), as
// protobuf's int32 and int64 are.
//
// Thread-safety: none (one owner). Not for the write path: it allocates.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

namespace tracepipe::convert {

enum class WireType : uint32_t { varint = 0, fixed64 = 1, length = 2, fixed32 = 5 };

class ProtoBuffer {
 public:
  ProtoBuffer() = default;
  explicit ProtoBuffer(size_t capacity) { grow(capacity); }
  ~ProtoBuffer() { std::free(data_); }
  ProtoBuffer(const ProtoBuffer&) = delete;
  ProtoBuffer& operator=(const ProtoBuffer&) = delete;
  ProtoBuffer(ProtoBuffer&& o) noexcept : data_(o.data_), len_(o.len_), cap_(o.cap_) {
    o.data_ = nullptr;
    o.len_ = o.cap_ = 0;
  }
  ProtoBuffer& operator=(ProtoBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = o.data_;
      len_ = o.len_;
      cap_ = o.cap_;
      o.data_ = nullptr;
      o.len_ = o.cap_ = 0;
    }
    return *this;
  }

  const uint8_t* data() const noexcept { return data_; }
  size_t size() const noexcept { return len_; }
  bool empty() const noexcept { return len_ == 0; }
  void clear() noexcept { len_ = 0; }

  /// Makes room for `n` more bytes (the unchecked writers need it).
  void reserve_more(size_t n) {
    if (cap_ - len_ < n) [[unlikely]]
      grow(len_ + n);
  }

  void varint(uint64_t v) {
    reserve_more(10);
    varint_unchecked(v);
  }
  void tag(uint32_t field, WireType wt) {
    varint((static_cast<uint64_t>(field) << 3) | static_cast<uint32_t>(wt));
  }
  void field_varint(uint32_t field, uint64_t v) {
    reserve_more(20);
    varint_unchecked((static_cast<uint64_t>(field) << 3) | 0);
    varint_unchecked(v);
  }
  /// int32/int64 fields: the value's 64-bit pattern (sign-extended).
  void field_int(uint32_t field, int64_t v) { field_varint(field, static_cast<uint64_t>(v)); }
  void field_bool(uint32_t field, bool v) { field_varint(field, v ? 1 : 0); }
  void field_bytes(uint32_t field, const void* p, size_t n) {
    reserve_more(20 + n);
    varint_unchecked((static_cast<uint64_t>(field) << 3) | 2);
    varint_unchecked(n);
    if (n) std::memcpy(data_ + len_, p, n);  // p may be null when n is 0
    len_ += n;
  }
  void field_string(uint32_t field, std::string_view s) { field_bytes(field, s.data(), s.size()); }
  void raw(const void* p, size_t n) {
    if (n == 0) return;
    reserve_more(n);
    std::memcpy(data_ + len_, p, n);
    len_ += n;
  }

  /// Starts a nested message (or packed run) in `field`; returns the mark end() takes.
  size_t begin(uint32_t field) {
    reserve_more(16);
    varint_unchecked((static_cast<uint64_t>(field) << 3) | 2);
    data_[len_++] = 0;  // one length byte; end() widens it if the body needs more
    return len_;
  }
  /// Ends the message begun at `mark`: writes its length.
  void end(size_t mark) {
    const size_t n = len_ - mark;
    if (n < 0x80) [[likely]] {
      data_[mark - 1] = static_cast<uint8_t>(n);
      return;
    }
    widen(mark, n);
  }
  /// Starts a nested message with a 2-byte length: for bodies that are
  /// often 128 bytes or more (never moved below 16 KiB).
  size_t begin2(uint32_t field) {
    reserve_more(16);
    varint_unchecked((static_cast<uint64_t>(field) << 3) | 2);
    len_ += 2;
    return len_;
  }
  void end2(size_t mark) {
    const size_t n = len_ - mark;
    if (n < 0x4000) [[likely]] {
      data_[mark - 2] = static_cast<uint8_t>(0x80 | (n & 0x7f));
      data_[mark - 1] = static_cast<uint8_t>(n >> 7);
      return;
    }
    // Keep the two bytes as the low groups and insert the rest.
    size_t extra = 0;
    for (size_t v = n >> 14; v; v >>= 7) ++extra;
    reserve_more(extra);
    std::memmove(data_ + mark + extra, data_ + mark, n);
    size_t at = mark - 2;
    size_t v = n;
    while (v >= 0x80) {
      data_[at++] = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    data_[at] = static_cast<uint8_t>(v);
    len_ += extra;
  }
  /// Starts a nested message with a 4-byte length (bodies up to 256 MiB).
  size_t begin_padded(uint32_t field) {
    reserve_more(16);
    varint_unchecked((static_cast<uint64_t>(field) << 3) | 2);
    len_ += 4;
    return len_;
  }
  void end_padded(size_t mark) {
    const size_t n = len_ - mark;
    uint8_t* p = data_ + mark - 4;
    p[0] = static_cast<uint8_t>(0x80 | (n & 0x7f));
    p[1] = static_cast<uint8_t>(0x80 | ((n >> 7) & 0x7f));
    p[2] = static_cast<uint8_t>(0x80 | ((n >> 14) & 0x7f));
    p[3] = static_cast<uint8_t>((n >> 21) & 0x7f);
  }

  /// Appends without a capacity check: the caller reserved 10 bytes.
  [[gnu::always_inline]] inline void varint_unchecked(uint64_t v) noexcept {
    while (v >= 0x80) {
      data_[len_++] = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    data_[len_++] = static_cast<uint8_t>(v);
  }

 private:
  [[gnu::noinline]] void grow(size_t need) {
    size_t cap = cap_ ? cap_ : 4096;
    while (cap < need) cap *= 2;
    auto* p = static_cast<uint8_t*>(std::realloc(data_, cap));
    if (!p) throw std::bad_alloc();
    data_ = p;
    cap_ = cap;
  }
  [[gnu::noinline]] void widen(size_t mark, size_t n) {
    size_t extra = 0;
    for (size_t v = n >> 7; v; v >>= 7) ++extra;
    reserve_more(extra);
    std::memmove(data_ + mark + extra, data_ + mark, n);
    size_t at = mark - 1;
    size_t v = n;
    while (v >= 0x80) {
      data_[at++] = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    data_[at] = static_cast<uint8_t>(v);
    len_ += extra;
  }

  uint8_t* data_ = nullptr;
  size_t len_ = 0;
  size_t cap_ = 0;
};

}  // namespace tracepipe::convert
