#pragma once
// Internal to libtracepipe_c: what the opaque handles of tracepipe_c.h hold,
// and the one way every entry point turns a C++ exception into a status.
//
//   tracepipe_event    ─▶ EventDesc (Registry::global(), never removed)
//                         word: the subscriber word the fan-out reads (the
//                               tracepoint's, or the descriptor's own)
//                         layout of each field (kind, offset, element size, count)
//   tracepipe_instance ─▶ Instance (owned)
//   tracepipe_recorder ─▶ record::Recorder (owned)
//
// Invariants
//   (C1) A tracepipe_event lives as long as the process (like its EventDesc)
//        and is immutable once published: any thread reads it without a lock.
//   (C2) No exception leaves an extern "C" function: control functions
//        catch everything in guarded(); write-path functions call only
//        noexcept code.
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/capi/tracepipe_c.h"
#include "tracepipe/core/events/event.h"
#include "tracepipe/core/instance/instance.h"

namespace tracepipe::capi {

/// One field's place in the record.
struct FieldLayout {
  tracepipe_field_kind kind;
  uint32_t offset;  ///< from the record's start (common header included)
  uint32_t elem;    ///< INT: bytes per element; CHARS: 1; STRING: 4
  uint32_t count;   ///< INT: elements (1 for a scalar); CHARS: bytes; STRING: 1
  uint32_t size;    ///< bytes in the fixed part
  bool array;       ///< INT: a fixed array (array_len > 0), even of one element
};

/// Fixed-size records up to this size (header included) take the stack
/// lane, as EventDecl's do (event_decl.h: kStackStaged).
inline constexpr uint32_t kStackLaneMax = 512;

/// Sets the calling thread's last error and returns `status`.
tracepipe_status fail(tracepipe_status status, std::string_view message) noexcept;
/// The calling thread's last error text ("" if none).
const char* last_error() noexcept;
/// The status and message of the exception being handled (call in a catch).
tracepipe_status fail_current() noexcept;

/// Touches the library's thread-locals through an out-of-line call
/// (capi_tls.cc). When they are dynamic TLS, a thread's first touch makes
/// the loader allocate its block, which glibc before 2.40 did without
/// saving vector registers (glibc bug 31372): made here, where no caller
/// holds one (they are all caller-saved), it is never made inside a
/// function that does.
[[gnu::noinline]] void touch_thread_locals() noexcept;

/// Runs `f` (returning tracepipe_status) with every exception turned into a
/// status and message (C2).
template <class F>
tracepipe_status guarded(F&& f) noexcept {
  touch_thread_locals();
  try {
    return f();
  } catch (...) {
    return fail_current();
  }
}

/// Copies `text` into buf[0, cap) snprintf-style; returns text.size().
size_t copy_out(std::string_view text, char* buf, size_t cap) noexcept;

/// Reads a caller's extensible struct of `user_size` bytes into `out`
/// (zeroed first): the kernel's copy_struct_from_user. False when the
/// caller's struct is larger and a byte this library does not know is set.
bool copy_struct_in(void* out, size_t our_size, const void* user, size_t user_size) noexcept;
/// Writes `ours` into a caller's result struct of `user_size` bytes (the
/// common prefix; the struct_size word is left as the caller set it).
void copy_struct_out(void* user, size_t user_size, const void* ours, size_t our_size) noexcept;

}  // namespace tracepipe::capi

struct tracepipe_event {
  const tracepipe::EventDesc* desc = nullptr;
  /// The word the fan-out reads (C1): the tracepoint's, if the descriptor
  /// was registered with it, else the descriptor's own.
  std::atomic<const tracepipe::detail::Subscribers*>* word = nullptr;
  uint32_t fixed_size = 0;  ///< header included
  uint32_t body_fixed = 0;  ///< fixed_size - 8
  bool dynamic = false;     ///< some STRING field
  bool stack_lane = false;  ///< !dynamic && fixed_size <= kStackLaneMax
  std::vector<tracepipe::capi::FieldLayout> fields;
};

struct tracepipe_instance {
  std::unique_ptr<tracepipe::Instance> inst;
};
