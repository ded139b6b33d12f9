// RingBufferBase: memory, pause/resume, statistics; the recycling and wake-up
// helpers of the slow path; explicit instantiations of both modes.
#include "tracepipe/buffers/ring_buffer.h"

#include "tracepipe/buffers/sysfs_cpus.h"
#ifdef TRACEPIPE_TEST_HOOKS
#include "tracepipe/buffers/testing/hooks.h"
#endif

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <new>

namespace tracepipe::buffers {

uint64_t monotonic_clock_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

bool is_pow2(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

RingMemoryLayout ring_memory_layout(const RingBufferConfig& cfg, OverflowMode mode) {
  using namespace detail;
  if (cfg.cpus == 0 || cfg.cpus > 65536)
    throw ConfigError("ring buffer: cpus must be in [1, 65536], got " + std::to_string(cfg.cpus));
  if (!is_pow2(cfg.subbuf_size) || cfg.subbuf_size < kMinSubbufSize ||
      cfg.subbuf_size > kMaxSubbufSize)
    throw ConfigError("ring buffer: subbuf_size must be a power of two in [64, 4194304], got " +
                      std::to_string(cfg.subbuf_size));
  if (cfg.size_per_cpu == 0) throw ConfigError("ring buffer: size_per_cpu must be > 0");
  size_t n = (cfg.size_per_cpu + cfg.subbuf_size - 1) / cfg.subbuf_size;
  if (n < 2) n = 2;  // like the kernel's minimum of two pages
  if (cfg.spare_subbufs > kMaxSpares)
    throw ConfigError("ring buffer: spare_subbufs must be in [0, " + std::to_string(kMaxSpares) +
                      "], got " + std::to_string(cfg.spare_subbufs));
  if (n + 1 + cfg.spare_subbufs > kMaxPositions)
    throw ConfigError("ring buffer: size_per_cpu / subbuf_size must be < " +
                      std::to_string(kMaxPositions) + " sub-buffers, got " + std::to_string(n));
  RingMemoryLayout l;
  l.cpus = cfg.cpus;
  l.nr_subbufs = static_cast<uint32_t>(n + 1);  // + the spare that overwrite recycles ahead
  // Only overwrite sets a sub-buffer aside; drop-newest never swaps, so it
  // gets no spare memory whatever the config says.
  l.nr_spares = mode == OverflowMode::overwrite ? cfg.spare_subbufs : 0;
  l.subbuf_size = cfg.subbuf_size;
  l.cpu_state_offset = 0;
  l.cpu_state_size = sizeof(CpuBuffer);
  l.positions_offset = l.cpu_state_offset + size_t{l.cpus} * sizeof(CpuBuffer);
  l.spares_offset = l.positions_offset + size_t{l.cpus} * l.nr_subbufs * sizeof(uint64_t);
  l.slots_offset = l.spares_offset + size_t{l.cpus} * l.nr_spares * sizeof(uint64_t);
  const size_t page_align = 4096;
  l.pages_offset =
      (l.slots_offset + size_t{l.cpus} * l.nr_subbufs * sizeof(uint32_t) + page_align - 1) /
      page_align * page_align;
  l.pages_per_cpu = (size_t{l.nr_subbufs} + l.nr_spares) * l.subbuf_size;
  l.total = l.pages_offset + size_t{l.cpus} * l.pages_per_cpu;
  return l;
}

RingBufferBase::RingBufferBase(const RingBufferConfig& cfg, OverflowMode mode) : mode_(mode) {
  using namespace detail;
  const RingMemoryLayout layout = ring_memory_layout(cfg, mode);
  subbuf_size_ = layout.subbuf_size;
  nr_pos_ = layout.nr_subbufs;
  ncpu_ = cfg.cpus;
  // Before the buffers: a member that throws no longer leaks them.
  if (mode == OverflowMode::drop_newest) block_ = std::make_unique<Blocking>(ncpu_);
  uint32_t shift = 0;
  while ((size_t{1} << shift) < subbuf_size_) ++shift;

  external_memory_ = cfg.memory != nullptr;
  if (external_memory_) {
    if (cfg.memory_size < layout.total)
      throw ConfigError("ring buffer: memory region of " + std::to_string(cfg.memory_size) +
                        " bytes, needs " + std::to_string(layout.total));
    if (reinterpret_cast<uintptr_t>(cfg.memory) % 4096 != 0)
      throw ConfigError("ring buffer: memory region not 4096-aligned");
    cpus_ = reinterpret_cast<CpuBuffer*>(cfg.memory + layout.cpu_state_offset);
    for (uint32_t c = 0; c < ncpu_; ++c) new (&cpus_[c]) CpuBuffer();
  } else {
    cpus_ = new CpuBuffer[ncpu_];
  }
  const size_t align = subbuf_size_ < 4096 ? 64 : 4096;
  const size_t bytes = layout.pages_per_cpu;
  const uint32_t nsp = layout.nr_spares;
  for (uint32_t c = 0; c < ncpu_; ++c) {
    CpuBuffer& cb = cpus_[c];
    void* mem;
    std::atomic<uint64_t>* positions;
    std::atomic<uint64_t>* spares;
    std::atomic<uint32_t>* slots;
    auto* walkers = new (std::nothrow) std::atomic<int32_t>[nr_pos_ + nsp];  // zero: nobody walks
    if (walkers == nullptr) {
      release();
      throw std::bad_alloc();
    }
    cb.walkers = walkers;
    if (external_memory_) {
      mem = cfg.memory + layout.pages_offset + c * layout.pages_per_cpu;
      positions = reinterpret_cast<std::atomic<uint64_t>*>(cfg.memory + layout.positions_offset +
                                                           size_t{c} * nr_pos_ * sizeof(uint64_t));
      spares = reinterpret_cast<std::atomic<uint64_t>*>(cfg.memory + layout.spares_offset +
                                                        size_t{c} * nsp * sizeof(uint64_t));
      slots = reinterpret_cast<std::atomic<uint32_t>*>(cfg.memory + layout.slots_offset +
                                                       size_t{c} * nr_pos_ * sizeof(uint32_t));
      for (uint32_t i = 0; i < nr_pos_; ++i) new (&positions[i]) std::atomic<uint64_t>(0);
      for (uint32_t i = 0; i < nsp; ++i) new (&spares[i]) std::atomic<uint64_t>(0);
      for (uint32_t i = 0; i < nr_pos_; ++i) new (&slots[i]) std::atomic<uint32_t>(0);
    } else {
      mem = std::aligned_alloc(align, (bytes + align - 1) / align * align);
      positions = new (std::nothrow) std::atomic<uint64_t>[nr_pos_];
      spares = new (std::nothrow) std::atomic<uint64_t>[nsp + 1];  // + 1: never a null array
      slots = new (std::nothrow) std::atomic<uint32_t>[nr_pos_];
      if (mem == nullptr || positions == nullptr || spares == nullptr || slots == nullptr) {
        std::free(mem);
        delete[] positions;
        delete[] spares;
        delete[] slots;
        release();
        throw std::bad_alloc();
      }
    }
    std::memset(mem, 0, bytes);  // I1, and no page fault on the write path later
    cb.pages = static_cast<std::byte*>(mem);
    cb.positions = positions;
    cb.spares = spares;
    cb.slots = slots;
    cb.nr_spares = nsp;
    // FREE words carry the lap they last held (ABA protection, ring_buffer.h):
    // position i >= 1 is first claimed for lap 0, so it "held" lap -1.
    for (uint32_t i = 0; i < nr_pos_; ++i) positions[i].store(make_pw(Phase::free, kLapMask, 0, 0));
    positions[0].store(make_pw(Phase::live, 0, 0, 0));  // the tail starts in position 0, lap 0
    // Position i starts in slot i; the slots after the positions are the spares.
    for (uint32_t i = 0; i < nr_pos_; ++i) slots[i].store(i, std::memory_order_relaxed);
    for (uint32_t i = 0; i < nsp; ++i) spares[i].store(make_sw(SpareState::empty, nr_pos_ + i, 0));
    cb.subbuf_size = subbuf_size_;
    cb.subbuf_shift = shift;
    cb.nr_pos = nr_pos_;
    cb.cpu = c;
  }
}

RingBufferBase::~RingBufferBase() { release(); }

// ── Blocking mode ("Blocking" in ring_buffer.h) ────────────────────────────

void RingBufferBase::set_block_timeout(uint64_t ns) noexcept {
  if (block_ == nullptr) return;  // overwrite: never blocks
  block_->timeout_ns.store(ns, std::memory_order_relaxed);
  if (ns == 0)
    for (uint32_t c = 0; c < ncpu_; ++c) wake_blocked(c);
}

RingBufferBase::BlockStats RingBufferBase::block_stats(uint32_t cpu) const noexcept {
  BlockStats r;
  if (block_ == nullptr || cpu >= ncpu_) return r;
  const BlockState& b = block_->cpus[cpu];
  r.waits = b.waits.load(std::memory_order_relaxed);
  r.wait_ns = b.wait_ns.load(std::memory_order_relaxed);
  r.max_wait_ns = b.max_wait_ns.load(std::memory_order_relaxed);
  r.timed_out = b.timed_out.load(std::memory_order_relaxed);
  r.not_allowed = b.not_allowed.load(std::memory_order_relaxed);
  return r;
}

void RingBufferBase::wake_blocked_slow(uint32_t cpu) noexcept {
  BlockState& b = block_->cpus[cpu];
  b.seq.fetch_add(1, std::memory_order_seq_cst);
  (void)::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&b.seq), FUTEX_WAKE_PRIVATE, INT32_MAX,
                  nullptr, nullptr, 0);
}

