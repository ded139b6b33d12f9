// Per-thread counters stay exact when a signal handler on the same thread
// increments the same counter at any instruction of the interrupted
// increment (thread_context.h: counter_add).
//
// Deterministic, no timing: single_stepped() (the x86 trap flag) runs the
// handler's increment between every two instructions of the stepped loop.
// A load + store increment loses the handler's increment whenever it falls
// between its load and its store (the defect this guards against: ~20 of
// 3.6 M events lost under heavy signal nesting); a single-instruction add
// loses nothing.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>

#include "single_step.h"
#include "test_support.h"
#include "tracepipe/buffers/sanitizers.h"
#include "tracepipe/core/instance/thread_context.h"

namespace {

std::atomic<uint64_t> g_counter{0};
volatile uint64_t g_handler_adds = 0;  // only the handler writes it; SIGTRAP is blocked inside it

void handler_increment() {
  tracepipe::counter_add(g_counter);
  g_handler_adds = g_handler_adds + 1;
}

}  // namespace

TEST_CASE("counters: a signal handler's increments between any two instructions are never lost",
          "[core][counters][concurrency]") {
#if !defined(__x86_64__) || TRACEPIPE_TSAN || TRACEPIPE_ASAN
  TP_SKIP(
      "single-stepping needs x86-64 and an uninstrumented build (sanitizers step through their "
      "runtime)");
#else
  g_counter.store(0);
  g_handler_adds = 0;
  const uint64_t outer = tp_test::single_stepped(handler_increment, [] {
    for (uint32_t i = 0; i < 500; ++i) {
      tracepipe::counter_add(g_counter);
      asm volatile("" ::: "memory");
    }
    return uint64_t{500};
  });
  // Each outer increment was interrupted at every one of its instructions.
  CHECK(g_handler_adds >= outer);
  CHECK(g_counter.load() == outer + g_handler_adds);
#endif
}
