#pragma once
// The stacktrace trigger's record: the emitting thread's user-space stack,
// as the kernel's ftrace:user_stack entry (tgid, caller[8]), found by a
// frame-pointer walk bounded in depth (kUserStackFrames) and in address (only
// inside the thread's stack, ThreadContext::stack_lo..stack_hi, each frame
// above the previous one). Frames of code built without frame pointers end
// the walk early; unused slots are 0, as in the kernel's entry.
#include <cstdint>

#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/instance/thread_context.h"
#include "tracepipe/core/triggers/triggers.h"

namespace tracepipe::triggers {

/// The ftrace:user_stack event of `registry` (registered on first use, with
/// the kernel's format: ID 13 when free). Control plane.
const EventDesc& user_stack_event(Registry& registry);

/// Fills `callers` with up to kUserStackFrames return addresses of the
/// calling thread, innermost first; returns how many. Write path: no
/// allocation, lock or system call; reads only inside [stack_lo, stack_hi).
[[gnu::noinline]] uint32_t walk_user_stack(const ThreadContext& thread, uint64_t (&callers)[kUserStackFrames]) noexcept;

}  // namespace tracepipe::triggers
