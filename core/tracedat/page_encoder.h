#pragma once
// Encodes records into one kernel sub-buffer ("page"), the inverse of
// kernel_page.h's decoder. encode_record() below is tracepipe's one record
// encoder: PageEncoder (the snapshot trace.dat writer) and PageBatch (the
// recorder and `replay -o`, core/record/page_batch.h) both call it.
//
//   try_append(ts, payload):
//     delta = ts - running           (running = page timestamp, then the last record's ts)
//     first record of the page      -> page timestamp = ts, delta 0
//     0 <= delta < 2^27             -> header {type_len, delta}
//     2^27 <= delta < 2^59          -> time extend {30, delta & mask, delta >> 27}, then delta 0
//     ts < running or delta >= 2^59 -> absolute stamp {31, ts & mask, ts >> 27}, then delta 0
//     payload (4-byte padded) <= 112 bytes -> type_len = len / 4
//     otherwise                    -> type_len 0, array[0] = len + 4, payload after it
//   A record never straddles pages: try_append returns false when it does
//   not fit, and the caller finishes this page and starts another.
//
// Mirrors kernel/trace/ring_buffer.c: rb_calculate_event_length,
// rb_update_event, rb_add_time_stamp, and the missed-events marking of
// ring_buffer_read_page. Not thread-safe; no allocation after construction.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "tracepipe/core/tracedat/kernel_page.h"

namespace tracepipe::kpage {

namespace detail {
// The record that needs a time extend, an absolute stamp or a length word.
bool encode_record_slow(std::byte* stream, uint32_t room, uint32_t& used, uint64_t& running,
                        bool first, uint64_t ts, const std::byte* payload, uint32_t plen) noexcept;

// Copies plen bytes and zero-fills up to len (= plen rounded up to 4, at
// least 4), with fixed-size moves instead of a call for the small records
// of a trace: overlapping 16/8/4-byte moves, never reading or writing
// outside [src, src + plen) and [dst, dst + len).
[[gnu::always_inline]] inline void copy_payload(std::byte* dst, const std::byte* src, uint32_t plen,
                                                uint32_t len) noexcept {
  if (len != plen) {  // the pad bytes: zero the last word first, the copy overwrites its head
    const uint32_t z = 0;
    std::memcpy(dst + len - 4, &z, 4);
  }
  if (plen >= 16) [[likely]] {
    if (plen > 128) [[unlikely]] {
      std::memcpy(dst, src, plen);
      return;
    }
    for (uint32_t o = 0; o + 16 < plen; o += 16) std::memcpy(dst + o, src + o, 16);
    std::memcpy(dst + plen - 16, src + plen - 16, 16);
  } else if (plen >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + plen - 8, src + plen - 8, 8);
  } else if (plen >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + plen - 4, src + plen - 4, 4);
  } else {
    for (uint32_t i = 0; i < plen; ++i) dst[i] = src[i];
  }
}
}  // namespace detail

/// Appends one record to a page's event stream: the one encoder every
/// tracepipe trace.dat writer uses (see the header comment for the cases).
/// `stream` is the page after its header; `used` its bytes in use; `room`
/// the bytes the stream may reach (data capacity, less what the caller
/// keeps, e.g. for a stored lost count); `running` the time of the previous
/// record; `first`: the page has no record yet (the record's delta is 0, its
/// time is the page's timestamp, which the caller sets). Updates `used` and
/// `running` and returns true, or returns false changing nothing when the
/// record does not fit in `room`. The caller bounds plen (max_payload).
/// The common record (delta < 2^27, payload <= 112 bytes) is inline: one
/// header word and the copy. No allocation; not thread-safe.
/// Mirrors kernel/trace/ring_buffer.c: rb_update_event, rb_add_time_stamp.
[[gnu::always_inline]] inline bool encode_record(std::byte* stream, uint32_t room, uint32_t& used,
                                                 uint64_t& running, bool first, uint64_t ts,
                                                 const std::byte* payload, uint32_t plen) noexcept {
  const uint32_t len = (plen + 3 + (plen == 0 ? 1 : 0)) & ~3u;
  const uint64_t delta =
      first ? 0 : ts - running;  // ts < running wraps: the slow path's absolute stamp
  if (len <= kMaxSmallData && delta <= kTsMask) [[likely]] {
    if (used + kEventHeaderSize + len > room) return false;
    std::byte* p = stream + used;
    const uint32_t w = (static_cast<uint32_t>(delta) << kTypeLenBits) | (len / kAlignment);
    std::memcpy(p, &w, 4);
    detail::copy_payload(p + kEventHeaderSize, payload, plen, len);
    used += kEventHeaderSize + len;
    running = ts;
    return true;
  }
  return detail::encode_record_slow(stream, room, used, running, first, ts, payload, plen);
}

class PageEncoder {
 public:
  /// Throws std::invalid_argument if layout.page_size is smaller than the
  /// header plus one minimal record, or commit_size is not 4 or 8.
  explicit PageEncoder(PageLayout layout);

  /// Bytes a record of `payload_size` takes in a page, without any time
  /// extend (4-byte header + padded payload [+ 4-byte length]).
  /// Mirrors kernel/trace/ring_buffer.c: rb_calculate_event_length.
  static uint32_t record_size(uint32_t payload_size) noexcept;
  /// Largest payload that fits in an empty page of `layout` (room is kept
  /// for a time stamp record and the stored lost-events count).
  static uint32_t max_payload(const PageLayout& layout) noexcept;

  /// Appends one record (payload starting at common_type). Returns false,
  /// changing nothing, if it does not fit in the rest of this page. An empty
  /// payload is stored as 4 zero bytes (the kernel bumps length 0 to 1).
  bool try_append(uint64_t ts, std::span<const std::byte> payload) noexcept;

  /// Marks the page as following lost events: `count` events if known
  /// (stored after the data when there is room, RB_MISSED_STORED), or an
  /// unknown number (nullopt). Call before finish().
  void mark_missed(std::optional<uint64_t> count) noexcept;

  /// Writes the header (timestamp, commit) and returns the whole page
  /// (page_size bytes, zero-filled after the data). The span is valid until
  /// the next call that modifies the encoder. Call reset() to start a new page.
  std::span<const std::byte> finish() noexcept;
  void reset() noexcept;

  bool empty() const noexcept { return used_ == 0; }
  uint32_t records() const noexcept { return records_; }
  /// Bytes of event stream used so far.
  uint32_t used() const noexcept { return used_; }
  /// Time stamp of the last record appended (the page timestamp if none).
  uint64_t last_ts() const noexcept { return running_; }
  const PageLayout& layout() const noexcept { return layout_; }

 private:
  PageLayout layout_;
  std::vector<std::byte> page_;
  uint32_t used_ = 0;  // bytes of event stream
  uint32_t records_ = 0;
  uint64_t page_ts_ = 0;
  uint64_t running_ = 0;
  bool missed_ = false;
  std::optional<uint64_t> lost_;
};

}  // namespace tracepipe::kpage
