#pragma once
// Ast -> flat Program with "when to branch" targets.
//
// Each node is compiled for two destinations, (on_true, on_false); the code
// that follows a node is always one of them, so every predicate becomes one
// entry "if (r == branch_if) goto target" that falls through otherwise:
//
//   a || b   with (T, F):  a -> (T, start of b)   b -> (T, F)
//   a && b   with (T, F):  a -> (start of b, F)   b -> (T, F)
//   !a       with (T, F):  a -> (F, T)
//
// The kernel reaches the same program through its three passes over the
// token stream (first pass with update_preds(), jump threading, inverts
// folded into when_to_branch); see the worked example in filters/program.h.
// Mirrors kernel/trace/trace_events_filter.c: predicate_parse.
#include <memory>

#include "tracepipe/filters/ast.h"
#include "tracepipe/filters/program.h"

namespace tracepipe::filters {

/// Builds the program. The Ast is left intact (string matchers are shared).
/// Iterative (explicit work stack): nesting depth cannot overflow the stack.
std::shared_ptr<const Program> build_program(const Ast& ast);

}  // namespace tracepipe::filters
