#pragma once
// Internal: the state of one CPU buffer, the bit layout of its tail word and
// of its position (sub-buffer) words, and the 16-byte compare-and-swap.
// The protocol that uses them is described at the top of ring_buffer.h.
// Mirrors kernel/trace/ring_buffer.c: struct ring_buffer_per_cpu.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "tracepipe/buffers/record.h"
#include "tracepipe/buffers/sanitizers.h"

namespace tracepipe::buffers::detail {

// ── The tail word ──────────────────────────────────────────────────────────
// 16 bytes, only ever changed by one 16-byte CAS: { pos, last_ts }.
//   pos bits  0..23  off: bytes reserved in the tail sub-buffer (bit 23 = PAUSED)
//             24..43 idx: position (sub-buffer) the tail is in
//             44..63 lap: how many times the tail wrapped (mod 2^20)
//   last_ts        the stamp of the newest reservation (the clamp; see (B))
// PAUSED sits inside the offset so that the fast path's single "does it fit"
// comparison also catches a paused buffer (off >= 2^23 > any S).
inline constexpr uint32_t kOffBits = 24;
inline constexpr uint32_t kIdxBits = 20;
inline constexpr uint32_t kLapBits = 20;
inline constexpr uint64_t kOffMask = (uint64_t{1} << kOffBits) - 1;
inline constexpr uint64_t kPausedBit = uint64_t{1} << 23;
inline constexpr uint64_t kIdxMask = (uint64_t{1} << kIdxBits) - 1;
inline constexpr uint64_t kLapMask = (uint64_t{1} << kLapBits) - 1;
inline constexpr uint64_t kMaxSubbufSize = uint64_t{1} << 22;  // 4 MiB
inline constexpr uint64_t kMinSubbufSize = 64;
inline constexpr uint64_t kMaxPositions = uint64_t{1} << kIdxBits;

constexpr uint64_t tail_off(uint64_t pos) noexcept { return pos & kOffMask; }
constexpr uint64_t tail_idx(uint64_t pos) noexcept { return (pos >> kOffBits) & kIdxMask; }
constexpr uint64_t tail_lap(uint64_t pos) noexcept { return pos >> (kOffBits + kIdxBits); }
constexpr uint64_t make_tail(uint64_t lap, uint64_t idx, uint64_t off) noexcept {
  return ((lap & kLapMask) << (kOffBits + kIdxBits)) | (idx << kOffBits) | off;
}

// ── Position words ─────────────────────────────────────────────────────────
// One 8-byte word per sub-buffer, changed only by CAS / fetch_add:
//   bits  0..23 read_off: bytes of this sub-buffer already consumed
//        24..31 pins: readers currently copying from it (blocks recycling)
//        32..33 phase: FREE (zeroed, unused), LIVE (holds data of `lap`),
//               PREPARING (being zeroed by the party that moved it there)
//        34..41 holders: LIVE only: overwrite recyclers walking it to recycle
//               it (recycle_overwrite, "Takeover" in ring_buffer.h); unlike a
//               pin, a hold does not keep others out: it tells them the
//               memory is being walked, so that it is swapped out, not
//               zeroed in place, if someone else completes the recycle
//        44..63 lap: the tail lap this sub-buffer holds (LIVE, PREPARING), or
//               last held (FREE; lap -1 mod 2^20 before first use): a
//               position's laps only go up, so a stale CAS always fails
inline constexpr uint64_t kPinUnit = uint64_t{1} << 24;
inline constexpr uint64_t kPinsMax = 255;
inline constexpr uint64_t kHoldUnit = uint64_t{1} << 34;
inline constexpr uint64_t kHoldersMax = 255;
enum class Phase : uint32_t { free = 0, live = 1, preparing = 2 };

constexpr uint64_t pw_read_off(uint64_t w) noexcept { return w & kOffMask; }
constexpr uint64_t pw_pins(uint64_t w) noexcept { return (w >> 24) & 0xff; }
constexpr uint64_t pw_holders(uint64_t w) noexcept { return (w >> 34) & 0xff; }
constexpr Phase pw_phase(uint64_t w) noexcept { return static_cast<Phase>((w >> 32) & 3); }
constexpr uint64_t pw_lap(uint64_t w) noexcept { return w >> 44; }
constexpr uint64_t make_pw(Phase ph, uint64_t lap, uint64_t pins, uint64_t read_off) noexcept {
  return ((lap & kLapMask) << 44) | (uint64_t(static_cast<uint32_t>(ph)) << 32) | (pins << 24) |
         read_off;
}
constexpr uint64_t pw_with_read_off(uint64_t w, uint64_t read_off) noexcept {
  return (w & ~kOffMask) | read_off;
}

// ── 16-byte CAS on the tail ────────────────────────────────────────────────
struct alignas(16) TailWord {
  uint64_t pos;
  uint64_t ts;
};

[[gnu::always_inline]] inline uint64_t load_relaxed(const uint64_t& v) noexcept {
  return __atomic_load_n(&v, __ATOMIC_RELAXED);
}

/// The tail's pos for a writer that will resolve its sub-buffer's memory
/// from it (CpuBuffer::page): acquire, so that the slot a swap (ring_buffer.h,
/// "Set aside") gave that position before the tail entered it is seen. A
/// plain load on x86.
[[gnu::always_inline]] inline uint64_t load_acquire(const uint64_t& v) noexcept {
  return __atomic_load_n(&v, __ATOMIC_ACQUIRE);
}
/// (D): the record's stride, read by a swap's walk (ring_buffer.h, "Set
/// aside") to step over a pending record; a plain store on x86.
[[gnu::always_inline]] inline void store_stride(RecordHeader* h, uint64_t stride) noexcept {
  std::atomic_ref<uint32_t>(h->stride).store(static_cast<uint32_t>(stride),
                                             std::memory_order_relaxed);
}

/// Atomically: if *t == {pos, ts} then *t = {npos, nts} and return true;
/// otherwise load the current value into {pos, ts} and return false.
/// Full barrier (lock cmpxchg16b). Under ThreadSanitizer, and on other
/// architectures, the GCC 16-byte builtin is used instead (so that the
/// sanitizer sees the synchronisation).
[[gnu::always_inline]] inline bool cas16(TailWord* t, uint64_t& pos, uint64_t& ts, uint64_t npos,
                                         uint64_t nts) noexcept {
#if TRACEPIPE_TSAN || !defined(__x86_64__)
  unsigned __int128 exp = (static_cast<unsigned __int128>(ts) << 64) | pos;
  const unsigned __int128 des = (static_cast<unsigned __int128>(nts) << 64) | npos;
  const bool ok = __atomic_compare_exchange_n(reinterpret_cast<unsigned __int128*>(t), &exp, des,
                                              false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  pos = static_cast<uint64_t>(exp);
  ts = static_cast<uint64_t>(exp >> 64);
  return ok;
#else
  bool ok;
  asm volatile("lock cmpxchg16b %1"
               : "=@ccz"(ok), "+m"(*t), "+a"(pos), "+d"(ts)
               : "b"(npos), "c"(nts)
               : "memory");
  return ok;
#endif
}

// ── Spare words (set-aside sub-buffers) ────────────────────────────────────
// A CPU buffer has nr_pos positions but nr_pos + nr_spares sub-buffers of
// memory ("slots"); slots[idx] says which slot position idx uses. The slots
// no position uses are spares, one 8-byte word each, changed only by CAS
// (to TAKEN) or by the party that holds it TAKEN (a store):
//   bits  0..23 from: ASIDE only: where the reclaim walk resumes
//        24..43 slot: the memory slot this spare word describes
//        44..45 state: EMPTY (zeroed, ready to be swapped in), TAKEN (one
//               party owns it: a swap or a reclaim in progress), ASIDE (holds
//               a sub-buffer swapped out with a pending record)
// Every value says all there is to know, so a CAS that succeeds on a value
// seen earlier (ABA) still owns exactly what it expected.
enum class SpareState : uint32_t { empty = 0, taken = 1, aside = 2 };
constexpr uint64_t sw_from(uint64_t w) noexcept { return w & kOffMask; }
constexpr uint64_t sw_slot(uint64_t w) noexcept { return (w >> 24) & kIdxMask; }
constexpr SpareState sw_state(uint64_t w) noexcept {
  return static_cast<SpareState>((w >> 44) & 3);
}
constexpr uint64_t make_sw(SpareState st, uint64_t slot, uint64_t from) noexcept {
  return (uint64_t(static_cast<uint32_t>(st)) << 44) | ((slot & kIdxMask) << 24) |
         (from & kOffMask);
}
inline constexpr uint32_t kMaxSpares = 64;

// ── One CPU buffer ─────────────────────────────────────────────────────────
// Line 0: what the write fast path touches (tail, and read-only geometry).
// Line 1: slow-path loss counters. Line 2: switch and set-aside state. Line 3: reader side.
struct alignas(64) CpuBuffer {
  TailWord tail{0, 0};
  std::byte* pages = nullptr;                  // (nr_pos + nr_spares) * subbuf_size bytes
  std::atomic<uint64_t>* positions = nullptr;  // nr_pos words
  std::atomic<uint32_t>* slots = nullptr;      // nr_pos words: the memory slot of each position
  uint64_t subbuf_size = 0;                    // S, a power of two
  uint32_t subbuf_shift = 0;                   // log2(S)
  uint32_t nr_pos = 0;                         // P
  uint32_t cpu = 0;

  alignas(64) std::atomic<uint64_t> overrun{0};
  std::atomic<uint64_t> commit_overrun{0};
  std::atomic<uint64_t> lost_full{0};
  std::atomic<uint64_t> lost_paused{0};
  std::atomic<uint64_t> lost_too_big{0};
  std::atomic<uint64_t> lost_busy{0};
  std::atomic<uint64_t> padded{0};  // discards left as padding
  std::atomic<uint64_t> reclaimed{
      0};  // discards whose space was reclaimed (one counter per discard)

  alignas(64) std::atomic<uint64_t> switches{0};  // sub-buffer switches (slow path)
  std::atomic<uint64_t> set_aside{0};             // sub-buffers swapped out with a pending record
  std::atomic<uint64_t> lost_set_aside{0};        // records committed into set-aside memory (lost)
  std::atomic<uint64_t> taken_over{0};      // recycles completed over another holder (swapped)
  std::atomic<uint64_t>* spares = nullptr;  // nr_spares spare words
  uint32_t nr_spares = 0;
  // nr_pos + nr_spares: per memory slot, the recyclers whose hold a takeover
  // absorbed while they may still walk that memory (ring_buffer.h,
  // "Takeover"); the memory is not zeroed or reused while non-zero.
  // Process-private, also for a ring in a file mapping (recovery needs none).
  std::atomic<int32_t>* walkers = nullptr;

  alignas(64) std::atomic<uint64_t> read{0};  // records consumed (handed out)
  std::atomic<uint64_t> held{0};              // taken by consuming readers, not yet handed out
  std::atomic<uint64_t> held_oldest_ts{0};    // stamp of the oldest of those
  std::atomic<uint64_t> held_newest_ts{0};    // and of the newest
  std::atomic<uint64_t> held_bytes{0};        // their payload bytes
  std::atomic<uint64_t> read_lap{0};          // the consuming readers' current sub-buffer
  std::atomic<uint64_t> read_idx{0};
  std::atomic<uint64_t> wait_polls{
      0};  // sleep slices ended in readers' wait() (writers never look)

  /// The memory of memory slot `slot`.
  std::byte* slot_page(uint64_t slot) const noexcept { return pages + (slot << subbuf_shift); }
  /// The memory position `idx` uses now. Stable while the caller pins the
  /// position, or holds the tail inside it (the writer: resolved before (C),
  /// ring_buffer.h "Set aside"); changed only while the position is PREPARING.
  [[gnu::always_inline]] std::byte* page(uint64_t idx) const noexcept {
    return slot_page(slots[idx].load(std::memory_order_relaxed));
  }
};
static_assert(offsetof(CpuBuffer, tail) == 0);
static_assert(offsetof(CpuBuffer, cpu) + sizeof(uint32_t) <= 64,
              "the write path's fields share line 0");
static_assert(offsetof(CpuBuffer, overrun) == 64, "loss counters start the second cache line");
static_assert(offsetof(CpuBuffer, switches) == 128);
static_assert(offsetof(CpuBuffer, read) == 192, "reader state on its own line");

}  // namespace tracepipe::buffers::detail

namespace tracepipe::buffers::detail {

/// Outcome of trying to recycle (zero and free) a LIVE sub-buffer.
enum class Recycle : uint8_t {
  recycled,  ///< it is FREE now
  raced,     ///< its position word changed meanwhile: look again
  pending,   ///< a record in it is not committed yet (or END not written)
  pinned,    ///< a reader pins it (copying), or another recycler holds it and no spare is free to
             ///< take over
  unread,    ///< drop-newest: not fully consumed
  stale,     ///< it is not the expected lap
};

/// Overwrite mode: recycle position `idx`, which should hold lap `old_lap`,
/// counting its unread records as overrun. Mirrors kernel/trace/ring_buffer.c:
/// rb_handle_head_page (RB_PAGE_HEAD → pushing the head), rb_tail_page_update.
/// `stride` is the switching writer's record stride, the walk's first guess
/// (walk_subbuf; 0: none).
Recycle recycle_overwrite(CpuBuffer& cb, uint64_t idx, uint64_t old_lap,
                          uint64_t stride = 0) noexcept;
/// Overwrite mode: returns the set-aside sub-buffers whose records are all
/// committed now to the spares (zeroed), counting the data records committed
/// since they were set aside as lost_set_aside. Returns how many are EMPTY
/// now (those another party holds TAKEN not included). Called by a swap that
/// finds no EMPTY spare, and by stats().
uint32_t reclaim_set_aside(CpuBuffer& cb) noexcept;
/// Any mode: free position `idx` (lap `lap`) if a reader consumed all of it.
Recycle free_consumed(CpuBuffer& cb, uint64_t idx, uint64_t lap) noexcept;
/// Any mode, for a consuming reader that pins closed position `idx` (lap
/// `lap`) and walked every record from read_off `from` to its END word or
/// S: consumes those records and frees the position in one CAS, from
/// LIVE(lap) with its own pin alone, no hold and read_off `from`, to
/// PREPARING; then zeroes [0, used) (`used`: past the END word, or S) and
/// stores FREE(lap). The caller counts the records read and holds no pin
/// after it. False, changing nothing, when the word is not exactly that
/// (another pin or hold, a consumer that moved read_off): the caller
/// consumes and frees as separate steps (its pin still held).
bool consume_and_free(CpuBuffer& cb, uint64_t idx, uint64_t lap, uint64_t from,
                      uint64_t used) noexcept;
/// Called after each sub-buffer switch (slow path): counts it. (Nothing
/// else: writers never wake readers; wait() polls, see readers.h.)
inline void note_switch(CpuBuffer& cb) noexcept {
  cb.switches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tracepipe::buffers::detail

namespace tracepipe::buffers::detail {

[[gnu::always_inline]] inline uint32_t load_word(const std::byte* p) noexcept {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(const_cast<std::byte*>(p)))
      .load(std::memory_order_acquire);
}

/// Returns `stride`, as `guess` when they are equal (and sets guess to
/// stride otherwise), compared by an opaque branch: on the predicted path the
/// result is the register `guess`, which does not depend on the load that
/// produced `stride`. In plain C++ the compiler would prove the two equal and
/// use `stride`, restoring the dependence.
[[gnu::always_inline]] inline uint64_t step_by_guess(uint64_t stride, uint64_t& guess) noexcept {
#if defined(__x86_64__) && !TRACEPIPE_TSAN
  asm goto("cmpq %0, %1\n\tjne %l[other]" : : "r"(stride), "r"(guess) : "cc" : other);
  return guess;
other:
  guess = stride;
  return stride;
#else
  guess = stride;
  return stride;
#endif
}

/// Why a walk over a sub-buffer stopped.
enum class Stop : uint8_t {
  end,          ///< at the END word: the sub-buffer is closed and complete
  full,         ///< at offset S: records fill it exactly
  uncommitted,  ///< at a zero word: a pending record, or the end of what is reserved
};
struct WalkResult {
  uint64_t off;  ///< where it stopped
  Stop stop;
};

/// Visits the committed records of sub-buffer `idx` from offset `from`, in
/// order, calling f(off, word, header) for data and discarded records, and
/// stops at the first zero word (I2), the END word, or S. The caller keeps the
/// sub-buffer from being recycled meanwhile (pin, or a pending record).
/// Mirrors kernel/trace/ring_buffer.c: rb_advance_iter / rb_buffer_peek.
///
/// Why the step is a guess: each header gives the offset of the next, so a
/// plain walk is a chain of dependent loads (L1 latency plus the decode per
/// record, paid by an overwrite commit at every recycle).
/// Records of one event repeat their stride, so the walk steps by the
/// previous stride and only checks the loaded one against it (a predicted
/// branch the compiler cannot see through): the next load no longer waits
/// for this one. A mismatch costs one mispredict and steps by the real
/// stride; no record is skipped or read past S either way.
/// `guess` is the stride to expect first (0: none), e.g. the caller's own.
template <class F>
inline WalkResult walk_page(const std::byte* page, uint64_t S, uint64_t from, F&& f,
                            uint64_t guess = 0) noexcept {
  uint64_t off = from;
  while (off < S) {
    const uint32_t w = load_word(page + off);
    const uint32_t kind = word_kind(w);
    if (kind == kKindNone) return {off, Stop::uncommitted};
    if (kind == kKindEnd) return {off, Stop::end};
    const uint64_t stride = stride_for(word_len(w));
    if (off + stride > S) [[unlikely]]
      return {off, Stop::uncommitted};  // cannot happen (I1); never read past S
    f(off, w, reinterpret_cast<const RecordHeader*>(page + off));
    off += step_by_guess(stride, guess);
  }
  return {off, Stop::full};
}
/// walk_page over the memory position `idx` uses now (the caller pins it).
template <class F>
inline WalkResult walk_subbuf(const CpuBuffer& cb, uint64_t idx, uint64_t from, F&& f,
                              uint64_t guess = 0) noexcept {
  return walk_page(cb.page(idx), cb.subbuf_size, from, std::forward<F>(f), guess);
}

/// Pins position `idx` if it is LIVE(lap): it cannot be recycled until
/// unpin(). Returns the position word after pinning.
inline std::optional<uint64_t> pin(CpuBuffer& cb, uint64_t idx, uint64_t lap) noexcept {
  std::atomic<uint64_t>& slot = cb.positions[idx];
  uint64_t w = slot.load(std::memory_order_acquire);
  for (;;) {
    if (pw_phase(w) != Phase::live || pw_lap(w) != lap || pw_pins(w) == kPinsMax)
      return std::nullopt;
    if (slot.compare_exchange_weak(w, w + kPinUnit, std::memory_order_acq_rel,
                                   std::memory_order_acquire))
      return w + kPinUnit;
  }
}
inline void unpin(CpuBuffer& cb, uint64_t idx) noexcept {
  cb.positions[idx].fetch_sub(kPinUnit, std::memory_order_release);
}

}  // namespace tracepipe::buffers::detail
