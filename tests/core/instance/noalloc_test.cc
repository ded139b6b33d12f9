// Proof of invariant F6: no allocation, lock or system call on the write
// path, on every path (unfiltered, staged reject/accept, direct
// reject/accept, adaptive, nested fallback, tracepoint fan-out and its stack
// lane, raw replay,
// sub-buffer switches and overwrite recycling).
//
//  * allocations: malloc/calloc/realloc/aligned_alloc/posix_memalign and
//    pthread_mutex_lock are interposed in this executable and counted;
//  * system calls: a forked child runs the same emits under a seccomp filter
//    that kills it on any system call other than read/write/exit. (Strict
//    mode would do, but it also disables rdtsc, which the `local` clock and
//    the vDSO need.)
#include <dlfcn.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdlib>

#include "alloc_counter.h"
#include "syscall_jail.h"
#include "test_events.h"
#include "test_support.h"
#include "tracepipe/core/instance/raw_emit.h"

using namespace tracepipe;
using namespace tp_core_test;

namespace {

using tp_test::enter_syscall_jail;  // tests/support/syscall_jail.h

// Enabled in one instance only: TRACEPIPE_TRACE takes the stack lane
// ((D4) in core/instance/event_decl.h) for it: an inline verdict, the
// general evaluator (filter_from_stack), and the reject-first step on the
// argument (a one-compare filter of a 4-byte field: no record built).
using Lone = EventDecl<"tpnoalloc", "lone", Int<"value", uint32_t>, Chars<"name", 16>>;
using LoneGeneral =
    EventDecl<"tpnoalloc", "lone_general", Int<"value", uint32_t>, Chars<"name", 16>>;
using LoneFirst = EventDecl<"tpnoalloc", "lone_first", Chars<"name", 16>, Int<"value", int32_t>>;

// A set of instances that exercises every path of the write path.
struct Rig {
  Instance unfiltered{opts(Staging::per_thread, BufferMode::overwrite, 16)};
  Instance per_thread{opts(Staging::per_thread, BufferMode::overwrite, 16)};
  Instance per_cpu{opts(Staging::per_cpu, BufferMode::drop_newest, 64)};
  Instance off{opts(Staging::off, BufferMode::overwrite, 16)};
  Instance adaptive{opts(Staging::adaptive, BufferMode::overwrite, 16)};

  static InstanceOptions opts(Staging st, BufferMode m, uint64_t kb) {
    InstanceOptions o;
    o.staging = st;
    o.mode = m;
    o.buffer_size_kb = kb;  // small: the loop below wraps and recycles sub-buffers
    return o;
  }

  Rig() {
    for (Instance* i : {&unfiltered, &per_thread, &per_cpu, &off, &adaptive}) {
      i->enable(Sample::desc());
      i->enable(Other::desc());
      if (i != &unfiltered) {
        REQUIRE(i->set_filter(Sample::desc(), "value & 1").ok());
        REQUIRE(i->set_filter(Other::desc(), "msg ~ \"keep*\"").ok());
      }
    }
    per_thread.enable(Lone::desc());
    REQUIRE(per_thread.set_filter(Lone::desc(), "value & 1").ok());
    per_thread.enable(LoneFirst::desc());
    REQUIRE(per_thread.set_filter(LoneFirst::desc(), "value < 3").ok());
    adaptive.enable(LoneGeneral::desc());
    REQUIRE(adaptive.set_filter(LoneGeneral::desc(), "name ~ \"*ee*\" || value == 3").ok());
  }

  // Emits `n` rounds on every path; returns how many emits ran.
  uint64_t run(uint32_t n) {
    uint64_t count = 0;
    std::byte raw[64] = {};
    const CommonHeader h{Sample::desc().id(), 0, 0, 1};
    std::memcpy(raw, &h, sizeof h);
    for (uint32_t i = 0; i < n; ++i) {
      for (Instance* inst : {&unfiltered, &per_thread, &per_cpu, &off, &adaptive}) {
        Sample::emit(*inst, i, i, "padding text");                   // accepted half the time
        Other::emit(*inst, 1, (i & 2) ? "keep this" : "drop this");  // dynamic string + glob
        std::memcpy(raw + 8, &i, 4);
        tracepipe::RawEmit::emit(*inst, raw, i % inst->cpus());  // replay path
        count += 3;
      }
      Nested::trace(i);                // tracepoint fan-out (no instance has it enabled: one load)
      Sample::trace(i, i, "fan out");  // into all five instances
      TRACEPIPE_TRACE(Sample, i, i + 1, "macro");                  // the same through the macro
      TRACEPIPE_TRACE(Lone, i, (i & 2) ? "keep" : "drop");         // stack lane, inline verdict
      TRACEPIPE_TRACE(LoneGeneral, i, (i & 4) ? "keep" : "drop");  // stack lane, general evaluator
      TRACEPIPE_TRACE(LoneFirst, "first",
                      static_cast<int32_t>(i % 8));  // reject-first, kept 3 in 8
      count += 10;
      if (i % 64 == 0) {
        // Force the nested fallback: hold this thread's slot, emit, release.
        auto held =
            tracepipe::detail::InstanceAccess::stager(per_thread).thread_slots().try_claim(0, 8);
        Sample::emit(per_thread, 1, i, "nested");
        buffers::PerThreadTempBuffer::release(held);
        count += 1;
      }
    }
    return count;
  }
};

}  // namespace

