#pragma once
// Nested noinline functions for the stacktrace trigger's test, in two
// translation units: stack_frames_fp.cc built with frame pointers,
// stack_frames_nofp.cc without (tests/core/triggers/CMakeLists.txt). The
// innermost of each chain emits StackEv; each returns after its callee
// returns (no tail call), so every level keeps a frame.
#include "tracepipe/core/instance/event_decl.h"

using StackEv = tracepipe::EventDecl<"tpstack", "ev", tracepipe::Int<"x", uint32_t>>;

extern "C" {
int tp_fp_outer(tracepipe::Instance* inst, int x);
int tp_fp_middle(tracepipe::Instance* inst, int x);
int tp_fp_inner(tracepipe::Instance* inst, int x);
int tp_nofp_outer(tracepipe::Instance* inst, int x);
int tp_nofp_middle(tracepipe::Instance* inst, int x);
int tp_nofp_inner(tracepipe::Instance* inst, int x);
// Mixed: a caller without frame pointers between two with them.
int tp_mixed_outer(tracepipe::Instance* inst, int x);   // fp TU
int tp_mixed_middle(tracepipe::Instance* inst, int x);  // no-fp TU
}
