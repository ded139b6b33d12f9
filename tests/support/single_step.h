#pragma once
// Deterministic interleaving at instruction granularity: runs a function with
// the x86 trap flag set, so the CPU raises SIGTRAP after every instruction
// and a test's callback runs, as a signal handler, between every two
// instructions of it (tests/core/instance/counter_signal_test.cc,
// tests/filters/regex_signal_test.cc). x86-64 only; not under sanitizers,
// whose runtimes would be stepped too. Not for code inside an rseq critical
// section: every trap restarts the section (buffers/rseq.h).
#include <signal.h>
#include <ucontext.h>

#include <utility>

namespace tp_test {

/// Called from the SIGTRAP handler after each stepped instruction.
using StepFn = void (*)();

namespace detail {
inline StepFn g_on_step = nullptr;
inline volatile sig_atomic_t g_stepping = 0;
inline void on_trap(int, siginfo_t*, void* ctx) {
  if (g_stepping != 0) {
    g_on_step();
  } else {  // stepping is over: stop trapping once this handler returns
    static_cast<ucontext_t*>(ctx)->uc_mcontext.gregs[REG_EFL] &= ~0x100LL;
  }
}
}  // namespace detail

/// Runs f() single-stepped, calling on_step() after each of its
/// instructions; returns what f returns.
template <class F>
[[gnu::noinline]] auto single_stepped(StepFn on_step, F&& f) {
  struct sigaction sa {
  }, old{};
  sa.sa_sigaction = detail::on_trap;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTRAP, &sa, &old);
  detail::g_on_step = on_step;
  detail::g_stepping = 1;
  asm volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");  // TF on
  auto r = std::forward<F>(f)();
  detail::g_stepping = 0;
  asm volatile("pushfq\n\tandq $~0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
  sigaction(SIGTRAP, &old, nullptr);
  return r;
}

}  // namespace tp_test
