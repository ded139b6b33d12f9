#pragma once
// Staging::adaptive written out per emit, as docs/core.md states it: the
// staged window check at every 32nd accept, and while direct a step of the
// thread's average at every direct emit (what the instance did before the
// average moved to rejects only, 0b8e36f's adaptive_direct_step). Shared
// flags and period, per-thread scores. The tests check the instance's path
// for each emit against it (adaptive_average_test.cc, adaptive_model_test.cc).
#include <cstdint>
#include <utility>

#include "core/adaptive_average.h"
#include "core/instance.h"

namespace tp_core_test {

struct ThreadModel {
  uint64_t kept_staged = 0, rejected_staged = 0, kept_mark = 0, rejected_mark = 0;
  uint64_t sgen = 0;
  int64_t s = 0;
};

struct Model {
  uint64_t thr;
  bool direct = false, soft = false;
  uint64_t gen = 0;
  // Returns {went_direct, result}
  std::pair<bool, tracepipe::EmitResult> emit(ThreadModel& t, bool accept, bool big) {
    if (direct) {
      const bool acc = accept && !soft;
      const bool same = t.sgen == gen;
      if (!(acc && same && t.s == 65536)) {
        const int64_t s0 = same ? t.s : 65536;
        const int64_t step = tracepipe::detail::adaptive_average_step(s0, acc) - s0;
        if (!(step == 0 && same)) {
          t.s = s0 + step;
          t.sgen = gen;
          if (static_cast<uint64_t>(t.s) <= thr) {
            direct = false;
            t.kept_mark = t.kept_staged;
            t.rejected_mark = t.rejected_staged;
          }
        }
      }
      return {true, acc ? tracepipe::EmitResult::kept : tracepipe::EmitResult::discarded};
    }
    if (big) return {true, accept && !soft ? tracepipe::EmitResult::kept : tracepipe::EmitResult::discarded};
    if (soft || !accept) {
      ++t.rejected_staged;
      return {false, tracepipe::EmitResult::discarded};
    }
    ++t.kept_staged;
    if (t.kept_staged % 32 == 0) {
      const uint64_t dk = t.kept_staged - t.kept_mark, dr = t.rejected_staged - t.rejected_mark;
      if (dk >= 32) {
        t.kept_mark = t.kept_staged;
        t.rejected_mark = t.rejected_staged;
        const uint64_t rate = (dk << 16) / (dk + dr);
        if (rate > thr) {
          direct = true;
          ++gen;
          t.s = static_cast<int64_t>(rate);
          t.sgen = gen;
        }
      }
    }
    return {false, tracepipe::EmitResult::kept};
  }
};
}  // namespace tp_core_test
