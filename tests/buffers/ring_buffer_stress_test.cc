// Stress: several writer threads per CPU buffer (and writers that switch CPU
// now and then, like a migrating thread), signal handlers that write into the
// buffer in the middle of a writer's reserve/commit, discards (reclaim and
// padding), and a concurrent consuming reader plus iterators and stats().
// Every record carries writer id, sequence number, cpu and a checksum. The
// reader checks: no torn record, no duplicate, per-CPU stamps never go
// back, each writer's records on a CPU in its order. At the end the
// conservation law holds exactly per CPU. Bounded by iteration counts (CI
// runs it under TSan and ASan+UBSan). Label "concurrency".
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "buffer_test_util.h"

using namespace tp_buffers_test;

namespace {

#if defined(TRACEPIPE_SANITIZED)
constexpr int kIterations = 3000;
#else
constexpr int kIterations = 30000;
#endif
constexpr uint32_t kCpus = 2;
constexpr int kWritersPerCpu = 3;
constexpr int kWriters = kCpus * kWritersPerCpu;
constexpr uint32_t kSignalWriterBase = 100;  // writer id of records written from a handler
constexpr uint32_t kMaxSeq = kIterations * 3 + 16;
constexpr RingBufferConfig kConfig{.cpus = kCpus, .size_per_cpu = 64 * 1024, .subbuf_size = 1024};

struct RecordHead {
  uint32_t writer;
  uint32_t seq;
  uint32_t len;
  uint32_t cpu;
};
constexpr uint32_t kMinLen = sizeof(RecordHead) + 8;

uint64_t checksum(const std::byte* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(p[i])) * 1099511628211ull;
  return h;
}

void fill(std::span<std::byte> s, uint32_t writer, uint32_t seq, uint32_t cpu) {
  RecordHead h{writer, seq, static_cast<uint32_t>(s.size()), cpu};
  std::memcpy(s.data(), &h, sizeof h);
  for (size_t i = sizeof h; i < s.size() - 8; ++i)
    s[i] = static_cast<std::byte>((writer * 131 + seq * 7 + i) & 0xff);
  const uint64_t c = checksum(s.data(), s.size() - 8);
  std::memcpy(s.data() + s.size() - 8, &c, 8);
}

// All state shared by writers, handlers and the reader of one run.
struct Shared {
  std::atomic<uint64_t> attempts[kCpus]{};
  std::atomic<bool> writers_done{false};
  std::atomic<int> writers_finished{0};
  std::atomic<bool> release_writers{false};  // writers stay alive until no signal can target them
  std::atomic<bool> go{false};               // writers start once signals fly
  std::atomic<int> handlers_ran{0};
};

Shared* g_shared = nullptr;
void (*g_signal_write)(uint32_t cpu, uint32_t writer, uint32_t seq) = nullptr;

thread_local int tl_writer = -1;
thread_local std::atomic<uint32_t> tl_cpu{0};
thread_local uint32_t tl_sig_seq = 0;

void on_signal(int) {
  if (tl_writer < 0 || g_signal_write == nullptr) return;
  const int saved_errno = errno;
  const uint32_t cpu = tl_cpu.load(std::memory_order_relaxed);
  g_shared->attempts[cpu].fetch_add(1, std::memory_order_relaxed);
  g_signal_write(cpu, kSignalWriterBase + static_cast<uint32_t>(tl_writer), tl_sig_seq++);
  g_shared->handlers_ran.fetch_add(1, std::memory_order_relaxed);
  errno = saved_errno;
}

template <class RB>
RB* g_rb = nullptr;

template <class RB>
void signal_write(uint32_t cpu, uint32_t writer, uint32_t seq) {
  RB& rb = *g_rb<RB>;
  const uint32_t len = kMinLen + (seq * 13) % 64;
  Reservation r = rb.reserve(cpu, len);
  if (!r) return;
  fill(r.payload(), writer, seq, cpu);
  if (seq % 5 == 4)
    rb.discard(r);
  else
    rb.commit(r);
}

// Checks every record the reader gets.
struct Checker {
  std::vector<std::vector<uint8_t>> seen;      // [writer][seq]
  std::vector<std::vector<int64_t>> last_seq;  // [writer][cpu]
  uint64_t last_ts[kCpus]{};
  uint64_t records = 0, torn = 0, dup = 0, backwards = 0, misorder = 0, wrong_cpu = 0;

