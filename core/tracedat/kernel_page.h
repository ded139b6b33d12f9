#pragma once
// The kernel ring buffer's sub-buffer ("page") layout, as stored in
// trace_pipe_raw and in trace.dat's per-CPU data, and its decoder.
//
//   offset 0            8                 8+L (L = kernel long: 8, or 4 on 32-bit)
//   +-------------------+-----------------+--------------------------------------+
//   | u64 timestamp     | long commit     | event stream (commit & 0x7ffffff bytes)
//   +-------------------+-----------------+--------------------------------------+
//     commit bit 31: events were lost before this page (RB_MISSED_EVENTS)
//     commit bit 30: the lost count is stored as a long right after the
//                    event stream (RB_MISSED_STORED)
//
// Each event starts with a 32-bit word {type_len:5, time_delta:27} (little
// endian: type_len in bits 0..4):
//
//   type_len 1..28 : data, payload = 4*type_len bytes right after the word
//   type_len 0     : data, u32 L follows, payload = L-4 bytes after it
//   type_len 29    : padding. time_delta 0 = the rest of the page is empty;
//                    otherwise u32 L follows and 4+L bytes are skipped (a
//                    discarded event; its delta still advances the clock, as
//                    libtraceevent's kbuffer does)
//   type_len 30    : time extend, u32 hi: delta = (hi << 27) | time_delta
//   type_len 31    : absolute time stamp, u32 hi: ts = (hi << 27) | time_delta,
//                    top 5 bits (59..63) kept from the running time
//
// Time: running = page timestamp; each record adds its delta (type 31 sets
// it); a data record's time stamp is the running value after its own delta.
//
// Trust boundary: parse_page_untrusted() validates the header; PageCursor
// bounds-checks every record against the committed length, so no byte
// pattern can make it read outside the page. Decoding is zero-copy: payloads
// are spans into the page.
//
// Mirrors include/linux/ring_buffer.h (struct ring_buffer_event, enum
// ring_buffer_type), kernel/trace/ring_buffer.c (struct buffer_data_page,
// ring_buffer_print_page_header, ring_buffer_print_entry_header,
// rb_event_length), and libtraceevent src/kbuffer-parse.c.
//
// Only little-endian data is decoded (the reader rejects big-endian files).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tracepipe::kpage {

// ---- record header encoding (include/linux/ring_buffer.h) ----
inline constexpr uint32_t kTypeLenBits = 5;
inline constexpr uint32_t kTsShift = 27;  ///< bits of time_delta in the header word
inline constexpr uint32_t kTsMask = (1u << kTsShift) - 1;
inline constexpr uint32_t kTypeDataMax = 28;     ///< RINGBUF_TYPE_DATA_TYPE_LEN_MAX
inline constexpr uint32_t kTypePadding = 29;     ///< RINGBUF_TYPE_PADDING
inline constexpr uint32_t kTypeTimeExtend = 30;  ///< RINGBUF_TYPE_TIME_EXTEND
inline constexpr uint32_t kTypeTimeStamp = 31;   ///< RINGBUF_TYPE_TIME_STAMP
inline constexpr uint32_t kAlignment = 4;        ///< RB_ALIGNMENT
inline constexpr uint32_t kMaxSmallData = kTypeDataMax * kAlignment;  ///< RB_MAX_SMALL_DATA (112)
inline constexpr uint32_t kEventHeaderSize = 4;                       ///< RB_EVNT_HDR_SIZE

// ---- sub-buffer header (kernel/trace/ring_buffer.c: struct buffer_data_page) ----
inline constexpr uint64_t kCommitMask = (1u << 27) - 1;  ///< length bits of `commit`
inline constexpr uint64_t kMissedEvents = 1u << 31;      ///< RB_MISSED_EVENTS
inline constexpr uint64_t kMissedStored = 1u << 30;      ///< RB_MISSED_STORED

/// The page header of a 64-bit kernel, fixed-width. The writer emits
/// header_page text from this struct (offsetof/sizeof), as the kernel does
/// from struct buffer_data_page.
struct PageHeader64 {
  uint64_t timestamp;
  uint64_t commit;  ///< local_t: length | kMissedEvents | kMissedStored
};
static_assert(offsetof(PageHeader64, timestamp) == 0);
static_assert(offsetof(PageHeader64, commit) == 8);
static_assert(sizeof(PageHeader64) == 16);

/// The page header of a 32-bit kernel (long commit is 4 bytes).
struct PageHeader32 {
  uint64_t timestamp;
  uint32_t commit;
};
static_assert(offsetof(PageHeader32, commit) == 8);
static_assert(offsetof(PageHeader32, commit) + sizeof(uint32_t) == 12);

/// Geometry of the pages in one file: sub-buffer size and header width.
struct PageLayout {
  uint32_t page_size = 4096;  ///< bytes per sub-buffer, header included
  uint32_t commit_size = 8;   ///< bytes of `commit` (the kernel's long): 4 or 8
  /// Bytes before the event stream: 8 + commit_size (12 or 16).
  constexpr uint32_t header_size() const noexcept { return 8 + commit_size; }
  /// Bytes of event stream a page can hold.
  constexpr uint32_t data_capacity() const noexcept { return page_size - header_size(); }
  friend constexpr bool operator==(const PageLayout&, const PageLayout&) = default;
};

/// The header_page text the kernel prints for `layout` (events/header_page).
/// For 64-bit, 4096-byte pages this is byte-identical to the kernel's file.
/// Mirrors kernel/trace/ring_buffer.c: ring_buffer_print_page_header.
std::string header_page_text(const PageLayout& layout);

/// The header_event text (events/header_event), identical to the kernel's.
/// Mirrors kernel/trace/ring_buffer.c: ring_buffer_print_entry_header.
std::string header_event_text();

