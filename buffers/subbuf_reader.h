#pragma once
// buffers/subbuf_reader.h — a consuming reader that takes whole sub-buffers,
// for recorders (core/record/): the committed records of the oldest unread
// sub-buffer are visited in place, while it is pinned, and consumed with one
// CAS of its read_off, as the kernel's reader-page swap hands trace_pipe_raw
// a whole page (kernel/trace/ring_buffer.c: ring_buffer_read_page).
//
//   SubbufReader rd(ring, cpu);
//   while (rd.consume(sink, /*include_open=*/false) == Taken::records) {}
//   sink: void record(uint64_t ts, std::span<const std::byte> payload);
//         void rollback();   // the CAS failed: forget what record() saw
//
// Protocol (ring_buffer.h I1-I4, readers.h "How a reader reads"):
//   1. pin the sub-buffer the cursor is at (LIVE, the cursor's lap);
//   2. walk its committed records from read_off, calling sink.record() for
//      each data record; the payload spans point into the ring and are valid
//      only during the call;
//   3. a closed sub-buffer walked to its END (or S): one CAS consumes the
//      records and frees it for writers, dropping the pin (consume_and_free:
//      from LIVE with this pin alone and read_off where the walk began, to
//      PREPARING; zeroed; FREE). Otherwise, or when that CAS finds another
//      pin or a hold, CAS read_off forward over what was walked (to S when
//      the sub-buffer is closed), unpin, and free it if fully consumed. The
//      records are counted once in `read`. If the CAS fails, another
//      consuming reader took them first: sink.rollback() is called and
//      nothing is counted;
//   4. step to the next sub-buffer. So a sub-buffer costs its reader two
//      locked instructions on its position word (the pin, the consume),
//      a word the writers load when they look for room.
// The ring keeps its record layout (16-byte header per record); the sink
// copies each payload once (e.g. into a kernel page). No record is copied
// out into a reader buffer first.
//
// include_open = false takes only sub-buffers the tail has left (closed),
// so a page leaves the ring only when it is full; true also takes what is
// committed in the tail's sub-buffer (a flush, e.g. at stop).
//
// Thread-safety: one SubbufReader is used by one thread. It may run beside
// any writers and other readers of the buffer (two consuming readers split
// the records between them, each record handed out once). No allocation.
#include <cstdint>
#include <span>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/ring_buffer.h"

namespace tracepipe::buffers {

/// A CPU's loss counters (CpuStats's names), as SubbufReader::losses() read them.
struct LossCounts {
  uint64_t overrun = 0, lost_full = 0, lost_busy = 0, commit_overrun = 0, lost_set_aside = 0,
           lost_too_big = 0;
  /// The losses counted where a reservation failed or its memory was
  /// reclaimed (all but overrun, which a recycle counts).
  uint64_t ring_lost() const noexcept {
    return lost_full + lost_busy + commit_overrun + lost_set_aside + lost_too_big;
  }
};

/// What one SubbufReader::consume() did.
enum class Taken : uint8_t {
  records,  ///< consumed one or more records (and called sink.record for each)
  empty,    ///< moved past consumed or recycled sub-buffers only; call again
  none,     ///< nothing to take now (the rest is in the tail's sub-buffer, or uncommitted)
};

class SubbufReader {
 public:
  /// Throws std::out_of_range when cpu >= rb.cpus(). Starts where the
  /// CPU's consuming readers stopped (CpuBuffer::read_lap/read_idx).
  SubbufReader(const RingBufferBase& rb, uint32_t cpu);

  /// Takes the committed, unconsumed records of the next sub-buffer (see the
  /// protocol above). `sink` needs record(uint64_t ts, std::span<const
  /// std::byte>) and rollback(). Counts consumed records in CpuStats::read.
  template <class Sink>
  Taken consume(Sink& sink, bool include_open);