  Checker() : seen(kSignalWriterBase + kWriters), last_seq(kSignalWriterBase + kWriters) {
    for (auto& s : seen) s.assign(kMaxSeq, 0);
    for (auto& l : last_seq) l.assign(kCpus, -1);
  }
  bool valid(const RecordView& v) {
    if (v.payload.size() < kMinLen) return false;
    RecordHead h;
    std::memcpy(&h, v.payload.data(), sizeof h);
    uint64_t c;
    std::memcpy(&c, v.payload.data() + v.payload.size() - 8, 8);
    return h.len == v.payload.size() && c == checksum(v.payload.data(), v.payload.size() - 8) &&
           h.writer < seen.size() && h.seq < kMaxSeq;
  }
  void consumed(const RecordView& v) {
    ++records;
    if (!valid(v)) {
      ++torn;
      return;
    }
    RecordHead h;
    std::memcpy(&h, v.payload.data(), sizeof h);
    if (h.cpu != v.cpu) ++wrong_cpu;
    if (seen[h.writer][h.seq]++ != 0) ++dup;
    if (v.ts < last_ts[v.cpu]) ++backwards;
    last_ts[v.cpu] = v.ts;
    if (static_cast<int64_t>(h.seq) <= last_seq[h.writer][v.cpu]) ++misorder;
    last_seq[h.writer][v.cpu] = h.seq;
  }
};

