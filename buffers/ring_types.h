#pragma once
// The ring buffer's types that an application names: its overflow mode,
// how pause() fenced the writers, and the ring itself as an opaque handle
// (Instance::ring(), the readers of buffers/readers.h). The layout behind
// the handle is the inline write path's (buffers/ring_buffer.h), which no
// public signature needs.
#include <cstdint>

namespace tracepipe::buffers {

/// What happens when a writer needs a sub-buffer that still holds data.
enum class OverflowMode : uint8_t {
  overwrite,    ///< flight recorder: recycle the oldest sub-buffer (its unread records count as
                ///< overrun)
  drop_newest,  ///< producer/consumer: refuse the new record (counted lost_full)
};

/// How pause() made sure that no cpu_local writer's section, already past
/// its compare when the PAUSED bit was set, stores over the bit after
/// pause() returns ("pause()" at the top of this file).
enum class PauseFence : uint8_t {
  not_needed,  ///< any_cpu writers (or ThreadSanitizer builds): the locked CAS is enough
  membarrier,  ///< detail::rseq_fence(): one membarrier(PRIVATE_EXPEDITED_RSEQ)
  cpu_visits,  ///< rseq_fence() failed; the calling thread ran on every online CPU of
               ///< the buffer in turn (detail::run_on_cpu), counted pause_fence_fallbacks()
  failed,      ///< both failed: a writer on some CPU may still reserve after pause()
               ///< returns (its tail can lose the PAUSED bit); counted pause_unfenced()
};

/// A ring buffer (buffers/ring_buffer.h): per-CPU sub-buffers, readers take
/// it by reference.
class RingBufferBase;

}  // namespace tracepipe::buffers
