#pragma once
// core/record/pacing.h — how long the recorder sleeps before it looks at a
// CPU's ring again (core/record/recorder.cc, Pacing), from what one look
// reads without the writers' help: the CPU's rate (sub-buffers its tail
// closed since the previous look) and its unread sub-buffers. Internal:
// not installed.
#include <algorithm>
#include <cstdint>

namespace tracepipe::record::pacing {

/// The look comes before a rate this many times the one seen can fill the
/// CPU's free sub-buffers.
inline constexpr uint64_t kBurstFactor = 4;

/// The longest sleep (ns) before one CPU must be looked at again, at most
/// `quiet_ns` (max_poll_interval):
///   aim:   when `unread` reaches `drain_at` at `rate` (sub-buffers per ns),
///          so that the look that drains takes a batch;
///   guard: before kBurstFactor x `rate` fills the `usable` - `unread` free
///          sub-buffers (binds when drain_at is a large share of the ring);
///   quiet: `quiet_ns` when rate is 0 (no sub-buffer closed meanwhile).
/// `usable` is nr_subbufs - 1 (what a drop-newest ring holds). Pure.
inline uint64_t next_look_ns(double rate, uint64_t unread, uint64_t drain_at, uint64_t usable,
                             uint64_t quiet_ns) noexcept {
  if (!(rate > 0)) return quiet_ns;
  const double aim = static_cast<double>(drain_at > unread ? drain_at - unread : 1) / rate;
  const double guard = static_cast<double>(usable > unread ? usable - unread : 1) /
                       (static_cast<double>(kBurstFactor) * rate);
  const double ns = std::min({static_cast<double>(quiet_ns), aim, guard});
  return static_cast<uint64_t>(ns);
}

}  // namespace tracepipe::record::pacing
