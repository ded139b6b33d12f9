// Fuzzes sequences of ring buffer operations on a tiny buffer (both modes):
// reserve / commit / discard in any order (several records outstanding, like
// nested writers), write, pause / resume, a clock that jumps back and forth,
// consuming reads, iterators, snapshots and stats. Checks, after every read:
// the payload is intact (no torn record), no record is seen twice by
// consuming readers, records of a CPU come in reservation order with
// non-decreasing stamps; at the end, after committing or discarding what is
// outstanding and draining: the conservation law holds exactly per CPU.
//
// Input: a byte stream; each operation is one opcode byte plus arguments.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/ring_buffer.h"

namespace {

using namespace tracepipe::buffers;

uint64_t g_now = 0;
uint64_t fuzz_clock() noexcept { return g_now; }

struct Input {
  const uint8_t* p;
  size_t n;
  uint8_t byte() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  bool empty() const { return n == 0; }
};

#define FUZZ_CHECK(c)  \
  do {                 \
    if (!(c)) abort(); \
  } while (0)

// Record payload: u32 id, then bytes derived from the id.
void fill(std::span<std::byte> s, uint32_t id) {
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::byte>((id * 31 + i) & 0xff);
  if (s.size() >= 4) std::memcpy(s.data(), &id, 4);
}
std::optional<uint32_t> check(std::span<const std::byte> s) {
  if (s.size() < 4) return std::nullopt;  // too short to carry an id: skip the identity checks
  uint32_t id;
  std::memcpy(&id, s.data(), 4);
  for (size_t i = 4; i < s.size(); ++i)
    FUZZ_CHECK(s[i] == static_cast<std::byte>((id * 31 + i) & 0xff));
  return id;
}

template <OverflowMode M>
void run(Input in) {
  constexpr uint32_t kCpus = 2;
  RingBuffer<M> rb(RingBufferConfig{.cpus = kCpus, .size_per_cpu = 256, .subbuf_size = 128},
                   &fuzz_clock);
  struct Pending {
    Reservation r;
    uint32_t id;
  };
  std::vector<Pending> pending;
  uint64_t attempts[kCpus] = {};
  std::vector<uint32_t> order;          // id -> reservation rank on its cpu
  std::vector<uint8_t> consumed;        // id -> seen by a consuming reader
  int64_t last_rank[kCpus] = {-1, -1};  // consuming order per cpu
  uint64_t last_ts[kCpus] = {};
  uint32_t rank[kCpus] = {};
  std::vector<ConsumingReader> readers;
  for (uint32_t c = 0; c < kCpus; ++c) readers.emplace_back(rb, c);

  auto on_consumed = [&](const RecordView& v) {
    FUZZ_CHECK(v.ts >= last_ts[v.cpu]);
    last_ts[v.cpu] = v.ts;
    if (auto id = check(v.payload)) {
      FUZZ_CHECK(*id < order.size());
      FUZZ_CHECK(!consumed[*id]);
      consumed[*id] = 1;
      FUZZ_CHECK(static_cast<int64_t>(order[*id]) > last_rank[v.cpu]);
      last_rank[v.cpu] = order[*id];
    }
  };
  auto new_id = [&](uint32_t cpu) {
    order.push_back(rank[cpu]++);
    consumed.push_back(0);
    return static_cast<uint32_t>(order.size() - 1);
  };

  while (!in.empty()) {
    const uint8_t op = in.byte();
    const uint32_t cpu = (op >> 4) & 1;
    switch (op & 0x0f) {
      case 0:
      case 1: {                                // reserve (stays outstanding)
        const uint32_t len = in.byte() % 130;  // up to just past the largest record (112)
        ++attempts[cpu];
        Reservation r = rb.reserve(cpu, len);
        if (r) {
          FUZZ_CHECK(r.payload().size() == len);
          const uint32_t id = new_id(cpu);
          fill(r.payload(), id);
          pending.push_back({r, id});
        } else {
          FUZZ_CHECK(r.error() != ReserveError::none);
        }
        break;
      }
      case 2:
      case 3:
      case 4: {  // commit or discard one outstanding record
        if (pending.empty()) break;
        const size_t i = in.byte() % pending.size();
        if ((op & 0x0f) == 4)
          rb.discard(pending[i].r);
        else
          rb.commit(pending[i].r);
        pending.erase(pending.begin() + static_cast<ptrdiff_t>(i));
        break;
      }
      case 5: {  // write
        std::vector<std::byte> b(in.byte() % 120);
        const uint32_t id = static_cast<uint32_t>(order.size());
        fill(b, id);
        ++attempts[cpu];
        if (rb.write(cpu, b)) (void)new_id(cpu);
        break;
      }
      case 6:
        rb.pause();
        break;
      case 7:
        rb.resume();
        break;
      case 8:  // the clock moves, forward or back
        g_now = (g_now & ~0xffull) + in.byte() * 3;
        if (in.byte() & 1) g_now += 1000;
        break;
      case 9:
      case 10: {  // consume a few
        const int n = in.byte() % 8;
        for (int k = 0; k < n; ++k)
          if (auto v = readers[cpu].next()) on_consumed(*v);
        break;
      }
      case 11: {  // non-consuming iterator: intact records, stamps in order
        Iterator it(rb, cpu);
        uint64_t prev = 0;
        while (auto v = it.next()) {
          FUZZ_CHECK(v->ts >= prev);
          prev = v->ts;
          (void)check(v->payload);
        }
        break;
      }
      case 12: {  // snapshot when paused
        if (auto s = Snapshot::take(rb, cpu)) {
          FUZZ_CHECK(rb.paused());
          uint64_t prev = 0;
          for (const RecordView& v : s->records()) {
            FUZZ_CHECK(v.ts >= prev);
            prev = v.ts;
            (void)check(v.payload);
          }
        } else {
          FUZZ_CHECK(!rb.paused());
        }
        break;
      }
      case 13: {  // stats: exact when nothing is outstanding on that cpu; else
                  // records behind a pending one are not visible, so at most
        const CpuStats s = rb.stats(cpu);
        uint64_t inflight = 0;
        for (const Pending& p : pending) inflight += p.r.cpu() == cpu;
        if (inflight == 0)
          FUZZ_CHECK(s.accounted() == attempts[cpu]);
        else
          FUZZ_CHECK(s.accounted() + inflight <= attempts[cpu]);
        break;
      }
      case 14: {  // a new consuming reader replaces the old one
        readers[cpu].~ConsumingReader();
        new (&readers[cpu]) ConsumingReader(rb, cpu);
        break;
      }
      default:
        break;
    }
  }
  for (Pending& p : pending) rb.commit(p.r);
  rb.resume();
  for (uint32_t c = 0; c < kCpus; ++c) {
    while (auto v = readers[c].next()) on_consumed(*v);
    const CpuStats s = rb.stats(c);
    FUZZ_CHECK(s.entries == 0);
    FUZZ_CHECK(s.conserved(attempts[c]));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Input in{data + 1, size - 1};
  g_now = 0;
  if (data[0] & 1)
    run<OverflowMode::overwrite>(in);
  else
    run<OverflowMode::drop_newest>(in);
  return 0;
}
