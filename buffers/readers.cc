// Readers: ConsumingReader, Iterator, Snapshot, merged helpers, wait().
#include "tracepipe/buffers/readers.h"

#include <algorithm>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <string>

namespace tracepipe::buffers {

using namespace detail;

namespace detail {

void ReadCursor::step(const CpuBuffer& cb) noexcept {
  if (++idx == cb.nr_pos) {
    idx = 0;
    lap = (lap + 1) & kLapMask;
  }
}

void ReadCursor::oldest(const CpuBuffer& cb, uint64_t tail_pos) noexcept {
  const uint64_t P = cb.nr_pos;
  const uint64_t M = (kLapMask + 1) * P;
  const uint64_t s = (tail_lap(tail_pos) * P + tail_idx(tail_pos) + M - (P - 1)) % M;
  lap = s / P;
  idx = s % P;
}

void ReadCursor::skip(const CpuBuffer& cb, uint64_t tail_pos) noexcept {
  // Sequence numbers modulo 2^20 laps: seq = lap * P + idx.
  const uint64_t P = cb.nr_pos;
  const uint64_t M = (kLapMask + 1) * P;
  const uint64_t tseq = tail_lap(tail_pos) * P + tail_idx(tail_pos);
  const uint64_t rseq = lap * P + idx;
  const uint64_t behind = (tseq + M - rseq) % M;
  if (behind >= P) {
    oldest(cb, tail_pos);  // more than a lap behind
  } else if (behind != 0) {
    step(cb);
  }
}

namespace {

CpuBuffer& checked_cpu(const RingBufferBase& rb, uint32_t cpu) {
  if (cpu >= rb.cpus())
    throw std::out_of_range("ring buffer reader: cpu " + std::to_string(cpu) + " >= cpus() " +
                            std::to_string(rb.cpus()));
  return rb.cpu_buffer(cpu);
}

uint64_t load_tail(const CpuBuffer& cb) noexcept { return load_relaxed(cb.tail.pos) & ~kPausedBit; }

// Copies the committed records of pinned sub-buffer `idx` from `from` into
// `copy`/`recs` (data records only). Returns where the walk stopped.
WalkResult copy_out(const CpuBuffer& cb, uint64_t idx, uint64_t from, std::vector<std::byte>& copy,
                    std::vector<CopiedRecord>& recs) {
  recs.clear();
  const WalkResult r =
      walk_subbuf(cb, idx, from, [&](uint64_t off, uint32_t word, const RecordHeader* h) {
        if (word_kind(word) != kKindData) return;
        recs.push_back({static_cast<uint32_t>(off - from + kHeaderSize),
                        static_cast<uint32_t>(word_len(word)), h->ts,
                        off + stride_for(word_len(word))});
      });
  if (r.off > from) {
    if (copy.size() < r.off - from) copy.resize(cb.subbuf_size);
    std::memcpy(copy.data(), cb.page(idx) + from, r.off - from);
  }
  return r;
}

}  // namespace
}  // namespace detail

// ── ConsumingReader ─────────────────────────────────────────────────────────

ConsumingReader::ConsumingReader(const RingBufferBase& rb, uint32_t cpu)
    : cb_(&checked_cpu(rb, cpu)), cpu_(cpu) {
  cur_.lap = cb_->read_lap.load(std::memory_order_relaxed);
  cur_.idx = cb_->read_idx.load(std::memory_order_relaxed);
  copy_.resize(cb_->subbuf_size);
}

bool ConsumingReader::advance_read_off(uint64_t from, uint64_t to) noexcept {
  std::atomic<uint64_t>& slot = cb_->positions[cur_.idx];
  uint64_t w = slot.load(std::memory_order_acquire);
  for (;;) {
    if (pw_phase(w) != Phase::live || pw_lap(w) != cur_.lap || pw_read_off(w) != from) return false;
    if (slot.compare_exchange_weak(w, pw_with_read_off(w, to), std::memory_order_acq_rel,
                                   std::memory_order_acquire))
      return true;
  }
}

ConsumingReader::ConsumingReader(ConsumingReader&& o) noexcept
    : cb_(o.cb_),
      cpu_(o.cpu_),
      cur_(o.cur_),
      copy_(std::move(o.copy_)),
      recs_(std::move(o.recs_)),
      next_(o.next_) {
  o.recs_.clear();
  o.next_ = 0;
}

ConsumingReader::~ConsumingReader() {
  // Records taken but not handed out: they left the buffer with us.
  const uint64_t left = recs_.size() - next_;
  if (left != 0) {
    uint64_t bytes = 0;
    for (size_t i = next_; i < recs_.size(); ++i) bytes += recs_[i].len;
    cb_->held_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    cb_->held.fetch_sub(left, std::memory_order_relaxed);
    cb_->read.fetch_add(left, std::memory_order_relaxed);
  }
}

std::optional<RecordView> ConsumingReader::next() {
  if (next_ >= recs_.size() && !refill()) return std::nullopt;
  const CopiedRecord& c = recs_[next_++];
  if (next_ < recs_.size()) cb_->held_oldest_ts.store(recs_[next_].ts, std::memory_order_relaxed);
  cb_->read.fetch_add(1, std::memory_order_relaxed);
  cb_->held_bytes.fetch_sub(c.len, std::memory_order_relaxed);
  cb_->held.fetch_sub(1, std::memory_order_relaxed);
  return RecordView{c.ts, cpu_, {copy_.data() + c.copy_off, c.len}};
}

// Finds the next committed records, copies them out and consumes them (one
// CAS of read_off while the sub-buffer is pinned); false when none now.
bool ConsumingReader::refill() {
  recs_.clear();
  next_ = 0;
  const uint64_t S = cb_->subbuf_size;
  for (uint64_t guard = 0; guard < 4ull * cb_->nr_pos + 16; ++guard) {
    const uint64_t tail = load_tail(*cb_);
    const uint64_t w = cb_->positions[cur_.idx].load(std::memory_order_acquire);
    if (pw_phase(w) != Phase::live || pw_lap(w) != cur_.lap) {
      if (cur_.at_tail(tail)) return false;
      cur_.skip(*cb_, tail);  // recycled before we got there: counted as overrun
      publish();
      continue;
    }
    const std::optional<uint64_t> pinned = pin(*cb_, cur_.idx, cur_.lap);
    if (!pinned) continue;  // changed under us: look again
    const uint64_t from = pw_read_off(*pinned);
    const WalkResult r = copy_out(*cb_, cur_.idx, from, copy_, recs_);
    const bool done = r.stop != Stop::uncommitted;  // END, or records fill it exactly
    const uint64_t to = done ? S : r.off;
    const bool took = to == from || advance_read_off(from, to);
    unpin(*cb_, cur_.idx);
    if (!took) {  // another consuming reader took them first
      recs_.clear();
      continue;
    }
    if (!recs_.empty()) {
      uint64_t bytes = 0;
      for (const CopiedRecord& c : recs_) bytes += c.len;
      cb_->held_oldest_ts.store(recs_.front().ts, std::memory_order_relaxed);
      cb_->held_newest_ts.store(recs_.back().ts, std::memory_order_relaxed);
      cb_->held_bytes.fetch_add(bytes, std::memory_order_relaxed);
      cb_->held.fetch_add(recs_.size(), std::memory_order_relaxed);
      return true;
    }
    if (!done) return false;  // nothing committed after read_off yet
    if (r.stop == Stop::full && cur_.at_tail(tail)) return false;  // the tail may still sit at S
    (void)free_consumed(*cb_, cur_.idx, cur_.lap);
    cur_.step(*cb_);
    publish();
  }
  return false;
}

void ConsumingReader::publish() noexcept {
  cb_->read_lap.store(cur_.lap, std::memory_order_relaxed);
  cb_->read_idx.store(cur_.idx, std::memory_order_relaxed);
}

uint64_t ConsumingReader::full_unread() const noexcept {
  // Full, unread sub-buffers = distance from our sub-buffer to the tail's.
  const uint64_t P = cb_->nr_pos;
  const uint64_t M = (kLapMask + 1) * P;
  const uint64_t tail = load_tail(*cb_);
  const uint64_t tseq = tail_lap(tail) * P + tail_idx(tail);
  const uint64_t rseq = cur_.lap * P + cur_.idx;
  return std::min<uint64_t>((tseq + M - rseq) % M, P - 1);
}

WaitResult ConsumingReader::wait(unsigned percent, std::chrono::nanoseconds timeout) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + timeout;
  if (percent > 100) percent = 100;
  // Sub-buffers that must be full and unread (buffer_percent of the data sub-buffers).
  const uint64_t want = (uint64_t{percent} * (cb_->nr_pos - 1) + 99) / 100;
  for (;;) {
    // Writers only publish (commit stores, tail CAS); the waiter looks.
    if (percent == 0) {
      if (next_ < recs_.size() || refill()) return WaitResult::ready;
    } else if (full_unread() >= want) {
      return WaitResult::ready;
    }
    const auto now = clock::now();
    if (now >= deadline) return WaitResult::timeout;
    const auto slice = std::min<std::chrono::nanoseconds>(deadline - now, kWaitPollInterval);
    const timespec ts{static_cast<time_t>(slice.count() / 1000000000),
                      static_cast<long>(slice.count() % 1000000000)};
    // EINTR (a signal) only ends the slice early: the loop looks again.
    (void)clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
    cb_->wait_polls.fetch_add(1, std::memory_order_relaxed);
  }
}

