// trace.dat reader/writer throughput. The replay target needs the reader
// "well above 20 M events/s on one core": BM_TraceDat_CpuCursor is that
// figure (records decoded per second from an in-memory file, one CPU's
// stream), BM_TraceDat_Merged adds the k-way merge of 2 CPUs.
// Records: hackbench-like sizes (16..40-byte payloads, 4-byte headers),
// time deltas of a few µs with an occasional time extend.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/tracedat/page_encoder.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace {

using namespace tracepipe;

constexpr size_t kRecords = 2'000'000;

std::vector<std::byte> payload(std::mt19937_64& rng) {
  std::vector<std::byte> p(16 + 8 * (rng() % 4));
  const uint16_t id = 1000;
  std::memcpy(p.data(), &id, 2);
  return p;
}

// One in-memory file with kRecords records over 2 CPUs (built once).
const std::vector<std::byte>& sample_file() {
  static const std::vector<std::byte> file = [] {
    TraceDatWriter w({.cpus = 2});
    w.add_format(EventFormat{"tp",
                             "ev",
                             1000,
                             kernel_common_fields(),
                             {{"u64", "v", 8, 8, false}},
                             "\"v=%llu\", REC->v"});
    std::mt19937_64 rng(1);
    uint64_t ts[2] = {1'000'000'000, 1'000'000'000};
    for (size_t i = 0; i < kRecords; ++i) {
      const uint32_t cpu = static_cast<uint32_t>(rng() & 1);
      ts[cpu] += (i % 100000 == 0) ? (uint64_t{1} << 28) : rng() % 4000;
      w.add_record(cpu, ts[cpu], payload(rng));
    }
    return w.to_bytes();
  }();
  return file;
}

void BM_TraceDat_CpuCursor(benchmark::State& state) {
  const TraceDatReader r(MappedFile::copy_of(sample_file()));
  size_t n = 0;
  for (auto _ : state) {
    auto c = r.cpu_records(0);
    uint64_t sum = 0;
    while (auto rec = c.next()) sum += rec->ts + rec->payload.size();
    benchmark::DoNotOptimize(sum);
    n += c.stats().records;
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
}
BENCHMARK(BM_TraceDat_CpuCursor)->Unit(benchmark::kMillisecond);

void BM_TraceDat_Merged(benchmark::State& state) {
  const TraceDatReader r(MappedFile::copy_of(sample_file()));
  size_t n = 0;
  for (auto _ : state) {
    auto m = r.records();
    uint64_t sum = 0;
    while (auto rec = m.next()) {
      sum += rec->ts + rec->cpu;
      ++n;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
}
BENCHMARK(BM_TraceDat_Merged)->Unit(benchmark::kMillisecond);

void BM_TraceDat_Write(benchmark::State& state) {
  std::mt19937_64 rng(2);
  std::vector<std::vector<std::byte>> payloads;
  for (int i = 0; i < 64; ++i) payloads.push_back(payload(rng));
  size_t n = 0;
  for (auto _ : state) {
    TraceDatWriter w({.cpus = 1});
    uint64_t ts = 0;
    for (size_t i = 0; i < 500'000; ++i) w.add_record(0, ts += 1000, payloads[i & 63]);
    benchmark::DoNotOptimize(w.stats());
    n += 500'000;
  }
  state.SetItemsProcessed(static_cast<int64_t>(n));
}
BENCHMARK(BM_TraceDat_Write)->Unit(benchmark::kMillisecond);

}  // namespace
