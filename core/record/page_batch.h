#pragma once
// core/record/page_batch.h — kernel sub-buffers ("pages", the layout of
// trace_pipe_raw and of trace.dat's CPU data) encoded straight from a ring
// sub-buffer walk, back to back in one preallocated batch that a sink
// writes in one call.
//
//   batch (capacity N pages, one allocation at construction):
//   ┌────────┬────────┬────────┬─────────────┬─────────┐
//   │ page 0 │ page 1 │ page 2 │ open page   │ free .. │
//   │finished│finished│finished│(being filled)│         │
//   └────────┴────────┴────────┴─────────────┴─────────┘
//   finished() = pages 0..k-1; take_finished() moves the open page to the front.
//
// Encoding per record: kpage::encode_record (core/tracedat/page_encoder.h),
// the one encoder the snapshot writer uses too; mirrors
// kernel/trace/ring_buffer.c rb_update_event, rb_add_time_stamp:
//   first record of a page         -> page timestamp = ts, delta 0
//   0 <= delta < 2^27               -> {type_len, delta}
//   2^27 <= delta < 2^59            -> time extend (type 30), then delta 0
//   ts went back, or delta >= 2^59  -> absolute stamp (type 31), then delta 0
//   payload padded to 4; <= 112 bytes: type_len = len/4, else type_len 0 + length word
// Pages are filled densely (a page closes when the next record does not fit),
// so a ring sub-buffer of S bytes lands in at most two pages of S bytes.
//
// Losses: mark_lost(n) flags the page that receives the next record (or the
// open page, if empty) with RB_MISSED_EVENTS and stores the count
// (RB_MISSED_STORED), which `trace-cmd report` prints as [n EVENTS DROPPED]
// before that page's first record.
//
// Checkpoint/rollback: checkpoint() remembers where the batch is; rollback()
// forgets every record added since (SubbufReader calls it when another
// reader took the sub-buffer first).
//
// Thread-safety: none; one recorder thread owns a batch. No allocation after
// construction.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>

#include "tracepipe/core/tracedat/kernel_page.h"
#include "tracepipe/core/tracedat/page_encoder.h"

namespace tracepipe::record {

class PageBatch {
 public:
  /// `page_size`: bytes per page (a power of two, >= 256); `capacity`: pages
  /// in the batch (>= 3). 64-bit page header (8-byte commit). Throws
  /// std::invalid_argument otherwise.
  PageBatch(uint32_t page_size, uint32_t capacity) : ps_(page_size), cap_(capacity) {
    if (page_size < 256 || (page_size & (page_size - 1)) != 0 || page_size > (1u << 27))
      throw std::invalid_argument("page batch: page size must be a power of two in [256, 2^27]");
    if (capacity < 3) throw std::invalid_argument("page batch: capacity must be at least 3 pages");
    mem_ = std::make_unique<std::byte[]>(size_t{page_size} * capacity);
    // Largest payload: room for a stamp record (8), the length word (4), the
    // header word (4) and a stored lost count (8), as PageEncoder::max_payload.
    max_payload_ = (ps_ - kHdr - 24) & ~3u;
    open_page();
  }

  /// Adds one record (payload from common_type). A payload larger than
  /// max_payload() is not stored: counted in too_big() and marked lost.
  /// The common record is kpage::encode_record's inline case; a full page,
  /// a time extend or a long record take the out-of-line path.
  [[gnu::always_inline]] void record(uint64_t ts, std::span<const std::byte> payload) noexcept {
    const bool first = used_ == 0;
    // A page carrying a loss mark keeps 8 bytes for the count (RB_MISSED_STORED).
    const uint32_t room = cap_data() - (lost_ != 0 ? 8 : 0);
    if (!kpage::encode_record(cur() + kHdr, room, used_, running_, first, ts, payload.data(),
                              static_cast<uint32_t>(payload.size()))) [[unlikely]] {
      record_slow(ts, payload);
      return;
    }
    if (first) page_ts_ = ts;
    ++records_;
  }

  /// Records that `n` events were lost before the next record added.
  void mark_lost(uint64_t n) noexcept {
    if (n == 0) return;
    if (used_ != 0) {  // the loss comes after this page's records: flag the next page
      close_page();
      open_page();
    }
    lost_ += n;
  }

  /// Records that an unknown number of events were lost before the next
  /// record (RB_MISSED_EVENTS without a count: `[EVENTS DROPPED]`).
  void mark_missed_unknown() noexcept {
    if (used_ != 0) {
      close_page();
      open_page();
    }
    missed_unknown_ = true;
  }

  /// A loss mark waits for a record: the open page is empty and flagged.
  bool mark_waiting() const noexcept { return used_ == 0 && (lost_ != 0 || missed_unknown_); }
  /// The count the open page's mark carries (0: none).
  uint64_t pending_lost() const noexcept { return lost_; }

