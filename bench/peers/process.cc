#include "tracepipe/bench/peers/process.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <thread>

extern char** environ;

namespace tracepipe::peers {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  v.reserve(argv.size() + 1);
  for (const std::string& a : argv) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

/// Waits for `pid` until `deadline`; returns its decoded status, or nullopt.
bool wait_until(pid_t pid, Clock::time_point deadline, int& code) {
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      code = decode_status(status);
      return true;
    }
    if (r < 0 && errno != EINTR) {  // not our child any more (reaped elsewhere)
      code = -1;
      return true;
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  ProcessResult res;
  if (argv.empty()) return res;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    res.output = fmt::format("pipe: {}", std::strerror(errno));
    return res;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  std::vector<char*> av = c_argv(argv);
  pid_t pid = -1;
  const int err = ::posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (err != 0) {
    ::close(fds[0]);
    res.output = fmt::format("cannot run {}: {}", argv[0], std::strerror(err));
    return res;
  }
  const auto deadline = Clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      res.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // timeout is checked at the top
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: every writer (the child and its children) closed
    if (res.output.size() < (1u << 20)) res.output.append(buf, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  int code = -1;
  if (res.timed_out || !wait_until(pid, deadline + std::chrono::seconds(2), code)) {
    res.timed_out = true;
    ::kill(pid, SIGKILL);
    wait_until(pid, Clock::now() + std::chrono::seconds(5), code);
    code = -1;
  }
  res.exit_code = code;
  return res;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: empty argv");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> av = c_argv(argv);
  const int err = ::posix_spawnp(&pid_, av[0], &fa, nullptr, av.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (err != 0) {
    pid_ = -1;
    throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(err)));
  }
}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    stop();
    pid_ = o.pid_;
    o.pid_ = -1;
  }
  return *this;
}

bool ChildProcess::running() noexcept {
  if (pid_ <= 0) return false;
  int code = 0;
  if (wait_until(pid_, Clock::now(), code)) {
    pid_ = -1;
    return false;
  }
  return true;
}

void ChildProcess::stop(std::chrono::milliseconds grace) noexcept {
  if (pid_ <= 0) return;
  int code = 0;
  ::kill(pid_, SIGTERM);
  if (!wait_until(pid_, Clock::now() + grace, code)) {
    ::kill(pid_, SIGKILL);
    wait_until(pid_, Clock::now() + std::chrono::seconds(5), code);
  }
  pid_ = -1;
}

std::string find_in_path(const std::string& program) {
  if (program.find('/') != std::string::npos)
    return ::access(program.c_str(), X_OK) == 0 ? program : "";
  const char* env = std::getenv("PATH");
  const std::string_view path =
      env != nullptr ? std::string_view(env) : std::string_view("/usr/bin:/bin");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view dir =
        end > start ? path.substr(start, end - start) : std::string_view(".");
    std::string full;
    full.reserve(dir.size() + 1 + program.size());
    full.append(dir).append("/").append(program);
    struct stat st {};
    if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(full.c_str(), X_OK) == 0)
      return full;
    start = end + 1;
  }
  return "";
}

std::vector<pid_t> child_pids(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::ifstream in(t.path() / "children");
    pid_t c = 0;
    while (in >> c) out.push_back(c);
  }
  return out;
}

std::string process_name(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/comm", pid));
  std::string name;
  std::getline(in, name);
  return name;
}

int pin_process(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int pinned = 0;
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(t.path().filename().c_str()));
    if (tid > 0 && ::sched_setaffinity(tid, sizeof set, &set) == 0) ++pinned;
  }
  if (pinned == 0)
    throw std::runtime_error(fmt::format("cannot pin process {} to CPU {}", pid, cpu));
  return pinned;
}

int set_fifo_priority(pid_t pid, int priority) {
  sched_param sp{};
  sp.sched_priority = priority;
  int moved = 0;
  std::error_code ec;
  for (const auto& t : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(t.path().filename().c_str()));
    if (tid > 0 && ::sched_setscheduler(tid, SCHED_FIFO, &sp) == 0) ++moved;
  }
  if (moved == 0)
    throw std::runtime_error(fmt::format("cannot make process {} SCHED_FIFO {}: {}", pid, priority,
                                         std::strerror(errno)));
  return moved;
}

uint64_t process_cpu_ns(pid_t pid) {
  clockid_t clock;
  timespec ts{};
  if (::clock_getcpuclockid(pid, &clock) != 0 || ::clock_gettime(clock, &ts) != 0)
    throw std::runtime_error(fmt::format("cannot read the CPU time of process {}", pid));
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace tracepipe::peers
