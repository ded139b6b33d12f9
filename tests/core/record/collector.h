#pragma once
// Helpers of the recorder's output tests, and a real `trace-cmd listen` on a loopback port, in a temp directory, for the
// network sink's tests (and its bench): started in its own process group,
// killed with it.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <thread>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../instance/test_events.h"
#include "../tracedat/tracedat_test_util.h"

namespace tp_record_test {

/// A TCP port nothing listens on now (the kernel picks it; closed again).
inline uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  (void)::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t l = sizeof a;
  (void)::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
  ::close(fd);
  return ntohs(a.sin_port);
}

/// True when a socket listens on TCP `port` (/proc/net/tcp and tcp6, state 0A).
inline bool listening(uint16_t port) {
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", port);
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string sl, local, remote, st;
      ls >> sl >> local >> remote >> st;
      if (st == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, want) == 0) return true;
    }
  }
  return false;
}

inline void pause_ms(long ms) {  // retry pacing inside bounded waits
  const timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  (void)::nanosleep(&ts, nullptr);
}

class Collector {
 public:
  /// Starts `trace-cmd listen -p PORT -d DIR`; ok() is false if it did not
  /// come up (why() says).
  Collector() : dir_(std::filesystem::temp_directory_path() / ("tp_collector_" + std::to_string(::getpid()) + "_" +
                                                                 std::to_string(++count()))) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    port_ = free_port();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      // Dies with the test, and holds none of its descriptors: a collector
      // that outlived a crashed or timed-out test kept `flock`'s lock file
      // open (inherited through the test), and so the machine's CPU lock.
      (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = ::open((dir_ / "listen.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      (void)::close_range(3, ~0u, 0);
      const std::string p = std::to_string(port_), d = dir_.string();
      ::execlp("trace-cmd", "trace-cmd", "listen", "-p", p.c_str(), "-d", d.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
    for (int i = 0; i < 5000 && !listening(port_); ++i) {
      int st;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        why_ = "trace-cmd listen exited at start: " + log();
        return;
      }
      pause_ms(1);
    }
    if (!listening(port_)) why_ = "trace-cmd listen did not listen on port " + std::to_string(port_);
  }
  ~Collector() {
    kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool ok() const { return pid_ > 0 && why_.empty(); }
  const std::string& why() const { return why_; }
  uint16_t port() const { return port_; }
  std::string address() const { return "localhost:" + std::to_string(port_); }
  const std::filesystem::path& dir() const { return dir_; }
  std::string log() const {
    std::ifstream in(dir_ / "listen.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  /// Kills the collector and every process it forked (SIGKILL to its group).
  void kill() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
  }

  /// Stops (SIGSTOP) or resumes (SIGCONT) the collector and its children:
  /// a collector that no longer reads.
  void freeze(bool on) {
    if (pid_ > 0) ::kill(-pid_, on ? SIGSTOP : SIGCONT);
  }

  /// Waits (bounded) until the collector has finished every session: none
  /// of its children (one per connection) is still running. Then returns
  /// the file it wrote, if any.
  std::optional<std::filesystem::path> wait_file(int max_ms = 15000) const {
    for (int i = 0; i < max_ms / 5 && busy(); ++i) pause_ms(5);
    if (busy()) return std::nullopt;
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      if (e.path().extension() == ".dat") return e.path();
    return std::nullopt;
  }

 private:
  static int& count() {
    static int n = 0;
    return n;
  }
  // A child that is neither gone nor a zombie.
  bool busy() const {
    if (pid_ <= 0) return false;
    std::ifstream in("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children");
    int child;
    while (in >> child) {
      std::ifstream st("/proc/" + std::to_string(child) + "/stat");
      std::string s;
      std::getline(st, s);
      const size_t close = s.rfind(')');
      if (close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z') return true;
    }
    return false;
  }

  std::filesystem::path dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::string why_;
};

// Shared by the network and version-7 tests.

// Emits seq = from..to-1 from a thread pinned to CPU `cpu`; returns how many were kept.
inline uint64_t emit_range(tracepipe::Instance& inst, uint32_t from, uint32_t to, int cpu = 0) {
  uint64_t kept = 0;
  std::thread t([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % static_cast<int>(std::thread::hardware_concurrency()), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    for (uint32_t i = from; i < to; ++i) kept += tp_core_test::emit_sample(inst, 7, i, "net") == tracepipe::EmitResult::kept;
  });
  t.join();
  return kept;
}

// trace-cmd report's sample lines without the time stamp and the comm:
// "[CPU] sample: FIELDS" (the same records, in the same order).
inline std::vector<std::string> report_records(const std::filesystem::path& p) {
  const std::string rep = tp_tracedat_test::run(fmt::format("trace-cmd report -i {}", p.string()));
  std::vector<std::string> out;
  std::istringstream in(rep);
  std::string line;
  while (std::getline(in, line)) {
    const size_t ev = line.find("sample:");
    const size_t cpu = line.find('[');
    if (ev == std::string::npos || cpu == std::string::npos) continue;
    std::string fields = line.substr(ev + 7);
    fields.erase(0, fields.find_first_not_of(' '));
    out.push_back(line.substr(cpu, 5) + " " + fields);
  }
  return out;
}

inline tracepipe::InstanceOptions big_options() {
  tracepipe::InstanceOptions o = tp_core_test::small_options(tracepipe::Staging::per_thread);
  o.buffer_size_kb = 4096;  // holds every event of a test: nothing drops however slow the recorder
  return o;
}


}  // namespace tp_record_test