TEST_CASE("noalloc: the write path allocates nothing and takes no lock", "[core][noalloc]") {
#ifdef TRACEPIPE_SANITIZED
  TP_SKIP("allocation interposition is disabled under sanitizers");
#else
  Rig rig;
  rig.run(200);  // warm up: thread registration, counter window, TLS, calibration
  // Sanity: the counters do count (a test that cannot fail proves nothing).
  REQUIRE(tp_test::alloc_counter::probe() == 2);

  const tp_test::alloc_counter::Window window;
  const uint64_t emits = rig.run(5000);
  const uint64_t allocs = window.allocs(), locks = window.locks();
  CHECK(emits > 100000);
  CHECK(allocs == 0);
  CHECK(locks == 0);
  // The loop really took every path.
  const EventStats pt = rig.per_thread.event_stats(Sample::desc());
  CHECK(pt.staged > 0);
  CHECK(pt.nested > 0);
  CHECK(pt.kept > 0);
  CHECK(pt.discarded > 0);
  CHECK(rig.off.event_stats(Sample::desc()).ring_discards > 0);
  CHECK(rig.adaptive.event_stats(Sample::desc()).staged > 0);
  CHECK(rig.per_cpu.event_stats(Other::desc()).staged > 0);
  CHECK(rig.unfiltered.event_stats(Sample::desc()).unfiltered > 0);
  // The stack lane: kept and rejected, both verdict kinds, nothing direct.
  for (const EventStats& s :
       {rig.per_thread.event_stats(Lone::desc()), rig.adaptive.event_stats(LoneGeneral::desc()),
        rig.per_thread.event_stats(LoneFirst::desc())}) {
    CHECK(s.kept > 0);
    CHECK(s.discarded > 0);
    CHECK(s.staged == s.emitted());
  }
  uint64_t switches = 0, overrun = 0;
  for (const auto& s : rig.unfiltered.cpu_stats()) {
    switches += s.subbuf_switches;
    overrun += s.overrun;
  }
  CHECK(switches > 10);
  CHECK(overrun > 0);  // the overwrite buffer wrapped: recycling was on the path too
#endif
}

TEST_CASE("noalloc: the write path makes no system call (seccomp filter)", "[core][noalloc]") {
#ifdef TRACEPIPE_SANITIZED
  TP_SKIP("sanitizer runtimes make system calls of their own");
#else
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(fds[0]);
    Rig rig;
    rig.run(200);  // warm up before the filter goes on
    if (!enter_syscall_jail()) syscall(SYS_exit, 3);
    const uint64_t emits = rig.run(2000);
    // Only read, write, exit and sigreturn are allowed from here on.
    (void)!write(fds[1], &emits, sizeof emits);
    syscall(SYS_exit, 0);
  }
  close(fds[1]);
  uint64_t emits = 0;
  const ssize_t got = read(fds[0], &emits, sizeof emits);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  INFO("a child killed by SIGSYS made a system call on the write path");
  REQUIRE_FALSE(WIFSIGNALED(status));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(got == static_cast<ssize_t>(sizeof emits));
  CHECK(emits > 40000);
#endif
}

TEST_CASE("noalloc: the seccomp check does catch a system call", "[core][noalloc]") {
#ifdef TRACEPIPE_SANITIZED
  TP_SKIP("sanitizer runtimes make system calls of their own");
#else
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (!enter_syscall_jail()) syscall(SYS_exit, 3);
    syscall(SYS_getpid);  // not allowed: the kernel kills us
    syscall(SYS_exit, 0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGSYS);  // SECCOMP_RET_KILL_PROCESS
#endif
}
