#pragma once
// TRACEPIPE_ALWAYS_INLINE_LAMBDA(spec): marks a lambda's call operator
// always_inline, written after its parameter list, where `spec` is what
// follows the list (noexcept, mutable ...). Clang takes the attribute before
// noexcept, GCC after it. The write path's lambdas (fast_path.h, lanes.h,
// event_fields.h) use it: an outlined lambda would put a call in the emit.
#ifndef TRACEPIPE_ALWAYS_INLINE_LAMBDA
#if defined(__clang__)
#define TRACEPIPE_ALWAYS_INLINE_LAMBDA(spec) __attribute__((always_inline)) spec
#else
#define TRACEPIPE_ALWAYS_INLINE_LAMBDA(spec) spec __attribute__((always_inline))
#endif
#endif
