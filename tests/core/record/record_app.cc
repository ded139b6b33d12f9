// A user's program as `tracepipe record` runs it: two declared events (ints
// and strings), threads emitting with TRACEPIPE_TRACE, no recorder code;
// linked with tracepipe::tracepipe only. The record CLI tests run it.
//
//   record_app [--events N] [--threads T] [--seconds S] [--pace-us U] [--fork-exit] [--quick-exit]
//
// Each thread emits N app:request events (and one app:note for every 8),
// or, with --seconds, emits for S seconds in bursts of 64 events every U µs
// (100 by default; 0: no pause), then
// prints "emitted R requests, N notes" on stdout and exits 0 (with
// --fork-exit, after a forked child has ended through exit()). With
// --handler it installs its own SIGINT handler first (the autostart then
// leaves SIGINT to it): the handler sets a flag, the threads stop and the
// program exits normally. With --quick-exit it ends by _exit(3), which runs
// no exit handler (its recording is never finished).
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using Request =
    tracepipe::EventDecl<"app", "request", tracepipe::Int<"id", uint32_t>,
                         tracepipe::Int<"latency_us", uint32_t>, tracepipe::Str<"path">>;
using Note =
    tracepipe::EventDecl<"app", "note", tracepipe::Int<"level", int32_t>, tracepipe::Str<"text">>;

namespace {
std::atomic<bool> g_stop{false};
void on_sigint(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  uint64_t events = 100000;
  bool fork_exit = false, quick_exit = false;
  unsigned threads = 2;
  double seconds = 0;
  long pace_us = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : "0";
    if (a == "--events")
      events = std::strtoull(v, nullptr, 10), ++i;
    else if (a == "--threads")
      threads = static_cast<unsigned>(std::strtoul(v, nullptr, 10)), ++i;
    else if (a == "--seconds")
      seconds = std::strtod(v, nullptr), ++i;
    else if (a == "--pace-us")
      pace_us = std::strtol(v, nullptr, 10), ++i;
    else if (a == "--handler")
      ::signal(SIGINT, on_sigint);
    else if (a == "--fork-exit")
      fork_exit = true;
    else if (a == "--quick-exit")
      quick_exit = true;
    else
      return std::fprintf(stderr, "record_app: unknown argument %s\n", a.c_str()), 2;
  }
  std::atomic<uint64_t> requests{0}, notes{0};
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      uint64_t r = 0, n = 0;
      const auto one = [&](uint64_t i) {
        TRACEPIPE_TRACE(Request, static_cast<uint32_t>(t * 1'000'000'000ull + i),
                        static_cast<uint32_t>(i % 5000),
                        i % 2 ? "/api/items" : "/api/users/profile");
        ++r;
        if (i % 8 == 7) {
          TRACEPIPE_TRACE(Note, static_cast<int32_t>(i % 4), "slow request");
          ++n;
        }
      };
      if (seconds > 0) {
        for (uint64_t i = 0;
             !g_stop.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until;) {
          for (int k = 0; k < 64; ++k) one(i++);
          if (pace_us > 0) {
            const timespec pause{0, pace_us * 1000};
            ::nanosleep(&pause, nullptr);
          }
        }
      } else {
        for (uint64_t i = 0; i < events && !g_stop.load(std::memory_order_relaxed); ++i) one(i);
      }
      requests += r;
      notes += n;
    });
  }
  for (auto& th : ts) th.join();
  if (fork_exit) {  // a worker process that ends through exit(): static destructors run in it
    const pid_t child = ::fork();
    if (child == 0) std::exit(0);
    ::waitpid(child, nullptr, 0);
  }
  std::printf("emitted %llu requests, %llu notes\n",
              static_cast<unsigned long long>(requests.load()),
              static_cast<unsigned long long>(notes.load()));
  if (quick_exit) {
    std::fflush(stdout);
    ::_exit(3);
  }
  return 0;
}
