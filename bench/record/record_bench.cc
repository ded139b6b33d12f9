// tracepipe_record_bench's phases (record_bench.h; main.cc is the command):
// how fast one writer can emit while the recorder drains its buffer into a
// trace.dat on tmpfs, and what the recorder costs; with --peers lttng, the
// same runs for LTTng-UST's consumer daemon beside it.
//
//   tracepipe_record_bench [--dir /dev/shm] [--seconds 1] [--repeats 5]
//                          [--peers lttng [--lttng-plugin PATH] [--verify]]
//   tracepipe_record_bench --steady RATE --seconds 60 [--rotate-mib 512] [--block US|inf]  (RSS
//   over a long run) tracepipe_record_bench --collector auto|HOST:PORT     (to trace-cmd listen)
//   any of them with --realtime PRIO: the recorder thread (and LTTng's consumer
//   daemon) SCHED_FIFO at PRIO, as perf record -r
//
// Writer pinned to CPU 0, recorder thread pinned to CPU 1, default buffer
// sizes (1408 KiB per CPU, 4 KiB sub-buffers), drop-newest, 64-byte events.
//  1. max: the writer emits as fast as it can for --seconds; reports the
//     emit rate, records written and dropped, recorder CPU ns per event.
//  2. lossless: paced runs at decreasing rates (from the rate written at
//     full speed down by 10% steps) until --repeats runs in a row lose
//     nothing; the highest such rate is the lossless rate (with --peers, it
//     must also stay clean while the other side still searches), reported
//     as the median rate those runs emitted: a paced writer that was
//     preempted does not catch up in a burst larger than 100 µs of events
//     (record_run.h), it skips them, so on a loaded machine it may emit less
//     than asked.
// Each figure is the median of --repeats runs, with min and max. First, the
// idle recorder (--repeats runs of 1 s): its passes per second and CPU per
// pass with no writer.
// After each tracepipe run, the bare pwrite floor of the bytes it wrote
// (pwrite_floor: the same bytes, in the recorder's write size, into a new
// file in the same directory, CPU 1): the recorder's cost is reported
// beside it and as a ratio to it.
// --peers lttng: LTTng-UST (bench/record/lttng_record.h: per-UID channel,
// discard mode, default sub-buffers, consumer daemon pinned to CPU 1) is a
// second side. Its runs alternate with tracepipe's, run by run, in both
// phases (each side searches down from its own full-speed rate), so that
// machine noise hits both; the report ends with both lossless rates and
// their ratio. --verify then reads two LTTng traces back (one lossless, one
// at full speed) with babeltrace2 and compares their event counts with
// emitted - discarded. With --peers lttng a third side runs interleaved:
// tracepipe with LTTng's per-CPU buffer bytes (--equal-kb, 2048 KiB), the
// equal-memory leg. The report ends with the ratios the targets are stated
// in: consumer CPU per event to LTTng's and to the pwrite floor, lossless
// rates at each side's default and at equal memory.
// --collector: the recorder sends to trace-cmd listen instead (record -N);
// "auto" starts `trace-cmd listen -d /dev/shm/...` on a loopback port and
// removes each session's file once the collector has written it. Each run
// waits for the connection before the writer starts (Recorder::wait_ready).
// With "auto" the runs also report the collector's CPU per event (its
// session and reader processes, from /proc: the peer process that shares
// the two CPUs with the writer and the recorder). --steady records to the
// collector too (one stream, no rotation).
// --steady: a paced writer at RATE for --seconds; RSS sampled every second
// (first, last, max, least-squares slope). The recording rotates through 4
// files of --rotate-mib MiB (0: one file), so that a minute at 10 M events/s
// (38 GB) fits on tmpfs.
#include "tracepipe/bench/record/record_bench.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tracepipe/bench/record/latency_histogram.h"
#include "tracepipe/bench/record/lttng_record.h"
#include "tracepipe/bench/record/record_run.h"
#include "tracepipe/buffers/tsc_clock.h"
#include "tracepipe/core/clock/trace_clock.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/record/local_collector.h"
#include "tracepipe/core/record/recorder.h"

namespace tracepipe::record_bench {
using Ev =
    EventDecl<"tpbench", "rec64", Int<"value", uint32_t>, Int<"seq", uint32_t>, Chars<"pad", 48>>;
static_assert(Ev::fixed_size == 64);

namespace {

// What every run reads besides its own arguments.
struct Setup {
  std::string collector;                    // where the recorder sends ("" = the file)
  record::LocalCollector* local = nullptr;  // --collector auto
  int realtime = 0;      // --realtime: SCHED_FIFO priority of the recorder thread; 0: the default
  int64_t block_us = 0;  // --block: blocking mode for --steady (0: off; -1: no bound)
  record::OutputFormat format = record::OutputFormat::tracedat;  // of the drain-only runs
};

// After a session: waits (bounded) for the collector to finish its file, then removes it.
void collector_done(const Setup& st) {
  if (st.local == nullptr) return;
  (void)st.local->wait_file(std::chrono::seconds(30));
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(st.local->dir(), ec))
    if (e.path().extension() == ".dat") std::filesystem::remove(e.path(), ec);
}

// --collector auto: the CPU time (ns, /proc/PID/schedstat) of each process
// the collector forked (its process group but the listener: sessions and
// their per-CPU readers, exited ones until reaped), by PID.
std::map<int, uint64_t> collector_cpu(const Setup& st) {
  std::map<int, uint64_t> cpu;
  if (st.local == nullptr || st.local->pid() <= 0) return cpu;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream f(line.substr(close + 2));
    std::string state;
    int ppid = 0, pgrp = 0;
    f >> state >> ppid >> pgrp;
    const int pid = std::stoi(name);
    if (pgrp != st.local->pid() || pid == pgrp) continue;
    std::ifstream sched(e.path() / "schedstat");
    uint64_t ns = 0;
    if (sched >> ns) cpu[pid] = ns;
  }
  return cpu;
}