bool RingBufferBase::block_wait(detail::CpuBuffer& cb, uint64_t nidx, uint64_t old_lap,
                                BlockWait& bw) noexcept {
  using namespace detail;
  BlockState& b = block_->cpus[cb.cpu];
  const uint64_t timeout = block_->timeout_ns.load(std::memory_order_relaxed);
  const uint64_t now = monotonic_clock_ns();
  if (bw.start == 0) {
    // (W1) The first wait of this reservation: may this writer wait at all?
    const BlockPolicy policy = block_->policy.load(std::memory_order_acquire);
    if (timeout == 0 || (policy != nullptr && !policy())) {
      b.not_allowed.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    b.waits.fetch_add(1, std::memory_order_relaxed);
    bw.start = now;
    bw.credited = now;
    bw.deadline = timeout == kBlockForever || now + timeout < now ? UINT64_MAX : now + timeout;
  }
  if (timeout == 0 || now >= bw.deadline) {  // (W4) the bound, or set_block_timeout(0)
    b.wait_ns.fetch_add(now - bw.credited, std::memory_order_relaxed);
    bw.credited = now;
    b.timed_out.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // (W2) Announce, then load the sequence, then look again: a reader that
  // freed the position before our load is seen here; one that frees after
  // it sees waiters != 0 (both seq_cst) and moves the sequence.
  b.waiters.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t seq = b.seq.load(std::memory_order_seq_cst);
  const uint64_t w = cb.positions[nidx].load(std::memory_order_seq_cst);
  const bool changed = pw_phase(w) == Phase::free || pw_lap(w) != old_lap ||
                       (pw_phase(w) == Phase::live && pw_read_off(w) == cb.subbuf_size &&
                        pw_pins(w) == 0 && pw_holders(w) == 0);
  if (!changed) {
    const uint64_t slice = std::min<uint64_t>(bw.deadline - now, kBlockPollNs);
    const timespec ts{static_cast<time_t>(slice / 1'000'000'000),
                      static_cast<long>(slice % 1'000'000'000)};
    (void)::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&b.seq), FUTEX_WAIT_PRIVATE, seq, &ts,
                    nullptr, 0);
  }
  b.waiters.fetch_sub(1, std::memory_order_seq_cst);  // (W3)
  const uint64_t t = monotonic_clock_ns();
  b.wait_ns.fetch_add(t - bw.credited, std::memory_order_relaxed);
  bw.credited = t;
  const uint64_t waited = t - bw.start;  // this reservation's wait so far
  uint64_t m = b.max_wait_ns.load(std::memory_order_relaxed);
  while (waited > m && !b.max_wait_ns.compare_exchange_weak(m, waited, std::memory_order_relaxed)) {
  }
  return true;
}

void RingBufferBase::release() noexcept {
  if (cpus_ == nullptr) return;
  for (uint32_t c = 0; c < ncpu_; ++c) {  // process-private in every case
    delete[] cpus_[c].walkers;
    cpus_[c].walkers = nullptr;
  }
  if (external_memory_) {  // the caller's region: nothing else to free
    cpus_ = nullptr;
    return;
  }
  for (uint32_t c = 0; c < ncpu_; ++c) {
    std::free(cpus_[c].pages);
    delete[] cpus_[c].positions;
    delete[] cpus_[c].spares;
    delete[] cpus_[c].slots;
    cpus_[c].pages = nullptr;
    cpus_[c].positions = nullptr;
    cpus_[c].spares = nullptr;
    cpus_[c].slots = nullptr;
  }
  delete[] cpus_;
  cpus_ = nullptr;
}

PauseFence RingBufferBase::pause() noexcept {
  const std::lock_guard lk(pause_mu_);
  paused_.store(true, std::memory_order_release);
  // cpu_local writers store the tail without a lock (rseq.h): a section that
  // compared before our CAS could still store over the PAUSED bit. After the
  // fence (P2) every such section has finished or restarted (and will see
  // the bit), so one more look at every tail (P3) settles it; a bit lost
  // anyway is set again and the fence repeated.
  auto set_paused_bits = [this] {
    for (uint32_t c = 0; c < ncpu_; ++c) {
      detail::CpuBuffer& cb = cpus_[c];
      uint64_t pos = detail::load_relaxed(cb.tail.pos), ts = detail::load_relaxed(cb.tail.ts);
      while ((pos & detail::kPausedBit) == 0 &&
             !detail::cas16(&cb.tail, pos, ts, pos | detail::kPausedBit, ts)) {
      }
    }
  };
  PauseFence how = fence_on_pause_ ? PauseFence::membarrier : PauseFence::not_needed;
  for (bool again = true; again;) {
    again = false;
    set_paused_bits();  // (P1)
    if (!fence_on_pause_) break;
    const PauseFence f = fence_sections();  // (P2)
    if (f == PauseFence::failed) {
      // (P4) Nothing proves the sections done: set again the bits lost so
      // far, but a section still in flight may clear one later. Reported
      // (return value and counter), never hidden.
      set_paused_bits();
      pause_unfenced_.fetch_add(1, std::memory_order_relaxed);
      return PauseFence::failed;
    }
    if (f == PauseFence::cpu_visits) how = f;
    for (uint32_t c = 0; c < ncpu_; ++c)  // (P3)
      if ((detail::load_relaxed(cpus_[c].tail.pos) & detail::kPausedBit) == 0) again = true;
  }
  if (how == PauseFence::cpu_visits) pause_fence_fallbacks_.fetch_add(1, std::memory_order_relaxed);
  return how;
}

PauseFence RingBufferBase::fence_sections() noexcept {
  if (fence_fn_(*this)) return PauseFence::membarrier;
  // membarrier refused (a seccomp filter, a kernel that lost the
  // registration, -ENOMEM): run on each CPU in turn instead (rseq.h:
  // run_on_cpu). A CPU we cannot run on is fine only if it is offline.
  detail::SavedAffinity saved;
  if (!saved.ok()) return PauseFence::failed;
  bool ok = true;
  for (uint32_t c = 0; c < ncpu_ && ok; ++c)
    if (!visit_fn_(*this, c) && cpu_online(c)) ok = false;
  if (!saved.restore()) ok = false;  // cannot happen (the mask was ours); never hide it
  return ok ? PauseFence::cpu_visits : PauseFence::failed;
}

void RingBufferBase::resume() noexcept {
  const std::lock_guard lk(pause_mu_);
  for (uint32_t c = 0; c < ncpu_; ++c) {
    detail::CpuBuffer& cb = cpus_[c];
    uint64_t pos = detail::load_relaxed(cb.tail.pos), ts = detail::load_relaxed(cb.tail.ts);
    while ((pos & detail::kPausedBit) != 0 &&
           !detail::cas16(&cb.tail, pos, ts, pos & ~detail::kPausedBit, ts)) {
    }
  }
  paused_.store(false, std::memory_order_release);
}

void RingBufferBase::set_paused_nowait(bool paused) noexcept {
  paused_.store(paused, std::memory_order_release);
  for (uint32_t c = 0; c < ncpu_; ++c) {
    detail::CpuBuffer& cb = cpus_[c];
    uint64_t pos = detail::load_relaxed(cb.tail.pos), ts = detail::load_relaxed(cb.tail.ts);
    for (;;) {
      const bool want = paused_.load(std::memory_order_acquire);
      const bool have = (pos & detail::kPausedBit) != 0;
      if (want == have) break;
      const uint64_t next = want ? (pos | detail::kPausedBit) : (pos & ~detail::kPausedBit);
      if (detail::cas16(&cb.tail, pos, ts, next, ts)) break;
    }
  }
}

CpuStats RingBufferBase::stats(uint32_t cpu) const noexcept {
  using namespace detail;
  CpuStats s;
  if (cpu >= ncpu_) return s;
  CpuBuffer& cb = cpus_[cpu];
  // Set-aside sub-buffers whose writers have committed are counted now
  // (lost_set_aside), so that the law holds exactly once no writer runs.
  (void)reclaim_set_aside(cb);
  s.overrun = cb.overrun.load(std::memory_order_relaxed);
  s.commit_overrun = cb.commit_overrun.load(std::memory_order_relaxed);
  s.lost_set_aside = cb.lost_set_aside.load(std::memory_order_relaxed);
  s.lost_full = cb.lost_full.load(std::memory_order_relaxed);
  s.lost_paused = cb.lost_paused.load(std::memory_order_relaxed);
  s.lost_too_big = cb.lost_too_big.load(std::memory_order_relaxed);
  s.lost_busy = cb.lost_busy.load(std::memory_order_relaxed);
  s.reclaimed = cb.reclaimed.load(std::memory_order_relaxed);
  s.discarded = cb.padded.load(std::memory_order_relaxed) + s.reclaimed;
  s.read = cb.read.load(std::memory_order_relaxed);
  s.subbuf_switches = cb.switches.load(std::memory_order_relaxed);
  s.set_aside = cb.set_aside.load(std::memory_order_relaxed);
  s.taken_over = cb.taken_over.load(std::memory_order_relaxed);
  uint64_t oldest = UINT64_MAX, newest = 0;
  for (uint64_t idx = 0; idx < cb.nr_pos; ++idx) {
    const uint64_t w = cb.positions[idx].load(std::memory_order_acquire);
    if (pw_phase(w) != Phase::live) continue;
    const std::optional<uint64_t> pinned = pin(cb, idx, pw_lap(w));
    if (!pinned) continue;
    walk_subbuf(cb, idx, pw_read_off(*pinned), [&](uint64_t, uint32_t word, const RecordHeader* h) {
      if (word_kind(word) != kKindData) return;
      ++s.entries;
      s.bytes += word_len(word);
      if (h->ts < oldest) oldest = h->ts;
      if (h->ts > newest) newest = h->ts;
    });
    unpin(cb, idx);
  }
  // Records a consuming reader has taken but not handed out yet.
  const uint64_t held = cb.held.load(std::memory_order_relaxed);
  if (held != 0) {
    s.entries += held;
    s.bytes += cb.held_bytes.load(std::memory_order_relaxed);
    const uint64_t hold = cb.held_oldest_ts.load(std::memory_order_relaxed);
    const uint64_t hnew = cb.held_newest_ts.load(std::memory_order_relaxed);
    if (hold < oldest) oldest = hold;
    if (hnew > newest) newest = hnew;
  }
  if (s.entries != 0) {
    s.oldest_ts = oldest;
    s.newest_ts = newest;
  }
  return s;
}

namespace detail {

namespace {

// Moves a LIVE position from exactly word w to PREPARING, zeroes the used
// part of its sub-buffer [0, used) and frees it. False when the word is no
// longer w. w has no pins and no holds (free_consumed), exactly one hold,
// the caller's own (recycle_overwrite, T2), or exactly one pin and no hold,
// the consuming reader's own (consume_and_free): nobody else can be reading
// the sub-buffer, and the caller's hold or pin is dropped by this same CAS. The FREE word keeps the
// lap (ABA protection): only a switcher whose view of the tail is current (it wants lap + 1) can
// claim it.
bool zero_and_free(CpuBuffer& cb, uint64_t idx, uint64_t w, uint64_t used) noexcept {
  std::atomic<uint64_t>& slot = cb.positions[idx];
  if (!slot.compare_exchange_strong(w, make_pw(Phase::preparing, pw_lap(w), 0, 0),
                                    std::memory_order_acq_rel))
    return false;
  // Nobody else touches the page now: readers and walkers only do so
  // holding a pin, and the CAS above succeeded only with no pin but the
  // caller's (which it dropped); a pin attempted from here on fails on the
  // phase. So a plain memset: vector stores, several times faster than
  // 8-byte atomic stores on a path every overwrite commit pays.
  const uint64_t n = used < cb.subbuf_size ? used : cb.subbuf_size;
  std::memset(cb.page(idx), 0, n);
  slot.store(make_pw(Phase::free, pw_lap(w), 0, 0), std::memory_order_release);
  return true;
}

// The END word (when present) occupies 4 bytes at `off`.
uint64_t used_bytes(const WalkResult& r) noexcept {
  return r.stop == Stop::end ? r.off + 4 : r.off;
}

// Takes an EMPTY spare (CAS to TAKEN): returns its index, or nr_spares if none.
uint32_t take_spare(CpuBuffer& cb) noexcept {
  for (uint32_t i = 0; i < cb.nr_spares; ++i) {
    uint64_t w = cb.spares[i].load(std::memory_order_acquire);
    if (sw_state(w) == SpareState::empty &&
        cb.spares[i].compare_exchange_strong(w, make_sw(SpareState::taken, sw_slot(w), 0),
                                             std::memory_order_acq_rel))
      return i;
  }
  return cb.nr_spares;
}

// (X3) The swap's walk over the memory it sets aside, from the first pending
// record: steps over pending records by the stride their writer stored at
// (D), and turns every committed data record into padding of its length,
// counting them (they are overrun, as a recycle counts them; as padding the
// reclaim walk does not count them again). Stops at END, at S, or at a zero
// word whose stride is not stored yet (a writer between (C) and (D), or the
// end of what was reserved): records after such a word that were already
// committed are counted later, by the reclaim, as lost_set_aside.
uint64_t retire_committed(std::byte* page, uint64_t S, uint64_t from) noexcept {
  uint64_t off = from, retired = 0;
  while (off + kHeaderSize <= S) {
    const uint32_t word = load_word(page + off);
    const uint32_t kind = word_kind(word);
    uint64_t stride;
    if (kind == kKindNone) {
      auto* h = reinterpret_cast<RecordHeader*>(page + off);
      stride = std::atomic_ref<uint32_t>(h->stride).load(std::memory_order_relaxed);
      if (stride < kHeaderSize || stride % kRecordAlign != 0) break;
    } else if (kind == kKindEnd) {
      break;
    } else {
      stride = stride_for(word_len(word));
      if (kind == kKindData) {
        // Nobody else stores this word: its writer is done (it committed),
        // and no reader pins the position (we moved it to PREPARING).
        std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(page + off))
            .store(make_word(kKindPadding, word_len(word)), std::memory_order_relaxed);
        ++retired;
      }
    }
    if (off + stride > S) break;
    off += stride;
  }
  return retired;
}

// Gives up a hold taken by recycle_overwrite on position idx (lap `lap`),
// whose memory is slot `slot`: while the position is still LIVE(lap) the
// hold is still counted in its word; otherwise a takeover absorbed it into
// walkers[slot] ("Takeover" (T3)), where it is given back instead. The lap
// only goes up, so a position that is LIVE(lap) now has been so since the
// hold was taken: nobody can have absorbed it.
void release_hold(CpuBuffer& cb, uint64_t idx, uint64_t lap, uint64_t slot) noexcept {
  std::atomic<uint64_t>& pw = cb.positions[idx];
  uint64_t w = pw.load(std::memory_order_acquire);
  for (;;) {
    if (pw_phase(w) != Phase::live || pw_lap(w) != lap || pw_holders(w) == 0) {
      cb.walkers[slot].fetch_sub(1, std::memory_order_acq_rel);
      return;
    }
    if (pw.compare_exchange_weak(w, w - kHoldUnit, std::memory_order_acq_rel,
                                 std::memory_order_acquire))
      return;
  }
}

// (X1)-(X5), (T3): swaps a spare in for the memory `slot` of position idx,
// which the caller holds and walked from `walked_from` (its read_off) to
// `from`: a pending record there (pending: "Set aside"), or a sub-buffer
// whose other holders may still walk it (a takeover). The old memory is set
// aside until its writers are done and its walkers gone. `unread`: the data
// records the walk counted before `from`. On any outcome but `recycled` the
// caller still holds the position (unless raced: then the hold is given back).
// Out of line and cold: it must not take registers from recycle_overwrite's walk.
[[gnu::noinline, gnu::cold]] Recycle swap_out(CpuBuffer& cb, uint64_t idx, uint64_t lap,
                                              uint64_t slot, uint64_t walked_from, uint64_t from,
                                              uint64_t unread, bool pending) noexcept {
  const Recycle none = pending ? Recycle::pending : Recycle::pinned;
  if (cb.nr_spares == 0) return none;
  uint32_t e = take_spare(cb);  // (X1)
  if (e == cb.nr_spares && reclaim_set_aside(cb) != 0) e = take_spare(cb);
  if (e == cb.nr_spares) return none;  // every spare holds a stalled record: drop
  std::atomic<uint64_t>& spare = cb.spares[e];
  const uint64_t fresh = sw_slot(spare.load(std::memory_order_relaxed));
#ifdef TRACEPIPE_TEST_HOOKS
  if (const SwapTestHook hook = swap_test_hook.load(std::memory_order_relaxed)) hook(cb, idx);
#endif
  // (X2) The recycle's CAS: from LIVE(lap), no reader's pin, read_off where
  // we walked from (a reader that consumed meanwhile: its records are read,
  // not overrun). Holders may come and go meanwhile: they only read.
  std::atomic<uint64_t>& pw = cb.positions[idx];
  uint64_t w = pw.load(std::memory_order_acquire);
  for (;;) {
    if (pw_phase(w) != Phase::live || pw_lap(w) != lap || pw_pins(w) != 0 ||
        pw_read_off(w) != walked_from) {
      spare.store(make_sw(SpareState::empty, fresh, 0), std::memory_order_release);
      release_hold(cb, idx, lap, slot);
      return Recycle::raced;
    }
    if (pw.compare_exchange_weak(w, make_pw(Phase::preparing, lap, 0, 0), std::memory_order_acq_rel,
                                 std::memory_order_acquire))
      break;
  }
  // (T3) The other holders' holds move to the memory they walk: it is not
  // zeroed before each of them has given its hold back (release_hold).
  if (const uint64_t others = pw_holders(w) - 1; others != 0)
    cb.walkers[slot].fetch_add(static_cast<int32_t>(others), std::memory_order_acq_rel);
  // Our own hold ends here; the memory stays ours (spare TAKEN) until (X4).
  const uint64_t retired = retire_committed(cb.slot_page(slot), cb.subbuf_size, from);  // (X3)
  cb.slots[idx].store(static_cast<uint32_t>(fresh), std::memory_order_release);         // (X4)
  spare.store(make_sw(SpareState::aside, slot, from), std::memory_order_release);
  cb.overrun.fetch_add(unread + retired, std::memory_order_relaxed);
  if (pending)
    cb.set_aside.fetch_add(1, std::memory_order_relaxed);
  else
    cb.taken_over.fetch_add(1, std::memory_order_relaxed);
  pw.store(make_pw(Phase::free, lap, 0, 0), std::memory_order_release);  // (X5)
  return Recycle::recycled;
}

}  // namespace

#ifdef TRACEPIPE_TEST_HOOKS
std::atomic<SwapTestHook> swap_test_hook{nullptr};
std::atomic<SwapTestHook> recycle_test_hook{nullptr};
#endif

uint32_t reclaim_set_aside(CpuBuffer& cb) noexcept {
  uint32_t empty = 0;
  for (uint32_t i = 0; i < cb.nr_spares; ++i) {
    std::atomic<uint64_t>& spare = cb.spares[i];
    uint64_t w = spare.load(std::memory_order_acquire);
    if (sw_state(w) == SpareState::empty) {
      ++empty;
      continue;
    }
    if (sw_state(w) != SpareState::aside) continue;
    const uint64_t slot = sw_slot(w);
    if (!spare.compare_exchange_strong(w, make_sw(SpareState::taken, slot, 0),
                                       std::memory_order_acq_rel))
      continue;
    // (R) Ours alone now. Data records here were pending when the sub-buffer
    // was set aside (the swap made the others padding): lost, each counted
    // once, as the walk never passes the same offset twice.
    std::byte* page = cb.slot_page(slot);
    uint64_t lost = 0;
    const WalkResult r = walk_page(page, cb.subbuf_size, sw_from(w),
                                   [&](uint64_t, uint32_t word, const RecordHeader*) {
                                     if (word_kind(word) == kKindData) ++lost;
                                   });
    if (lost != 0) cb.lost_set_aside.fetch_add(lost, std::memory_order_relaxed);
    // A writer has not committed yet, or a recycler whose hold a takeover
    // absorbed may still walk it ("Takeover"): look again later.
    if (r.stop == Stop::uncommitted || cb.walkers[slot].load(std::memory_order_acquire) != 0) {
      spare.store(make_sw(SpareState::aside, slot, r.off), std::memory_order_release);
      continue;
    }
    // Every record committed (END or full), every walker gone: nobody
    // touches it again (I3).
    std::memset(page, 0, used_bytes(r) < cb.subbuf_size ? used_bytes(r) : cb.subbuf_size);
    spare.store(make_sw(SpareState::empty, slot, 0), std::memory_order_release);
    ++empty;
  }
  return empty;
}

Recycle recycle_overwrite(CpuBuffer& cb, uint64_t idx, uint64_t old_lap, uint64_t stride) noexcept {
  std::atomic<uint64_t>& pw = cb.positions[idx];
  uint64_t w = pw.load(std::memory_order_acquire);
  if (pw_phase(w) != Phase::live || pw_lap(w) != old_lap) return Recycle::stale;
  // (T1) Hold it before the walk (I3). The memory is read between two
  // observations of the same LIVE(old_lap) word (the load, and the hold's
  // CAS from it): its slot cannot have changed in between (only while
  // PREPARING, and the lap only goes up), so it is the memory we hold.
  // A hold does not keep others out: another recycler may hold it too, and
  // take over from us if we stall ("Takeover").
  uint64_t slot;
  for (;;) {
    if (pw_pins(w) != 0) return Recycle::pinned;  // a reader is copying: do not even try
    if (pw_holders(w) == kHoldersMax) return Recycle::pinned;
    slot = cb.slots[idx].load(std::memory_order_acquire);
    if (pw.compare_exchange_weak(w, w + kHoldUnit, std::memory_order_acq_rel,
                                 std::memory_order_acquire))
      break;
    if (pw_phase(w) != Phase::live || pw_lap(w) != old_lap)
      return Recycle::raced;  // the caller looks again
  }
  const uint64_t read_off = pw_read_off(w);
#ifdef TRACEPIPE_TEST_HOOKS
  if (const SwapTestHook hook = recycle_test_hook.load(std::memory_order_relaxed)) hook(cb, idx);
#endif
  // The sub-buffer was written a whole lap ago: it is cold. The walk below
  // chases one header to the next (a chain of dependent loads), and the
  // zeroing after it touches every line anyway, so fetch the lines first, in
  // parallel, with write intent.
  const std::byte* page = cb.slot_page(slot);
  const uint64_t first = read_off & ~uint64_t{63};
  const uint64_t ahead = cb.subbuf_size - first < 8192 ? cb.subbuf_size : first + 8192;
  for (uint64_t o = first; o < ahead; o += 64) __builtin_prefetch(page + o, 1, 3);
  // Every record must be committed (I3); count those after read_off. The
  // walk costs a few instructions per record at every switch: padding is
  // rare, so it is the case counted by a branch.
  uint64_t walked = 0, padding = 0;
  uint64_t fetch_at =
      ahead < cb.subbuf_size ? first & ~uint64_t{4095} : cb.subbuf_size;  // large sub-buffers only
  const WalkResult r = walk_page(
      page, cb.subbuf_size, read_off,
      [&](uint64_t off, uint32_t word, const RecordHeader*) {
        ++walked;
        if (word_kind(word) != kKindData) [[unlikely]]
          ++padding;
        if (off >= fetch_at) [[unlikely]] {  // entering a 4 KiB block: fetch the one 8 KiB past it
          const uint64_t end =
              fetch_at + 8192 + 4096 < cb.subbuf_size ? fetch_at + 8192 + 4096 : cb.subbuf_size;
          for (uint64_t o = fetch_at + 8192; o < end; o += 64) __builtin_prefetch(page + o, 1, 3);
          fetch_at += 4096;
        }
      },
      stride);
  const uint64_t unread = walked - padding;
  if (r.stop == Stop::uncommitted) {
    // A pending record (I3): swap the memory out instead ("Set aside").
    const Recycle s = swap_out(cb, idx, old_lap, slot, read_off, r.off, unread, /*pending=*/true);
    if (s == Recycle::pending) release_hold(cb, idx, old_lap, slot);
    return s;
  }
  // (T2) Zero it in place and free it, by the recycle's CAS from LIVE(old_lap)
  // held by us alone, with no reader's pin, read_off where we walked from (a
  // reader that consumed meanwhile: its records are read, not overrun). The
  // memset is safe then: readers and walkers only read it holding a pin or
  // a hold. Other holders (one of them stalled, or walking on another CPU):
  // they may still read it, so swap it out instead (T3). Our hold absorbed
  // by someone else's CAS: they recycled it; we are done.
  w = pw.load(std::memory_order_acquire);
  for (;;) {
    if (pw_phase(w) != Phase::live || pw_lap(w) != old_lap) {
      cb.walkers[slot].fetch_sub(1, std::memory_order_acq_rel);
      return Recycle::raced;
    }
    if (pw_pins(w) != 0 || pw_read_off(w) != read_off) {
      release_hold(cb, idx, old_lap, slot);
      return Recycle::raced;
    }
    if (pw_holders(w) != 1) {
      const Recycle s =
          swap_out(cb, idx, old_lap, slot, read_off, r.off, unread, /*pending=*/false);
      if (s == Recycle::pinned) release_hold(cb, idx, old_lap, slot);  // no spare: busy, as before
      return s;
    }
    if (pw.compare_exchange_weak(w, make_pw(Phase::preparing, old_lap, 0, 0),
                                 std::memory_order_acq_rel, std::memory_order_acquire))
      break;
  }
  // PREPARING: nobody else touches the memory now (a pin or hold attempted
  // from here on fails on the phase). A plain memset: vector stores, several
  // times faster than 8-byte atomic stores on a path every overwrite commit
  // pays.
  const uint64_t used = used_bytes(r);
  std::memset(cb.slot_page(slot), 0, used < cb.subbuf_size ? used : cb.subbuf_size);
  pw.store(make_pw(Phase::free, old_lap, 0, 0), std::memory_order_release);
  cb.overrun.fetch_add(unread, std::memory_order_relaxed);
  return Recycle::recycled;
}

Recycle free_consumed(CpuBuffer& cb, uint64_t idx, uint64_t lap) noexcept {
  const uint64_t w = cb.positions[idx].load(std::memory_order_acquire);
  if (pw_phase(w) != Phase::live || pw_lap(w) != lap) return Recycle::stale;
  if (pw_read_off(w) != cb.subbuf_size) return Recycle::unread;
  // A recycler's hold counts here like a pin: it may be walking the memory.
  if (pw_pins(w) != 0 || pw_holders(w) != 0) return Recycle::pinned;
  // Fully consumed: everything up to S may be non-zero (END anywhere).
  if (!zero_and_free(cb, idx, w, cb.subbuf_size)) return Recycle::raced;
  return Recycle::recycled;
}

bool consume_and_free(CpuBuffer& cb, uint64_t idx, uint64_t lap, uint64_t from,
                      uint64_t used) noexcept {
  return zero_and_free(cb, idx, make_pw(Phase::live, lap, 1, from), used);
}

}  // namespace detail

template class RingBuffer<OverflowMode::overwrite>;
template class RingBuffer<OverflowMode::drop_newest>;
template class RingBuffer<OverflowMode::overwrite, FunctionClock, NoHooks, Writers::cpu_local>;
template class RingBuffer<OverflowMode::drop_newest, FunctionClock, NoHooks, Writers::cpu_local>;

}  // namespace tracepipe::buffers
