// The allocation counter (see alloc_counter.h). Replaces the allocation
// functions of the executable this file is compiled into.
#include "alloc_counter.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {
std::atomic<uint64_t> g_allocs{0};
std::atomic<uint64_t> g_locks{0};
inline void counted() noexcept { g_allocs.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

#if !defined(TRACEPIPE_SANITIZED)
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  counted();
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  counted();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  counted();
  return __libc_realloc(p, n);
}
void* aligned_alloc(size_t al, size_t n) {
  counted();
  return __libc_memalign(al, n);
}
void* memalign(size_t al, size_t n) {
  counted();
  return __libc_memalign(al, n);
}
int posix_memalign(void** out, size_t al, size_t n) {
  counted();
  *out = __libc_memalign(al, n);
  return *out != nullptr ? 0 : 12;  // ENOMEM
}
void free(void* p) { __libc_free(p); }
int pthread_mutex_lock(pthread_mutex_t* m) {
  using Fn = int (*)(pthread_mutex_t*);
  static Fn real = nullptr;  // libc's, found on first use (dlsym does not take this lock)
  if (real == nullptr) real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_mutex_lock"));
  g_locks.fetch_add(1, std::memory_order_relaxed);
  return real(m);
}
}  // extern "C"

void* operator new(size_t n) {
  counted();
  if (void* p = __libc_malloc(n != 0 ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, std::align_val_t al) {
  counted();
  if (void* p = __libc_memalign(static_cast<size_t>(al), n != 0 ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t al) { return operator new(n, al); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  counted();
  return __libc_malloc(n != 0 ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return operator new(n, std::nothrow);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
#endif

namespace tp_test::alloc_counter {

bool enabled() noexcept {
#if defined(TRACEPIPE_SANITIZED)
  return false;
#else
  return true;
#endif
}

uint64_t count() noexcept { return g_allocs.load(std::memory_order_relaxed); }
uint64_t lock_count() noexcept { return g_locks.load(std::memory_order_relaxed); }

uint64_t probe() noexcept {
  // Called through volatile pointers: the compiler must make the calls (it
  // may elide a visible new/delete or malloc/free pair).
  void* (*volatile new_fn)(size_t) = &::operator new;
  void (*volatile delete_fn)(void*) noexcept = &::operator delete;
  void* (*volatile malloc_fn)(size_t) = &std::malloc;
  void (*volatile free_fn)(void*) = &std::free;
  const uint64_t before = count();
  void* a = malloc_fn(24);
  void* b = new_fn(24);
  const uint64_t seen = count() - before;
  free_fn(a);
  delete_fn(b);
  return seen;
}

}  // namespace tp_test::alloc_counter
