#pragma once
// Sideband's thread observer (core/instance/thread_context.h: ThreadObserver):
// what the thread registry calls, through the observer sideband installs at
// startup (SidebandEvents::global(), core/sideband/sideband_events.cc).
//
// Both return after one relaxed load when no instance records the event
// (sideband.h, S4). Neither throws. Not async-signal-safe in the sense that
// they take the sideband mutex (like registration itself, which takes the
// registry mutex); a thread that already holds the sideband mutex (it is
// inside a sideband call) does not take it again.
namespace tracepipe {

struct ThreadContext;

/// Installs the two calls below as the thread observer. Idempotent.
void install_sideband_thread_observer() noexcept;

/// (H1) Call at the end of thread registration, after the calling thread's
/// context is published (thread_context() returns it) and outside the
/// registry mutex. Writes tracepipe:task_comm(first_write) with the thread's
/// name, re-read under the sideband lock (refresh_thread_comm()).
void sideband_thread_registered(ThreadContext& ctx) noexcept;

/// (H2) Call at thread exit, while the context is still the calling
/// thread's (before it is unpublished). Writes tracepipe:task_exit.
void sideband_thread_exiting(ThreadContext& ctx) noexcept;

}  // namespace tracepipe
