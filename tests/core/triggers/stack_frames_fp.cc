// Built with -fno-omit-frame-pointer (see stack_frames.h).
#include "stack_frames.h"

extern "C" {
__attribute__((noinline)) int tp_fp_inner(tracepipe::Instance* inst, int x) {
  StackEv::emit(*inst, static_cast<uint32_t>(x));
  asm volatile("" ::: "memory");
  return x + 1;
}
__attribute__((noinline)) int tp_fp_middle(tracepipe::Instance* inst, int x) {
  const int r = tp_fp_inner(inst, x + 1);
  asm volatile("" ::: "memory");
  return r + 1;
}
__attribute__((noinline)) int tp_fp_outer(tracepipe::Instance* inst, int x) {
  const int r = tp_fp_middle(inst, x + 1);
  asm volatile("" ::: "memory");
  return r + 1;
}
__attribute__((noinline)) int tp_mixed_outer(tracepipe::Instance* inst, int x) {
  const int r = tp_mixed_middle(inst, x + 1);
  asm volatile("" ::: "memory");
  return r + 1;
}
}