template <OverflowMode M>
void run_stress() {
  using RB = RingBuffer<M>;
  RB rb(kConfig);
  Shared shared;
  g_shared = &shared;
  g_rb<RB> = &rb;
  g_signal_write = &signal_write<RB>;

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  REQUIRE(sigaction(SIGUSR1, &sa, &old) == 0);

  std::vector<pthread_t> handles(kWriters);
  std::atomic<int> started{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      handles[w] = pthread_self();
      std::mt19937 rng(1234 + w);
      const uint32_t home = static_cast<uint32_t>(w) % kCpus;
      tl_cpu.store(home);
      tl_writer = w;
      started.fetch_add(1);
      while (!shared.go.load(std::memory_order_acquire)) std::this_thread::yield();
      uint32_t seq = 0;
      for (int i = 0; i < kIterations; ++i) {
        if (i % 64 == 63) std::this_thread::yield();  // let the reader and the signaller run
        // Now and then the thread "migrates": it writes into the other CPU's buffer.
        const uint32_t cpu = (i % 16 == 15) ? (home + 1) % kCpus : home;
        tl_cpu.store(cpu, std::memory_order_relaxed);
        const uint32_t len = kMinLen + rng() % 180;
        const unsigned op = rng() % 10;
        if (op < 7) {
          shared.attempts[cpu].fetch_add(1, std::memory_order_relaxed);
          Reservation r = rb.reserve(cpu, len);
          if (r) {
            fill(r.payload(), static_cast<uint32_t>(w), seq, cpu);
            rb.commit(r);
          } else if (r.error() == ReserveError::full) {
            std::this_thread::yield();  // a producer that backs off a little when the reader lags
          }
          ++seq;
        } else if (op == 7) {
          shared.attempts[cpu].fetch_add(1, std::memory_order_relaxed);
          std::vector<std::byte> buf(len);
          fill(buf, static_cast<uint32_t>(w), seq++, cpu);
          (void)rb.write(cpu, buf);
        } else if (op == 8) {
          shared.attempts[cpu].fetch_add(1, std::memory_order_relaxed);
          Reservation r = rb.reserve(cpu, len);  // discarded: reclaimed when still last
          if (r) fill(r.payload(), static_cast<uint32_t>(w), seq, cpu);
          ++seq;
          rb.discard(r);
        } else {
          shared.attempts[cpu].fetch_add(2, std::memory_order_relaxed);
          Reservation a = rb.reserve(cpu, len);
          const uint32_t sa_seq = seq++;
          Reservation b = rb.reserve(cpu, kMinLen);
          const uint32_t sb_seq = seq++;
          if (a) fill(a.payload(), static_cast<uint32_t>(w), sa_seq, cpu);
          if (b) fill(b.payload(), static_cast<uint32_t>(w), sb_seq, cpu);
          if (rng() % 2) {
            rb.discard(a);  // not last (b follows): padding
            rb.commit(b);
          } else {
            rb.commit(a);
            rb.discard(b);
          }
        }
      }
      tl_writer = -1;
      shared.writers_finished.fetch_add(1, std::memory_order_acq_rel);
      while (!shared.release_writers.load(std::memory_order_acquire)) std::this_thread::yield();
    });
  }
  while (started.load() != kWriters) std::this_thread::yield();

  std::thread signaller([&] {
    for (int n = 0; !shared.writers_done.load(std::memory_order_acquire) && n < kIterations; ++n) {
      for (int w = 0; w < kWriters; ++w) pthread_kill(handles[w], SIGUSR1);
      if (n == 0) shared.go.store(true, std::memory_order_release);
      std::this_thread::yield();
    }
    shared.go.store(true, std::memory_order_release);
  });

  Checker check;
  uint64_t iter_records = 0, iter_torn = 0;
  std::thread reader([&] {
    std::vector<ConsumingReader> readers;
    for (uint32_t c = 0; c < kCpus; ++c) readers.emplace_back(rb, c);
    uint64_t rounds = 0;
    auto drain_all = [&] {
      bool any = true;
      while (any) {
        any = false;
        for (auto& r : readers)
          while (auto v = r.next()) {
            check.consumed(*v);
            any = true;
          }
      }
    };
    while (!shared.writers_done.load(std::memory_order_acquire)) {
      for (auto& r : readers)
        for (int k = 0; k < 64; ++k) {
          auto v = r.next();
          if (!v) break;
          check.consumed(*v);
        }
      if (++rounds % 64 == 0) {  // a non-consuming pass and the stats walk, beside the writers
        Iterator it(rb, rounds % kCpus);
        Checker scratch;
        for (int k = 0; k < 256; ++k) {
          auto v = it.next();
          if (!v) break;
          ++iter_records;
          iter_torn += !scratch.valid(*v);
        }
        (void)rb.stats(0);
      }
    }
    drain_all();
  });

  while (shared.writers_finished.load(std::memory_order_acquire) != kWriters)
    std::this_thread::yield();
  shared.writers_done.store(true, std::memory_order_release);
  signaller.join();
  shared.release_writers.store(true, std::memory_order_release);
  for (auto& t : writers) t.join();
  reader.join();
  g_signal_write = nullptr;
  sigaction(SIGUSR1, &old, nullptr);

  CHECK(check.torn == 0);
  CHECK(iter_torn == 0);
  CHECK(check.dup == 0);
  CHECK(check.backwards == 0);
  CHECK(check.misorder == 0);
  CHECK(check.wrong_cpu == 0);
  CHECK(check.records > 0);
  uint64_t read = 0;
  for (uint32_t c = 0; c < kCpus; ++c) {
    const CpuStats s = rb.stats(c);
    INFO("cpu " << c << " attempts " << shared.attempts[c].load() << " read " << s.read
                << " overrun " << s.overrun << " lost " << s.lost() << " (full " << s.lost_full
                << " busy " << s.lost_busy << " commit_overrun " << s.commit_overrun
                << ") discarded " << s.discarded << " reclaimed " << s.reclaimed << " entries "
                << s.entries << " switches " << s.subbuf_switches);
    CHECK(s.entries == 0);  // drained
    CHECK(s.conserved(shared.attempts[c].load()));
    CHECK(s.discarded > 0);
    CHECK(s.subbuf_switches > 10);
    read += s.read;
  }
  CHECK(read == check.records);
  INFO("signal handlers ran " << shared.handlers_ran.load() << ", iterator saw " << iter_records);
  CHECK(shared.handlers_ran.load() > 0);
}

}  // namespace

TEST_CASE("stress: overwrite mode, writers + signal handlers + reader", "[buffers][stress]") {
  run_stress<OverflowMode::overwrite>();
}

TEST_CASE("stress: drop-newest mode, writers + signal handlers + reader", "[buffers][stress]") {
  run_stress<OverflowMode::drop_newest>();
}
