#pragma once
// The layout of one record inside a sub-buffer, and what readers hand out.
//
// A sub-buffer of S bytes holds records back to back from offset 0, each
// aligned to 8 bytes:
//
//   [hdr|payload.. pad][hdr|payload][hdr discarded..][hdr|payload]..[word END] 0 0 0 ..
//
//   hdr  = { u32 word; u32 stride; u64 ts }            16 bytes (kHeaderSize)
//   word = payload_len << 2 | kind                     written LAST, release
//   stride = bytes the record occupies, stored with ts when it is reserved
//            (D), before the word: a reservation that is never committed
//            (its writer died; a crash-recovered flight file, core/recover)
//            can then be stepped over without being read as a record
//   kind 0 = not committed (the sub-buffer is zeroed before reuse, so an
//            unwritten header reads 0); 1 = data; 2 = discarded (padding the
//            readers skip, length kept); 3 = end of this sub-buffer (only the
//            word is present: it may sit in the last 8 bytes).
//
// Mirrors include/linux/ring_buffer.h: struct ring_buffer_event (type_len
// PADDING for both "discarded" and "rest of page empty"). The kernel packs a
// 27-bit time delta into the header; tracepipe keeps a full 64-bit stamp per
// record, which costs 8 bytes a record and saves the TIME_EXTEND machinery.
#include <cstddef>
#include <cstdint>
#include <span>

namespace tracepipe::buffers {

/// One record as readers hand it out. `payload` points into the reader's
/// own copy (or, for a Snapshot, into the paused buffer) and stays valid
/// until the next call on the same reader. `ts` is the trace-clock stamp (ns
/// with the usual clocks) taken when the record entered the ring buffer.
struct RecordView {
  uint64_t ts = 0;
  uint32_t cpu = 0;
  std::span<const std::byte> payload;
};

namespace detail {

struct RecordHeader {
  uint32_t word;    // accessed through std::atomic_ref; see kind_*
  uint32_t stride;  // stride_for(payload length); plain, written at reserve (D) with ts
  uint64_t ts;      // plain; written before the word is released
};
static_assert(sizeof(RecordHeader) == 16);

inline constexpr uint32_t kKindNone = 0;
inline constexpr uint32_t kKindData = 1;
inline constexpr uint32_t kKindPadding = 2;
inline constexpr uint32_t kKindEnd = 3;
inline constexpr uint64_t kHeaderSize = sizeof(RecordHeader);
inline constexpr uint64_t kRecordAlign = 8;

/// Bytes a record of `payload_len` bytes occupies in a sub-buffer.
/// Mirrors kernel/trace/ring_buffer.c: rb_calculate_event_length.
[[gnu::always_inline]] constexpr uint64_t stride_for(uint64_t payload_len) noexcept {
  return kHeaderSize + ((payload_len + kRecordAlign - 1) & ~(kRecordAlign - 1));
}
constexpr uint32_t make_word(uint32_t kind, uint64_t payload_len) noexcept {
  return static_cast<uint32_t>(payload_len << 2) | kind;
}
constexpr uint32_t word_kind(uint32_t word) noexcept { return word & 3u; }
constexpr uint64_t word_len(uint32_t word) noexcept { return word >> 2; }

}  // namespace detail
}  // namespace tracepipe::buffers
