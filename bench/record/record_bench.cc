// tracepipe_record_bench: how fast one writer can emit while the recorder
// drains its buffer into a trace.dat on tmpfs, and what the recorder costs.
//
//   tracepipe_record_bench [--dir /dev/shm] [--seconds 1] [--repeats 5]
//   tracepipe_record_bench --steady RATE --seconds 60     (RSS over a long run)
//   tracepipe_record_bench --collector auto|HOST:PORT     (to trace-cmd listen)
//
// Writer pinned to CPU 0, recorder thread pinned to CPU 1, default buffer
// sizes (1408 KiB per CPU, 4 KiB sub-buffers), drop-newest, 64-byte events.
//  1. max: the writer emits as fast as it can for --seconds; reports the
//     emit rate, records written and dropped, recorder CPU ns per event.
//  2. lossless: paced runs at decreasing rates (from the rate written at
//     full speed down by 10% steps) until --repeats runs in a row lose nothing; the highest such
//     rate is the lossless rate.
// Each figure is the median of --repeats runs, with min and max.
// --collector: the recorder sends to trace-cmd listen instead (record -N);
// "auto" starts `trace-cmd listen -d /dev/shm/...` on a loopback port and
// removes each session's file once the collector has written it. Each run
// waits for the connection before the writer starts (Recorder::wait_ready).
#include <fmt/format.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/record/recorder.h"

using namespace tracepipe;
using Ev = EventDecl<"tpbench", "rec64", Int<"value", uint32_t>, Int<"seq", uint32_t>, Chars<"pad", 48>>;
static_assert(Ev::fixed_size == 64);

