// The flight recorder's promise under SIGKILL at random moments: writer
// threads emit sequence-numbered, self-checksummed records (staged through
// a filter, and nested from a signal handler), the parent kills the child
// at a random point of its progress, recovers the file, and checks that the
// records are exactly a set of intact records: none torn, none twice, each
// stream's sequence increasing, and in drop-newest mode each stream's gaps
// are exactly the losses its writer counted, nothing it acknowledged missing.
//
// Kills: TP_FLIGHT_KILLS (default 200, the CI size; the long run is 10000,
// scripts/flight_torture.sh). Seed: TP_FLIGHT_SEED (printed).
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/recover/recover.h"

using namespace tracepipe;
namespace fs = std::filesystem;

namespace {

using Rec = EventDecl<"tpcrash", "rec", Int<"stream", uint32_t>, Int<"seq", uint32_t>,
                      Int<"sum", uint32_t>, Chars<"pad", 36>>;
static_assert(Rec::fixed_size == 56);
constexpr size_t kStreamOff = 8, kSeqOff = 12, kSumOff = 16, kPadOff = 20, kPadLen = 36;

constexpr uint32_t kWriters = 3;
constexpr uint32_t kStreams =
    2 * kWriters;  // writer w: stream w; its signal handler: stream kWriters + w

void make_pad(uint32_t stream, uint32_t seq, char* pad) {
  for (size_t i = 0; i < kPadLen; ++i)
    pad[i] = static_cast<char>('a' + (seq * 31u + stream * 7u + i) % 26u);
}
uint32_t checksum(uint32_t stream, uint32_t seq, const char* pad) {
  uint32_t h = 2166136261u;
  auto mix = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 16777619u;
  };
  mix(&stream, 4);
  mix(&seq, 4);
  mix(pad, kPadLen);
  return h;
}

// Between the processes (MAP_SHARED): per stream, (seqs processed << 32) |
// losses counted, stored after each emit returned; the total for the kill.
struct Shared {
  std::atomic<uint64_t> ack[kStreams];
  std::atomic<uint64_t> total;
  std::atomic<uint64_t> handler_runs;
};
Shared* g_shared = nullptr;
Instance* g_inst = nullptr;
thread_local uint32_t t_writer = UINT32_MAX;

void emit_one(uint32_t stream) {
  std::atomic<uint64_t>& ack = g_shared->ack[stream];
  const uint64_t a = ack.load(std::memory_order_relaxed);
  const auto seq = static_cast<uint32_t>(a >> 32);
  auto lost = static_cast<uint32_t>(a);
  char pad[kPadLen];
  make_pad(stream, seq, pad);
  const EmitResult r =
      Rec::emit(*g_inst, stream, seq, checksum(stream, seq, pad), std::string_view(pad, kPadLen));
  if (r == EmitResult::lost) ++lost;
  if (r == EmitResult::discarded || r == EmitResult::disabled)
    _exit(5);  // the filter accepts every record
  ack.store((uint64_t{seq} + 1) << 32 | lost, std::memory_order_release);
}

void on_usr1(int) {
  if (t_writer >= kWriters) return;
  emit_one(kWriters + t_writer);
  g_shared->handler_runs.fetch_add(1, std::memory_order_relaxed);
}

[[noreturn]] void child_main(const fs::path& dir, BufferMode mode, WriterMode writers) {
  InstanceOptions o;
  o.buffer_size_kb = 64;
  o.subbuf_size_kb = 4;
  o.mode = mode;
  o.staging = Staging::per_thread;
  o.writers = writers;
  o.flight_recorder = true;
  o.flight_dir = dir.string();
  g_inst = new Instance(o);  // never destroyed: the process is killed
  g_inst->enable(Rec::desc());
  if (!g_inst->set_filter(Rec::desc(), "stream < 1000").ok())
    _exit(6);  // staged: a filter that keeps all
  struct sigaction sa {};
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
  std::vector<pthread_t> handles(kWriters);
  for (uint32_t w = 0; w < kWriters; ++w) {
    std::thread t([w] {
      t_writer = w;
      for (;;) {
        emit_one(w);
        g_shared->total.fetch_add(1, std::memory_order_relaxed);
      }
    });
    handles[w] = t.native_handle();
    t.detach();
  }
  // Signal the writers at varying points of their emits, until killed.
  for (uint64_t i = 0;; ++i) {
    pthread_kill(handles[i % kWriters], SIGUSR1);
    for (uint32_t spin = 0; spin < (i * 37) % 500; ++spin) asm volatile("" ::: "memory");
  }
}

