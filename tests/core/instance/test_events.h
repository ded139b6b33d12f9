#pragma once
// Events and helpers shared by the core tests.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"

namespace tp_core_test {

/// 64-byte record: 8 common + 8 + 48 (the benchmark's event size).
using Sample = tracepipe::EventDecl<"tptest", "sample",                 //
                                    tracepipe::Int<"value", uint32_t>,  //
                                    tracepipe::Int<"seq", uint32_t>,    //
                                    tracepipe::Chars<"pad", 48>>;
static_assert(Sample::fixed_size == 64);

/// A second event with a different field set (for system filters).
using Other = tracepipe::EventDecl<"tptest", "other", tracepipe::Int<"level", int16_t>,
                                   tracepipe::Str<"msg">>;

/// A different system.
using Nested = tracepipe::EventDecl<"tpnest", "inner", tracepipe::Int<"seq", uint32_t>>;

/// Sample::emit out of line. Each inlined emit is the whole fast path, and
/// a test file with dozens of them took 25-45 s to compile in Release (more
/// under the sanitizers); the path the emit takes is the same. Inline, so
/// an executable of several test files holds COMDAT copies the linker
/// discards but one of (buffers/rseq.h keeps each rseq section in its
/// function's group; tests/core/instance/link_comdat_test.cc).
[[gnu::noinline, maybe_unused]] inline tracepipe::EmitResult emit_sample(
    tracepipe::Instance& inst, uint32_t value, uint32_t seq, std::string_view pad) noexcept {
  return Sample::emit(inst, value, seq, pad);
}

struct Rec {
  uint64_t ts;
  uint32_t cpu;
  std::vector<std::byte> bytes;

  tracepipe::CommonHeader header() const {
    tracepipe::CommonHeader h{};
    std::memcpy(&h, bytes.data(), sizeof h);
    return h;
  }
  template <class T>
  T at(size_t off) const {
    T v{};
    std::memcpy(&v, bytes.data() + off, sizeof v);
    return v;
  }
};

/// Consumes every record of every CPU, merged by time stamp.
inline std::vector<Rec> drain(tracepipe::Instance& inst) {
  std::vector<Rec> out;
  auto m = tracepipe::buffers::merged_consumer(inst.ring());
  while (auto r = m.next()) out.push_back({r->ts, r->cpu, {r->payload.begin(), r->payload.end()}});
  return out;
}

/// Consumes one CPU's records in buffer order.
inline std::vector<Rec> drain_cpu(tracepipe::Instance& inst, uint32_t cpu) {
  std::vector<Rec> out;
  tracepipe::buffers::ConsumingReader rd(inst.ring(), cpu);
  while (auto r = rd.next()) out.push_back({r->ts, r->cpu, {r->payload.begin(), r->payload.end()}});
  return out;
}

inline tracepipe::InstanceOptions small_options(
    tracepipe::Staging staging, tracepipe::BufferMode mode = tracepipe::BufferMode::drop_newest) {
  tracepipe::InstanceOptions o;
  o.buffer_size_kb = 256;
  o.staging = staging;
  o.mode = mode;
  return o;
}

/// The ring's accounting summed over CPUs (CpuStats::accounted): equals
/// Instance::ring_attempts() once no emit is in flight.
inline uint64_t total_accounted(const tracepipe::Instance& inst) {
  uint64_t n = 0;
  for (const auto& s : inst.cpu_stats()) n += s.accounted();
  return n;
}

}  // namespace tp_core_test
