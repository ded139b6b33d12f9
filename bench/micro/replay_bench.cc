// The pieces of `tracepipe replay` on the real hackbench capture
// (../shared/data/kernel/hackbench.dat, 257 346 records on 2 CPUs), one
// thread, so that their sum can be compared with the command's own
// `--bench` figure (bench/engine/replay_compare.h):
//
// BM_ReplayDecode:        walk every CPU's pages (CpuRecordCursor): records/s.
// BM_ReplayEmit/<staging>: pre-decoded records -> RawEmit::emit_at (the
//                         recorded stamps, external_time, as replay does) with the
//                         filter `kmalloc: bytes_req > 100` (every other event
//                         unfiltered), overwrite ring: stage -> filter -> commit.
// BM_ReplayDecodeEmit:    both, as the command's [read] + [filter] stages.
// Target: decode + filter + commit >= 20 M events/s on one core.
// Skipped (state.SkipWithError) when the shared data is absent.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/raw_emit.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace {

using namespace tracepipe;

#ifndef TP_SHARED_DATA
#define TP_SHARED_DATA "../shared/data"
#endif

std::optional<std::filesystem::path> hackbench() {
  for (const char* base : {TP_SHARED_DATA, "../shared/data", "../../shared/data"}) {
    const std::filesystem::path p = std::filesystem::path(base) / "kernel/hackbench.dat";
    if (std::filesystem::exists(p)) return p;
  }
  return std::nullopt;
}

struct Fixture {
  TraceDatReader reader;
  Registry registry;
  std::vector<TraceRecord> records;  // CPU order, file order within a CPU
  explicit Fixture(const std::filesystem::path& p) : reader(TraceDatReader::open(p)) {
    for (const EventFormat& f : reader.formats()) {
      try {
        registry.add(f);
      } catch (const std::exception&) {
      }
    }
    for (size_t i = 0; i < reader.cpu_data().size(); ++i) {
      auto c = reader.cpu_records(i);
      while (auto r = c.next()) records.push_back(*r);
    }
  }
};

Fixture* fixture(benchmark::State& state) {
  static std::unique_ptr<Fixture> f = [] {
    auto p = hackbench();
    return p ? std::make_unique<Fixture>(*p) : nullptr;
  }();
  if (!f) state.SkipWithError("shared data absent: kernel/hackbench.dat");
  return f.get();
}

std::unique_ptr<Instance> make_instance(Fixture& f, Staging staging) {
  InstanceOptions o;
  o.name = "replay-bench";
  o.cpus = f.reader.cpu_count();
  o.staging = staging;
  o.subbuf_size_kb = 16;
  o.buffer_size_kb = 2048;
  o.mode = BufferMode::overwrite;
  o.external_time = true;
  auto inst = std::make_unique<Instance>(o, f.registry);
  for (const EventDesc* d : f.registry.events()) inst->enable(*d);
  const EventDesc* km = f.registry.find("kmem:kmalloc");
  if (km == nullptr || !inst->set_filter(*km, "bytes_req > 100").ok()) return nullptr;
  return inst;
}

void BM_ReplayDecode(benchmark::State& state) {
  Fixture* f = fixture(state);
  if (f == nullptr) return;
  uint64_t n = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < f->reader.cpu_data().size(); ++i) {
      auto c = f->reader.cpu_records(i);
      while (auto r = c.next()) {
        benchmark::DoNotOptimize(r->payload.data());
        ++n;
      }
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
}
BENCHMARK(BM_ReplayDecode)->Unit(benchmark::kMillisecond);

void BM_ReplayEmit(benchmark::State& state) {
  Fixture* f = fixture(state);
  if (f == nullptr) return;
  auto inst = make_instance(*f, static_cast<Staging>(state.range(0)));
  if (!inst) {
    state.SkipWithError("kmem:kmalloc missing or filter rejected");
    return;
  }
  prepare_thread();
  uint64_t n = 0, kept = 0;
  for (auto _ : state) {
    for (const TraceRecord& r : f->records)
      kept += tracepipe::RawEmit::emit_at(*inst, r.payload, r.cpu, r.ts) == EmitResult::kept;
    n += f->records.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
  state.counters["kept%"] = n ? 100.0 * static_cast<double>(kept) / static_cast<double>(n) : 0;
  state.SetLabel(std::string(to_string(static_cast<Staging>(state.range(0)))));
}
BENCHMARK(BM_ReplayEmit)
    ->Arg(static_cast<int>(Staging::off))
    ->Arg(static_cast<int>(Staging::per_cpu))
    ->Arg(static_cast<int>(Staging::per_thread))
    ->Arg(static_cast<int>(Staging::adaptive))
    ->Unit(benchmark::kMillisecond);

void BM_ReplayDecodeEmit(benchmark::State& state) {
  Fixture* f = fixture(state);
  if (f == nullptr) return;
  auto inst = make_instance(*f, Staging::per_thread);
  if (!inst) {
    state.SkipWithError("kmem:kmalloc missing or filter rejected");
    return;
  }
  prepare_thread();
  uint64_t n = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < f->reader.cpu_data().size(); ++i) {
      auto c = f->reader.cpu_records(i);
      const uint32_t cpu = f->reader.cpu_data()[i].cpu;
      while (auto r = c.next()) {
        benchmark::DoNotOptimize(tracepipe::RawEmit::emit_at(*inst, r->payload, cpu, r->ts));
        ++n;
      }
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
}
BENCHMARK(BM_ReplayDecodeEmit)->Unit(benchmark::kMillisecond);

}  // namespace
