#pragma once
// An in-process hackbench (`hackbench -T -g G -f F -l L`): G groups, each of
// F sender threads and F receiver threads. Every receiver owns one channel (a
// socketpair or a pipe); every sender of a group writes L rounds of one
// `msg_bytes` message to each receiver of its group, and each receiver reads
// F*L messages. Threads are pinned to the CPUs the process may use, a sender
// and a receiver per pair, pairs round-robin (pair p -> allowed_cpus[p % n]),
// so each CPU runs as many senders as receivers.
//
// Emit points, per message (6 events, always the same number so that event
// counts are exact and equal across cases; hackbench.dat, the kernel trace
// of `hackbench -g 2 -l 50`, has 6.4 events per message, of which these four
// kinds are 65%):
//
//   sender    sys_enter(id=1 write, fd, buf, len)        before write()
//             sched_wakeup(receiver)                      after write(): the
//                                                         wakeup write() does
//             sys_exit(id=1, ret)                         after write()
//   receiver  sys_enter(id=0 read, fd, buf, len)          before read()
//             sched_switch(prev=receiver S, next=sender)  the receiver sleeps
//                                                         until data arrives
//             sys_exit(id=0, ret)                         after read()
//
// A message that needs several system calls (a short read or write) still
// emits one enter/exit pair, with the total byte count.
//
// Timing: all threads are created, pinned and parked first; the clock starts
// when they are released and stops when the last one has finished (creation
// and teardown are not timed, as in hackbench).
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "tracepipe/bench/engine/records.h"
#include "tracepipe/bench/engine/tracer.h"

namespace tracepipe::bench {

enum class Channel : uint8_t { socketpair, pipe };

/// Size of one run. Defaults are `tracepipe bench`'s embedded defaults.
struct WorkloadConfig {
  uint32_t groups = 2;       ///< hackbench -g (hackbench.dat was captured with -g 2)
  uint32_t fds = 20;         ///< hackbench -f: senders = receivers per group (hackbench's default)
  uint32_t loops = 500;      ///< hackbench -l: rounds per sender (400,000 messages in all)
  uint32_t msg_bytes = 100;  ///< hackbench DATASIZE
  Channel channel = Channel::socketpair;
  bool pin = true;  ///< pin threads round-robin to allowed CPUs

  uint64_t messages() const { return uint64_t{groups} * fds * fds * loops; }
  uint32_t threads() const { return 2 * groups * fds; }
  /// Events a traced run emits: 6 per message.
  uint64_t events() const { return 6 * messages(); }
};

/// Checks the config; throws std::invalid_argument with a readable reason.
void validate(const WorkloadConfig& config);

/// One workload thread as it appears in sched records.
struct Task {
  char comm[16] = {};
  int32_t tid = 0;
  int32_t prio = 120;  ///< kernel prio of a nice-0 SCHED_OTHER task
  int32_t cpu = -1;    ///< pinned CPU, or -1 if not pinned
};

/// Result of one timed run.
struct RunTiming {
  double seconds = 0;  ///< wall time from release to the last thread's end
  uint64_t messages = 0;
};

namespace detail {

/// The CPUs this process may run on, ascending (sched_getaffinity).
std::vector<int> allowed_cpus();
/// Pins the calling thread to `cpu`; throws on failure.
void pin_self(int cpu);
/// The calling thread's tid (gettid).
inline int32_t current_tid() { return static_cast<int32_t>(::syscall(SYS_gettid)); }
/// CLOCK_MONOTONIC in ns.
uint64_t now_ns();

/// Channels and roles of one run, created before the threads and closed
/// after they join. Not copyable.
class Plumbing {
 public:
  explicit Plumbing(const WorkloadConfig& config);
  ~Plumbing();
  Plumbing(const Plumbing&) = delete;
  Plumbing& operator=(const Plumbing&) = delete;

  /// Read end of receiver r (global index over all groups).
  int read_fd(uint32_t r) const { return fds_[2 * r]; }
  /// Write end of receiver r.
  int write_fd(uint32_t r) const { return fds_[2 * r + 1]; }
  /// Unblocks every thread after a failure: readers see end of channel and
  /// writers an error (sockets are shut down; a pipe's write end is replaced
  /// by /dev/null with dup2, so no descriptor number is ever reused while
  /// threads still hold it). Safe to call from any thread, more than once.
  void abort() noexcept;

 private:
  Channel channel_;
  std::vector<int> fds_;
};

/// Writes or reads exactly `len` bytes, retrying on short transfers and
/// EINTR; throws std::runtime_error on any other error or on EOF.
void write_all(int fd, const char* buf, size_t len);
void read_all(int fd, char* buf, size_t len);

/// Start gate: threads park in wait() until open() releases them all.
class StartGate {
 public:
  void wait() { flag_.wait(false, std::memory_order_acquire); }
  void open() {
    flag_.store(true, std::memory_order_release);
    flag_.notify_all();
  }

