#pragma once
// Allocation counting for the no-allocation tests. alloc_counter.cc replaces
// malloc, calloc, realloc, aligned_alloc, memalign, posix_memalign and every
// form of operator new in the executable it is compiled into (list it among
// that test's sources: tp_add_test(x x_test.cc ../support/alloc_counter.cc
// ...); never put it in a library, where the linker could leave it out).
// Under sanitizers (TRACEPIPE_SANITIZED) nothing is replaced: the sanitizer
// owns malloc; enabled() is false and the tests skip.
//
// A counter that silently stops counting (a build that drops the
// replacement, a compiler that elides a new/delete pair) would let every
// "0 allocations" check pass. So each test first calls probe(): it
// allocates once through malloc and once through operator new, each called
// through a volatile function pointer the optimiser cannot see through, and
// must observe exactly 2.
#include <cstdint>

namespace tp_test::alloc_counter {

/// True when the replacements are compiled in (not a sanitizer build).
bool enabled() noexcept;
/// Allocations counted so far in this process (all threads).
uint64_t count() noexcept;
/// Allocations the counter saw for one malloc and one operator new that
/// cannot be elided: 2 when it is live.
uint64_t probe() noexcept;

}  // namespace tp_test::alloc_counter
