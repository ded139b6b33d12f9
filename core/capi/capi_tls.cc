// Where the library's thread-locals live, found once as it loads.
//
// The library is built with TLS descriptors (no initial-exec access: see
// TRACEPIPE_TLS_MODEL, core/instance/thread_context.h), so dlopen() takes
// it however little static TLS the loader has left. A descriptor is a
// call, though, where initial-exec is one %fs-relative load. The loader
// resolves each descriptor once, when it relocates the library: to a
// constant offset from the thread pointer (the block is in static TLS:
// linked at start-up, or dlopen()ed while there was room), or to a lookup
// in the thread's dynamic blocks. In the first case that offset is the
// same in every thread, and the write path's reads of tl_context
// (detail::context_word()) use it directly.
//
// The x86-64 TLS descriptor (the psABI's struct tlsdesc) is { entry, arg }:
// the static resolver returns arg, the offset; the dynamic one takes arg
// as a pointer to its own data, never equal to the offset of a heap block.
// So "arg equals the offset this thread's access just returned" holds
// exactly when the block is static.
#include <cstddef>

#include "tracepipe/core/capi/capi_internal.h"

namespace tracepipe::capi {
void touch_thread_locals() noexcept {
  ThreadContext* volatile c = detail::tl_context;
  (void)c;
}
}  // namespace tracepipe::capi

#if defined(TRACEPIPE_TLS_CACHED_OFFSET) && defined(__x86_64__)
namespace tracepipe::detail {

constinit std::ptrdiff_t tl_context_offset = 0;

ThreadContext* context_word_dynamic() noexcept { return tl_context; }

namespace {
[[gnu::constructor]] void find_static_tls() {
  // An access first: the descriptor is resolved (and, if dynamic, this
  // thread's block allocated) before it is read.
  auto* const slot = reinterpret_cast<char*>(&tl_context);
  char* tp;
  asm volatile("movq %%fs:0, %0" : "=r"(tp));  // the TCB's self pointer: the thread pointer
  const std::ptrdiff_t off = slot - tp;
  const std::ptrdiff_t* desc;
  asm volatile("leaq _ZN9tracepipe6detail10tl_contextE@TLSDESC(%%rip), %0" : "=r"(desc));
  if (off != 0 && desc[1] == off) tl_context_offset = off;
}
}  // namespace

}  // namespace tracepipe::detail
#endif