// ---- errors ----

/// Why a page was rejected. One table of messages: page_error_text().
enum class PageErr : uint8_t {
  none,
  short_page,        ///< fewer bytes than the page header
  commit_too_large,  ///< committed length exceeds the page's data capacity
  truncated_header,  ///< a record's 4-byte header word crosses the commit end
  truncated_length,  ///< a record's length/extend word crosses the commit end
  bad_length,        ///< type_len 0 or padding length < 4, or not a multiple of 4 where required
  record_overruns,   ///< record payload extends past the commit end
};

/// Human-readable text of `e` (one table, static strings).
std::string_view page_error_text(PageErr e) noexcept;

/// A decode error: what and where (byte offset from the start of the page).
struct PageError {
  PageErr code = PageErr::none;
  uint32_t offset = 0;
  explicit operator bool() const noexcept { return code != PageErr::none; }
};

// ---- decoding ----

/// One data record of a page. `payload` starts at common_type; its length
/// is the record's stored length (4-byte aligned, may include tail padding).
struct PageRecord {
  uint64_t ts;                         ///< absolute time stamp, trace-clock units (ns)
  std::span<const std::byte> payload;  ///< points into the page
};

/// A page whose header has been validated.
struct PageView {
  uint64_t timestamp = 0;               ///< time base of the first record
  std::span<const std::byte> data;      ///< the committed event stream
  uint32_t data_offset = 16;            ///< offset of `data` within the page (header size)
  bool missed_events = false;           ///< RB_MISSED_EVENTS: events were lost before this page
  std::optional<uint64_t> lost_events;  ///< the stored count, when RB_MISSED_STORED is set
};

/// Result of parse_page_untrusted: a view, or an error.
struct PageParse {
  std::optional<PageView> page;
  PageError error;
};

/// Validates a sub-buffer's header and returns a view of its committed
/// records. `page` may be shorter than layout.page_size only if the commit
/// fits (it is then treated as the page). Never reads outside `page`.
/// The records themselves are checked by PageCursor as they are decoded.
/// Mirrors libtraceevent kbuffer_load_subbuffer and ring_buffer_read_page.
PageParse parse_page_untrusted(std::span<const std::byte> page, const PageLayout& layout) noexcept;

/// Counts of what a page walk met besides data records.
struct PageWalkCounts {
  uint32_t data = 0;          ///< data records returned
  uint32_t discarded = 0;     ///< padding records with a length (discarded events)
  uint32_t time_extends = 0;  ///< type 30 records
  uint32_t time_stamps = 0;   ///< type 31 records
};

/// Decodes the data records of a validated page, one at a time, zero-copy.
/// Every record is bounds-checked against the committed length; on a
/// malformed record next() returns nullopt and error() says what and where.
/// Cheap to copy; not thread-safe (one cursor per thread).
class PageCursor {
 public:
  PageCursor() = default;
  explicit PageCursor(const PageView& page) noexcept
      : base_(page.data.data()),
        pos_(0),
        end_(static_cast<uint32_t>(page.data.size())),
        data_offset_(page.data_offset),
        ts_(page.timestamp) {}

  /// The next data record, or nullopt at the end of the page or on error.
  [[gnu::always_inline]] inline std::optional<PageRecord> next() noexcept {
    while (pos_ + kEventHeaderSize <= end_) {
      uint32_t word;
      std::memcpy(&word, base_ + pos_, 4);
      const uint32_t type_len = word & ((1u << kTypeLenBits) - 1);
      const uint32_t delta = word >> kTypeLenBits;
      if (type_len != 0 && type_len <= kTypeDataMax) [[likely]] {
        const uint32_t len = type_len * kAlignment;
        const uint32_t start = pos_ + kEventHeaderSize;
        if (start + len > end_) [[unlikely]]
          return fail(PageErr::record_overruns);
        ts_ += delta;
        pos_ = start + len;
        ++counts_.data;
        return PageRecord{ts_, {base_ + start, len}};
      }
      if (!next_slow(type_len, delta)) return std::nullopt;
      if (pending_) {
        pending_ = false;
        ++counts_.data;
        return PageRecord{ts_, {base_ + pending_start_, pending_len_}};
      }
    }
    if (pos_ != end_ && error_.code == PageErr::none) return fail(PageErr::truncated_header);
    return std::nullopt;
  }

  /// The first decode error, if any (offset from the start of the page).
  PageError error() const noexcept { return error_; }
  /// Running time after the last record decoded.
  uint64_t running_ts() const noexcept { return ts_; }
  /// What the walk has met so far.
  const PageWalkCounts& counts() const noexcept { return counts_; }

 private:
  // Handles type_len 0 (long data), padding, time extend and time stamp.
  // Returns false at the end of the page or on error; sets pending_ when a
  // long data record was decoded.
  [[gnu::noinline]] bool next_slow(uint32_t type_len, uint32_t delta) noexcept;
  std::nullopt_t fail(PageErr e) noexcept;

  const std::byte* base_ = nullptr;
  uint32_t pos_ = 0;
  uint32_t end_ = 0;
  uint32_t data_offset_ = 16;
  uint64_t ts_ = 0;
  bool pending_ = false;
  uint32_t pending_start_ = 0;
  uint32_t pending_len_ = 0;
  PageWalkCounts counts_;
  PageError error_;
};

/// Walks a whole page: validates header and every record. Returns the
/// counts, or the first error. For callers that only need to check a page
/// (fuzzing, verification); readers use PageCursor directly.
struct PageCheck {
  PageWalkCounts counts;
  PageError error;
  uint64_t last_ts = 0;
};
PageCheck check_page_untrusted(std::span<const std::byte> page, const PageLayout& layout) noexcept;

}  // namespace tracepipe::kpage
