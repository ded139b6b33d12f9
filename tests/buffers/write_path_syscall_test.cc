// The write path makes no system call, even while a reader is blocked in
// ConsumingReader::wait(): a forked child runs a waiter thread, then jails
// its writer thread with a seccomp filter (any system call other than read,
// write, exit, exit_group, rt_sigreturn kills the process) and writes there:
// commits, sub-buffer switches, overwrite recycling, reclaim and padding
// discards, drop-newest losses, pause. The waiter (not jailed: it sleeps in
// clock_nanosleep) must still return `ready` once the watermark is reached.
// The filter applies to the jailed thread only (no SECCOMP_FILTER_FLAG_TSYNC).
// The buffers' clock is a counter here: the clock is the caller's choice, and
// CLOCK_MONOTONIC through the vDSO may fall back to a system call on some
// clock sources (tests/core/instance/noalloc_test.cc covers the default clock).
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

#include "syscall_jail.h"
#include "test_support.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/ring_buffer.h"

using namespace tracepipe::buffers;

#ifndef TRACEPIPE_SANITIZED
namespace {

std::atomic<uint64_t> g_ticks{0};
uint64_t tick_clock() noexcept { return g_ticks.fetch_add(1, std::memory_order_relaxed); }

using tp_test::enter_syscall_jail;  // tests/support/syscall_jail.h

// What the child reports through the pipe.
struct Report {
  uint32_t stage = 0;                          // last stage reached (for the failure message)
  uint32_t wait_result[2] = {9, 9};            // WaitResult of the two waits (9: none)
  uint64_t commits_while_waiting[2] = {0, 0};  // commits made while each waiter was inside wait()
  uint64_t attempts[2] = {0, 0};  // write attempts on the overwrite / drop-newest buffer
  uint64_t accounted[2] = {0, 0};
  uint64_t overrun = 0, reclaimed = 0, padded = 0, lost_full = 0, lost_paused = 0, switches = 0;
};

constexpr RingBufferConfig kCfg{
    .cpus = 1, .size_per_cpu = 2048, .subbuf_size = 256};  // 8 + 1 sub-buffers
constexpr auto kTimeout = std::chrono::seconds(30);

// Spins (no system call) until the waiter has ended `n` more sleep slices
// inside wait(), or has returned. True if it is still waiting.
bool until_polled(const detail::CpuBuffer& cb, uint64_t n, const std::atomic<bool>& done) {
  const uint64_t base = cb.wait_polls.load(std::memory_order_relaxed);
  while (!done.load(std::memory_order_acquire)) {
    if (cb.wait_polls.load(std::memory_order_relaxed) >= base + n) return true;
    __builtin_ia32_pause();
  }
  return false;
}

// Runs in the forked child; never returns.
[[noreturn]] void child(int fd) {
  Report rep;
  auto send = [&] {
    (void)!write(fd, &rep, sizeof rep);
    syscall(SYS_exit_group, 0);
    __builtin_unreachable();
  };
  RingBuffer<OverflowMode::overwrite> over(kCfg, &tick_clock);
  RingBuffer<OverflowMode::drop_newest> drop(kCfg, &tick_clock);
  ConsumingReader any(over, 0);
  ConsumingReader mark(drop, 0);
  std::atomic<bool> any_done{false}, mark_done{false};
  std::atomic<uint32_t> results[2] = {9, 9};
  std::thread waiter([&] {
    results[0] = static_cast<uint32_t>(any.wait(0, kTimeout));
    any_done.store(true, std::memory_order_release);
    results[1] = static_cast<uint32_t>(mark.wait(75, kTimeout));
    mark_done.store(true, std::memory_order_release);
  });
  waiter.detach();  // joining would take a futex: the child ends with exit_group
  std::byte src[200];
  std::memset(src, 7, sizeof src);
  rep.stage = 1;
  if (!enter_syscall_jail()) send();
  rep.stage = 2;
  // 1. A waiter for any record (percent 0) on the overwrite buffer: one
  //    commit once it has slept twice in wait(); it must then return.
  if (until_polled(over.cpu_buffer(0), 2, any_done)) {
    Reservation r = over.reserve(0, 16);
    ++rep.attempts[0];
    if (r) std::memset(r.payload().data(), 1, 16);
    over.commit(r);
    rep.commits_while_waiting[0] += r ? 1 : 0;
  }
  while (!any_done.load(std::memory_order_acquire)) __builtin_ia32_pause();
  rep.stage = 3;
  // 2. A watermark waiter (75% of the drop-newest buffer full): one record
  //    per sleep slice of the waiter until it returns, so every commit
  //    happens while it is blocked.
  while (until_polled(drop.cpu_buffer(0), 1, mark_done)) {
    ++rep.attempts[1];
    if (drop.write(0, std::span<const std::byte>(src, 48))) ++rep.commits_while_waiting[1];
  }
  rep.stage = 4;
  // 3. Every other write-path operation, still jailed: wraps, recycling,
  //    reclaim, padding, losses, pause.
  for (int i = 0; i < 4000; ++i) {
    const uint32_t len = 8 + (i * 37) % 180;
    for (int m = 0; m < 2; ++m) {
      auto step = [&](auto& rb) {
        Reservation a = rb.reserve(0, len);
        ++rep.attempts[m];
        if (a) std::memset(a.payload().data(), i, len);
        if (i % 7 == 0) {
          rb.discard(a);  // reclaim
        } else if (i % 11 == 0) {
          Reservation b = rb.reserve(0, 16);
          ++rep.attempts[m];
          rb.discard(a);  // padding
          rb.commit(b);
        } else {
          rb.commit(a);
        }
        (void)rb.write(0, std::span<const std::byte>(src, len));
        ++rep.attempts[m];
        if (i % 500 == 0) {
          rb.pause();
          (void)rb.reserve(0, 8);
          ++rep.attempts[m];
          rb.resume();
        }
      };
      if (m == 0)
        step(over);
      else
        step(drop);
    }
  }
  rep.stage = 5;
  rep.wait_result[0] = results[0];
  rep.wait_result[1] = results[1];
  // Readers' records still held count as entries in stats(): nothing lost.
  const CpuStats o = over.stats(0), d = drop.stats(0);
  rep.accounted[0] = o.accounted();
  rep.accounted[1] = d.accounted();
  rep.overrun = o.overrun;
  rep.reclaimed = o.reclaimed + d.reclaimed;
  rep.padded = o.discarded - o.reclaimed + d.discarded - d.reclaimed;
  rep.lost_full = d.lost_full;
  rep.lost_paused = o.lost_paused + d.lost_paused;
  rep.switches = o.subbuf_switches + d.subbuf_switches;
  send();
  __builtin_unreachable();
}

}  // namespace
#endif

