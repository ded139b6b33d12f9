#pragma once
// Allocation and lock counting for the no-allocation tests. alloc_counter.cc
// replaces malloc, calloc, realloc, aligned_alloc, memalign, posix_memalign,
// every form of operator new, and pthread_mutex_lock in the executable it is
// compiled into (list it among
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
/// pthread_mutex_lock calls counted so far in this process (all threads).
uint64_t lock_count() noexcept;

/// Allocations and locks taken, by any thread, since the window was made.
struct Window {
  uint64_t allocs0 = count();
  uint64_t locks0 = lock_count();
  uint64_t allocs() const noexcept { return count() - allocs0; }
  uint64_t locks() const noexcept { return lock_count() - locks0; }
};
/// Allocations the counter saw for one malloc and one operator new that
/// cannot be elided: 2 when it is live.
uint64_t probe() noexcept;

}  // namespace tp_test::alloc_counter
