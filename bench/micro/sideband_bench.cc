// Sideband state synthesis (core/sideband/sideband.h) against reading /proc
// after the fact, for a process with 1,000 threads and 1,000 mappings.
//
// The process is set up by Setup() and torn down by Teardown() of every
// benchmark: 999 extra threads, named, blocked on a futex, on stacks carved
// from one region (so they add no mapping each), plus as many alternating-
// protection pages as it takes to bring /proc/self/maps to 1,000 lines.
//
//   BM_SidebandSynth/<what>/<source>  synthesize_sideband() into an instance
//       what: 0 all (exec + threads + mappings + done), 1 threads only,
//             2 mappings only; source: 0 kernel (/proc comm per thread),
//             1 tracepipe (names tracepipe already wrote).
//       drained: 1 = a consuming reader empties the buffer between rounds
//       (timing paused), 0 = a full flight recorder (4 MiB per CPU), where
//       the overrun check (RingBufferBase::stats, O(buffer)) costs extra.
//       ns_per_record: records written per CPU second of the calling
//       thread, inverted (user + system time: all the work, /proc reads
//       included, runs on that thread; wall time on a shared 2-core machine
//       mostly measures the neighbours).
//   BM_SidebandEmitOnly/<what>  the records alone (names and maps read once,
//       outside the loop): the cost of putting them in the ring buffer.
//   BM_ProcAfterTheFact/<what>  what a post-processor does instead: read
//       /proc/self/task/*/comm and/or /proc/self/maps into tables (no
//       buffer), at the end of the run — when the threads may be gone.
//       ns_per_record: per thread / mapping read (CPU time, as above).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/sideband/sideband.h"

