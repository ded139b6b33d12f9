#pragma once
// Encodes records into one kernel sub-buffer ("page"), the inverse of
// kernel_page.h's decoder. Used by the trace.dat writer.
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
#include <span>
#include <vector>

#include "tracepipe/core/tracedat/kernel_page.h"

namespace tracepipe::kpage {

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
  void put_word(uint32_t w) noexcept;

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
