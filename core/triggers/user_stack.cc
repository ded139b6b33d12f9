// The stacktrace trigger's user_stack record and its frame walk.
#include "tracepipe/core/triggers/user_stack.h"

#include <cstring>

#include "tracepipe/core/events/event_format.h"

namespace tracepipe::triggers {

namespace {
// The kernel's ftrace/user_stack format (x86_64).
constexpr std::string_view kUserStackFormat =
    "name: user_stack\n"
    "ID: 13\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:unsigned int tgid;\toffset:8;\tsize:4;\tsigned:0;\n"
    "\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n"
    "\n"
    "print fmt: \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" "
    "\"\\t=> %ps\\n\\t=> %ps\\n\", (void *)REC->caller[0], (void *)REC->caller[1], (void *)REC->caller[2], "
    "(void *)REC->caller[3], (void *)REC->caller[4], (void *)REC->caller[5], (void *)REC->caller[6], "
    "(void *)REC->caller[7]\n";
}  // namespace

const EventDesc& user_stack_event(Registry& registry) {
  if (const EventDesc* d = registry.find("ftrace", "user_stack")) return *d;
  return registry.add_format_text(kUserStackFormat, "ftrace");
}

uint32_t walk_user_stack(const ThreadContext& thread, uint64_t (&callers)[kUserStackFrames]) noexcept {
  std::memset(callers, 0, sizeof callers);
  const auto lo = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  const uintptr_t hi = thread.stack_hi;
  if (hi == 0 || lo < thread.stack_lo || lo >= hi) return 0;
  // x86_64 frame: [fp] = caller's fp, [fp + 8] = return address. Each frame
  // must lie above the previous one and inside the stack, 8-byte aligned.
  uintptr_t fp = lo;
  uint32_t n = 0;
  // The first frame is this function's own: skip it and the trigger's
  // (post_call) frames by starting from the caller chain as found.
  for (uint32_t depth = 0; depth < 64 && n < kUserStackFrames; ++depth) {
    if (fp < lo || fp + 16 > hi || (fp & 7) != 0) break;
    uintptr_t next, ret;
    std::memcpy(&next, reinterpret_cast<const void*>(fp), 8);
    std::memcpy(&ret, reinterpret_cast<const void*>(fp + 8), 8);
    if (ret == 0) break;
    if (depth >= 1) callers[n++] = ret;  // depth 0: the return into our caller (the trigger)
    if (next <= fp) break;
    fp = next;
  }
  return n;
}

}  // namespace tracepipe::triggers
