#pragma once
// buffers/readers.h — reading a RingBuffer: consuming reader (like
// trace_pipe), non-consuming iterator (like the `trace` file), snapshot of a
// paused buffer (oldest or newest first), a by-time-stamp merge over CPUs,
// and a waiter with a watermark (like buffer_percent).
//
// ══ How a reader reads without tearing (see ring_buffer.h I1-I4) ════════════
//   1. pin the oldest LIVE sub-buffer (position word pins+1, CAS checking its
//      lap): from now on nobody zeroes or reuses it;
//   2. walk its committed records from read_off (acquire loads of header
//      words; stop at the first zero word) and copy them out in one memcpy;
//   3. unpin (release).
//   A consuming reader, still holding the pin, moves read_off over what it
//   copied with a CAS that checks the lap and the expected read_off: it has
//   taken them, like the kernel's reader page. It then hands the copies out
//   one by one, counting each as read. A recycler cannot run while the pin
//   is held, and another consuming reader that took the same records first
//   makes the CAS fail (the copies are dropped). So each record is counted
//   exactly once, as read or as overrun (I4), and two consuming readers of
//   one CPU never hand out the same record. Taken records not yet handed
//   out still count in stats().entries (CpuBuffer::held) but an Iterator no
//   longer sees them; when the reader is destroyed they count as read.
//   A sub-buffer whose read_off reached its end is freed by the reader
//   (zeroed, FREE) so writers find it ready.
//   The kernel swaps a spare "reader page" into the ring instead; pinning
//   keeps one protocol for all readers at the price of a copy on the read
//   side. While pinned (one memcpy of <= S bytes), an overwrite writer that
//   laps the whole buffer onto that sub-buffer drops its record (lost_busy).
//
// Thread-safety: a reader object is used by one thread at a time; any number
// of reader objects, of any kind, may run beside any number of writers.
// Readers allocate (their copy buffers); writers never wait for them, and
// never wake them: a blocked wait() polls (see ConsumingReader::wait).
// A reader (and a Snapshot) must not outlive its buffer.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tracepipe/buffers/record.h"
#include "tracepipe/buffers/ring_buffer.h"

namespace tracepipe::buffers {

enum class WaitResult : uint8_t { ready, timeout };

/// How long ConsumingReader::wait() sleeps before it looks again: the bound
/// on its latency after the watermark is reached (see wait()).
inline constexpr std::chrono::nanoseconds kWaitPollInterval = std::chrono::milliseconds(1);

namespace detail {
/// A record copied out of a sub-buffer: where it sits in the reader's copy.
struct CopiedRecord {
  uint32_t copy_off;  // payload offset in the copy
  uint32_t len;
  uint64_t ts;
  uint64_t end;  // offset in the sub-buffer just after the record
};

/// A reader's place: sub-buffer (lap, idx) and offset in it; with the
/// stepping and skipping shared by ConsumingReader and Iterator.
struct ReadCursor {
  uint64_t lap = 0;
  uint64_t idx = 0;
  void step(const CpuBuffer& cb) noexcept;
  /// When (lap, idx) no longer holds its data: move to the oldest sub-buffer
  /// that may (at most one lap behind the tail `tail_pos`).
  void skip(const CpuBuffer& cb, uint64_t tail_pos) noexcept;
  /// The oldest sub-buffer that can still hold data: one lap behind the tail.
  void oldest(const CpuBuffer& cb, uint64_t tail_pos) noexcept;
  bool at_tail(uint64_t tail_pos) const noexcept {
    return tail_lap(tail_pos) == lap && tail_idx(tail_pos) == idx;
  }
};
}  // namespace detail

/// Consuming reader of one CPU. Mirrors kernel/trace/ring_buffer.c:
/// ring_buffer_consume (and trace_pipe's blocking read via wait()).
class ConsumingReader {
 public:
  /// Throws std::out_of_range when cpu >= rb.cpus().
  ConsumingReader(const RingBufferBase& rb, uint32_t cpu);
  ConsumingReader(ConsumingReader&& o) noexcept;
  ConsumingReader& operator=(ConsumingReader&&) = delete;
  ~ConsumingReader();

  /// The oldest committed record not yet consumed, now consumed (counted in
  /// stats().read); nullopt when none is committed now (a pending record
  /// also hides the ones after it, I2). The view is valid until the next
  /// call on this reader.
  std::optional<RecordView> next();

  /// Blocks until a record can be read (percent == 0), or until `percent`
  /// of the sub-buffers are full and unread (1..100, like buffer_percent),
  /// or until `timeout`; returns at once when that already holds.
  /// Writers never wake the waiter: the write path makes no system call
  /// (ring_buffer.h, "Costs"). The waiter polls instead: it looks, and if
  /// not ready sleeps one slice of kWaitPollInterval (1 ms; less when the
  /// timeout is nearer) and looks again. Latency bound: wait() returns at
  /// most kWaitPollInterval after the commit or sub-buffer switch that
  /// reached the watermark, plus the scheduler's delay in waking the thread.
  /// Cost: about 1000 wake-ups per second while it waits (each a look at
  /// one position word, or a refill when percent == 0), on the reader's
  /// thread only. Each slice that ends is counted in CpuBuffer::wait_polls.
  /// The kernel likewise keeps the wake-up out of the writer's context
  /// (rb_wakeups queues an irq_work); user space has no such deferral, so
  /// the waiter pays a bounded delay instead of the writer a syscall.
  /// Same thread rules as next().
  /// Mirrors kernel/trace/ring_buffer.c: ring_buffer_wait / full_hit.
  WaitResult wait(unsigned percent, std::chrono::nanoseconds timeout);

