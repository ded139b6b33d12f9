// The perf overwrite series' experiment on tracepipe's ring buffer
// (buffers/): one writer thread, N sys_enter records, four cases.
#include "tracepipe/bench/engine/overwrite_series.h"

#include <fmt/core.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <thread>

#include "tracepipe/bench/engine/records.h"
#include "tracepipe/bench/engine/workload.h"
#include "tracepipe/buffers/current_cpu.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/core/clock/trace_clock.h"

namespace tracepipe::bench {
namespace {

using buffers::OverflowMode;

/// The record every iteration writes: raw_syscalls:sys_enter for close(-1).
SysEnterRecord make_record(int32_t tid) {
  SysEnterRecord r{};
  r.common.common_type = event_info(EventKind::sys_enter).id;
  r.common.common_pid = tid;
  r.id = SYS_close;
  r.args[0] = static_cast<uint64_t>(-1);
  return r;
}

struct LoopOut {
  double seconds = 0;
  uint64_t written = 0;  ///< reservations that succeeded
};

/// The timed loop: N iterations of [close(-1)] + [reserve, fill, commit].
/// `Ring` is nullptr_t for the base case.
template <class Ring>
LoopOut writer_loop(Ring* ring, uint64_t n, bool syscall) {
  const SysEnterRecord proto = make_record(detail::current_tid());
  uint64_t written = 0;
  const uint64_t t0 = detail::now_ns();
  for (uint64_t i = 0; i < n; ++i) {
    if (syscall) ::syscall(SYS_close, -1);
    if constexpr (!std::is_same_v<Ring, std::nullptr_t>) {
      buffers::Reservation r = ring->reserve(buffers::current_cpu(), sizeof(SysEnterRecord));
      if (r) [[likely]] {
        std::memcpy(r.payload().data(), &proto, sizeof proto);
        ring->commit(r);
        ++written;
      }
    } else {
      (void)ring;
      asm volatile("" ::: "memory");  // keep the empty loop
    }
  }
  return {double(detail::now_ns() - t0) * 1e-9, written};
}

struct Cpus {
  int writer = -1;  ///< -1: not pinned
  int helper = -1;  ///< consumer / snapshot thread
};

Cpus pick_cpus(bool pin) {
  Cpus c;
  if (!pin) return c;
  std::vector<int> all = detail::allowed_cpus();
  c.writer = all[0];
  c.helper = all.size() > 1 ? all[1] : all[0];
  return c;
}

/// Runs `loop` on a fresh thread pinned to `cpu` (if >= 0); rethrows.
template <class F>
LoopOut on_thread(int cpu, F loop) {
  LoopOut secs;
  std::exception_ptr err;
  std::thread t([&] {
    try {
      if (cpu >= 0) detail::pin_self(cpu);
      secs = loop();
    } catch (...) {
      err = std::current_exception();
    }
  });
  t.join();
  if (err) std::rethrow_exception(err);
  return secs;
}

/// The ring's counters summed over CPUs, checked against the writer's own
/// counts: attempts n = written + lost, and (buffers/stats.h) n = consumed +
/// overrun + lost + discarded + entries.
PerfCounts ring_counts(const buffers::RingBufferBase& ring, uint64_t n, uint64_t written) {
  PerfCounts k;
  uint64_t accounted = 0;
  for (uint32_t cpu = 0; cpu < ring.cpus(); ++cpu) {
    buffers::CpuStats s = ring.stats(cpu);
    k.lost += s.lost();
    k.overrun += s.overrun;
    accounted += s.accounted();
  }
  k.written = written;
  k.conserved = written + k.lost == n && accounted == n;
  return k;
}

buffers::RingBufferConfig ring_config(const OverwriteSeriesOptions& o) {
  buffers::RingBufferConfig cfg;
  cfg.cpus = buffers::possible_cpus();
  cfg.size_per_cpu = o.buffer_bytes_per_cpu;
  cfg.subbuf_size = 4096;
  return cfg;
}

struct RunOut {
  double seconds = 0;
  PerfCounts counts;
};

RunOut run_base(const OverwriteSeriesOptions& o, const Cpus& cpus) {
  RunOut out;
  out.seconds = on_thread(cpus.writer, [&] {
                  return writer_loop(static_cast<std::nullptr_t*>(nullptr), o.events, o.syscall);
                }).seconds;
  return out;
}

RunOut run_drop_consumer(const OverwriteSeriesOptions& o, const Cpus& cpus,
                         buffers::FunctionClock clock) {
  buffers::RingBuffer<OverflowMode::drop_newest> ring(ring_config(o), clock);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> read{0};
  std::exception_ptr err;
  // The consumer reads every CPU buffer; woken when a CPU buffer is half
  // full, as perf record's default watermark, and at least every 10 ms.
  std::thread consumer([&] {
    try {
      if (cpus.helper >= 0) detail::pin_self(cpus.helper);
      std::vector<buffers::ConsumingReader> readers;
      for (uint32_t c = 0; c < ring.cpus(); ++c) readers.emplace_back(ring, c);
      uint64_t n = 0;
      auto drain = [&] {
        for (auto& r : readers)
          while (r.next()) ++n;
      };
      const uint32_t wcpu = cpus.writer >= 0 ? uint32_t(cpus.writer) % ring.cpus() : 0;
      while (!stop.load(std::memory_order_acquire)) {
        drain();
        readers[wcpu].wait(50, std::chrono::milliseconds(10));
      }
      drain();
      read.store(n);
    } catch (...) {
      err = std::current_exception();
    }
  });
  RunOut out;
  LoopOut loop;
  std::exception_ptr werr;
  try {
    loop = on_thread(cpus.writer, [&] { return writer_loop(&ring, o.events, o.syscall); });
    out.seconds = loop.seconds;
  } catch (...) {
    werr = std::current_exception();
  }
  stop.store(true, std::memory_order_release);
  consumer.join();
  if (werr) std::rethrow_exception(werr);
  if (err) std::rethrow_exception(err);
  out.counts = ring_counts(ring, o.events, loop.written);
  out.counts.read = read.load();
  return out;
}

RunOut run_overwrite(const OverwriteSeriesOptions& o, const Cpus& cpus,
                     buffers::FunctionClock clock, bool snapshots) {
  buffers::RingBuffer<OverflowMode::overwrite> ring(ring_config(o), clock);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> read{0}, taken{0};
  std::exception_ptr err;
  std::thread reader;
  if (snapshots) {
    // Every period: pause output, read every CPU newest first, resume.
    reader = std::thread([&] {
      try {
        if (cpus.helper >= 0) detail::pin_self(cpus.helper);
        const auto period = std::chrono::milliseconds(o.snapshot_period_ms);
        auto next = std::chrono::steady_clock::now() + period;
        uint64_t n = 0, k = 0;
        auto snap = [&] {
          ring.pause();
          for (uint32_t c = 0; c < ring.cpus(); ++c) {
            std::optional<buffers::Snapshot> s = buffers::Snapshot::take(ring, c);
            if (!s)
              throw std::runtime_error("overwrite series: snapshot of a paused buffer failed");
            for (const buffers::RecordView& v : s->newest_first()) {
              n += v.payload.size() == sizeof(SysEnterRecord) ? 1 : 0;
            }
          }
          ring.resume();
          ++k;
        };
        while (!stop.load(std::memory_order_acquire)) {
          std::this_thread::sleep_until(next);
          next += period;
          if (stop.load(std::memory_order_acquire)) break;
          snap();
        }
        if (k == 0) snap();  // a run shorter than one period still reads once
        read.store(n);
        taken.store(k);
      } catch (...) {
        err = std::current_exception();
        ring.resume();
      }
    });
  }
  RunOut out;
  LoopOut loop;
  std::exception_ptr werr;
  try {
    loop = on_thread(cpus.writer, [&] { return writer_loop(&ring, o.events, o.syscall); });
    out.seconds = loop.seconds;
  } catch (...) {
    werr = std::current_exception();
  }
  stop.store(true, std::memory_order_release);
  if (reader.joinable()) reader.join();
  if (werr) std::rethrow_exception(werr);
  if (err) std::rethrow_exception(err);
  out.counts = ring_counts(ring, o.events, loop.written);
  out.counts.read = read.load();
  out.counts.snapshots = taken.load();
  return out;
}

}  // namespace

std::vector<PerfResult> run_overwrite_series(const OverwriteSeriesOptions& o, Progress& progress) {
  if (o.events == 0) return {};
  auto clock_id = parse_trace_clock(o.clock);
  if (!clock_id) throw std::invalid_argument(fmt::format("unknown trace clock '{}'", o.clock));
  const buffers::FunctionClock clock =
      tracepipe::detail::ring_clock(*clock_id);  // as an Instance stamps (local: inline TSC)
  const Cpus cpus = pick_cpus(o.pin);

  std::vector<PerfResult> results;
  for (PerfCase c : kAllPerfCases) {
    PerfResult r;
    r.kase = c;
    r.events = c == PerfCase::base ? 0 : o.events;
    results.push_back(r);
  }
  progress.begin("overwrite series", uint64_t{o.runs} * results.size());
  for (uint32_t rep = 0; rep < o.runs; ++rep) {
    for (PerfResult& r : results) {
      RunOut out;
      switch (r.kase) {
        case PerfCase::base:
          out = run_base(o, cpus);
          break;
        case PerfCase::drop_consumer:
          out = run_drop_consumer(o, cpus, clock);
          break;
        case PerfCase::overwrite:
          out = run_overwrite(o, cpus, clock, false);
          break;
        case PerfCase::overwrite_snapshot:
          out = run_overwrite(o, cpus, clock, true);
          break;
      }
      r.seconds.push_back(out.seconds);
      r.counts.push_back(out.counts);
      progress.step(name(r.kase), rep, o.runs, out.seconds);
    }
  }
  progress.end();
  return results;
}

}  // namespace tracepipe::bench
