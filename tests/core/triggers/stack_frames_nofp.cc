// Built with -fomit-frame-pointer (see stack_frames.h).
#include "stack_frames.h"

extern "C" {
__attribute__((noinline)) int tp_nofp_inner(tracepipe::Instance* inst, int x) {
  StackEv::emit(*inst, static_cast<uint32_t>(x));
  asm volatile("" ::: "memory");
  return x + 1;
}
__attribute__((noinline)) int tp_nofp_middle(tracepipe::Instance* inst, int x) {
  const int r = tp_nofp_inner(inst, x + 1);
  asm volatile("" ::: "memory");
  return r + 1;
}
__attribute__((noinline)) int tp_nofp_outer(tracepipe::Instance* inst, int x) {
  const int r = tp_nofp_middle(inst, x + 1);
  asm volatile("" ::: "memory");
  return r + 1;
}
__attribute__((noinline)) int tp_mixed_middle(tracepipe::Instance* inst, int x) {
  const int r = tp_fp_inner(inst, x + 1);
  asm volatile("" ::: "memory");
  return r + 1;
}
}
