// The non-template half of the in-process hackbench: channels, pinning,
// threads, the start gate and the clock.
#include "tracepipe/bench/engine/workload.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/socket.h>
#include <time.h>

#include <exception>
#include <latch>
#include <mutex>
#include <system_error>
#include <thread>

namespace tracepipe::bench {

void validate(const WorkloadConfig& c) {
  auto bad = [](const std::string& why) { throw std::invalid_argument("workload: " + why); };
  if (c.groups < 1 || c.groups > 64) bad(fmt::format("groups must be 1..64, got {}", c.groups));
  if (c.fds < 1 || c.fds > 64) bad(fmt::format("fds must be 1..64, got {}", c.fds));
  if (c.loops < 1) bad("loops must be at least 1");
  if (c.msg_bytes < 1 || c.msg_bytes > 4096)
    bad(fmt::format("message size must be 1..4096 bytes, got {}", c.msg_bytes));
}

namespace detail {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set); rc != 0)
    throw std::system_error(rc, std::generic_category(), fmt::format("pin to CPU {}", cpu));
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

Plumbing::Plumbing(const WorkloadConfig& config) : channel_(config.channel) {
  const uint32_t receivers = config.groups * config.fds;
  fds_.reserve(2 * receivers);
  for (uint32_t r = 0; r < receivers; ++r) {
    int p[2];
    int rc = config.channel == Channel::socketpair ? socketpair(AF_UNIX, SOCK_STREAM, 0, p)
                                                   : pipe2(p, O_CLOEXEC);
    if (rc != 0) {
      int err = errno;
      for (int fd : fds_) close(fd);
      throw std::system_error(err, std::generic_category(),
                              config.channel == Channel::socketpair ? "socketpair" : "pipe");
    }
    // pipe2 returns {read, write}; for a socketpair both ends are symmetric.
    fds_.push_back(p[0]);
    fds_.push_back(p[1]);
  }
}

Plumbing::~Plumbing() {
  for (int fd : fds_) close(fd);
}

void Plumbing::abort() noexcept {
  if (channel_ == Channel::socketpair) {
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    return;
  }
  int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_fd < 0) return;
  for (size_t i = 1; i < fds_.size(); i += 2) dup2(null_fd, fds_[i]);
  close(null_fd);
}

void write_all(int fd, const char* buf, size_t len) {
  while (len > 0) {
    ssize_t n = ::write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "workload write");
    }
    buf += n;
    len -= static_cast<size_t>(n);
  }
}

void read_all(int fd, char* buf, size_t len) {
  while (len > 0) {
    ssize_t n = ::read(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "workload read");
    }
    if (n == 0) throw std::runtime_error("workload read: unexpected end of channel");
    buf += n;
    len -= static_cast<size_t>(n);
  }
}

RunTiming run_threads(const WorkloadConfig& config, Plumbing& plumbing, std::vector<Task>& tasks,
                      void (*body)(void* ctx, uint32_t index), void (*prepare)(void* ctx),
                      void* ctx) {
  const uint32_t n = config.threads();
  const std::vector<int> cpus = allowed_cpus();
  std::latch ready(n);
  std::latch done(n);
  StartGate gate;
  std::mutex err_mu;
  std::exception_ptr first_error;
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> end_ns{0};

  std::vector<std::thread> threads;
  threads.reserve(n);
  auto record_error = [&](std::exception_ptr e) {
    std::lock_guard lock(err_mu);
    if (!first_error) first_error = e;
    if (!failed.exchange(true)) plumbing.abort();
  };
  for (uint32_t k = 0; k < n; ++k) {
    threads.emplace_back([&, k] {
      Task& t = tasks[k];
      bool ok = true;
      try {
        const uint32_t g = k / (2 * config.fds);
        const uint32_t slot = (k % (2 * config.fds)) / 2;
        std::string name = fmt::format("hb-{}{}.{}", k % 2 == 0 ? 's' : 'r', g, slot);
        name.resize(std::min<size_t>(name.size(), 15));
        std::memcpy(t.comm, name.data(), name.size());
        pthread_setname_np(pthread_self(), t.comm);
        t.tid = current_tid();
        if (config.pin) {
          t.cpu = cpus[(k / 2) % cpus.size()];
          pin_self(t.cpu);
        }
        if (prepare) prepare(ctx);
      } catch (...) {
        record_error(std::current_exception());
        ok = false;
      }
      ready.count_down();
      gate.wait();
      if (ok && !failed.load(std::memory_order_relaxed)) {
        try {
          body(ctx, k);
        } catch (...) {
          record_error(std::current_exception());
        }
      }
      // The last thread to finish stamps the end time.
      uint64_t t_end = now_ns();
      uint64_t prev = end_ns.load(std::memory_order_relaxed);
      while (prev < t_end && !end_ns.compare_exchange_weak(prev, t_end)) {
      }
      done.count_down();
    });
  }
  ready.wait();
  const uint64_t t0 = now_ns();
  gate.open();
  done.wait();
  for (auto& th : threads) th.join();
  if (first_error) std::rethrow_exception(first_error);
  return RunTiming{double(end_ns.load() - t0) * 1e-9, config.messages()};
}

}  // namespace detail
}  // namespace tracepipe::bench
