// The stacktrace trigger's kernel_stack record and its unwinder.
#include "tracepipe/core/triggers/stack_trace.h"

#include <unwind.h>

#include <mutex>
#include <string_view>

namespace tracepipe::triggers {

namespace {
// The kernel's ftrace/kernel_stack format (x86_64). The record is variable:
// `size` frames follow at offset 16 (at least kStackMinEntries entries).
constexpr std::string_view kKernelStackFormat =
    "name: kernel_stack\n"
    "ID: 4\n"
    "format:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\n"
    "\tfield:int size;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n"
    "\n"
    "print fmt: \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" \"\\t=> %ps\\n\\t=> %ps\\n\\t=> %ps\\n\" "
    "\"\\t=> %ps\\n\\t=> %ps\\n\", (void *)REC->caller[0], (void *)REC->caller[1], (void "
    "*)REC->caller[2], "
    "(void *)REC->caller[3], (void *)REC->caller[4], (void *)REC->caller[5], (void "
    "*)REC->caller[6], "
    "(void *)REC->caller[7]\n";

struct Walk {
  uintptr_t above;
  uint64_t* out;
  uint32_t n;
  uint32_t max;
};

_Unwind_Reason_Code step(_Unwind_Context* ctx, void* arg) {
  Walk& w = *static_cast<Walk*>(arg);
  // In the callback the context's CFA is still its callee's (the unwinder
  // moves it after the callback): the frame that called the trigger's first
  // frame sees exactly that frame's CFA.
  if (_Unwind_GetCFA(ctx) < w.above) return _URC_NO_REASON;  // the library's own frames
  int before = 0;
  const uintptr_t ip = _Unwind_GetIPInfo(ctx, &before);
  if (ip == 0) return _URC_END_OF_STACK;
  w.out[w.n++] = ip;
  return w.n == w.max ? _URC_END_OF_STACK : _URC_NO_REASON;
}
}  // namespace

const EventDesc& kernel_stack_event(Registry& registry) {
  if (const EventDesc* d = registry.find("ftrace", "kernel_stack")) return *d;
  return registry.add_format_text(kKernelStackFormat, "ftrace");
}

uint32_t capture_stack(uintptr_t above_cfa, uint64_t (&callers)[kStackFrames]) noexcept {
  return capture_stack(above_cfa, callers, kStackFrames);
}

uint32_t capture_stack(uintptr_t above_cfa, uint64_t* callers, uint32_t max) noexcept {
  if (max == 0) return 0;
  Walk w{above_cfa, callers, 0, max};
  _Unwind_Backtrace(&step, &w);
  return w.n;
}

void warm_up_stack_capture() {
  static std::once_flag once;
  std::call_once(once, [] {
    uint64_t callers[kStackFrames];
    (void)capture_stack(0, callers);
  });
}

}  // namespace tracepipe::triggers
