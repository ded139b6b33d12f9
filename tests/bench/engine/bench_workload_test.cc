// bench/engine/workload: the in-process hackbench emits exactly the events it
// promises, with real content, from the CPUs it pins to.
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <mutex>
#include <set>

#include "test_support.h"
#include "tracepipe/bench/engine/workload.h"

using namespace tracepipe::bench;

namespace {

// Builds every record as an engine would (fill into a zeroed record) and
// checks/counts it.
struct CheckingTracer {
  std::atomic<uint64_t> by_kind[kEventKinds] = {};
  std::atomic<uint64_t> writes{0}, reads{0}, bad{0}, odd_cpu{0};
  std::mutex mu;
  std::set<int32_t> woken_pids, switch_prev_pids;
  uint32_t msg_bytes = 0;

  template <class Record, class Fill>
  void emit(EventKind kind, Fill&& fill) {
    Record r{};
    fill(r);
    by_kind[static_cast<size_t>(kind)].fetch_add(1);
    if (sched_getcpu() & 1) odd_cpu.fetch_add(1);
    if constexpr (std::is_same_v<Record, SysEnterRecord>) {
      if (r.id == SYS_write)
        writes.fetch_add(1);
      else if (r.id == SYS_read)
        reads.fetch_add(1);
      else
        bad.fetch_add(1);
      if (r.args[2] != msg_bytes) bad.fetch_add(1);
    } else if constexpr (std::is_same_v<Record, SysExitRecord>) {
      if (r.ret != int64_t(msg_bytes)) bad.fetch_add(1);
    } else if constexpr (std::is_same_v<Record, SchedWakeupRecord>) {
      if (r.prio != 120 || r.comm[0] != 'h') bad.fetch_add(1);
      std::lock_guard lock(mu);
      woken_pids.insert(r.pid);
    } else if constexpr (std::is_same_v<Record, SchedSwitchRecord>) {
      if (r.prev_state != 1 || r.prev_pid == r.next_pid) bad.fetch_add(1);
      std::lock_guard lock(mu);
      switch_prev_pids.insert(r.prev_pid);
    }
  }
};

// The 41st sys_enter (a sender's, mid-run) throws: its receivers must not
// wait forever for the messages it will never send.
struct ThrowingTracer {
  std::atomic<int> n{0};
  template <class Record, class Fill>
  void emit(EventKind kind, Fill&&) {
    if (kind == EventKind::sys_enter && n.fetch_add(1) == 40) throw std::runtime_error("boom");
  }
};

uint64_t count(const CheckingTracer& t, EventKind k) {
  return t.by_kind[static_cast<size_t>(k)].load();
}

}  // namespace

TEST_CASE("bench workload: six events per message, exact and well formed", "[tools][bench]") {
  std::signal(SIGPIPE, SIG_IGN);
  Channel ch = GENERATE(Channel::socketpair, Channel::pipe);
  WorkloadConfig c;
  c.groups = 2;
  c.fds = 3;
  c.loops = 7;
  c.msg_bytes = 64;
  c.channel = ch;
  CheckingTracer t;
  t.msg_bytes = c.msg_bytes;
  RunTiming r = run_hackbench(c, t);
  const uint64_t m = 2 * 3 * 3 * 7;
  CHECK(c.messages() == m);
  CHECK(r.messages == m);
  CHECK(r.seconds > 0);
  CHECK(count(t, EventKind::sys_enter) == 2 * m);
  CHECK(count(t, EventKind::sys_exit) == 2 * m);
  CHECK(count(t, EventKind::sched_wakeup) == m);
  CHECK(count(t, EventKind::sched_switch) == m);
  CHECK(t.writes == m);
  CHECK(t.reads == m);
  CHECK(t.bad == 0);
  CHECK(c.events() == 6 * m);
  // Every receiver is woken and switches; they are 2 * 3 distinct threads.
  CHECK(t.woken_pids.size() == 6);
  CHECK(t.switch_prev_pids == t.woken_pids);
}

TEST_CASE("bench workload: pinning splits events evenly over two CPUs", "[tools][bench]") {
  std::vector<int> cpus = detail::allowed_cpus();
  if (cpus.size() != 2 || (cpus[0] & 1) == (cpus[1] & 1))
    TP_SKIP("needs exactly two allowed CPUs of different parity");
  WorkloadConfig c;
  c.groups = 1;
  c.fds = 4;  // 4 sender/receiver pairs: two per CPU
  c.loops = 5;
  CheckingTracer t;
  t.msg_bytes = c.msg_bytes;
  run_hackbench(c, t);
  CHECK(t.odd_cpu.load() * 2 == c.events());
}

TEST_CASE("bench workload: no tracer, no events, still times the run", "[tools][bench]") {
  WorkloadConfig c;
  c.groups = 1;
  c.fds = 2;
  c.loops = 3;
  NullTracer n;
  RunTiming r = run_hackbench(c, n);
  CHECK(r.messages == 12);
  CHECK(r.seconds > 0);
}

TEST_CASE("bench workload: bad sizes are rejected with a reason", "[tools][bench]") {
  WorkloadConfig c;
  c.groups = 0;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("groups"));
  c = {};
  c.fds = 65;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("fds"));
  c = {};
  c.loops = 0;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("loops"));
  c = {};
  c.msg_bytes = 5000;
  CHECK_THROWS_WITH(validate(c), Catch::Contains("message size"));
}

TEST_CASE("bench workload: a failing emit point aborts the run without hanging", "[tools][bench]") {
  std::signal(SIGPIPE, SIG_IGN);
  Channel ch = GENERATE(Channel::socketpair, Channel::pipe);
  ThrowingTracer t;
  WorkloadConfig c;
  c.groups = 2;
  c.fds = 4;
  c.loops = 50;
  c.channel = ch;
  CHECK_THROWS_WITH(run_hackbench(c, t), "boom");
}