// ── Iterator ────────────────────────────────────────────────────────────────

Iterator::Iterator(const RingBufferBase& rb, uint32_t cpu) : cb_(&checked_cpu(rb, cpu)), cpu_(cpu) {
  cur_.lap = cb_->read_lap.load(std::memory_order_relaxed);
  cur_.idx = cb_->read_idx.load(std::memory_order_relaxed);
  copy_.resize(cb_->subbuf_size);
}

std::optional<RecordView> Iterator::next() {
  for (;;) {
    if (next_ < recs_.size()) {
      const CopiedRecord& c = recs_[next_++];
      off_ = c.end;
      return RecordView{c.ts, cpu_, {copy_.data() + c.copy_off, c.len}};
    }
    if (!refill()) return std::nullopt;
  }
}

bool Iterator::refill() {
  recs_.clear();
  next_ = 0;
  for (uint64_t guard = 0; guard < 4ull * cb_->nr_pos + 16; ++guard) {
    const uint64_t tail = load_tail(*cb_);
    const uint64_t w = cb_->positions[cur_.idx].load(std::memory_order_acquire);
    if (pw_phase(w) != Phase::live || pw_lap(w) != cur_.lap) {
      if (cur_.at_tail(tail)) return false;
      cur_.skip(*cb_, tail);
      off_ = 0;
      continue;
    }
    const std::optional<uint64_t> pinned = pin(*cb_, cur_.idx, cur_.lap);
    if (!pinned) continue;
    const uint64_t from = std::max(off_, pw_read_off(*pinned));  // consumed records are gone
    const WalkResult r = copy_out(*cb_, cur_.idx, from, copy_, recs_);
    unpin(*cb_, cur_.idx);
    off_ = r.off;
    if (!recs_.empty()) return true;
    if (r.stop == Stop::uncommitted) return false;
    if (r.stop == Stop::full && cur_.at_tail(tail)) return false;
    cur_.step(*cb_);
    off_ = 0;
  }
  return false;
}

