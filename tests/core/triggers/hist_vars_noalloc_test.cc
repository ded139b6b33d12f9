// The write path of hists with variables, references, onmatch().trace()
// into a synthetic event (static and dynamic strings) with a hist of its
// own, onmax().save() and onchange().trace() allocates nothing, takes no lock
// and makes no system call: under the allocation counter, then in a forked
// child under a seccomp filter.
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "alloc_counter.h"
#include "syscall_jail.h"
#include "test_support.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/synthetic.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {

using Start = EventDecl<"tpvarsna", "start", Int<"id", uint32_t>, Chars<"name", 16>>;
using End =
    EventDecl<"tpvarsna", "end", Int<"id", uint32_t>, Int<"prio", int32_t>, Chars<"name", 16>>;

struct Rig {
  Instance inst{[] {
    InstanceOptions o;
    o.buffer_size_kb = 16;
    o.mode = BufferMode::overwrite;
    return o;
  }()};
  Rig() {
    // Definitions belong to the (global) registry: the second Rig finds them.
    if (synthetic_event(inst, "tpvarsna_lat") == nullptr)
      REQUIRE(set_synthetic_event(inst, "tpvarsna_lat u64 lat; u32 id; char name[16]; char dyn[]")
                  .ok());
    if (synthetic_event(inst, "tpvarsna_chg") == nullptr)
      REQUIRE(set_synthetic_event(inst, "tpvarsna_chg u64 lat").ok());
    const EventDesc* lat = synthetic_event(inst, "tpvarsna_lat");
    REQUIRE(lat != nullptr);
    inst.enable(*lat);  // recorded too
    REQUIRE(set_trigger(inst, Start::desc(),
                        "hist:keys=id:t0=common_timestamp.usecs:size=256 if id != 7")
                .ok());
    REQUIRE(
        set_trigger(
            inst, End::desc(),
            "hist:keys=id:d=common_timestamp.usecs-$t0,p=prio*2/3:size=256:"
            "onmatch(tpvarsna.start).trace(tpvarsna_lat,$d,id,name,name):onmax($d).save(prio,name):"
            "onchange($p).tpvarsna_chg($d):onchange($p).snapshot()")
            .ok());
    REQUIRE(set_trigger(inst, *lat, "hist:keys=id,lat.log2:vals=hitcount:size=512").ok());
    REQUIRE(set_trigger(inst, *synthetic_event(inst, "tpvarsna_chg"),
                        "hist:keys=lat.buckets=10:size=128")
                .ok());
  }
  uint64_t run(uint32_t n) {
    uint64_t emits = 0;
    for (uint32_t i = 0; i < n; ++i) {
      Start::emit(inst, i % 300, "s");  // 300 keys into 256 entries: drops too
      End::emit(inst, i % 300, static_cast<int32_t>(i % 5), (i & 1) ? "alpha" : "beta");
      End::emit(inst, (i + 1) % 300, 1, "unmatched");
      emits += 3;
    }
    return emits;
  }
};

}  // namespace

TEST_CASE(
    "hist vars noalloc: variables, onmatch into a synthetic event, onmax/onchange allocate nothing",
    "[triggers][hist][noalloc]") {
#ifdef TRACEPIPE_SANITIZED
  TP_SKIP("allocation interposition is disabled under sanitizers");
#else
  Rig rig;
  rig.run(300);
  REQUIRE(tp_test::alloc_counter::probe() == 2);
  const tp_test::alloc_counter::Window window;
  const uint64_t emits = rig.run(20000);
  CHECK(window.allocs() == 0);
  CHECK(window.locks() == 0);
  CHECK(emits == 60000);
  // The paths were taken: synthetic events counted, a full map dropping.
  const std::string h = hist_file(rig.inst, *synthetic_event(rig.inst, "tpvarsna_lat"));
  CHECK(h.find("Hits: 0\n") == std::string::npos);
  CHECK(hist_file(rig.inst, Start::desc()).find("Dropped: 0\n") == std::string::npos);
  CHECK(hist_file(rig.inst, End::desc()).find("\tmax: ") != std::string::npos);
  CHECK(hist_file(rig.inst, End::desc())
            .find("\nSnapshot taken (see tracing/snapshot).  Details:\n") !=
        std::string::npos);  // snapshot(): swaps of the live ring and the spare
#endif
}

TEST_CASE("hist vars noalloc: no system call on that write path (seccomp)",
          "[triggers][hist][noalloc]") {
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
    rig.run(300);
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
