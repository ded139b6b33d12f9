#pragma once
// Inline (COMDAT) functions that emit, compiled into two translation units
// of one executable at -O0 (link_comdat_test.cc, link_comdat_other.cc), as
// an application's debug build does with an emit in a header. The linker
// keeps one copy of each; the rseq critical sections inside them
// (buffers/rseq.h) must go with the kept copy, not point into the discarded
// one (which failed the link: "defined in discarded section").
#include <cstddef>
#include <cstdint>
#include <span>

#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/fast_path.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/raw_emit.h"

namespace tp_link_test {

using Ev = tracepipe::EventDecl<"tplink", "ev", tracepipe::Int<"tu", uint32_t>,
                                tracepipe::Int<"n", uint32_t>>;

inline tracepipe::EmitResult emit_ev(tracepipe::Instance& inst, uint32_t tu, uint32_t n) {
  return Ev::emit(inst, tu, n);
}

inline tracepipe::EmitResult emit_raw_ev(tracepipe::Instance& inst,
                                         std::span<const std::byte> rec) {
  return tracepipe::RawEmit::emit(inst, rec, 0);
}

/// Emits `count` events from the other translation unit: half declared,
/// half raw copies of the declared record's bytes.
void emit_from_other_tu(tracepipe::Instance& inst, uint32_t count);

}  // namespace tp_link_test