namespace {

using namespace tracepipe;

constexpr size_t kThreads = 1000;   // including the main thread
constexpr size_t kMappings = 1000;  // lines of /proc/self/maps
constexpr size_t kStack = 64 * 1024;

// The process shape measured: 1,000 threads, 1,000 mappings.
class BigProcess {
 public:
  BigProcess() {
    stacks_len_ = (kThreads - 1) * kStack;
    stacks_ = static_cast<char*>(mmap(nullptr, stacks_len_, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (stacks_ == MAP_FAILED) throw std::runtime_error("mmap of thread stacks failed");
    threads_.resize(kThreads - 1);
    for (size_t i = 0; i < threads_.size(); ++i) {
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      pthread_attr_setstack(&attr, stacks_ + i * kStack, kStack);
      if (pthread_create(&threads_[i], &attr, &BigProcess::park, this) != 0)
        throw std::runtime_error("pthread_create failed");
      pthread_attr_destroy(&attr);
      const std::string name = "sb-bench-" + std::to_string(i % 100000);
      pthread_setname_np(threads_[i], name.c_str());
    }
    // Bring /proc/self/maps to kMappings lines with pages of alternating
    // protection (neighbours never merge).
    const size_t have = parse_proc_maps(read_proc_file("/proc/self/maps").text).mappings.size();
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    extra_ = have < kMappings ? kMappings - have : 0;
    if (extra_ != 0) {
      extra_len_ = extra_ * page;
      extra_base_ = static_cast<char*>(
          mmap(nullptr, extra_len_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
      for (size_t i = 1; i < extra_; i += 2)
        mprotect(extra_base_ + i * page, page, PROT_READ | PROT_WRITE);
    }
  }
  ~BigProcess() {
    stop_.store(true);
    stop_.notify_all();
    for (pthread_t t : threads_) pthread_join(t, nullptr);
    munmap(stacks_, stacks_len_);
    if (extra_base_ != nullptr) munmap(extra_base_, extra_len_);
  }

 private:
  static void* park(void* self) {
    auto* p = static_cast<BigProcess*>(self);
    p->stop_.wait(false);
    return nullptr;
  }

  std::vector<pthread_t> threads_;
  char* stacks_ = nullptr;
  size_t stacks_len_ = 0;
  char* extra_base_ = nullptr;
  size_t extra_len_ = 0, extra_ = 0;
  std::atomic<bool> stop_{false};
};

std::unique_ptr<BigProcess> g_process;
void setup(const benchmark::State&) { g_process = std::make_unique<BigProcess>(); }
void teardown(const benchmark::State&) { g_process.reset(); }

InstanceOptions big_buffer() {
  InstanceOptions o;
  o.buffer_size_kb = 4096;  // a round (~200 KiB) never wraps onto itself
  return o;
}

SynthesisOptions options_for(int64_t what, int64_t source) {
  SynthesisOptions o;
  o.process = what == 0;
  o.threads = what != 2;
  o.mappings = what != 1;
  o.comm_source = source == 0 ? CommSource::kernel : CommSource::tracepipe;
  return o;
}

void BM_SidebandSynth(benchmark::State& state) {
  prepare_thread();
  Instance inst(big_buffer());
  const SynthesisOptions o = options_for(state.range(0), state.range(1));
  SynthesisReport first = enable_sideband(inst, true, o);  // also teaches tracepipe every name
  if (!first.complete()) state.SkipWithError(first.summary().c_str());
  const bool drain = state.range(2) != 0;
  uint64_t records = 0, threads = 0, maps = 0;
  for (auto _ : state) {
    if (drain) {  // a reader keeps up: the buffer holds little besides this round
      state.PauseTiming();
      auto m = buffers::merged_consumer(inst.ring());
      while (m.next()) {
      }
      state.ResumeTiming();
    }
    const SynthesisReport r = synthesize_sideband(inst, o);
    if (r.lost != 0) state.SkipWithError(r.summary().c_str());
    records += r.kept;
    threads += r.threads;
    maps += r.mappings;
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["threads"] = static_cast<double>(threads) / n;
  state.counters["mappings"] = static_cast<double>(maps) / n;
  state.counters["ns_per_record"] = benchmark::Counter(
      static_cast<double>(records), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SidebandSynth)
    ->ArgNames({"what", "source", "drained"})
    ->Args({0, 0, 1})
    ->Args({0, 1, 1})
    ->Args({1, 0, 1})
    ->Args({1, 1, 1})
    ->Args({2, 0, 1})
    ->Args({0, 0, 0})
    ->Setup(setup)
    ->Teardown(teardown)
    ->Unit(benchmark::kMicrosecond);

// The records alone: what the synthesis adds on top of reading /proc.
void BM_SidebandEmitOnly(benchmark::State& state) {
  prepare_thread();
  Instance inst(big_buffer());
  enable_sideband(inst, false);
  const SidebandEvents& ev = SidebandEvents::global();
  const int32_t pid = getpid();
  std::vector<std::pair<int32_t, Comm>> names;
  for (int32_t tid : list_threads().tids)
    if (auto c = read_thread_comm(tid)) names.emplace_back(tid, *c);
  const MapsParse maps = parse_proc_maps(read_proc_file("/proc/self/maps").text);
  const bool threads = state.range(0) != 2, mappings = state.range(0) != 1;
  uint64_t records = 0;
  for (auto _ : state) {
    if (threads)
      for (const auto& [tid, c] : names) {
        auto fill = [&](std::span<std::byte> rec) noexcept {
          sideband::TaskNewtask::write_fields(rec.data(), pid, tid, 0, 1u, c.view(), uint64_t{0});
        };
        records += inst.emit_fill(ev.task_newtask(), sideband::TaskNewtask::fixed_size, fill) ==
                   EmitResult::kept;
      }
    if (mappings)
      for (const ProcMapping& m : maps.mappings) {
        auto fill = [&](std::span<std::byte> rec) noexcept {
          sideband::Mmap::write_fields(rec.data(), pid, pid, 1u, m.prot, m.flags, m.maj, m.min,
                                       std::string_view(m.path), m.start, m.len(), m.pgoff, m.ino);
        };
        const uint32_t size =
            sideband::Mmap::record_size(pid, pid, 1u, m.prot, m.flags, m.maj, m.min,
                                        std::string_view(m.path), m.start, m.len(), m.pgoff, m.ino);
        records += inst.emit_fill(ev.mmap(), size, fill) == EmitResult::kept;
      }
  }
  state.counters["ns_per_record"] = benchmark::Counter(
      static_cast<double>(records), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SidebandEmitOnly)
    ->ArgName("what")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Setup(setup)
    ->Teardown(teardown)
    ->Unit(benchmark::kMicrosecond);

// Reading /proc after the fact into lookup tables (the racy alternative).
void BM_ProcAfterTheFact(benchmark::State& state) {
  const bool threads = state.range(0) != 2, mappings = state.range(0) != 1;
  uint64_t items = 0;
  for (auto _ : state) {
    std::map<int32_t, Comm> comms;
    std::map<uint64_t, ProcMapping> maps;
    if (threads) {
      const int dirfd = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      for (int32_t tid : list_threads().tids)
        if (auto c = read_thread_comm(tid, dirfd)) comms.emplace(tid, *c);
      ::close(dirfd);
    }
    if (mappings)
      for (ProcMapping& m : parse_proc_maps(read_proc_file("/proc/self/maps").text).mappings)
        maps.emplace(m.start, std::move(m));
    items += comms.size() + maps.size();
    benchmark::DoNotOptimize(comms);
    benchmark::DoNotOptimize(maps);
  }
  state.counters["ns_per_record"] = benchmark::Counter(
      static_cast<double>(items), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ProcAfterTheFact)
    ->ArgName("what")
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Setup(setup)
    ->Teardown(teardown)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