  void checkpoint() noexcept {
    ck_ = {done_, used_, running_, page_ts_, lost_, records_, too_big_, done_records_, done_lost_};
  }
  void rollback() noexcept {
    done_ = ck_.done;
    used_ = ck_.used;
    running_ = ck_.running;
    page_ts_ = ck_.page_ts;
    lost_ = ck_.lost;
    records_ = ck_.records;
    too_big_ = ck_.too_big;
    done_records_ = ck_.done_records;
    done_lost_ = ck_.done_lost;
  }

  /// Closes the open page if it holds records (a flush), or, with
  /// `even_if_empty`, only a loss mark (the end of a recording).
  void close_open(bool even_if_empty = false) noexcept {
    if (used_ == 0 && ((lost_ == 0 && !missed_unknown_) || !even_if_empty)) return;
    close_page();
    open_page();
  }
  /// Finished pages, ready to write (page_size() * n bytes).
  std::span<const std::byte> finished() const noexcept { return {mem_.get(), size_t{done_} * ps_}; }
  uint32_t finished_pages() const noexcept { return done_; }
  /// Records in the finished pages.
  uint64_t finished_records() const noexcept { return done_records_; }
  /// Lost events whose marks the finished pages carry (mark_lost's counts;
  /// a mark_missed_unknown() counts 1).
  uint64_t finished_lost() const noexcept { return done_lost_; }
  /// Drops the finished pages (written, or given up); the open page moves to the front.
  void take_finished() noexcept {
    if (done_ != 0) std::memmove(mem_.get(), cur(), kHdr + used_);
    done_ = 0;
    done_records_ = 0;
    done_lost_ = 0;
    ck_.done = 0;
    ck_.done_records = 0;
    ck_.done_lost = 0;
  }
  /// Free pages after the open one: consume a ring sub-buffer only when >= 2.
  uint32_t room() const noexcept { return cap_ - done_ - 1; }
  /// Records in the open page.
  uint64_t open_records() const noexcept { return records_; }
  uint32_t page_size() const noexcept { return ps_; }
  uint32_t max_payload() const noexcept { return max_payload_; }
  /// Records not stored because they are larger than a page holds.
  uint64_t too_big() const noexcept { return too_big_; }

 private:
  static constexpr uint32_t kHdr = 16;  // u64 timestamp + u64 commit
  uint32_t cap_data() const noexcept { return ps_ - kHdr; }
  std::byte* cur() const noexcept { return mem_.get() + size_t{done_} * ps_; }
  // The record did not fit the open page (or is too big for any page).
  [[gnu::noinline]] void record_slow(uint64_t ts, std::span<const std::byte> payload) noexcept {
    if (payload.size() > max_payload_) {
      ++too_big_;
      mark_lost(1);
      return;
    }
    close_page();
    open_page();
    // An empty page takes any payload up to max_payload (room for a stamp and a count).
    (void)kpage::encode_record(cur() + kHdr, cap_data() - (lost_ != 0 ? 8 : 0), used_, running_,
                               true, ts, payload.data(), static_cast<uint32_t>(payload.size()));
    page_ts_ = ts;
    ++records_;
  }
  void open_page() noexcept {
    used_ = 0;
    records_ = 0;
    page_ts_ = running_;
  }
  // Writes the header and zero-fills the rest; the page becomes finished.
  void close_page() noexcept {
    std::byte* page = cur();
    uint64_t commit = used_;
    std::memset(page + kHdr + used_, 0, ps_ - kHdr - used_);
    if (missed_unknown_ && lost_ == 0) {
      commit |= kpage::kMissedEvents;
      ++done_lost_;
    }
    missed_unknown_ = false;
    if (lost_ != 0) {
      commit |= kpage::kMissedEvents;
      if (used_ + 8 <= cap_data()) {
        std::memcpy(page + kHdr + used_, &lost_, 8);
        commit |= kpage::kMissedStored;
      }
      done_lost_ += lost_;
      lost_ = 0;
    }
    std::memcpy(page, &page_ts_, 8);
    std::memcpy(page + 8, &commit, 8);
    done_records_ += records_;
    ++done_;
  }

  struct Checkpoint {
    uint32_t done = 0, used = 0;
    uint64_t running = 0, page_ts = 0, lost = 0, records = 0, too_big = 0, done_records = 0,
             done_lost = 0;
  };
  uint32_t ps_, cap_;
  uint32_t max_payload_ = 0;
  std::unique_ptr<std::byte[]> mem_;
  uint32_t done_ = 0;  // finished pages at the front
  uint32_t used_ = 0;  // bytes of event stream in the open page
  uint64_t running_ = 0, page_ts_ = 0;
  uint64_t lost_ = 0;            // to mark on the open page
  bool missed_unknown_ = false;  // the open page follows an unknown number of lost events
  uint64_t records_ = 0, done_records_ = 0, too_big_ = 0;
  uint64_t done_lost_ = 0;  // lost events marked in the finished pages
  Checkpoint ck_;
};

}  // namespace tracepipe::record
