// The write path with triggers allocates nothing, takes no lock and makes no
// system call (invariant F6 of core/instance/instance.h): every trigger kind,
// with counts and filters, hist maps with one and three keys (inserts and
// updates, and a full map dropping keys), run under the allocation counter
// and then in a forked child under a seccomp filter that kills it on any
// system call but read, write and exit.
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "alloc_counter.h"
#include "syscall_jail.h"
#include "test_support.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {

using Ev =
    EventDecl<"tpnoalloc", "ev", Int<"id", uint32_t>, Int<"lat", int32_t>, Chars<"name", 16>>;
using Target = EventDecl<"tpnoalloc", "target", Int<"seq", uint32_t>>;

struct Rig {
  Instance inst{[] {
    InstanceOptions o;
    o.buffer_size_kb = 16;
    o.mode = BufferMode::overwrite;
    return o;
  }()};
  Instance hist{[] {
    InstanceOptions o;
    o.buffer_size_kb = 16;
    return o;
  }()};
  Rig() {
    inst.enable(Ev::desc());
    REQUIRE(inst.set_filter(Ev::desc(), "id & 1").ok());
    for (const char* t : {"traceoff:1000000 if lat > 5", "stacktrace:500 if id == 3",
                          "enable_event:tpnoalloc:target if id & 2", "snapshot if id == 99",
                          "hist:keys=id,lat,name:vals=lat:size=128", "hist:keys=lat.log2:vals=id"})
      REQUIRE(set_trigger(inst, Ev::desc(), t).ok());
    REQUIRE(set_trigger(inst, Target::desc(), "disable_event:tpnoalloc:target if seq & 4").ok());
    REQUIRE(set_trigger(inst, Target::desc(), "traceon if seq & 1").ok());
    hist.enable(Ev::desc());
    REQUIRE(set_trigger(hist, Ev::desc(), "hist:keys=id.hex:vals=lat if lat >= 0").ok());
    // A stack trace key: the unwinder on the write path.
    REQUIRE(set_trigger(hist, Ev::desc(),
                        "hist:keys=common_stacktrace:vals=lat.percent,hitcount.graph:nohitcount")
                .ok());
  }
  uint64_t run(uint32_t n) {
    uint64_t emits = 0;
    for (uint32_t i = 0; i < n; ++i) {
      Ev::emit(inst, i % 512, static_cast<int32_t>(i % 11), (i & 8) ? "alpha" : "beta");
      Target::emit(inst, i);
      Ev::emit(hist, i % 64, static_cast<int32_t>(i % 7) - 1, "h");
      emits += 3;
    }
    return emits;
  }
};

}  // namespace

TEST_CASE("triggers noalloc: the write path with triggers allocates nothing and takes no lock",
          "[triggers][noalloc]") {
#ifdef TRACEPIPE_SANITIZED
  TP_SKIP("allocation interposition is disabled under sanitizers");
#else
  Rig rig;
  rig.run(200);
  REQUIRE(tp_test::alloc_counter::probe() == 2);
  const tp_test::alloc_counter::Window window;
  const uint64_t emits = rig.run(20000);
  CHECK(window.allocs() == 0);
  CHECK(window.locks() == 0);
  CHECK(emits == 60000);
  // The paths were taken: hist entries, drops in the full map, stacks, flips.
  const std::string h = hist_file(rig.inst, Ev::desc());
  CHECK(h.find("Entries: 128\n    Dropped: 0\n") == std::string::npos);  // the 3-key map overflowed
  CHECK(h.find("Entries: 128\n") != std::string::npos);
  CHECK(trigger_counts(rig.inst, Ev::desc()).stacktraces ==
        41);  // id == 3: once in the warm-up, 40 times here
  CHECK(trigger_counts(rig.inst, Ev::desc()).snapshots ==
        40);  // id == 99: swaps of the live ring and the spare
  CHECK(hist_file(rig.hist, Ev::desc()).find("Entries: 64\n") != std::string::npos);
  CHECK(hist_file(rig.hist, Ev::desc()).find("{ common_stacktrace:\n") != std::string::npos);
#endif
}

TEST_CASE("triggers noalloc: no system call on the write path with triggers (seccomp)",
          "[triggers][noalloc]") {
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
    rig.run(200);
    if (!tp_test::enter_syscall_jail()) syscall(SYS_exit, 3);
    const uint64_t emits = rig.run(5000);
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
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(got == static_cast<ssize_t>(sizeof emits));
  CHECK(emits == 15000);
#endif
}
