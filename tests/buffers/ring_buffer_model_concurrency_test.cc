// The overwrite recycle walk (walk_subbuf's guessed stride, recycle_overwrite's
// padding count) under concurrency: two writers with random lengths and
// discards and a reader draining the same CPU buffer. The single-threaded
// model, which checks every byte and the exact overrun, is
// ring_buffer_model_test.cc.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "buffer_test_util.h"

using namespace tp_buffers_test;

namespace {
std::byte pattern(uint64_t seq, size_t i) {
  return std::byte(static_cast<uint8_t>(seq * 131 + i * 7 + 1));
}
}  // namespace

// The same records from several writers on one CPU buffer (any_cpu rings
// take writers from any thread) with a reader draining concurrently: every
// record read is whole and in each writer's order, and the loss accounting
// closes. Under TSan this checks the recycle walk's loads against writers
// and the reader.
TEST_CASE(
    "ring buffer model: concurrent writers with random lengths and discards, a reader draining",
    "[buffers][overwrite][model][concurrency]") {
  const uint32_t subbuf = GENERATE(256u, 4096u, 16384u);
  INFO("subbuf " << subbuf);
  OverwriteRingBuffer rb(
      RingBufferConfig{.cpus = 1, .size_per_cpu = uint64_t{subbuf} * 4, .subbuf_size = subbuf});
  constexpr int kWriters = 2;
  constexpr int kEach = 30000;
  std::atomic<int> done{0};
  std::atomic<uint64_t> attempts{0}, commits{0}, refused_commit_overrun{0};
  const uint32_t maxp = rb.max_payload();
  auto writer = [&](int id) {
    std::mt19937 rng(1234 + id);
    uint64_t a = 0, c = 0;
    for (uint32_t i = 1; i <= kEach; ++i) {
      const uint32_t k = rng() % 100;
      uint32_t len = k < 60   ? 12
                     : k < 70 ? 8
                     : k < 75 ? std::min<uint32_t>(maxp, 8 + rng() % 300)
                              : 8 + rng() % 40;
      if (len < 8) len = 8;
      ++a;
      Reservation r = rb.reserve(0, len);
      if (!r) {
        if (r.error() == ReserveError::commit_overrun) refused_commit_overrun.fetch_add(1);
        continue;
      }
      auto p = r.payload();
      const uint32_t tag = (static_cast<uint32_t>(id) << 24) | i;
      std::memcpy(p.data(), &tag, 4);
      std::memcpy(p.data() + 4, &len, 4);
      for (size_t j = 8; j < p.size(); ++j) p[j] = pattern(tag, j);
      if (k % 9 == 4) {
        rb.discard(r);
      } else {
        rb.commit(r);
        ++c;
      }
    }
    attempts += a;
    commits += c;
    done.fetch_add(1);
  };
  uint64_t reads = 0;
  uint32_t last[kWriters] = {};
  bool ok = true;
  auto consume = [&](ConsumingReader& rd) {
    while (auto v = rd.next()) {
      ++reads;
      uint32_t tag = 0, len = 0;
      if (v->payload.size() < 8) {
        ok = false;
        continue;
      }
      std::memcpy(&tag, v->payload.data(), 4);
      std::memcpy(&len, v->payload.data() + 4, 4);
      const uint32_t id = tag >> 24, i = tag & 0xffffff;
      if (id >= kWriters || len != v->payload.size() || i <= last[id]) {
        ok = false;
        continue;
      }
      last[id] = i;
      for (size_t j = 8; j < v->payload.size(); ++j)
        if (v->payload[j] != pattern(tag, j)) ok = false;
    }
  };
  {
    ConsumingReader rd(rb, 0);
    std::vector<std::thread> ws;
    for (int id = 0; id < kWriters; ++id) ws.emplace_back(writer, id);
    while (done.load() < kWriters) consume(rd);
    for (auto& t : ws) t.join();
    consume(rd);
  }
  CHECK(ok);
  const CpuStats s = rb.stats(0);
  CHECK(s.read == reads);
  CHECK(s.entries == 0);
  // A committed record is read, overrun, or, committed into a sub-buffer
  // that was set aside while it was pending (ring_buffer.h, "Set aside"),
  // lost_set_aside; commit_overrun counts only refused reservations.
  CHECK(s.read + s.overrun + s.lost_set_aside == commits.load());
  CHECK(s.commit_overrun == refused_commit_overrun.load());
  CHECK(s.conserved(attempts.load()));
}
