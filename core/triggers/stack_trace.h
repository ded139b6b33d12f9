#pragma once
// The stacktrace trigger's record: the emitting thread's call chain, as the
// kernel's ftrace:kernel_stack entry (size, caller[size]): return addresses,
// innermost first, found by the DWARF call-frame information every x86_64
// object carries (.eh_frame), so frames of code built with or without frame
// pointers are all found. The unwinder is libgcc's _Unwind_Backtrace, which
// finds each object's unwind table through glibc's _dl_find_object: no
// allocation, lock or system call once warmed up (warm_up_stack_capture()).
//
// The library's own frames are skipped by their canonical frame address:
// the trigger passes the CFA of its first out-of-line frame (TriggerList::
// post_call, called from the emit); only frames whose CFA lies above it
// (its callers: the code that emitted) are recorded.
//
// Mirrors kernel/trace/trace.c: __ftrace_trace_stack (and trace_stack_print
// for the text: "<stack trace>" then one " => symbol" line per frame).
#include <cstdint>

#include "tracepipe/core/events/registry.h"

namespace tracepipe::triggers {

/// Frames a stacktrace record holds at most.
inline constexpr uint32_t kStackFrames = 64;
/// Entries a record holds at least: the kernel_stack format's caller[8]; a
/// shorter chain is padded with ~0 (the kernel's end mark), so that readers
/// of the fixed format never read past the record.
inline constexpr uint32_t kStackMinEntries = 8;

/// The ftrace:kernel_stack event of `registry` (registered on first use,
/// with the kernel's format: ID 4 when free). Control plane.
const EventDesc& kernel_stack_event(Registry& registry);

/// Fills `callers` with the calling thread's return addresses whose frame
/// lies above `above_cfa` (a canonical frame address of one of the
/// caller's frames: frames at or below it are skipped), innermost first;
/// returns how many (at most kStackFrames). Write path after
/// warm_up_stack_capture(): no allocation, lock or system call;
/// async-signal-safe.
uint32_t capture_stack(uintptr_t above_cfa, uint64_t (&callers)[kStackFrames]) noexcept;
/// The same, at most `max` frames (a hist's stacktrace key keeps 16).
uint32_t capture_stack(uintptr_t above_cfa, uint64_t* callers, uint32_t max) noexcept;

/// Runs the unwinder once (its one-time set-up: register tables, the
/// first use of libgcc_s) on the control plane. Idempotent.
void warm_up_stack_capture();

}  // namespace tracepipe::triggers
