#pragma once
// Helpers shared by all tests.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tp_test {

/// Prints "SKIPPED: reason" and exits with 77, which CTest reports as
/// "Skipped". Use only for missing external inputs (data, tracefs), never to
/// hide a failure.
[[noreturn]] void skip(const std::string& reason);

/// ../shared/data/<rel>, or skip() with a clear reason when it is absent.
std::filesystem::path shared_data_or_skip(const std::string& rel);

/// True if /sys/kernel/tracing is present and writable by this process.
bool tracefs_writable();

/// Reads a whole file; throws std::runtime_error naming the path on failure.
std::string read_file(const std::filesystem::path& p);

/// Creates (or truncates) `p` as a sparse file of `size` bytes, which costs
/// no disk space; returns p.
std::filesystem::path sparse_file(const std::filesystem::path& p, uint64_t size);

/// Exit status (-1 if it did not exit) and what a command wrote.
struct CommandResult {
  int status = -1;
  std::string out, err;
};
/// `s` quoted for /bin/sh.
std::string shell_quote(const std::string& s);
/// Runs argv (no shell interpretation of the arguments) with stdin from
/// /dev/null under `timeout timeout_s`, capturing stdout and stderr in
/// files of its own under `scratch_dir` (removed once read).
CommandResult run_command(const std::vector<std::string>& argv,
                          const std::filesystem::path& scratch_dir, int timeout_s = 120);

/// Pins the calling thread to one CPU for the scope (ok() says whether the
/// kernel agreed); the destructor puts the previous mask back.
class PinToCpu {
 public:
  explicit PinToCpu(uint32_t cpu) {
    sched_getaffinity(0, sizeof old_, &old_);
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    ok_ = sched_setaffinity(0, sizeof s, &s) == 0;
  }
  ~PinToCpu() { sched_setaffinity(0, sizeof old_, &old_); }
  PinToCpu(const PinToCpu&) = delete;
  PinToCpu& operator=(const PinToCpu&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t old_{};
  bool ok_ = false;
};

/// Sets thread `th`'s CPU affinity to one CPU, or to every online CPU when
/// `cpu_or_all` is UINT32_MAX. Failure (e.g. an exited thread) is ignored:
/// for tests that move threads around while they run.
inline void set_thread_affinity(pthread_t th, uint32_t cpu_or_all) {
  cpu_set_t s;
  CPU_ZERO(&s);
  if (cpu_or_all == UINT32_MAX) {
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(c, &s);
  } else {
    CPU_SET(cpu_or_all, &s);
  }
  pthread_setaffinity_np(th, sizeof s, &s);
}

}  // namespace tp_test

#define TP_SKIP(reason) ::tp_test::skip(reason)