  uint32_t cpu() const noexcept { return cpu_; }

 private:
  bool refill();
  bool advance_read_off(uint64_t from, uint64_t to) noexcept;
  uint64_t full_unread() const noexcept;
  void publish() noexcept;

  detail::CpuBuffer* cb_;
  uint32_t cpu_;
  detail::ReadCursor cur_;
  std::vector<std::byte> copy_;
  std::vector<detail::CopiedRecord> recs_;
  size_t next_ = 0;
};

/// Non-consuming iterator of one CPU: yields the records in the buffer, oldest
/// first, without consuming them. Runs beside writers; it sees a record if it
/// is committed when the iterator reaches it, and skips sub-buffers recycled
/// before it got there. nullopt = nothing more now; calling next() again
/// later continues from there (new records included).
/// Mirrors ring_buffer_read_start / ring_buffer_iter_peek / rb_advance_iter.
class Iterator {
 public:
  Iterator(const RingBufferBase& rb, uint32_t cpu);  // throws std::out_of_range
  std::optional<RecordView> next();
  uint32_t cpu() const noexcept { return cpu_; }

 private:
  bool refill();

  detail::CpuBuffer* cb_;
  uint32_t cpu_;
  detail::ReadCursor cur_;
  uint64_t off_ = 0;  // next offset to look at in (cur_.lap, cur_.idx)
  std::vector<std::byte> copy_;
  std::vector<detail::CopiedRecord> recs_;
  size_t next_ = 0;
};

/// A consistent view of one CPU of a paused buffer: every committed, not yet
/// consumed record, oldest first (records()) or newest first (newest_first()).
/// Zero-copy: the views point into the buffer, whose sub-buffers stay pinned
/// until the Snapshot is destroyed. Records reserved before pause() and
/// committed after take() are not in it. Mirrors perf's reading of a paused
/// overwrite (backward) ring buffer.
class Snapshot {
 public:
  /// nullopt when the buffer is not paused or cpu is unknown.
  static std::optional<Snapshot> take(const RingBufferBase& rb, uint32_t cpu);
  Snapshot(Snapshot&& o) noexcept;
  Snapshot& operator=(Snapshot&&) = delete;
  Snapshot(const Snapshot&) = delete;
  ~Snapshot();

  const std::vector<RecordView>& records() const noexcept { return recs_; }  ///< oldest first
  /// Newest first (a range over records() reversed).
  struct Reversed {
    std::vector<RecordView>::const_reverse_iterator b, e;
    auto begin() const noexcept { return b; }
    auto end() const noexcept { return e; }
  };
  Reversed newest_first() const noexcept { return {recs_.rbegin(), recs_.rend()}; }
  size_t size() const noexcept { return recs_.size(); }

 private:
  explicit Snapshot(detail::CpuBuffer* cb) noexcept : cb_(cb) {}
  detail::CpuBuffer* cb_;
  std::vector<uint64_t> pinned_;  // positions to unpin
  std::vector<RecordView> recs_;
};

/// Merges per-CPU sources (ConsumingReader or Iterator) by time stamp; equal
/// stamps go lowest CPU first. Each call polls the CPUs that have no record
/// buffered, so on a live buffer a CPU that is late to commit can yield a
/// record older than one already returned (as trace_pipe). The view is valid
/// until the next call. With ConsumingReader sources, the records buffered
/// as heads when a Merged is destroyed were already consumed (counted read).
/// Mirrors kernel/trace/trace.c: __find_next_entry.
template <class Source>
class Merged {
 public:
  explicit Merged(std::vector<Source> sources) : src_(std::move(sources)), head_(src_.size()) {}
  std::optional<RecordView> next() {
    size_t best = src_.size();
    for (size_t i = 0; i < src_.size(); ++i) {
      if (!head_[i]) head_[i] = src_[i].next();
      if (head_[i] && (best == src_.size() || head_[i]->ts < head_[best]->ts)) best = i;
    }
    if (best == src_.size()) return std::nullopt;
    std::optional<RecordView> r = head_[best];
    head_[best].reset();
    return r;
  }
  std::vector<Source>& sources() noexcept { return src_; }

 private:
  std::vector<Source> src_;
  std::vector<std::optional<RecordView>> head_;
};

/// All CPUs of `rb`, consumed, merged by time stamp.
Merged<ConsumingReader> merged_consumer(const RingBufferBase& rb);
/// All CPUs of `rb`, not consumed, merged by time stamp.
Merged<Iterator> merged_iterator(const RingBufferBase& rb);

}  // namespace tracepipe::buffers