namespace {

// --collector: where the recorder sends ("" = the file), and the local
// trace-cmd listen started for "auto".
std::string g_collector;
pid_t g_listener = -1;
std::filesystem::path g_listen_dir;

bool listening(uint16_t port) {
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

bool start_listener() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  (void)bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t l = sizeof a;
  (void)getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
  close(fd);
  const uint16_t port = ntohs(a.sin_port);
  g_listen_dir = fmt::format("/dev/shm/tp_record_bench_listen_{}", getpid());
  std::filesystem::create_directories(g_listen_dir);
  g_listener = fork();
  if (g_listener == 0) {
    setpgid(0, 0);
    const std::string log = (g_listen_dir / "listen.log").string();
    if (std::freopen(log.c_str(), "w", stdout) == nullptr || std::freopen(log.c_str(), "a", stderr) == nullptr) _exit(126);
    const std::string p = std::to_string(port), d = g_listen_dir.string();
    execlp("trace-cmd", "trace-cmd", "listen", "-p", p.c_str(), "-d", d.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 5000 && !listening(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  g_collector = fmt::format("localhost:{}", port);
  return listening(port);
}

// After a session: waits (bounded) for the collector to finish its file, then removes it.
void collector_done() {
  if (g_listener <= 0) return;
  const std::string children = fmt::format("/proc/{0}/task/{0}/children", g_listener);
  for (int i = 0; i < 6000; ++i) {
    std::ifstream in(children);
    int pid;
    if (!(in >> pid)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (const auto& e : std::filesystem::directory_iterator(g_listen_dir))
    if (e.path().extension() == ".dat") std::filesystem::remove(e.path());
}

void stop_listener() {
  if (g_listener <= 0) return;
  kill(-g_listener, SIGKILL);
  waitpid(g_listener, nullptr, 0);
  std::error_code ec;
  std::filesystem::remove_all(g_listen_dir, ec);
}

void set_output(record::RecorderOptions& ro, const std::filesystem::path& out) {
  if (g_collector.empty()) ro.output = out;
  else ro.collector = g_collector;
}

struct Run {
  double rate = 0;        // events emitted per second
  uint64_t emitted = 0, written = 0, dropped = 0;
  double rec_ns_per_event = 0;
};

void pin(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// One run: `rate` events/s (0: as fast as possible) for `seconds`.
Run one(const std::filesystem::path& out, double seconds, double rate) {
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  inst.enable(Ev::desc());
  record::RecorderOptions ro;
  set_output(ro, out);
  ro.cpu = 1;
  record::Recorder rec(inst, ro);
  if (!rec.wait_ready(std::chrono::seconds(10))) fmt::print(stderr, "not ready: {}\n", rec.error().value_or("?"));
  Run r;
  std::thread w([&] {
    pin(0);
    const uint64_t t0 = now_ns();
    const uint64_t dur = static_cast<uint64_t>(seconds * 1e9);
    uint64_t n = 0;
    if (rate <= 0) {
      for (;;) {
        for (int k = 0; k < 1024; ++k) (void)Ev::emit(inst, 1, static_cast<uint32_t>(n++), "pad");
        if (now_ns() - t0 >= dur) break;
      }
    } else {
      const double per_ns = rate * 1e-9;
      for (;;) {
        const uint64_t t = now_ns() - t0;
        if (t >= dur) break;
        const uint64_t due = static_cast<uint64_t>(static_cast<double>(t) * per_ns);
        while (n < due) (void)Ev::emit(inst, 1, static_cast<uint32_t>(n++), "pad");
      }
    }
    const uint64_t t1 = now_ns();
    r.emitted = n;
    r.rate = static_cast<double>(n) / (static_cast<double>(t1 - t0) * 1e-9);
  });
  w.join();
  const record::RecorderStats s = rec.stop();
  r.written = s.records;
  r.dropped = s.dropped;
  r.rec_ns_per_event = s.records ? static_cast<double>(s.cpu_ns) / static_cast<double>(s.records) : 0;
  if (s.unwritten != 0 || rec.error()) fmt::print(stderr, "unwritten {}: {}\n", s.unwritten, rec.error().value_or(""));
  r.dropped += s.unwritten;  // not lossless either
  std::filesystem::remove(out);
  collector_done();
  return r;
}

// The recorder's own cost, apart from scheduling: a 64 MiB buffer is filled
// first, then a recorder is started and stopped at once, so that it drains
// every record in its final pass. Returns recorder CPU ns per record.
double drain_only(const std::filesystem::path& out, bool to_null) {
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  o.buffer_size_kb = 64 * 1024;
  o.cpus = 1;
  Instance inst(o);
  inst.enable(Ev::desc());
  uint64_t n = 0;
  std::thread w([&] {
    pin(0);
    for (uint32_t i = 0; i < 700000; ++i) n += Ev::emit(inst, 1, i, "pad") == EmitResult::kept;
  });
  w.join();
  record::RecorderOptions ro;
  if (to_null) ro.output = "/dev/null";
  else set_output(ro, out);
  ro.cpu = 1;
  ro.on_error = [](const std::string&) {};  // /dev/null cannot be truncated
  record::Recorder rec(inst, ro);
  (void)rec.wait_ready(std::chrono::seconds(10));
  const record::RecorderStats s = rec.stop();
  if (!to_null) std::filesystem::remove(out);
  if (!to_null) collector_done();
  return static_cast<double>(s.cpu_ns) / static_cast<double>(std::max<uint64_t>(s.records + s.unwritten, 1));
}

// RSS in KiB (/proc/self/statm, resident pages).
uint64_t rss_kb() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
    std::fclose(f);
  }
  return res * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

// --steady RATE: a paced writer at RATE events/s for --seconds while the
// recorder writes to --dir; the RSS is sampled every second.
int steady(const std::filesystem::path& out, double seconds, double rate) {
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  inst.enable(Ev::desc());
  record::RecorderOptions ro;
  ro.output = out;
  ro.cpu = 1;
  record::Recorder rec(inst, ro);
  std::atomic<bool> done{false};
  std::thread w([&] {
    pin(0);
    const uint64_t t0 = now_ns();
    const uint64_t dur = static_cast<uint64_t>(seconds * 1e9);
    uint64_t n = 0;
    for (;;) {
      const uint64_t t = now_ns() - t0;
      if (t >= dur) break;
      const uint64_t due = static_cast<uint64_t>(static_cast<double>(t) * rate * 1e-9);
      while (n < due) (void)Ev::emit(inst, 1, static_cast<uint32_t>(n++), "pad");
    }
    done = true;
  });
  std::vector<uint64_t> rss;
  while (!done) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    rss.push_back(rss_kb());
    const auto s = rec.stats();
    fmt::print("t={:3}s rss {} KiB written {:.1f} M dropped {} file {:.1f} MiB\n", rss.size(), rss.back(),
               static_cast<double>(s.records) / 1e6, s.dropped, static_cast<double>(s.bytes) / (1 << 20));
  }
  w.join();
  const auto s = rec.stop();
  std::filesystem::remove(out);
  const auto [lo, hi] = std::minmax_element(rss.begin() + std::min<size_t>(1, rss.size() - 1), rss.end());
  fmt::print("steady {:.2f} M events/s for {} s: written {}, dropped {}, RSS {}..{} KiB after the first second\n",
             rate / 1e6, seconds, s.records, s.dropped, *lo, *hi);
  return s.dropped == 0 ? 0 : 1;
}

template <class F>
std::string med(std::vector<Run>& v, F f, const char* fmt_) {
  std::vector<double> x;
  for (auto& r : v) x.push_back(f(r));
  std::sort(x.begin(), x.end());
  return fmt::format(fmt::runtime(fmt_), x[x.size() / 2], x.front(), x.back());
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/dev/shm";
  double seconds = 1;
  int repeats = 5;
  double steady_rate = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steady")) steady_rate = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--collector")) g_collector = argv[i + 1];
  }
  if (g_collector == "auto") {
    if (std::system("trace-cmd list -c >/dev/null 2>&1") != 0) {
      fmt::print("--collector auto needs trace-cmd\n");
      return 77;
    }
    if (!start_listener()) {
      fmt::print("trace-cmd listen did not start\n");
      stop_listener();
      return 1;
    }
    std::atexit(stop_listener);
  }
  const std::string where = g_collector.empty() ? dir : "trace-cmd listen at " + g_collector;
  if (std::thread::hardware_concurrency() < 2) {
    fmt::print("needs 2 CPUs\n");
    return 77;
  }
  const auto out = std::filesystem::path(dir) / fmt::format("tp_record_bench_{}.dat", getpid());
  if (steady_rate > 0) return steady(out, seconds, steady_rate);
  {
    std::vector<double> file_ns, null_ns;
    for (int i = 0; i < repeats; ++i) {
      file_ns.push_back(drain_only(out, false));
      null_ns.push_back(drain_only(out, true));
    }
    std::sort(file_ns.begin(), file_ns.end());
    std::sort(null_ns.begin(), null_ns.end());
    fmt::print("drain only    recorder {:.2f} [{:.2f}-{:.2f}] ns/event into {}, {:.2f} [{:.2f}-{:.2f}] into /dev/null\n",
               file_ns[file_ns.size() / 2], file_ns.front(), file_ns.back(), where, null_ns[null_ns.size() / 2],
               null_ns.front(), null_ns.back());
  }
  std::vector<Run> max;
  for (int i = 0; i < repeats; ++i) max.push_back(one(out, seconds, 0));
  fmt::print("max rate      emit {} M/s  written {} M  dropped {} M  recorder {} ns/event\n",
             med(max, [](Run& r) { return r.rate / 1e6; }, "{:.2f} [{:.2f}-{:.2f}]"),
             med(max, [](Run& r) { return r.written / 1e6; }, "{:.2f} [{:.2f}-{:.2f}]"),
             med(max, [](Run& r) { return r.dropped / 1e6; }, "{:.2f} [{:.2f}-{:.2f}]"),
             med(max, [](Run& r) { return r.rec_ns_per_event; }, "{:.2f} [{:.2f}-{:.2f}]"));
  // No rate above what the recorder wrote at full speed can be lossless:
  // the search starts there.
  std::vector<double> rates;
  for (auto& r : max) rates.push_back(static_cast<double>(r.written) / seconds);
  std::sort(rates.begin(), rates.end());
  double rate = rates[rates.size() / 2];
  for (int step = 0; step < 20 && rate > 1e5; ++step, rate *= 0.9) {
    std::vector<Run> v;
    bool clean = true;
    for (int i = 0; i < repeats && clean; ++i) {
      v.push_back(one(out, seconds, rate));
      clean = v.back().dropped == 0;
    }
    fmt::print("paced {:6.2f} M/s: {}\n", rate / 1e6, clean ? "0 dropped in every run" : fmt::format("dropped {} in run {}", v.back().dropped, v.size()));
    if (clean) {
      fmt::print("lossless      {:.2f} M events/s (one writer, {} runs of {} s)  recorder {} ns/event\n", rate / 1e6, repeats,
                 seconds, med(v, [](Run& r) { return r.rec_ns_per_event; }, "{:.2f} [{:.2f}-{:.2f}]"));
      return 0;
    }
  }
  return 1;
}
