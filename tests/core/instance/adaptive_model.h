#pragma once
// Staging::adaptive written out per emit, as docs/instance.md states it: the
// staged window check at every 32nd accept, and while direct the thread's
// average, which each reject moves: first the accepts since the thread's
// previous reject (or since its score was set) decay its distance to 65536
// by (31/32) per accept, rounded once, then the reject's step. Here the run
// is a plain count of the accepts the model saw, where the instance derives
// it from its kept_direct counter and the mark in its score word, and the
// arithmetic is the tests' own (tests/support/adaptive_rule.h). Shared
// flags and period, per-thread scores. The tests check the instance's path
// for each emit against it (adaptive_average_test.cc, adaptive_model_test.cc).
#include <cstdint>
#include <utility>

#include "adaptive_rule.h"
#include "tracepipe/core/instance/instance.h"

namespace tp_core_test {

struct ThreadModel {
  uint64_t kept_staged = 0, rejected_staged = 0, kept_mark = 0, rejected_mark = 0;
  uint64_t sgen = 0;
  int64_t s = 0;
  uint64_t run = 0;  ///< accepts since s was set, in period sgen
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
      if (acc) {
        if (same)
          ++t.run;  // an accept of another period is not caught up: the reject starts at 65536
      } else {
        const int64_t s0 = same ? tp_test::rule_after_accepts(t.s, t.run) : 65536;
        t.s = tp_test::rule_reject_step(s0);
        t.sgen = gen;
        t.run = 0;
        if (static_cast<uint64_t>(t.s) <= thr) {
          direct = false;
          t.kept_mark = t.kept_staged;
          t.rejected_mark = t.rejected_staged;
        }
      }
      return {true, acc ? tracepipe::EmitResult::kept : tracepipe::EmitResult::discarded};
    }
    if (big)
      return {true,
              accept && !soft ? tracepipe::EmitResult::kept : tracepipe::EmitResult::discarded};
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
          t.run = 0;
        }
      }
    }
    return {false, tracepipe::EmitResult::kept};
  }
};
}  // namespace tp_core_test
