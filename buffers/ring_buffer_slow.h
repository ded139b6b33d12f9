#pragma once
// Out-of-line parts of RingBuffer<M, Clock, Hooks>: the sub-buffer switch,
// discard, and failures. Included at the end of ring_buffer.h; instantiated
// for the default Clock/Hooks in ring_buffer.cc. The protocol is described
// at the top of ring_buffer.h.
#include "tracepipe/buffers/ring_buffer.h"

namespace tracepipe::buffers {

namespace detail {

/// Result of making the next position ready for the tail.
enum class SubbufClaim : uint8_t { live, retry, full, busy, commit_overrun };

/// Makes position `nidx` LIVE(nlap) so that the tail may enter it: claims it
/// when FREE, or, when it still holds the previous lap, recycles it
/// (overwrite) or frees it if fully consumed (drop-newest). The mode is a
/// template argument: each mode's write path has its own copy, no branch.
/// Mirrors kernel/trace/ring_buffer.c: rb_move_tail (the part that decides
/// between pushing the head and dropping).
template <OverflowMode M>
[[gnu::always_inline]] inline SubbufClaim claim_next(CpuBuffer& cb, uint64_t nidx, uint64_t nlap,
                                                     uint64_t stride) noexcept {
  std::atomic<uint64_t>& slot = cb.positions[nidx];
  const uint64_t old_lap = (nlap - 1) & kLapMask;
  for (;;) {
    uint64_t w = slot.load(std::memory_order_acquire);
    switch (pw_phase(w)) {
      case Phase::free:
        // FREE(lap) keeps the lap it last held (ABA protection): it is ours
        // to claim only if it held the previous lap. Any other lap means our
        // view of the tail is stale (the position was claimed, used and
        // freed since we loaded the tail); the CAS on the whole word fails
        // for the same reason if that happens after this load.
        if (pw_lap(w) != old_lap) return SubbufClaim::retry;
        if (slot.compare_exchange_strong(w, make_pw(Phase::live, nlap, 0, 0),
                                         std::memory_order_acq_rel))
          return SubbufClaim::live;
        continue;
      case Phase::preparing:
        return SubbufClaim::busy;
      case Phase::live:
        break;
    }
    if (pw_lap(w) == nlap) return SubbufClaim::live;      // another switcher claimed it
    if (pw_lap(w) != old_lap) return SubbufClaim::retry;  // our view of the tail is stale
    Recycle r;
    if constexpr (M == OverflowMode::overwrite) {
      r = recycle_overwrite(cb, nidx, old_lap, stride);
    } else {
      r = free_consumed(cb, nidx, old_lap);
    }
    switch (r) {
      case Recycle::recycled:
      case Recycle::raced:
        continue;
      case Recycle::pending:
        return M == OverflowMode::overwrite ? SubbufClaim::commit_overrun : SubbufClaim::full;
      case Recycle::pinned:
        return SubbufClaim::busy;
      case Recycle::unread:
        return SubbufClaim::full;
      case Recycle::stale:
        return SubbufClaim::retry;
    }
  }
}

/// Writes the END word that closes the sub-buffer at `page` at `off` (nothing when
/// the records fill it exactly). Mirrors rb_reset_tail (padding the rest).
[[gnu::always_inline]] inline void close_subbuf(std::byte* page, uint64_t S,
                                                uint64_t off) noexcept {
  if (off < S) {
    auto* w = reinterpret_cast<uint32_t*>(page + off);
    std::atomic_ref<uint32_t>(*w).store(make_word(kKindEnd, 0), std::memory_order_release);
  }
}

/// (S4) overwrite: recycles the position after the new tail page `nidx` now,
/// off the critical path, so that the next switch finds it FREE (best
/// effort), and starts fetching the one after, which the next switch will
/// recycle: it is cold (written a lap ago) and its walk is a chain of
/// dependent loads.
[[gnu::always_inline]] inline void recycle_ahead(CpuBuffer& cb, uint64_t nidx, uint64_t nlap,
                                                 uint64_t stride) noexcept {
  const uint64_t aidx = nidx + 1 == cb.nr_pos ? 0 : nidx + 1;
  const uint64_t alap = aidx == 0 ? (nlap + 1) & kLapMask : nlap;
  const uint64_t w = cb.positions[aidx].load(std::memory_order_acquire);
  const uint64_t aold = (alap - 1) & kLapMask;
  if (pw_phase(w) == Phase::live && pw_lap(w) == aold)
    (void)recycle_overwrite(cb, aidx, aold, stride);
  const uint64_t bidx = aidx + 1 == cb.nr_pos ? 0 : aidx + 1;
  const std::byte* next = cb.page(bidx);
  const uint64_t n = cb.subbuf_size < 4096 ? cb.subbuf_size : 4096;
  for (uint64_t o = 0; o < n; o += 64) __builtin_prefetch(next + o, 1, 2);
}

}  // namespace detail

template <OverflowMode M, class Clock, class Hooks, Writers W>
Reservation RingBuffer<M, Clock, Hooks, W>::fail_bad_cpu(uint32_t cpu) noexcept {
  lost_bad_cpu_.fetch_add(1, std::memory_order_relaxed);
  return Reservation(ReserveError::bad_cpu, cpu);
}

template <OverflowMode M, class Clock, class Hooks, Writers W>
Reservation RingBuffer<M, Clock, Hooks, W>::reserve_slow(detail::CpuBuffer& cb, uint32_t len,
                                                         uint64_t pos, uint64_t last) noexcept {
  using namespace detail;
  const uint64_t stride = stride_for(len);
  const uint64_t S = cb.subbuf_size;
  auto fail = [&](ReserveError e, std::atomic<uint64_t>& counter) {
    counter.fetch_add(1, std::memory_order_relaxed);
    return Reservation(e, cb.cpu);
  };
  if (stride > S) return fail(ReserveError::too_big, cb.lost_too_big);
  [[maybe_unused]] BlockWait block_wait_state;  // blocking mode: set by the first wait
  auto look_again = [&] {
    pos = load_acquire(cb.tail.pos);
    last = load_relaxed(cb.tail.ts);
  };
  for (;;) {
    if ((pos & kPausedBit) != 0) return fail(ReserveError::paused, cb.lost_paused);
    const uint64_t idx = tail_idx(pos);
    const uint64_t lap = tail_lap(pos);
    if (tail_off(pos) + stride <= S) {
      // The tail moved under us (another writer switched, or a reclaim).
      const Reservation r = reserve_fitting(cb, len, stride, pos, last);
      if (r || r.error() != ReserveError::none) return r;
      continue;  // empty, no error: the tail changed again
    }
    // (S1) The record does not fit: the next position must be LIVE(nlap).
    const uint64_t nidx = idx + 1 == cb.nr_pos ? 0 : idx + 1;
    const uint64_t nlap = nidx == 0 ? (lap + 1) & kLapMask : lap;
    hooks_(Step::switching, cb.cpu);
    switch (claim_next<M>(cb, nidx, nlap, stride)) {
      case SubbufClaim::live:
        break;
      case SubbufClaim::retry:
        look_again();
        continue;
      case SubbufClaim::full:
        if (wait_for_reader(cb, nidx, nlap, block_wait_state)) {
          look_again();
          continue;
        }
        return fail(ReserveError::full, cb.lost_full);
      case SubbufClaim::busy:
        // A reader pins (or zeroes) the oldest position while it frees it:
        // blocking mode waits for that as for a full buffer.
        if (wait_for_reader(cb, nidx, nlap, block_wait_state)) {
          look_again();
          continue;
        }
        return fail(ReserveError::busy, cb.lost_busy);
      case SubbufClaim::commit_overrun:
        return fail(ReserveError::commit_overrun, cb.commit_overrun);
    }
    // (S2)-(S4); on a lost CAS, back to the fit check with the tail it saw.
    const Reservation r = switch_subbuf(cb, len, stride, pos, last, nidx, nlap);
    if (r || r.error() != ReserveError::none) return r;
  }
}

template <OverflowMode M, class Clock, class Hooks, Writers W>
Reservation RingBuffer<M, Clock, Hooks, W>::reserve_fitting(detail::CpuBuffer& cb, uint32_t len,
                                                            uint64_t stride, uint64_t& pos,
                                                            uint64_t& last) noexcept {
  using namespace detail;
  // The record's address before (C), as in reserve().
  auto* const h = reinterpret_cast<RecordHeader*>(cb.page(tail_idx(pos)) + tail_off(pos));
  const uint64_t now = clock_();  // (B)
  const uint64_t ts = now > last ? now : last;
  hooks_(Step::clocked, cb.cpu);
  const LocalCas r = tail_cas(cb, pos, last, pos + stride, ts);  // (C)
  if (r == LocalCas::ok) {
    hooks_(Step::reserving, cb.cpu);
    store_stride(h, stride);  // (D)
    h->ts = ts;
    hooks_(Step::reserved, cb.cpu);
    return Reservation(h, &cb, pos, len);
  }
  if (r == LocalCas::migrated) return reserve(cb.cpu, len);  // cpu_local: start over on our CPU
  return Reservation();
}

template <OverflowMode M, class Clock, class Hooks, Writers W>
bool RingBuffer<M, Clock, Hooks, W>::wait_for_reader(detail::CpuBuffer& cb, uint64_t nidx,
                                                     uint64_t nlap, BlockWait& bw) noexcept {
  if constexpr (M == OverflowMode::drop_newest) {
    // Blocking mode (W1-W4): wait for the reader, then look again.
    return (block_->timeout_ns.load(std::memory_order_relaxed) != 0 || bw.start != 0) &&
           block_wait(cb, nidx, (nlap - 1) & detail::kLapMask, bw);
  } else {
    return false;
  }
}

template <OverflowMode M, class Clock, class Hooks, Writers W>
Reservation RingBuffer<M, Clock, Hooks, W>::switch_subbuf(detail::CpuBuffer& cb, uint32_t len,
                                                          uint64_t stride, uint64_t& pos,
                                                          uint64_t& last, uint64_t nidx,
                                                          uint64_t nlap) noexcept {
  using namespace detail;
  // (S2) Move the tail into it with our record at offset 0, stamped as in (B).
  // Both sub-buffers' memory is resolved before the CAS: once it succeeds
  // we hold a pending record in the new one and the left one has no END
  // yet, so either may be swapped to other memory ("Set aside") while we
  // are preempted; our stores must go to the memory we reserved in.
  const uint64_t off = tail_off(pos);
  std::byte* const left = cb.page(tail_idx(pos));
  auto* const h = reinterpret_cast<RecordHeader*>(cb.page(nidx));
  const uint64_t now = clock_();
  const uint64_t ts = now > last ? now : last;
  const uint64_t npos = make_tail(nlap, nidx, 0);
  const LocalCas sw = tail_cas(cb, pos, last, npos + stride, ts);
  if (sw == LocalCas::migrated) return reserve(cb.cpu, len);  // cpu_local: start over on our CPU
  if (sw != LocalCas::ok) return Reservation();               // tail changed: look again
  hooks_(Step::reserving, cb.cpu);
  // (D) at once, before (S3)/(S4): the recycle in (S4) is a walk and a
  // memset, and a writer that dies in it must leave its record's stride
  // behind (crash recovery steps over it, core/recover/recover.h).
  store_stride(h, stride);
  h->ts = ts;
  hooks_(Step::switched, cb.cpu);
  // (S3) Close the sub-buffer we left. Until this END word is written the
  // left sub-buffer reads as having a pending record (I3), so nobody
  // recycles it before we are done with it (it may be set aside: then
  // the END goes to the set-aside memory, where it completes it).
  close_subbuf(left, cb.subbuf_size, off);
  note_switch(cb);
  if constexpr (M == OverflowMode::overwrite) recycle_ahead(cb, nidx, nlap, stride);  // (S4)
  hooks_(Step::reserved, cb.cpu);
  return Reservation(h, &cb, npos, len);
}

template <OverflowMode M, class Clock, class Hooks, Writers W>
void RingBuffer<M, Clock, Hooks, W>::discard_slow(detail::RecordHeader* hdr, detail::CpuBuffer& cb,
                                                  uint64_t start, uint32_t len) noexcept {
  using namespace detail;
  const uint64_t stride = stride_for(len);
  const uint64_t end = start + stride;
  uint64_t pos = load_relaxed(cb.tail.pos);
  uint64_t ts = load_relaxed(cb.tail.ts);
  bool zeroed = false;
  // Reclaim: only while our record is the last one reserved (tail == our end).
  while (pos == end) {
    hooks_(Step::discarding, cb.cpu);
    if (!zeroed) {
      // Restore I1 before the space can be handed out again: the stamp and
      // the payload with plain stores (nobody reads them in a record whose
      // word is 0). The header word is still 0 (never committed) and readers
      // may be loading it right now, so it is left alone.
      std::memset(reinterpret_cast<std::byte*>(hdr) + offsetof(RecordHeader, ts), 0,
                  stride - offsetof(RecordHeader, ts));
      zeroed = true;
    }
    // The stride last, and atomically: our view of the tail may be stale
    // (the tail went round the ring since we loaded it), and a set-aside
    // walk (ring_buffer.h, "Set aside", (X3)) may be loading it right now to
    // step over our pending record. Zero, it stops there instead.
    store_stride(hdr, 0);
    hooks_(Step::reclaiming, cb.cpu);
    const LocalCas r = tail_cas(cb, pos, ts, start, ts);  // keeps the stamp: I5
    if (r == LocalCas::ok) {
      cb.reclaimed.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Someone reserved after us: the record stays, as padding. Its stride
    // back, so that a walk (or crash recovery) can step over it until the
    // padding word is stored.
    store_stride(hdr, stride);
    // cpu_local, and we run on another CPU now: only padding is possible.
    if (r == LocalCas::migrated && static_cast<uint32_t>(rseq_cpu()) != cb.cpu) break;
  }
  // Someone reserved after us: leave padding of our length.
  std::atomic_ref<uint32_t>(hdr->word).store(make_word(kKindPadding, len),
                                             std::memory_order_release);
  cb.padded.fetch_add(1, std::memory_order_relaxed);
}

extern template class RingBuffer<OverflowMode::overwrite>;
extern template class RingBuffer<OverflowMode::drop_newest>;
extern template class RingBuffer<OverflowMode::overwrite, FunctionClock, NoHooks,
                                 Writers::cpu_local>;
extern template class RingBuffer<OverflowMode::drop_newest, FunctionClock, NoHooks,
                                 Writers::cpu_local>;

}  // namespace tracepipe::buffers
