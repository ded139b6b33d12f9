// Adaptive staging (InstanceOptions::staging = adaptive): the writers' two
// flips of an event between staging and direct, decided on their own
// counters (core/instance/instance.h, "Staging policies").
#include <atomic>
#include <cstdint>

#include "tracepipe/core/instance/adaptive_average.h"
#include "tracepipe/core/instance/instance.h"

namespace tracepipe {

// Adaptive staging, the two flips (fast_path.h calls them; the writer's own
// counter group holds its evidence, so no lock and no shared store but the
// flip itself). A flip is an atomic RMW of the flags word, so it never undoes
// a control change made meanwhile, and it keeps the release sequence that
// publishes a program with kFiltered.
namespace {
// Starts a thread's staged-check window at its current staged counts.
void restart_window(std::atomic<uint64_t>* c, uint64_t kept, uint64_t rejected) noexcept {
  c[detail::slot::adaptive_kept_mark].store(kept, std::memory_order_relaxed);
  c[detail::slot::adaptive_rejected_mark].store(rejected, std::memory_order_relaxed);
}
}  // namespace

// Called only for adaptive events (the lane tests kAdaptive, which is set
// when the event's state is made and never cleared).
void Instance::adaptive_check_staged(detail::EventState& st, std::atomic<uint64_t>* c) noexcept {
  const uint64_t kept = c[detail::slot::kept_staged].load(std::memory_order_relaxed);
  const uint64_t rejected = c[detail::slot::rejected_staged].load(std::memory_order_relaxed);
  const uint64_t dk = kept - c[detail::slot::adaptive_kept_mark].load(std::memory_order_relaxed);
  const uint64_t dr =
      rejected - c[detail::slot::adaptive_rejected_mark].load(std::memory_order_relaxed);
  // The call comes at every 32nd accept of the thread's lifetime, but the
  // window restarts when staging comes back: judge no fewer than 32 accepts
  // (else one accept after a flip back could send the event direct again).
  if (dk < 32) return;
  restart_window(c, kept, rejected);
  const uint64_t rate = (dk << 16) / (dk + dr);  // in 1/65536
  if (rate <= adaptive_threshold_) return;
  // Mostly accepted: go direct, a new period; this thread's moving average
  // starts from its window, other threads' from "all accepted".
  uint32_t f = st.flags.load(std::memory_order_relaxed);
  uint32_t nf;
  do {
    if ((f & detail::EventState::kThreadStaging) == 0) return;  // another thread flipped it
    nf = (f & ~detail::EventState::kThreadStaging) + (1u << detail::EventState::kGenShift);
  } while (!st.flags.compare_exchange_weak(f, nf, std::memory_order_relaxed));
  c[detail::slot::adaptive_score].store(
      detail::AdaptiveScore::pack(static_cast<int64_t>(rate),
                                  c[detail::slot::kept_direct].load(std::memory_order_relaxed),
                                  nf >> detail::EventState::kGenShift),
      std::memory_order_relaxed);
}

// A reject of an adaptive event gone direct (fast_path.h, after its discard).
// The thread's average moves only here: the accepts since its word was set
// (this thread's kept_direct count minus the word's mark) are caught up
// first, in one table load and multiply (core/instance/adaptive_average.h), then the
// reject's step, so an accepted direct emit pays nothing for the policy.
// Only this thread writes the word, but a signal handler's emit of the same
// event may run anywhere in here: the word is
// read before the count (so its mark is never past it) and replaced by a
// compare-exchange, which fails if a handler's reject replaced it meanwhile,
// and then the step is made again from the handler's word. So every step
// counts, in an order the emits could have had (a handler's accept after
// the count was read counts at the next reject). A locked instruction, on
// rejects only.
void Instance::adaptive_direct_rejected(detail::EventState& st, std::atomic<uint64_t>* c) noexcept {
  std::atomic<uint64_t>& score = c[detail::slot::adaptive_score];
  uint64_t word = score.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    std::atomic_signal_fence(
        std::memory_order_seq_cst);  // the word before the count, as a handler sees them
    const uint64_t kept = c[detail::slot::kept_direct].load(std::memory_order_relaxed);
    const uint64_t period =
        st.flags.load(std::memory_order_relaxed) >> detail::EventState::kGenShift;
    next = detail::adaptive_score_after_reject(word, kept, period);
  } while (!score.compare_exchange_weak(word, next, std::memory_order_relaxed));
  if (static_cast<uint64_t>(detail::AdaptiveScore::unpack(next).s) <= adaptive_threshold_)
    adaptive_back_to_staging(st, c);
}

void Instance::adaptive_back_to_staging(detail::EventState& st, std::atomic<uint64_t>* c) noexcept {
  // A fresh window for this thread's next check.
  restart_window(c, c[detail::slot::kept_staged].load(std::memory_order_relaxed),
                 c[detail::slot::rejected_staged].load(std::memory_order_relaxed));
  st.flags.fetch_or(detail::EventState::kThreadStaging, std::memory_order_relaxed);
}

}  // namespace tracepipe