struct Totals {
  uint64_t kills = 0, records = 0, lost = 0, torn = 0, duplicates = 0, order = 0, gap_mismatch = 0,
           unacked = 0;
  uint64_t uncommitted = 0, cut_short = 0, overrun = 0, handler_records = 0;
};

void print_totals(const Totals& tot) {
  std::printf(
      "flight torture: kills survived %llu, records recovered %llu (of them from signal handlers "
      "%llu), "
      "records lost (counted by the writers) %llu, overrun %llu, torn %llu, duplicates %llu, out "
      "of order %llu, "
      "gap mismatches %llu, uncommitted reservations skipped %llu, sub-buffers cut short %llu\n",
      (unsigned long long)tot.kills, (unsigned long long)tot.records,
      (unsigned long long)tot.handler_records, (unsigned long long)tot.lost,
      (unsigned long long)tot.overrun, (unsigned long long)tot.torn,
      (unsigned long long)tot.duplicates, (unsigned long long)tot.order,
      (unsigned long long)tot.gap_mismatch, (unsigned long long)tot.uncommitted,
      (unsigned long long)tot.cut_short);
  std::fflush(stdout);
}

}  // namespace

TEST_CASE(
    "flight torture: SIGKILL at random moments never shows a torn, duplicate or missing record",
    "[recover][torture]") {
  const char* env_kills = std::getenv("TP_FLIGHT_KILLS");
  const uint64_t kills = env_kills != nullptr ? std::strtoull(env_kills, nullptr, 10) : 200;
  const char* env_seed = std::getenv("TP_FLIGHT_SEED");
  const uint64_t seed =
      env_seed != nullptr ? std::strtoull(env_seed, nullptr, 10) : std::random_device{}();
  std::printf("flight torture: %llu kills, seed %llu\n", static_cast<unsigned long long>(kills),
              static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const fs::path dir =
      fs::temp_directory_path() / ("tp-flight-torture-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  void* m =
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  REQUIRE(m != MAP_FAILED);
  g_shared = static_cast<Shared*>(m);
  (void)Rec::desc();  // registered (and its ID fixed) before the children fork
  Totals tot;
  for (uint64_t k = 0; k < kills; ++k) {
    const BufferMode mode = k % 2 == 0 ? BufferMode::drop_newest : BufferMode::overwrite;
    const WriterMode writers = (k / 2) % 2 == 0 ? WriterMode::automatic : WriterMode::any_cpu;
    new (g_shared) Shared{};
    // Up to ~4x what one CPU's buffer holds (64 KiB of 72-byte records).
    const uint64_t target = 1 + rng() % 4000;
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) child_main(dir, mode, writers);
    struct Reaper {
      pid_t pid;
      ~Reaper() {
        if (pid > 0) {
          kill(pid, SIGKILL);
          waitpid(pid, nullptr, 0);
        }
      }
    } reaper{child};
    // Wait for the child's progress (not for time): bounded by a count.
    bool reached = false;
    for (uint64_t spin = 0; spin < 2'000'000'000ull; ++spin) {
      if (g_shared->total.load(std::memory_order_relaxed) >= target &&
          g_shared->handler_runs.load(std::memory_order_relaxed) >= target / 256) {
        reached = true;
        break;
      }
      if (spin % 1024 == 0) {
        int st = 0;
        if (waitpid(child, &st, WNOHANG) == child) {
          reaper.pid = 0;
          FAIL("child exited early with status " << st);
        }
        sched_yield();
      }
    }
    REQUIRE(reached);
    REQUIRE(kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    reaper.pid = 0;
    REQUIRE(WIFSIGNALED(status));
    REQUIRE(WTERMSIG(status) == SIGKILL);
    ++tot.kills;
    if (tot.kills % 1000 == 0 && tot.kills < kills) print_totals(tot);  // long runs: progress

    const fs::path file = dir / ("main-" + std::to_string(child) + ".tpflight");
    REQUIRE(fs::exists(file));
    const recover::RecoveredTrace t = recover::recover_file(file, {.strict = true});
    if (const char* keep = std::getenv("TP_FLIGHT_KEEP_CUT"); keep != nullptr && t.cut_short() > 0)
      fs::copy_file(file, fs::path(keep) / file.filename(), fs::copy_options::overwrite_existing);
    fs::remove(file);
    REQUIRE(t.warnings.empty());
    tot.uncommitted += t.uncommitted();
    tot.cut_short += t.cut_short();
    // At most one reservation in flight per writer and per handler.
    CHECK(t.uncommitted() <= kStreams);
    struct Seen {
      uint64_t ts;
      uint32_t seq;
    };
    std::vector<std::vector<Seen>> per(kStreams);
    for (const auto& c : t.cpus) {
      tot.overrun += c.counters.overrun;
      for (const auto& r : c.records) {
        const auto p = c.payload(r);
        uint16_t type = 0;
        uint32_t stream = 0, seq = 0, sum = 0;
        if (p.size() == Rec::fixed_size) {
          std::memcpy(&type, p.data(), 2);
          std::memcpy(&stream, p.data() + kStreamOff, 4);
          std::memcpy(&seq, p.data() + kSeqOff, 4);
          std::memcpy(&sum, p.data() + kSumOff, 4);
        }
        if (p.size() != Rec::fixed_size || type != Rec::desc().id() || stream >= kStreams ||
            sum != checksum(stream, seq, reinterpret_cast<const char*>(p.data() + kPadOff))) {
          ++tot.torn;
          continue;
        }
        ++tot.records;
        if (stream >= kWriters) ++tot.handler_records;
        per[stream].push_back({r.ts, seq});
      }
    }
    const bool exact = mode == BufferMode::drop_newest && t.cut_short() == 0;
    for (uint32_t s = 0; s < kStreams; ++s) {
      auto& v = per[s];
      std::sort(v.begin(), v.end(), [](const Seen& a, const Seen& b) {
        return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq;
      });
      for (size_t i = 1; i < v.size(); ++i) {
        if (v[i].seq == v[i - 1].seq)
          ++tot.duplicates;
        else if (v[i].seq < v[i - 1].seq)
          ++tot.order;
      }
      const uint64_t a = g_shared->ack[s].load(std::memory_order_acquire);
      const auto processed = static_cast<uint32_t>(a >> 32);
      const auto lost = static_cast<uint32_t>(a);
      tot.lost += lost;
      // Nothing beyond the one emit in flight when the kill came.
      for (const Seen& x : v)
        if (x.seq > processed) ++tot.unacked;
      if (mode == BufferMode::drop_newest) {
        uint64_t present_acked = 0;
        for (const Seen& x : v)
          if (x.seq < processed) ++present_acked;
        const uint64_t missing = processed - std::min<uint64_t>(present_acked, processed);
        if (exact ? missing != lost : missing < lost) {
          ++tot.gap_mismatch;
          UNSCOPED_INFO("kill " << k << " stream " << s << ": " << processed << " processed, "
                                << lost << " counted lost, " << missing << " missing");
        }
      }
    }
  }
  print_totals(tot);
  CHECK(tot.kills == kills);
  CHECK(tot.torn == 0);
  CHECK(tot.duplicates == 0);
  CHECK(tot.order == 0);
  CHECK(tot.unacked == 0);
  CHECK(tot.gap_mismatch == 0);
  CHECK(tot.records > 0);
  CHECK(tot.handler_records > 0);
  munmap(m, sizeof(Shared));
  fs::remove_all(dir);
}