 private:
  std::atomic<bool> flag_{false};
};

/// Spawns the 2*G*F workload threads (each runs `body(index)` after it is
/// pinned, has named itself and passed the start gate), times them and joins
/// them. Thread index k: group g = k / (2F); within the group, even k are
/// senders, odd k receivers; pair k / 2 is pinned to allowed CPU
/// (k / 2) mod n. An exception thrown by a body is rethrown
/// here after every thread has joined; the first failure aborts `plumbing`
/// so that no thread stays blocked. SIGPIPE must be ignored by the caller.
/// `prepare(ctx)`, if not null, runs on each thread after it is named and
/// pinned and before the start gate (an engine registers the thread there, so
/// that registration is not timed).
RunTiming run_threads(const WorkloadConfig& config, Plumbing& plumbing, std::vector<Task>& tasks,
                      void (*body)(void* ctx, uint32_t index), void (*prepare)(void* ctx),
                      void* ctx);

}  // namespace detail

/// Runs the workload once, emitting into `tracer`. If the tracer has a
/// `prepare_thread()` member, every workload thread calls it once before the
/// clock starts. Throws std::runtime_error
/// on a system error (socketpair, pin, read/write failure).
template <EmitTarget Tracer>
RunTiming run_hackbench(const WorkloadConfig& config, Tracer& tracer) {
  validate(config);
  detail::Plumbing plumbing(config);
  std::vector<Task> tasks(config.threads());

  struct Ctx {
    const WorkloadConfig* config;
    const detail::Plumbing* plumbing;
    std::vector<Task>* tasks;
    Tracer* tracer;
  } ctx{&config, &plumbing, &tasks, &tracer};

  auto body = [](void* p, uint32_t k) {
    const Ctx& c = *static_cast<Ctx*>(p);
    const WorkloadConfig& cfg = *c.config;
    Tracer& tr = *c.tracer;
    const uint32_t F = cfg.fds;
    const uint32_t g = k / (2 * F);
    const uint32_t slot = (k % (2 * F)) / 2;  // sender or receiver number in the group
    const Task& self = (*c.tasks)[k];
    std::vector<char> buf(cfg.msg_bytes, static_cast<char>('a' + k % 26));
    const uint64_t len = cfg.msg_bytes;

    if (k % 2 == 0) {  // sender: L rounds over the group's receivers
      for (uint32_t l = 0; l < cfg.loops; ++l) {
        for (uint32_t j = 0; j < F; ++j) {
          const uint32_t r = g * F + j;  // receiver number over all groups
          const Task& dst = (*c.tasks)[g * 2 * F + 2 * j + 1];
          const int fd = c.plumbing->write_fd(r);
          tr.template emit<SysEnterRecord>(EventKind::sys_enter, [&](SysEnterRecord& e) {
            e.id = SYS_write;
            e.args[0] = static_cast<uint64_t>(fd);
            e.args[1] = reinterpret_cast<uintptr_t>(buf.data());
            e.args[2] = len;
            e.args[3] = e.args[4] = e.args[5] = 0;
          });
          detail::write_all(fd, buf.data(), len);
          tr.template emit<SchedWakeupRecord>(EventKind::sched_wakeup, [&](SchedWakeupRecord& e) {
            std::memcpy(e.comm, dst.comm, sizeof e.comm);
            e.pid = dst.tid;
            e.prio = dst.prio;
            e.target_cpu = dst.cpu < 0 ? 0 : dst.cpu;
          });
          tr.template emit<SysExitRecord>(EventKind::sys_exit, [&](SysExitRecord& e) {
            e.id = SYS_write;
            e.ret = static_cast<int64_t>(len);
          });
        }
      }
    } else {  // receiver: F*L messages from the group's senders
      const int fd = c.plumbing->read_fd(g * F + slot);
      const uint64_t n = uint64_t{F} * cfg.loops;
      for (uint64_t i = 0; i < n; ++i) {
        // The sender this message most likely came from (round-robin); only
        // the switch record's next_* fields use it.
        const Task& from = (*c.tasks)[g * 2 * F + 2 * (i % F)];
        tr.template emit<SysEnterRecord>(EventKind::sys_enter, [&](SysEnterRecord& e) {
          e.id = SYS_read;
          e.args[0] = static_cast<uint64_t>(fd);
          e.args[1] = reinterpret_cast<uintptr_t>(buf.data());
          e.args[2] = len;
          e.args[3] = e.args[4] = e.args[5] = 0;
        });
        tr.template emit<SchedSwitchRecord>(EventKind::sched_switch, [&](SchedSwitchRecord& e) {
          std::memcpy(e.prev_comm, self.comm, sizeof e.prev_comm);
          e.prev_pid = self.tid;
          e.prev_prio = self.prio;
          e.prev_state = 1;  // TASK_INTERRUPTIBLE: waits for data
          std::memcpy(e.next_comm, from.comm, sizeof e.next_comm);
          e.next_pid = from.tid;
          e.next_prio = from.prio;
        });
        detail::read_all(fd, buf.data(), len);
        tr.template emit<SysExitRecord>(EventKind::sys_exit, [&](SysExitRecord& e) {
          e.id = SYS_read;
          e.ret = static_cast<int64_t>(len);
        });
      }
    }
  };
  void (*prepare)(void*) = nullptr;
  if constexpr (requires { tracer.prepare_thread(); })
    prepare = [](void* p) { static_cast<Ctx*>(p)->tracer->prepare_thread(); };
  return detail::run_threads(config, plumbing, tasks, body, prepare, &ctx);
}

}  // namespace tracepipe::bench
