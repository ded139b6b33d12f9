// Adversarial model tests of the overwrite recycle walk (walk_subbuf's
// guessed stride, recycle_overwrite's padding count and prefetch bursts):
// random record lengths, zero-length records, discards that are reclaimed
// and discards left as padding, reads that stop in the middle of a
// sub-buffer, several sub-buffer sizes (the 64-byte minimum up to 64 KiB,
// where the prefetch bursts run). Every record read back is checked against
// a model of what was committed (stamp, length, every byte), and overrun
// must equal exactly the committed records never read.
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

using OwRB = RingBuffer<OverflowMode::overwrite, FunctionClock>;

std::byte pattern(uint64_t seq, size_t i) {
  return std::byte(static_cast<uint8_t>(seq * 131 + i * 7 + 1));
}

struct Committed {
  size_t len;
  bool read = false;
};

// One writer, one consuming reader, interleaved on one thread by a seeded
// generator. The fake clock is the sequence number, so each record's stamp
// names it.
void run_model(uint64_t subbuf, uint64_t nsub, uint32_t seed, int ops) {
  INFO("subbuf " << subbuf << " x " << nsub << ", seed " << seed);
  OwRB rb(
      RingBufferConfig{
          .cpus = 1, .size_per_cpu = subbuf * nsub, .subbuf_size = static_cast<uint32_t>(subbuf)},
      &fake_clock);
  const uint32_t maxp = rb.max_payload();
  std::mt19937 rng(seed);
  std::map<uint64_t, Committed> committed;  // stamp -> record
  uint64_t seq = 1, attempts = 0, refused = 0, reads = 0, last_read_ts = 0;
  ConsumingReader reader(rb, 0);
  // Lengths: mostly one repeated stride (the walk's guess holds), with
  // bursts of other strides, zero-length records and the occasional large
  // one (forces END padding at the end of a sub-buffer).
  uint32_t usual = rng() % 40;
  auto pick_len = [&]() -> uint32_t {
    const uint32_t k = rng() % 100;
    if (k < 55) return usual;
    if (k < 65) return 0;
    if (k < 70) return maxp < 64 ? maxp : 64 + rng() % (maxp - 63);  // large
    if (k < 72) usual = rng() % 40;
    return rng() % (maxp < 48 ? maxp + 1 : 48);
  };
  auto fill = [&](Reservation& r, uint64_t s) {
    auto p = r.payload();
    for (size_t i = 0; i < p.size(); ++i) p[i] = pattern(s, i);
  };
  auto read_some = [&](int n) {
    for (int k = 0; k < n; ++k) {
      auto v = reader.next();
      if (!v) return;
      ++reads;
      REQUIRE(v->ts > last_read_ts);  // in order, never twice
      last_read_ts = v->ts;
      auto it = committed.find(v->ts);
      REQUIRE(it != committed.end());  // a record that was committed, not a discard
      REQUIRE(!it->second.read);
      it->second.read = true;
      REQUIRE(v->payload.size() == it->second.len);
      for (size_t i = 0; i < v->payload.size(); ++i) REQUIRE(v->payload[i] == pattern(v->ts, i));
    }
  };
  for (int op = 0; op < ops; ++op) {
    const uint32_t k = rng() % 100;
    if (k < 70) {  // commit one
      g_fake_now = seq;
      const uint32_t len = pick_len();
      ++attempts;
      Reservation r = rb.reserve(0, len);
      if (!r) {
        ++refused;
      } else {
        fill(r, seq);
        rb.commit(r);
        committed[seq] = {len};
      }
      ++seq;
    } else if (k < 78) {  // discard the last record: reclaimed
      g_fake_now = seq;
      ++attempts;
      Reservation r = rb.reserve(0, pick_len());
      if (r) {
        fill(r, seq);
        rb.discard(r);
      } else {
        ++refused;
      }
      ++seq;
    } else if (k < 88) {  // discard one that is not the last: padding
      g_fake_now = seq;
      const uint64_t sa = seq++;
      Reservation a = rb.reserve(0, pick_len());
      g_fake_now = seq;
      const uint64_t sb = seq++;
      const uint32_t lb = pick_len();
      Reservation b = rb.reserve(0, lb);
      attempts += 2;
      refused += !a + !b;
      if (b) {
        fill(b, sb);
        rb.commit(b);
        committed[sb] = {lb};
      }
      if (a) {
        fill(a, sa);
        rb.discard(a);
      }
    } else {  // the reader takes a few: read_off stops mid sub-buffer
      read_some(static_cast<int>(rng() % 5));
    }
  }
  read_some(1 << 30);
  const CpuStats s = rb.stats(0);
  uint64_t unread = 0;
  for (const auto& [ts, c] : committed) unread += !c.read;
  CHECK(s.entries == 0);
  CHECK(s.read == reads);
  CHECK(s.overrun > 0);        // the ring wrapped: recycle_overwrite walked
  CHECK(s.overrun == unread);  // every committed record never read was counted overrun, once
  CHECK(s.lost() == refused);
  CHECK(s.conserved(attempts));
  CHECK(s.discarded == attempts - refused - committed.size());
}

}  // namespace

TEST_CASE("ring buffer model: random lengths, discards and partial reads in an overwrite ring",
          "[buffers][overwrite][model]") {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    run_model(64, 3, seed, 20000);
    run_model(256, 4, seed, 20000);
    run_model(4096, 4, seed, 20000);
    run_model(8192, 3, seed, 20000);
    run_model(16384, 3, seed, 20000);  // > 8 KiB: the walk's prefetch bursts
    run_model(65536, 3, seed, 20000);
  }
}
