#include "tracepipe/bench/engine/replay_compare.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <oneapi/tbb/info.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

extern char** environ;

namespace tracepipe::replay {
namespace {

struct Sample {
  double wall = 0, cpu = 0;
};

BenchTiming summarize(std::vector<Sample> s) {
  BenchTiming t;
  if (s.empty()) return t;
  t.best_wall_s =
      std::min_element(s.begin(), s.end(), [](auto& a, auto& b) { return a.wall < b.wall; })->wall;
  t.best_cpu_s =
      std::min_element(s.begin(), s.end(), [](auto& a, auto& b) { return a.cpu < b.cpu; })->cpu;
  std::sort(s.begin(), s.end(), [](auto& a, auto& b) { return a.wall < b.wall; });
  t.median_wall_s = s[s.size() / 2].wall;
  return t;
}

double tv_s(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
}

// Runs argv with stdout to /dev/null (or counted, if `lines` is given) and
// stderr to /dev/null. Returns wall and CPU (user + sys) time of the child.
Sample spawn(const std::vector<std::string>& args, uint64_t* lines, std::string& error) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  int pipefd[2] = {-1, -1};
  if (lines != nullptr) {
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
      error = std::string("pipe: ") + std::strerror(errno);
      return {};
    }
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (pipefd[1] >= 0) close(pipefd[1]);
  if (rc != 0) {
    if (pipefd[0] >= 0) close(pipefd[0]);
    error = fmt::format("cannot run {}: {}", args[0], std::strerror(rc));
    return {};
  }
  if (lines != nullptr) {
    // Count the event lines (trace-cmd starts with "cpus=N").
    char buf[1 << 16];
    uint64_t n = 0;
    bool at_line_start = true, header = false;
    ssize_t got;
    while ((got = read(pipefd[0], buf, sizeof buf)) > 0 || (got < 0 && errno == EINTR)) {
      for (ssize_t i = 0; i < got; ++i) {
        if (at_line_start) header = got - i >= 5 && std::memcmp(buf + i, "cpus=", 5) == 0;
        at_line_start = buf[i] == '\n';
        if (at_line_start && !header) ++n;
      }
    }
    close(pipefd[0]);
    *lines = n;
  }
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  const auto t1 = std::chrono::steady_clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = fmt::format("{} failed (status {})", args[0], status);
    return {};
  }
  return {std::chrono::duration<double>(t1 - t0).count(), tv_s(ru.ru_utime) + tv_s(ru.ru_stime)};
}

}  // namespace

BenchResult run_bench(const ReplayOptions& options, const BenchOptions& bench) {
  BenchResult r;
  ReplayOptions o = options;
  o.output.reset();
  o.progress = ProgressMode::off;
  const unsigned reps = std::max(1u, bench.reps);

  auto run_side = [&](unsigned threads) {
    o.threads = threads;
    std::vector<Sample> s;
    for (unsigned i = 0; i < reps; ++i) {
      const ReplayResult res = run_replay(o);
      r.records = res.total.replayed + res.total.skipped + res.unknown;
      r.kept = res.total.kept;
      s.push_back({res.wall_s, res.cpu_s});
    }
    return summarize(s);
  };
  run_side(1);  // warm-up: page cache, TSC calibration, thread registration
  r.replay_one = run_side(1);
  r.threads_all = options.threads != 0 ? options.threads
                                       : static_cast<unsigned>(tbb::info::default_concurrency());
  r.replay_all = run_side(r.threads_all);

  if (!bench.trace_cmd.empty()) {
    std::vector<std::string> args{bench.trace_cmd, "report"};
    for (const std::string& f : options.filter_args) {
      args.push_back("-F");
      args.push_back(f);
    }
    args.push_back(options.input.string());
    std::string err;
    spawn(args, &r.trace_cmd_kept, err);  // counts, and warms the page cache
    std::vector<Sample> s;
    for (unsigned i = 0; i < reps && err.empty(); ++i) s.push_back(spawn(args, nullptr, err));
    if (err.empty()) {
      r.trace_cmd = summarize(s);
      r.trace_cmd_ran = true;
    } else {
      r.trace_cmd_error = err;
    }
  }
  return r;
}

std::string format_bench(const ReplayOptions& options, const BenchResult& r) {
  std::string filters;
  for (const std::string& f : options.filter_args) filters += fmt::format(" -F '{}'", f);
  if (options.only_filtered) filters += " --only-filtered";
  std::string out = fmt::format("bench: {} ({} records){}\n", options.input.string(), r.records,
                                filters.empty() ? " (no filter)" : filters);
  auto line = [&](std::string_view what, const BenchTiming& t) {
    const double n = static_cast<double>(r.records);
    out += fmt::format(
        "  {:<34} best {:9.3f} ms wall ({:6.2f} M events/s), {:9.3f} ms CPU ({:6.2f} M events/s); "
        "median {:.3f} ms\n",
        what, t.best_wall_s * 1e3, t.best_wall_s > 0 ? n / t.best_wall_s * 1e-6 : 0,
        t.best_cpu_s * 1e3, t.best_cpu_s > 0 ? n / t.best_cpu_s * 1e-6 : 0, t.median_wall_s * 1e3);
  };
  line("tracepipe replay, 1 thread:", r.replay_one);
  line(fmt::format("tracepipe replay, {} threads:", r.threads_all), r.replay_all);
  if (r.trace_cmd_ran) {
    line("trace-cmd report -F:", r.trace_cmd);
    const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    out +=
        fmt::format("  speed-up of replay (1 thread) over trace-cmd: {:.1f}x wall, {:.1f}x CPU\n",
                    ratio(r.trace_cmd.best_wall_s, r.replay_one.best_wall_s),
                    ratio(r.trace_cmd.best_cpu_s, r.replay_one.best_cpu_s));
    out += fmt::format("  kept: replay {}, trace-cmd report -F {} ({})\n", r.kept, r.trace_cmd_kept,
                       options.only_filtered
                           ? "same semantics: --only-filtered"
                           : "replay keeps unfiltered events; add --only-filtered to compare");
  } else if (!r.trace_cmd_error.empty()) {
    out += fmt::format("  trace-cmd not measured: {}\n", r.trace_cmd_error);
  }
  return out;
}

}  // namespace tracepipe::replay