  /// Closed sub-buffers the tail has left and this reader has not finished:
  /// how full the buffer is for a watermark (like buffer_percent's full_hit).
  uint64_t closed_unread() const noexcept;
  /// Sub-buffers per CPU (the watermark's denominator is nr_subbufs() - 1).
  uint32_t nr_subbufs() const noexcept { return cb_->nr_pos; }
  /// The sequence number (lap * P + idx, modulo 2^20 laps) of the tail's
  /// sub-buffer now, and of this reader's.
  uint64_t tail_seq() const noexcept;
  uint64_t read_seq() const noexcept { return cur_.lap * cb_->nr_pos + cur_.idx; }
  uint32_t cpu() const noexcept { return cpu_; }
  /// The CPU's buffer (for tests; a reader's loss counts come from losses()).
  const detail::CpuBuffer& cpu_buffer() const noexcept { return *cb_; }
  /// The CPU's loss counters, complete up to now. Overwrite buffers: first
  /// counts the records committed into set-aside sub-buffers since they
  /// were set aside (ring_buffer.h, "Set aside"), in lost_set_aside, and
  /// gives those sub-buffers back to the spares once every writer in them is
  /// done. The ring counts such a record only when its memory is reclaimed
  /// (its writer's commit is one store and cannot tell), which writers do
  /// only when no spare is free, so counters read without this reclaim miss
  /// a record whose writer was preempted between reserve and commit; one
  /// call does both, so no reader can forget the first step. Once the last
  /// writer is done the counts are complete. A few loads when nothing is
  /// set aside (always in drop-newest mode), plus the counters' cache line;
  /// a walk of each set-aside sub-buffer otherwise. Lock-free, no
  /// allocation; may run beside writers, readers and stats().
  LossCounts losses() noexcept;

 private:
  bool advance_read_off(uint64_t from, uint64_t to) noexcept;
  void publish() noexcept;
  uint64_t tail() const noexcept {
    return detail::load_relaxed(cb_->tail.pos) & ~detail::kPausedBit;
  }

  detail::CpuBuffer* cb_;
  uint32_t cpu_;
  detail::ReadCursor cur_;
};

template <class Sink>
Taken SubbufReader::consume(Sink& sink, bool include_open) {
  using namespace detail;
  const uint64_t S = cb_->subbuf_size;
  for (uint64_t guard = 0; guard < 4ull * cb_->nr_pos + 16; ++guard) {
    const uint64_t t = tail();
    const uint64_t w = cb_->positions[cur_.idx].load(std::memory_order_acquire);
    if (pw_phase(w) != Phase::live || pw_lap(w) != cur_.lap) {
      if (cur_.at_tail(t)) return Taken::none;
      cur_.skip(*cb_, t);  // recycled before we got there (overwrite: counted as overrun)
      publish();
      continue;
    }
    const bool open = cur_.at_tail(t);
    if (open && !include_open) return Taken::none;
    const std::optional<uint64_t> pinned = pin(*cb_, cur_.idx, cur_.lap);  // (1)
    if (!pinned) continue;
    const uint64_t from = pw_read_off(*pinned);
    uint64_t n = 0;
    const WalkResult r = walk_subbuf(
        *cb_, cur_.idx, from, [&](uint64_t, uint32_t word, const RecordHeader* h) {  // (2)
          if (word_kind(word) != kKindData) return;
          sink.record(
              h->ts, std::span<const std::byte>(reinterpret_cast<const std::byte*>(h) + kHeaderSize,
                                                word_len(word)));
          ++n;
        });
    const bool done = r.stop != Stop::uncommitted;
    // A full sub-buffer with no END may still hold the tail (it switches
    // at its next reservation): not freed until the tail has left.
    const bool closed = done && !(r.stop == Stop::full && cur_.at_tail(tail()));
    if (closed && consume_and_free(*cb_, cur_.idx, cur_.lap, from,
                                   r.stop == Stop::end ? r.off + 4 : r.off)) {  // (3), pin dropped
      if (n != 0) cb_->read.fetch_add(n, std::memory_order_relaxed);
      cur_.step(*cb_);
      publish();
      if (n != 0) return Taken::records;
      return open ? Taken::none : Taken::empty;
    }
    const uint64_t to = done ? S : r.off;
    const bool took = to == from || advance_read_off(from, to);  // (3)
    unpin(*cb_, cur_.idx);                                       // (4)
    if (!took) {
      if (n != 0) sink.rollback();
      continue;
    }
    if (n != 0) cb_->read.fetch_add(n, std::memory_order_relaxed);
    if (done && !(r.stop == Stop::full && cur_.at_tail(tail()))) {
      (void)free_consumed(*cb_, cur_.idx, cur_.lap);
      cur_.step(*cb_);
      publish();
    }
    if (n != 0) return Taken::records;
    if (!done) return Taken::none;
    if (open) return Taken::none;
    return Taken::empty;
  }
  return Taken::none;
}

}  // namespace tracepipe::buffers