// The collector's CPU between two collector_cpu() readings: the processes
// there at the end, less what each had at the start.
uint64_t collector_cpu_since(const Setup& st, const std::map<int, uint64_t>& start) {
  uint64_t ns = 0;
  for (const auto& [pid, now] : collector_cpu(st)) {
    const auto it = start.find(pid);
    ns += now - (it != start.end() ? std::min(it->second, now) : 0);
  }
  return ns;
}

// --collector auto's trace-cmd listen; stopped, and its folder removed,
// when the bench ends.
class LocalListener {
 public:
  LocalListener() = default;
  LocalListener(const LocalListener&) = delete;
  LocalListener& operator=(const LocalListener&) = delete;
  ~LocalListener() {
    if (!collector) return;
    const std::filesystem::path dir = collector->dir();
    collector.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::unique_ptr<record::LocalCollector> collector;
};

// The recorder's realtime_priority, where this recorder has one.
template <class O>
constexpr bool has_realtime = requires(O o) {
  o.realtime_priority;
};
template <class O>
void set_realtime(O& ro, const Setup& st) {
  if constexpr (has_realtime<O>) ro.realtime_priority = st.realtime;
}

void set_output(record::RecorderOptions& ro, const std::filesystem::path& out, const Setup& st) {
  if (st.collector.empty())
    ro.output = out;
  else
    ro.collector = st.collector;
  ro.format = st.format;
}

// The bare pwrite floor of `bytes`: what writing them costs with no
// recorder around them, written as the recorder writes (pwrites of
// `chunk` bytes from one buffer, appended to a new file in the output's
// directory, so into the same file system), by a thread with the
// recorder's pinning and policy. Returns that thread's CPU ns.
uint64_t pwrite_floor(const std::filesystem::path& out, uint64_t bytes, size_t chunk,
                      int realtime) {
  uint64_t ns = 0;
  std::thread t([&] {
    pin_this_thread(1);
    if (realtime > 0) {
      sched_param sp{};
      sp.sched_priority = realtime;
      (void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    }
    const std::filesystem::path p = out.string() + ".floor";
    const int fd = ::open(p.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return;
    std::vector<std::byte> buf(chunk, std::byte{0x5a});
    timespec a{}, b{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (uint64_t off = 0; off < bytes; off += chunk) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, bytes - off));
      if (::pwrite(fd, buf.data(), n, static_cast<off_t>(off)) != static_cast<ssize_t>(n)) break;
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    ::close(fd);
    std::filesystem::remove(p);
    ns = static_cast<uint64_t>((b.tv_sec - a.tv_sec) * 1'000'000'000LL + (b.tv_nsec - a.tv_nsec));
  });
  t.join();
  return ns;
}

// One run: `rate` events/s (0: as fast as possible) for `seconds`, with
// `buffer_kb` per CPU (0: the default). Then the pwrite floor of the bytes it wrote.
Run one(const Setup& st, const std::filesystem::path& out, double seconds, double rate,
        uint32_t buffer_kb = 0) {
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  if (buffer_kb != 0) o.buffer_size_kb = buffer_kb;
  Instance inst(o);
  inst.enable(Ev::desc());
  record::RecorderOptions ro;
  set_output(ro, out, st);
  ro.cpu = 1;
  set_realtime(ro, st);
  record::Recorder rec(inst, ro);
  if (!rec.wait_ready(std::chrono::seconds(10)))
    fmt::print(stderr, "not ready: {}\n", rec.error().value_or("?"));
  const std::map<int, uint64_t> collector_start = collector_cpu(st);
  Run r;
  uint32_t seq = 0;
  std::thread w([&] {
    pin_this_thread(0);
    r = record_bench::paced_writer(
        [&](uint64_t n) {
          for (uint64_t i = 0; i < n; ++i) (void)Ev::emit(inst, 1, seq++, "pad");
        },
        seconds, rate);
  });
  w.join();
  const record::RecorderStats s = rec.stop();
  // After stop(): the collector's readers closed their connections, all read and stored.
  const uint64_t collector_ns = collector_cpu_since(st, collector_start);
  r.written = s.records;
  r.dropped = s.dropped;
  r.consumer_ns_per_event =
      s.records ? static_cast<double>(s.cpu_ns) / static_cast<double>(s.records) : 0;
  r.collector_ns_per_event =
      s.records ? static_cast<double>(collector_ns) / static_cast<double>(s.records) : 0;
  r.bytes = s.bytes;
  r.gaps = fmt::format(
      "longest gap between looks {:.0f} us (longest pass {:.0f} us, longest wake-up overrun {:.0f} "
      "us), "
      "peak unread {}/{} sub-buffers",
      s.longest_gap_ns / 1e3, s.longest_pass_ns / 1e3, s.longest_wake_late_ns / 1e3, s.peak_unread,
      inst.ring().nr_subbufs());
  if (s.unwritten != 0 || rec.error())
    fmt::print(stderr, "unwritten {}: {}\n", s.unwritten, rec.error().value_or(""));
  r.dropped += s.unwritten;  // not lossless either
  std::filesystem::remove(out);
  collector_done(st);
  if (st.collector.empty() && s.records != 0)
    r.floor_ns_per_event = static_cast<double>(pwrite_floor(
                               out, s.bytes, size_t{ro.batch_pages} * 4096, st.realtime)) /
                           static_cast<double>(s.records);
  return r;
}

// The recorder's own cost, apart from scheduling: a 64 MiB buffer is filled
// first, then a recorder is started and stopped at once, so that it drains
// every record in its final pass. Returns recorder CPU ns per record.
double drain_only(const Setup& st, const std::filesystem::path& out, bool to_null) {
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  o.buffer_size_kb = 64 * 1024;
  o.cpus = 1;
  Instance inst(o);
  inst.enable(Ev::desc());
  uint64_t n = 0;
  std::thread w([&] {
    pin_this_thread(0);
    for (uint32_t i = 0; i < 700000; ++i) n += Ev::emit(inst, 1, i, "pad") == EmitResult::kept;
  });
  w.join();
  record::RecorderOptions ro;
  if (to_null)
    ro.output = "/dev/null";
  else
    set_output(ro, out, st);
  ro.cpu = 1;
  set_realtime(ro, st);
  ro.on_error = [](const std::string&) {};  // /dev/null cannot be truncated
  record::Recorder rec(inst, ro);
  (void)rec.wait_ready(std::chrono::seconds(10));
  const record::RecorderStats s = rec.stop();
  if (!to_null) std::filesystem::remove_all(out);  // a CTF output is a directory
  if (!to_null) collector_done(st);
  return static_cast<double>(s.cpu_ns) /
         static_cast<double>(std::max<uint64_t>(s.records + s.unwritten, 1));
}

// The recorder's fixed cost: a recorder on an instance nobody writes, for
// `seconds`, `repeats` times: its passes per second and CPU per pass (the
// looks and sleeps it pays whatever the rate; at a low rate they dominate
// its CPU per event). Medians [min-max].
void idle_cost(const Setup& st, const std::filesystem::path& out, double seconds, int repeats) {
  std::vector<double> passes_s, us_pass, ms_s;
  for (int i = 0; i < repeats; ++i) {
    InstanceOptions o;
    o.mode = BufferMode::drop_newest;
    Instance inst(o);
    inst.enable(Ev::desc());
    record::RecorderOptions ro;
    set_output(ro, out, st);
    ro.cpu = 1;
    set_realtime(ro, st);
    record::Recorder rec(inst, ro);
    (void)rec.wait_ready(std::chrono::seconds(10));
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    const record::RecorderStats s = rec.stop();
    if (st.collector.empty()) std::filesystem::remove(out);
    collector_done(st);
    passes_s.push_back(static_cast<double>(s.passes) / seconds);
    us_pass.push_back(static_cast<double>(s.cpu_ns) / 1e3 /
                      static_cast<double>(std::max<uint64_t>(s.passes, 1)));
    ms_s.push_back(static_cast<double>(s.cpu_ns) / 1e6 / seconds);
  }
  const auto m = [](std::vector<double> x, const char* f) {
    std::sort(x.begin(), x.end());
    return fmt::format(fmt::runtime(f), x[x.size() / 2], x.front(), x.back());
  };
  // ms of CPU per s spread over 1 M events: that many ns each.
  fmt::print(
      "idle recorder {} passes/s, {} us CPU per pass, {} ms CPU per s (= ns per event at 1 M "
      "events/s before "
      "any record is written)\n",
      m(passes_s, "{:.0f} [{:.0f}-{:.0f}]"), m(us_pass, "{:.2f} [{:.2f}-{:.2f}]"),
      m(ms_s, "{:.1f} [{:.1f}-{:.1f}]"));
}

// The machine's part of a gap, without any recorder: a thread with the
// recorder's pinning and policy (CPU 1, --realtime) sleeps 50 us again and
// again for `seconds` and measures by how much each wake-up comes late (a
// timer's delivery, and whatever keeps the CPU: other tasks' kernel work,
// which a SCHED_FIFO thread cannot preempt on a kernel without preemption,
// the host's scheduling of the vCPU). The longest is the least time the
// recorder can be away; a buffer of B events survives it below B / that rate.
void wakeup_floor(double seconds, uint64_t buffer_events, int realtime) {
  std::vector<uint64_t> late;
  std::thread t([&] {
    pin_this_thread(1);
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (realtime > 0) {
      sched_param sp{};
      sp.sched_priority = realtime;
      (void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto dur = std::chrono::duration<double>(seconds);
    late.reserve(static_cast<size_t>(seconds * 25000));
    while (std::chrono::steady_clock::now() - t0 < dur) {
      const auto a = std::chrono::steady_clock::now();
      const timespec ts{0, 50'000};
      (void)clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
      const auto ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - a)
              .count();
      late.push_back(ns > 50'000 ? static_cast<uint64_t>(ns - 50'000) : 0);
    }
  });
  t.join();
  if (late.empty()) return;
  std::sort(late.begin(), late.end());
  const auto over = [&](uint64_t ns) {
    return late.end() - std::upper_bound(late.begin(), late.end(), ns);
  };
  fmt::print(
      "wake-up floor CPU 1{}: {} sleeps of 50 us in {} s, late by median {:.1f} us, p99.9 {:.0f} "
      "us, max {:.0f} us; "
      "{} over 0.5 ms, {} over 1 ms; a gap of the max fills the {}-event buffer above {:.1f} M "
      "events/s\n",
      realtime > 0 ? fmt::format(" (SCHED_FIFO {})", realtime) : "", late.size(), seconds,
      late[late.size() / 2] / 1e3, late[late.size() * 999 / 1000] / 1e3, late.back() / 1e3,
      over(500'000), over(1'000'000), buffer_events,
      static_cast<double>(buffer_events) / (late.back() / 1e9) / 1e6);
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

// The writer's emit durations of a --steady run, converted from cycles with
// the `local` clock's TSC calibration.
void print_emit_latency(const LatencyHistogram& h) {
  const TscCalibration& cal = tsc_calibration();
  if (!buffers::kHaveTsc || cal.tsc_hz == 0 || h.count() == 0) {
    fmt::print("emit latency: not measured (no invariant TSC)\n");
    return;
  }
  const auto ns = [&](uint64_t cycles) {
    return static_cast<double>(cycles) * 1e9 / static_cast<double>(cal.tsc_hz);
  };
  const auto us = [&](uint64_t cycles) { return ns(cycles) / 1e3; };
  fmt::print(
      "emit latency (each of {} emits, waits included): p50 {:.0f} ns, p99 {:.0f} ns, p99.9 {:.0f} "
      "ns, p99.99 {:.1f} us, p99.999 {:.1f} us, max {:.1f} us\n",
      h.count(), ns(h.quantile(0.5)), ns(h.quantile(0.99)), ns(h.quantile(0.999)),
      us(h.quantile(0.9999)), us(h.quantile(0.99999)), us(h.max()));
}

// --steady RATE: a paced writer at RATE events/s for --seconds while the
// recorder writes to --dir (rotating through 4 files of `rotate_mib` MiB);
// the RSS is sampled every second. Returns 0 when nothing was lost and the
// writer held the rate (within 1%).
int steady(const Setup& st, const std::filesystem::path& out, double seconds, double rate,
           uint64_t rotate_mib) {
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  inst.enable(Ev::desc());
  record::RecorderOptions ro;
  set_output(ro, out, st);
  ro.cpu = 1;
  set_realtime(ro, st);
  if (st.collector.empty()) {  // a collector's stream is one file, joined at the end
    ro.max_file_bytes = rotate_mib << 20;
    ro.max_files = rotate_mib != 0 ? 4 : 0;
  }
  if (st.block_us < 0)
    ro.block_timeout = record::RecorderOptions::kBlockForever;
  else
    ro.block_timeout = std::chrono::microseconds(st.block_us);
  record::Recorder rec(inst, ro);
  if (!rec.wait_ready(std::chrono::seconds(10)))
    fmt::print(stderr, "not ready: {}\n", rec.error().value_or("?"));
  std::atomic<bool> done{false};
  Run r;
  // Each emit's duration in TSC cycles (two counter reads around it): what
  // a writer pays per event, waits for the recorder included.
  auto lat = std::make_unique<LatencyHistogram>();
  std::thread w([&] {
    pin_this_thread(0);
    uint32_t seq = 0;
    r = record_bench::paced_writer(
        [&](uint64_t n) {
          for (uint64_t i = 0; i < n; ++i) {
            const uint64_t a = buffers::read_tsc();
            (void)Ev::emit(inst, 1, seq++, "pad");
            lat->add(buffers::read_tsc() - a);
          }
        },
        seconds, rate);
    done = true;
  });
  std::vector<uint64_t> rss;
  const auto t0 = std::chrono::steady_clock::now();
  while (!done) {
    std::this_thread::sleep_until(t0 + std::chrono::seconds(rss.size() + 1));
    if (done) break;
    rss.push_back(rss_kb());
    const auto s = rec.stats();
    fmt::print("t={:3}s rss {} KiB written {:.1f} M dropped {} files {}\n", rss.size(), rss.back(),
               static_cast<double>(s.records) / 1e6, s.dropped, s.files);
  }
  w.join();
  const auto s = rec.stop();
  for (const auto& f : s.kept_files) std::filesystem::remove(f);
  std::filesystem::remove(out);
  collector_done(st);
  if (rss.empty()) rss.push_back(rss_kb());
  // Least-squares slope of RSS over samples [from, end), in KiB per minute.
  auto slope = [&](size_t from) {
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    const double k = static_cast<double>(rss.size() - from);
    for (size_t i = from; i < rss.size(); ++i)
      mx += static_cast<double>(i) / k, my += static_cast<double>(rss[i]) / k;
    for (size_t i = from; i < rss.size(); ++i) {
      const double dx = static_cast<double>(i) - mx;
      sxx += dx * dx;
      sxy += dx * (static_cast<double>(rss[i]) - my);
    }
    return sxx > 0 ? sxy / sxx * 60 : 0.0;
  };
  const bool held = r.rate >= 0.99 * rate;
  fmt::print(
      "steady {:.2f} M events/s asked, {:.2f} M/s emitted for {} s: emitted {}, written {}, "
      "dropped {}, "
      "unwritten {}, skipped by the paced writer {}{}\n",
      rate / 1e6, r.rate / 1e6, seconds, r.emitted, s.records, s.dropped, s.unwritten, r.skipped,
      held ? "" : " (the writer could not hold the rate)");
  if (st.block_us != 0) {
    const auto b = inst.ring().block_stats(0);
    fmt::print(
        "blocking mode ({}): {} emits waited ({:.4f}% of those emitted), {:.1f} ms in all, longest "
        "{:.0f} us; "
        "dropped after the bound {}, could not wait {}\n",
        st.block_us < 0 ? std::string("no bound") : fmt::format("{} us", st.block_us), b.waits,
        100.0 * static_cast<double>(b.waits) /
            static_cast<double>(std::max<uint64_t>(r.emitted, 1)),
        static_cast<double>(b.wait_ns) / 1e6, static_cast<double>(b.max_wait_ns) / 1e3, b.timed_out,
        b.not_allowed);
  }
  print_emit_latency(*lat);
  fmt::print(
      "RSS first {} KiB, last {} KiB, max {} KiB; slope {:+.1f} KiB/min over all {} samples, "
      "{:+.1f} over "
      "the second half; {} files of {} MiB (kept the last {})\n",
      rss.front(), rss.back(), *std::max_element(rss.begin(), rss.end()), slope(0), rss.size(),
      slope(rss.size() / 2), s.files, rotate_mib, ro.max_files);
  return s.dropped == 0 && s.unwritten == 0 && held ? 0 : 1;
}

template <class F>
std::string med(const std::vector<Run>& v, F f, const char* fmt_) {
  std::vector<double> x;
  for (auto& r : v) x.push_back(f(r));
  std::sort(x.begin(), x.end());
  return fmt::format(fmt::runtime(fmt_), x[x.size() / 2], x.front(), x.back());
}

// With --collector auto: the collector's CPU per event beside the consumer's.
std::string collector_text(const std::vector<Run>& v) {
  if (v.empty() || v[0].collector_ns_per_event <= 0) return {};
  return "  collector " +
         med(
             v, [](const Run& r) { return r.collector_ns_per_event; }, "{:.2f} [{:.2f}-{:.2f}]") +
         " ns/event";
}

// A side of the comparison: its name and one run at a rate (0: full speed).
struct Side {
  std::string name;
  std::function<Run(double rate)> run;
  std::vector<Run> max;
  // The lossless search: the rate being tried, the clean runs at it so far.
  double rate = 0;
  std::vector<Run> clean;
  int steps = 0;
  bool done = false, found = false;
};

std::string fm(double v) { return fmt::format("{:.2f}", v); }

constexpr const char* kUsage =
    R"(usage: tracepipe_record_bench [options]     (docs/measurements.md, "Recording")
  One writer pinned to CPU 0 emits 64-byte events into a drop-newest instance
  (default buffer sizes) while the recorder, pinned to CPU 1, writes a
  trace.dat; reports drain-only cost, the full-speed rate and recorder CPU per
  event, and the highest paced rate with 0 lost in --repeats runs in a row.
  --dir DIR            where the trace.dat goes (default /dev/shm)
  --seconds S          length of each run (default 1)
  --repeats N          runs per figure, and clean runs in a row for lossless (default 5)
  --peers lttng        LTTng-UST's consumer daemon as a second side, runs interleaved
  --lttng-plugin PATH  the peers plugin with LTTng's tracepoint (default: found beside the bench)
  --verify             with --peers lttng: read two LTTng traces back with babeltrace2
  --steady RATE        one paced run at RATE events/s for --seconds (e.g. 10000000 --seconds 60):
                       RSS every second, exit 0 when nothing was lost
  --block US|inf       with --steady: blocking mode (writers wait up to US for the recorder); reports
                       how many emits waited, for how long, and what was still dropped
  --rotate-mib M       with --steady: 4 rotating files of M MiB (default 512; 0: one file; a
                       --collector gets one stream)
  --collector auto|HOST:PORT  record to trace-cmd listen instead (auto: start one on loopback)
  --buffer-kb K        tracepipe's buffer, K KiB per CPU (default: the instance's default): with a
                       buffer that outlasts the machine's scheduling gaps, the lossless rate
                       measures the output's throughput instead
  --equal-kb K         with --peers lttng: the equal-memory leg, tracepipe with K KiB per CPU
                       (default 2048, LTTng's 4 x 512 KiB sub-buffers)
  --realtime PRIO      recorder thread (and LTTng's consumer daemon) SCHED_FIFO at PRIO
  --floor S            first, S seconds of 50-us sleeps on CPU 1 with the recorder's policy: how late
                       the machine wakes a thread (default 3; 0: skip)
  --max-only           only the drain-only and full-speed phases (tracepipe's side; e.g. under perf)
  --formats            only drain-only, into trace.dat, Perfetto and CTF in turn (paired per repeat):
                       recorder CPU per event for each format and its ratio to trace.dat
  --help               this text
)";

// Options that cannot run here or together. Returns -1 to go on, else the
// exit code (77: the machine cannot run the bench, a skip).
int refuse(const Options& a) {
  if (a.realtime != 0 && !has_realtime<record::RecorderOptions>) {
    fmt::print(stderr, "--realtime: this recorder has no realtime_priority\n");
    return 2;
  }
  if (!a.peers.empty() && a.peers != "lttng") {
    fmt::print(stderr, "--peers: only lttng is known\n");
    return 2;
  }
  if (!a.peers.empty() && !a.collector.empty()) {
    fmt::print(
        stderr,
        "--peers lttng compares recordings to tmpfs; it does not combine with --collector\n");
    return 2;
  }
  if (std::thread::hardware_concurrency() < 2) {
    fmt::print("needs 2 CPUs\n");
    return 77;
  }
  return -1;
}

// LTTng's side when --peers asks for it, or null (it could not open:
// tracepipe's side still runs). Must come before any thread or child: the
// LTTng daemon may move this thread to a private mount namespace that the
// threads made later inherit.
std::unique_ptr<LttngRecordSide> open_lttng(const Options& a) {
  std::unique_ptr<LttngRecordSide> lttng;
  if (a.peers.empty()) return lttng;
  try {
    lttng = LttngRecordSide::open(a.plugin);
  } catch (const std::exception& e) {
    fmt::print("lttng-ust: skipped: {}\n", e.what());
  }
  if (lttng) {
    lttng->consumer_fifo_priority = a.realtime;
    fmt::print("lttng-ust: {}\n", lttng->description());
  }
  return lttng;
}

// --collector auto: a trace-cmd listen on loopback, which the recorder
// then sends to. Returns -1 to go on, else the exit code (77: no trace-cmd,
// a skip).
int start_local_collector(Setup& st, LocalListener& listener) {
  if (st.collector != "auto") return -1;
  if (!record::LocalCollector::available()) {
    fmt::print("--collector auto needs trace-cmd\n");
    return 77;
  }
  listener.collector = std::make_unique<record::LocalCollector>(
      fmt::format("/dev/shm/tp_record_bench_listen_{}", getpid()));
  st.local = listener.collector.get();
  if (!st.local->ok()) {
    fmt::print("trace-cmd listen did not start: {}\n", st.local->why());
    return 1;
  }
  st.collector = st.local->address();
  return -1;
}

// --formats: drain-only into each output format. The three formats drain
// the same 700 000 records in turn, each repeat starting with another;
// ratios are taken within a repeat.
int run_formats(Setup& st, const std::filesystem::path& out, int repeats,
                const std::string& where) {
  if (!st.collector.empty()) {
    fmt::print(stderr, "--formats records to files; it does not combine with --collector\n");
    return 2;
  }
  constexpr record::OutputFormat kFormats[] = {
      record::OutputFormat::tracedat, record::OutputFormat::perfetto, record::OutputFormat::ctf};
  std::vector<double> ns[3], ratio[3];
  for (int i = 0; i < repeats; ++i) {
    double one_run[3] = {};
    for (int k = 0; k < 3; ++k) {
      const int f = (k + i) % 3;
      st.format = kFormats[f];
      one_run[f] = drain_only(st, out, false);
    }
    for (int f = 0; f < 3; ++f) {
      ns[f].push_back(one_run[f]);
      ratio[f].push_back(one_run[f] / one_run[0]);
    }
  }
  st.format = record::OutputFormat::tracedat;
  for (int f = 0; f < 3; ++f) {
    std::sort(ns[f].begin(), ns[f].end());
    std::sort(ratio[f].begin(), ratio[f].end());
    fmt::print(
        "drain only    {:9} recorder {:.2f} [{:.2f}-{:.2f}] ns/event, x{:.2f} [{:.2f}-{:.2f}] of "
        "trace.dat, into {}\n",
        record::output_format_name(kFormats[f]), ns[f][ns[f].size() / 2], ns[f].front(),
        ns[f].back(), ratio[f][ratio[f].size() / 2], ratio[f].front(), ratio[f].back(), where);
  }
  return 0;
}

// The wake-up floor, read against the default buffer's size in 64-byte
// events.
void report_wakeup_floor(double floor_seconds, int realtime) {
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  const uint64_t per_subbuf =
      inst.ring().subbuf_size() / 80;  // a 64-byte event is 80 bytes in the ring
  wakeup_floor(floor_seconds, per_subbuf * (inst.ring().nr_subbufs() - 1), realtime);
}

// The recorder's own cost, into the output and into /dev/null.
void report_drain_only(const Setup& st, const std::filesystem::path& out, int repeats,
                       const std::string& where) {
  std::vector<double> file_ns, null_ns;
  for (int i = 0; i < repeats; ++i) {
    file_ns.push_back(drain_only(st, out, false));
    null_ns.push_back(drain_only(st, out, true));
  }
  std::sort(file_ns.begin(), file_ns.end());
  std::sort(null_ns.begin(), null_ns.end());
  fmt::print(
      "drain only    recorder {:.2f} [{:.2f}-{:.2f}] ns/event into {}, {:.2f} [{:.2f}-{:.2f}] "
      "into /dev/null\n",
      file_ns[file_ns.size() / 2], file_ns.front(), file_ns.back(), where,
      null_ns[null_ns.size() / 2], null_ns.front(), null_ns.back());
}

// --max-only: each full-speed run on its own line, for a profiler's window.
void report_max_only(const Setup& st, const std::filesystem::path& out, double seconds,
                     int repeats) {
  for (int i = 0; i < repeats; ++i) {
    const Run r = one(st, out, seconds, 0);
    fmt::print(
        "max rate      tracepipe emit {:.2f} M/s  written {:.2f} M/s  dropped {:.2f} M  recorder "
        "{:.2f} ns/event{}\n",
        r.rate / 1e6, static_cast<double>(r.written) / seconds / 1e6,
        static_cast<double>(r.dropped) / 1e6, r.consumer_ns_per_event, collector_text({r}));
  }
}

// tracepipe at its default; with LTTng, also tracepipe with LTTng's
// per-CPU buffer bytes (the equal-memory leg), then LTTng.
std::vector<Side> make_sides(const Setup& st, const std::filesystem::path& out, const Options& a,
                             LttngRecordSide* lttng) {
  std::vector<Side> sides(lttng ? 3 : 1);
  const double seconds = a.seconds;
  sides[0].name = "tracepipe";
  const uint32_t buffer_kb = a.buffer_kb;
  sides[0].run = [&st, out, seconds, buffer_kb](double rate) {
    return one(st, out, seconds, rate, buffer_kb);
  };
  if (lttng) {
    const uint32_t equal_kb = a.equal_kb;
    sides[1].name = fmt::format("tp-{}K", equal_kb);
    sides[1].run = [&st, out, seconds, equal_kb](double rate) {
      return one(st, out, seconds, rate, equal_kb);
    };
    sides[2].name = "lttng-ust";
    sides[2].run = [lttng, seconds](double rate) { return lttng->run(seconds, rate); };
  }
  return sides;
}

void report_note(const Side& s, const Run& r) {
  if (!r.note.empty()) fmt::print("  {}: {}\n", s.name, r.note);
}

void report_max_rate(const Side& s, double seconds) {
  fmt::print(
      "max rate      {:9} emit {} M/s  written {} M/s  dropped {} M  consumer {} ns/event{}{}\n",
      s.name,
      med(
          s.max, [](const Run& r) { return r.rate / 1e6; }, "{:.2f} [{:.2f}-{:.2f}]"),
      med(
          s.max, [&](const Run& r) { return static_cast<double>(r.written) / seconds / 1e6; },
          "{:.2f} [{:.2f}-{:.2f}]"),
      med(
          s.max, [](const Run& r) { return static_cast<double>(r.dropped) / 1e6; },
          "{:.2f} [{:.2f}-{:.2f}]"),
      med(
          s.max, [](const Run& r) { return r.consumer_ns_per_event; }, "{:.2f} [{:.2f}-{:.2f}]"),
      collector_text(s.max),
      s.max[0].floor_ns_per_event > 0
          ? "  pwrite floor " +
                med(
                    s.max, [](const Run& r) { return r.floor_ns_per_event; },
                    "{:.2f} [{:.2f}-{:.2f}]") +
                " ns/event"
          : std::string());
}

// Full speed, the sides alternating run by run (and which goes first).
void run_max_rates(std::vector<Side>& sides, double seconds, int repeats) {
  for (int i = 0; i < repeats; ++i)
    for (size_t k = 0; k < sides.size(); ++k) {
      Side& s = sides[(k + static_cast<size_t>(i)) % sides.size()];
      s.max.push_back(s.run(0));
      report_note(s, s.max.back());
    }
  for (Side& s : sides) {
    report_max_rate(s, seconds);
    // No rate above what the consumer wrote at full speed can be lossless:
    // the search starts there.
    std::vector<double> rates;
    for (const Run& r : s.max) rates.push_back(static_cast<double>(r.written) / seconds);
    std::sort(rates.begin(), rates.end());
    s.rate = rates[rates.size() / 2];
  }
}

// One run of a side in the lossless search at its current rate: a clean run
// counts towards --repeats in a row; a loss moves the side 10% down and
// restarts its count (or reopens a search it had finished).
void lossless_step(Side& s, int repeats) {
  Run r = s.run(s.rate);
  report_note(s, r);
  if (r.dropped == 0) {
    s.clean.push_back(r);
    if (!s.done && static_cast<int>(s.clean.size()) == repeats) {
      fmt::print("paced {:9} {:6.2f} M/s: 0 dropped in {} runs\n", s.name, s.rate / 1e6, repeats);
      s.done = s.found = true;
    }
    return;
  }
  fmt::print("paced {:9} {:6.2f} M/s: dropped {} in run {} (emitted {:.2f} M/s){}\n", s.name,
             s.rate / 1e6, r.dropped, s.clean.size() + 1, r.rate / 1e6,
             s.found ? " (search reopened)" : "");
  if (!r.gaps.empty()) fmt::print("  {}\n", r.gaps);
  s.clean.clear();
  s.done = s.found = false;
  s.rate *= 0.9;
  if (++s.steps >= 40 || s.rate < 1e5) s.done = true;
}

// Lossless search, interleaved: each round runs every side once at its own
// current rate. A side that has had --repeats clean runs in a row keeps
// running at its rate while another side still searches (so that both meet
// the same noise to the end): a loss there reopens its search.
void lossless_search(std::vector<Side>& sides, int repeats) {
  for (int round = 0;; ++round) {
    bool searching = false;
    for (const Side& s : sides) searching |= !s.done;
    if (!searching) break;
    for (size_t k = 0; k < sides.size(); ++k) {
      Side& s = sides[(k + static_cast<size_t>(round)) % sides.size()];
      if (s.done && !s.found) continue;  // gave up: nothing to confirm
      lossless_step(s, repeats);
    }
  }
}

// The lossless figure is the rate the clean runs emitted (the paced writer
// skips what it owes after a preemption, so it can fall short of the rate
// asked on a loaded machine).
double emitted_rate(const Side& s) {
  std::vector<double> x;
  for (const Run& r : s.clean) x.push_back(r.rate);
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

void report_lossless(const std::vector<Side>& sides, double seconds) {
  for (const Side& s : sides) {
    if (s.found)
      fmt::print(
          "lossless      {:9} {:.2f} M events/s emitted, {:.2f} asked (one writer, 0 lost in {} "
          "runs of {} s)  "
          "consumer {} ns/event{}, {:.1f} bytes/event written{}\n",
          s.name, emitted_rate(s) / 1e6, s.rate / 1e6, s.clean.size(), seconds,
          med(
              s.clean, [](const Run& r) { return r.consumer_ns_per_event; },
              "{:.2f} [{:.2f}-{:.2f}]"),
          collector_text(s.clean),
          static_cast<double>(s.clean[0].bytes) /
              static_cast<double>(std::max<uint64_t>(s.clean[0].written, 1)),
          s.clean[0].floor_ns_per_event > 0
              ? "  pwrite floor " +
                    med(
                        s.clean, [](const Run& r) { return r.floor_ns_per_event; },
                        "{:.2f} [{:.2f}-{:.2f}]") +
                    " ns/event"
              : std::string());
    else
      fmt::print("lossless      {:9} not found above {:.2f} M events/s\n", s.name,
                 s.rate / 0.9 / 1e6);
  }
}

double median_of(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x.empty() ? 0.0 : x[x.size() / 2];
}

double median_consumer_ns(const std::vector<Run>& v) {
  std::vector<double> x;
  for (const Run& r : v) x.push_back(r.consumer_ns_per_event);
  return median_of(x);
}

double median_floor_ns(const std::vector<Run>& v) {
  std::vector<double> x;
  for (const Run& r : v) x.push_back(r.floor_ns_per_event);
  return median_of(x);
}

// The ratios the targets are stated in (medians of this run's sides): each
// tracepipe side's consumer to the pwrite floor, and with LTTng, to LTTng's
// consumer and lossless rate.
void report_ratios(const std::vector<Side>& sides) {
  const auto consumer = median_consumer_ns;
  const auto floor_of = median_floor_ns;
  for (size_t k = 0; k < (sides.size() == 3 ? 2u : 1u); ++k) {  // the tracepipe sides
    const Side& t = sides[k];
    if (floor_of(t.max) > 0)
      fmt::print(
          "ratio         {} consumer / pwrite floor of its bytes: full speed {:.2f}x{}  (target <= "
          "1.25x)\n",
          t.name, consumer(t.max) / floor_of(t.max),
          t.found ? fmt::format(", lossless {:.2f}x", consumer(t.clean) / floor_of(t.clean)) : "");
  }
  if (sides.size() != 3) return;
  const Side& l = sides[2];
  for (size_t k = 0; k < 2; ++k) {
    const Side& t = sides[k];
    fmt::print(
        "ratio         {} / lttng-ust consumer CPU per event: full speed {:.2f}x{}  (target <= "
        "0.5x)\n",
        t.name, consumer(t.max) / consumer(l.max),
        t.found && l.found
            ? fmt::format(", lossless {:.2f}x", consumer(t.clean) / consumer(l.clean))
            : "");
    if (t.found && l.found)
      fmt::print(
          "ratio         {} / lttng-ust lossless rate: {:.2f}x ({}; same run, interleaved; "
          "target >= 1.5x)\n",
          t.name, emitted_rate(t) / emitted_rate(l),
          k == 0 ? "each side's default buffer" : "equal buffer bytes per CPU");
  }
}

// --verify: LTTng's trace itself against its counts, one lossless run and
// one at full speed.
void verify_lttng(LttngRecordSide& lttng, const Side& side, double seconds) {
  for (const double rate : {side.found ? side.rate : 1e6, 0.0}) {
    const Run r = lttng.run(seconds, rate, true);
    std::string why;
    const auto n = count_events(*lttng.last_trace(), why);
    if (!n)
      fmt::print("verify        {}\n", why);
    else
      fmt::print(
          "verify        lttng-ust at {}: emitted {} - discarded {} = {}; babeltrace2 counts {} "
          "events: {}\n",
          rate > 0 ? fm(rate / 1e6) + " M/s" : std::string("full speed"), r.emitted, r.dropped,
          r.written, *n, *n == r.written ? "equal" : "DIFFERENT");
  }
}

}  // namespace

int parse_args(int argc, char** argv, Options& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    if (o == "--verify") {
      a.verify = true;
      continue;
    }
    if (o == "--max-only") {
      a.max_only = true;
      continue;
    }
    if (o == "--formats") {
      a.formats = true;
      continue;
    }
    if (o == "--help" || o == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (i + 1 >= argc) {
      fmt::print(stderr, "{} needs a value\n", o);
      return 2;
    }
    const char* v = argv[++i];
    if (o == "--dir")
      a.dir = v;
    else if (o == "--seconds")
      a.seconds = std::atof(v);
    else if (o == "--repeats")
      a.repeats = std::max(1, std::atoi(v));
    else if (o == "--steady")
      a.steady_rate = std::atof(v);
    else if (o == "--rotate-mib")
      a.rotate_mib = std::strtoull(v, nullptr, 10);
    else if (o == "--floor")
      a.floor_seconds = std::atof(v);
    else if (o == "--collector")
      a.collector = v;
    else if (o == "--peers")
      a.peers = v;
    else if (o == "--lttng-plugin")
      a.plugin = v;
    else if (o == "--realtime")
      a.realtime = std::atoi(v);
    else if (o == "--block")
      a.block_us = std::string(v) == "inf" ? -1 : std::atoll(v);
    else if (o == "--buffer-kb")
      a.buffer_kb = static_cast<uint32_t>(std::max(4, std::atoi(v)));
    else if (o == "--equal-kb")
      a.equal_kb = static_cast<uint32_t>(std::max(4, std::atoi(v)));
    else {
      fmt::print(stderr, "unknown option {}\n{}", o, kUsage);
      return 2;
    }
  }
  return -1;
}

int run(const Options& a) {
  if (const int rc = refuse(a); rc >= 0) return rc;
  const std::unique_ptr<LttngRecordSide> lttng = open_lttng(a);
  Setup st;
  st.collector = a.collector;
  st.realtime = a.realtime;
  st.block_us = a.block_us;
  LocalListener listener;
  if (const int rc = start_local_collector(st, listener); rc >= 0) return rc;
  const std::string where = st.collector.empty() ? a.dir : "trace-cmd listen at " + st.collector;
  const auto out = std::filesystem::path(a.dir) / fmt::format("tp_record_bench_{}.dat", getpid());
  if (a.steady_rate > 0) return steady(st, out, a.seconds, a.steady_rate, a.rotate_mib);
  if (a.formats) return run_formats(st, out, a.repeats, where);
  if (a.floor_seconds > 0) report_wakeup_floor(a.floor_seconds, st.realtime);
  idle_cost(st, out, 1.0, a.repeats);
  report_drain_only(st, out, a.repeats, where);
  if (a.max_only) {
    report_max_only(st, out, a.seconds, a.repeats);
    return 0;
  }
  std::vector<Side> sides = make_sides(st, out, a, lttng.get());
  run_max_rates(sides, a.seconds, a.repeats);
  lossless_search(sides, a.repeats);
  report_lossless(sides, a.seconds);
  report_ratios(sides);
  if (lttng && a.verify) verify_lttng(*lttng, sides.back(), a.seconds);
  for (const Side& s : sides)
    if (!s.found) return 1;
  return 0;
}

}  // namespace tracepipe::record_bench