TEST_CASE("write path: no system call, even with a reader blocked in wait()",
          "[buffers][syscall][wait]") {
#ifdef TRACEPIPE_SANITIZED
  TP_SKIP("sanitizer runtimes make system calls of their own");
#else
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    child(fds[1]);
  }
  close(fds[1]);
  Report rep;
  const ssize_t got = read(fds[0], &rep, sizeof rep);
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  INFO("child stage " << rep.stage << "; killed by SIGSYS = a system call on the write path");
  REQUIRE_FALSE(WIFSIGNALED(status));
  REQUIRE(WIFEXITED(status));
  REQUIRE(got == static_cast<ssize_t>(sizeof rep));
  REQUIRE(rep.stage == 5);
  // The waiters returned because the watermark was reached, not by timeout.
  CHECK(rep.wait_result[0] == static_cast<uint32_t>(WaitResult::ready));
  CHECK(rep.wait_result[1] == static_cast<uint32_t>(WaitResult::ready));
  // Commits made while each waiter was blocked: the one record it waited
  // for; and for 75% of 8 data sub-buffers (6 full and unread), 6 * 4 records
  // of 48 bytes (stride 64 in 256-byte sub-buffers) plus the one that moves
  // the tail into the 7th (one more if the waiter looked just before it).
  CHECK(rep.commits_while_waiting[0] == 1);
  CHECK(rep.commits_while_waiting[1] >= 25);
  CHECK(rep.commits_while_waiting[1] <= 26);
  // Every path ran, and nothing went unaccounted.
  CHECK(rep.overrun > 0);
  CHECK(rep.reclaimed > 0);
  CHECK(rep.padded > 0);
  CHECK(rep.lost_full > 0);
  CHECK(rep.lost_paused > 0);
  CHECK(rep.switches > 100);
  CHECK(rep.accounted[0] == rep.attempts[0]);
  CHECK(rep.accounted[1] == rep.attempts[1]);
#endif
}

TEST_CASE("write path syscall test: the jail does catch a system call", "[buffers][syscall]") {
#ifdef TRACEPIPE_SANITIZED
  TP_SKIP("sanitizer runtimes make system calls of their own");
#else
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!enter_syscall_jail()) syscall(SYS_exit_group, 3);
    syscall(SYS_getpid);  // not allowed: the kernel kills us
    syscall(SYS_exit_group, 0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGSYS);
#endif
}
