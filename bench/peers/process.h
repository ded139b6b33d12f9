#pragma once
// Child processes of the peers bench: the lttng CLI (run to completion, its
// output captured) and lttng-sessiond (kept running, stopped by PID).
//
// posix_spawn is used, never fork(): once liblttng-ust is loaded in this
// process a plain fork() would need LTTng's fork wrapper, and the children
// here exec at once anyway.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace tracepipe::peers {

/// What a finished child did.
struct ProcessResult {
  int exit_code = -1;  ///< exit status, or 128 + signal, or -1 if it could not start
  bool timed_out = false;
  std::string output;  ///< stdout and stderr, interleaved as written
  bool ok() const noexcept { return exit_code == 0 && !timed_out; }
};

/// Runs `argv` (argv[0] searched in PATH) with the current environment,
/// waits at most `timeout`, kills it (SIGKILL, by its PID) past that.
/// Never throws for the child's failures: they are in the result.
ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// A long-running child: started with its output sent to `log_path`, stopped
/// with SIGTERM (then SIGKILL after `grace`) by its PID in stop() or the
/// destructor.
class ChildProcess {
 public:
  ChildProcess() = default;
  /// Starts `argv`; throws std::runtime_error naming the program on failure.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess() { stop(); }
  ChildProcess(ChildProcess&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const noexcept { return pid_; }
  /// True while the child has not exited (reaps it if it has).
  bool running() noexcept;
  /// SIGTERM, wait up to `grace`, then SIGKILL and reap. Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10)) noexcept;

 private:
  pid_t pid_ = -1;
};

/// Full path of `program` if it is an executable in PATH, else "".
std::string find_in_path(const std::string& program);

/// The children of process `pid` (every thread's /proc children list); empty
/// if it has none or is gone.
std::vector<pid_t> child_pids(pid_t pid);
/// The process's command name (/proc/PID/comm, at most 15 characters), ""
/// if it is gone.
std::string process_name(pid_t pid);
/// Pins every thread of process `pid` to `cpu` (sched_setaffinity per task,
/// so threads it starts later inherit the mask from their creator). Returns
/// the number of threads pinned; throws std::runtime_error if none could be.
int pin_process(pid_t pid, int cpu);
/// Moves every thread of process `pid` to SCHED_FIFO at `priority` (1..99),
/// as `chrt -a -f -p` does. Returns the number of threads moved; throws
/// std::runtime_error if none could be (no CAP_SYS_NICE).
int set_fifo_priority(pid_t pid, int priority);
/// CPU time (user + system) of every thread of process `pid` so far, in ns:
/// the same sum as utime + stime of /proc/PID/stat, read through the
/// process's CPU clock (clock_getcpuclockid) for ns instead of 10 ms
/// resolution. Throws std::runtime_error if the process is gone.
uint64_t process_cpu_ns(pid_t pid);

}  // namespace tracepipe::peers
