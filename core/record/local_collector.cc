// core/record/local_collector.cc — see local_collector.h.
#include "tracepipe/core/record/local_collector.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

namespace tracepipe::record {
namespace {

void pause_ms(long ms) {  // pacing of the bounded waits below
  const timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  (void)::nanosleep(&ts, nullptr);
}

std::filesystem::path fresh_dir() {
  static std::atomic<int> n{0};
  return std::filesystem::temp_directory_path() /
         ("tracepipe_collector_" + std::to_string(::getpid()) + "_" + std::to_string(++n));
}

}  // namespace

uint16_t free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t l = sizeof a;
  const bool got = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                   ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l) == 0;
  ::close(fd);
  return got ? ntohs(a.sin_port) : 0;
}

bool tcp_listening(uint16_t port) {
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", port);
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string slot, local, remote, state;
      ls >> slot >> local >> remote >> state;
      if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, want) == 0)
        return true;
    }
  }
  return false;
}

bool LocalCollector::available() { return std::system("trace-cmd list -c >/dev/null 2>&1") == 0; }

LocalCollector::LocalCollector(std::filesystem::path dir, std::chrono::milliseconds start_timeout)
    : dir_(dir.empty() ? fresh_dir() : dir), own_dir_(dir.empty()) {
  std::error_code ec;
  if (own_dir_) std::filesystem::remove_all(dir_, ec);
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    why_ = "cannot create " + dir_.string() + ": " + ec.message();
    return;
  }
  port_ = free_tcp_port();
  if (port_ == 0) {
    why_ = "no free TCP port";
    return;
  }
  // Everything the child needs is built before fork(): the child only makes
  // system calls until exec.
  const std::string log_path = (dir_ / "listen.log").string(), p = std::to_string(port_),
                    d = dir_.string();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::setpgid(0, 0);
    (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    (void)::close_range(3, ~0u, 0);
    ::execlp("trace-cmd", "trace-cmd", "listen", "-p", p.c_str(), "-d", d.c_str(),
             static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (pid_ < 0) {
    why_ = "fork failed";
    return;
  }
  ::setpgid(pid_, pid_);  // also here: the group exists before kill(-pid) whoever runs first
  const auto deadline = std::chrono::steady_clock::now() + start_timeout;
  while (!tcp_listening(port_)) {
    int st;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      why_ = "trace-cmd listen exited at start: " + log();
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      why_ = "trace-cmd listen did not listen on port " + std::to_string(port_);
      return;
    }
    pause_ms(1);
  }
}

LocalCollector::~LocalCollector() {
  kill();
  if (own_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string LocalCollector::address() const { return "localhost:" + std::to_string(port_); }

std::string LocalCollector::log() const {
  std::ifstream in(dir_ / "listen.log");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool LocalCollector::busy() const {
  if (pid_ <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children");
  int child;
  while (in >> child) {
    std::ifstream st("/proc/" + std::to_string(child) + "/stat");
    std::string s;
    std::getline(st, s);
    const size_t close = s.rfind(')');  // the state follows the command name, which may hold spaces
    if (close != std::string::npos && close + 2 < s.size() && s[close + 2] != 'Z') return true;
  }
  return false;
}

std::optional<std::filesystem::path> LocalCollector::wait_file(
    std::chrono::milliseconds max) const {
  const auto deadline = std::chrono::steady_clock::now() + max;
  while (busy() && std::chrono::steady_clock::now() < deadline) pause_ms(5);
  if (busy()) return std::nullopt;
  std::optional<std::filesystem::path> newest;
  std::filesystem::file_time_type when{};
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".dat") continue;
    const auto t = e.last_write_time(ec);
    if (!newest || t > when) newest = e.path(), when = t;
  }
  return newest;
}

void LocalCollector::freeze(bool on) {
  if (pid_ > 0) ::kill(-pid_, on ? SIGSTOP : SIGCONT);
}

void LocalCollector::kill() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  int st;
  ::waitpid(pid_, &st, 0);
  pid_ = -1;
}

}  // namespace tracepipe::record