// ── Snapshot ────────────────────────────────────────────────────────────────

std::optional<Snapshot> Snapshot::take(const RingBufferBase& rb, uint32_t cpu) {
  if (cpu >= rb.cpus() || !rb.paused()) return std::nullopt;
  CpuBuffer& cb = rb.cpu_buffer(cpu);
  Snapshot s(&cb);
  const uint64_t tail = load_tail(cb);
  // Oldest possible sub-buffer is the one after the tail's position, one lap back.
  ReadCursor cur;
  cur.oldest(cb, tail);
  for (uint64_t n = 0; n < cb.nr_pos; ++n, cur.step(cb)) {
    const std::optional<uint64_t> pinned = pin(cb, cur.idx, cur.lap);
    if (pinned) {
      s.pinned_.push_back(cur.idx);
      const std::byte* page = cb.page(cur.idx);
      walk_subbuf(
          cb, cur.idx, pw_read_off(*pinned),
          [&](uint64_t off, uint32_t word, const RecordHeader* h) {
            if (word_kind(word) == kKindData)
              s.recs_.push_back(RecordView{
                  h->ts, cpu, {page + off + kHeaderSize, static_cast<size_t>(word_len(word))}});
          });
    }
    if (cur.at_tail(tail)) break;
  }
  return std::optional<Snapshot>(std::move(s));
}

Snapshot::Snapshot(Snapshot&& o) noexcept
    : cb_(o.cb_), pinned_(std::move(o.pinned_)), recs_(std::move(o.recs_)) {
  o.pinned_.clear();
}

Snapshot::~Snapshot() {
  for (uint64_t idx : pinned_) unpin(*cb_, idx);
}

// ── Merged ──────────────────────────────────────────────────────────────────

Merged<ConsumingReader> merged_consumer(const RingBufferBase& rb) {
  std::vector<ConsumingReader> v;
  v.reserve(rb.cpus());
  for (uint32_t c = 0; c < rb.cpus(); ++c) v.emplace_back(rb, c);
  return Merged<ConsumingReader>(std::move(v));
}

Merged<Iterator> merged_iterator(const RingBufferBase& rb) {
  std::vector<Iterator> v;
  v.reserve(rb.cpus());
  for (uint32_t c = 0; c < rb.cpus(); ++c) v.emplace_back(rb, c);
  return Merged<Iterator>(std::move(v));
}

}  // namespace tracepipe::buffers
