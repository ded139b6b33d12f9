// Unit tests of the ring buffer write path: each operation and mode. Every
// test ends with the conservation check (written = read + overrun + lost +
// discarded + entries).
#include <catch2/catch.hpp>
#include <cstring>

#include "buffer_test_util.h"

using namespace tp_buffers_test;

namespace {

// 256-byte sub-buffers, 4 of data (+1 spare): small enough to wrap quickly.
constexpr RingBufferConfig kSmall{.cpus = 2, .size_per_cpu = 1024, .subbuf_size = 256};

template <OverflowMode M>
using FakeRB = RingBuffer<M, FunctionClock>;

}  // namespace

TEST_CASE("ring buffer: config is validated with a clear message", "[buffers][config]") {
  using RB = OverwriteRingBuffer;
  CHECK_THROWS_WITH(RB(RingBufferConfig{.cpus = 0}),
                    Catch::Contains("cpus must be in [1, 65536], got 0"));
  CHECK_THROWS_WITH(RB(RingBufferConfig{.cpus = 1, .size_per_cpu = 4096, .subbuf_size = 1000}),
                    Catch::Contains("subbuf_size must be a power of two"));
  CHECK_THROWS_AS(RB(RingBufferConfig{.cpus = 1, .size_per_cpu = 4096, .subbuf_size = 32}),
                  ConfigError);
  CHECK_THROWS_AS(RB(RingBufferConfig{.cpus = 1, .size_per_cpu = 1 << 23, .subbuf_size = 1 << 23}),
                  ConfigError);
  CHECK_THROWS_WITH(RB(RingBufferConfig{.cpus = 1, .size_per_cpu = 0}),
                    Catch::Contains("size_per_cpu"));
}

TEST_CASE("ring buffer: geometry follows the kernel defaults", "[buffers][config]") {
  OverwriteRingBuffer rb(RingBufferConfig{.cpus = 3});
  CHECK(rb.cpus() == 3);
  CHECK(rb.subbuf_size() == 4096);
  CHECK(rb.nr_subbufs() == 1408 / 4 + 1);  // 352 data sub-buffers + the spare
  CHECK(rb.max_payload() == 4096 - 16);
  DropNewestRingBuffer tiny(RingBufferConfig{.cpus = 1, .size_per_cpu = 10, .subbuf_size = 64});
  CHECK(tiny.nr_subbufs() == 3);  // at least two, plus the spare
}

TEMPLATE_TEST_CASE_SIG("ring buffer: reserve, fill, commit, read back", "[buffers][reserve]",
                       ((OverflowMode M), M), OverflowMode::overwrite, OverflowMode::drop_newest) {
  g_fake_now = 1000;
  FakeRB<M> rb(kSmall, &fake_clock);
  Reservation r = rb.reserve(1, 5);
  REQUIRE(r);
  CHECK(r.error() == ReserveError::none);
  CHECK(r.cpu() == 1);
  CHECK(r.ts() == 1000);
  REQUIRE(r.payload().size() == 5);
  std::memcpy(r.payload().data(), "hello", 5);
  ConsumingReader reader(rb, 1);
  CHECK_FALSE(reader.next());  // reserved, not committed: invisible (I2)
  rb.commit(r);
  auto v = reader.next();
  REQUIRE(v);
  CHECK(v->ts == 1000);
  CHECK(v->cpu == 1);
  CHECK(std::string(reinterpret_cast<const char*>(v->payload.data()), v->payload.size()) ==
        "hello");
  CHECK_FALSE(reader.next());
  CHECK(rb.stats(1).read == 1);
  CHECK(rb.stats(1).conserved(1));
  CHECK(rb.stats(0).conserved(0));
}

TEST_CASE("ring buffer: a zero-length record is a record", "[buffers][reserve]") {
  OverwriteRingBuffer rb(kSmall);
  REQUIRE(rb.write(0, {}));
  ConsumingReader reader(rb, 0);
  auto v = reader.next();
  REQUIRE(v);
  CHECK(v->payload.empty());
  CHECK(rb.stats(0).conserved(1));
}

TEST_CASE("ring buffer: bad cpu and too-big records are refused and counted",
          "[buffers][reserve]") {
  OverwriteRingBuffer rb(kSmall);
  Reservation r = rb.reserve(2, 8);
  CHECK_FALSE(r);
  CHECK(r.error() == ReserveError::bad_cpu);
  CHECK(rb.lost_bad_cpu() == 1);
  Reservation big = rb.reserve(0, rb.max_payload() + 1);
  CHECK_FALSE(big);
  CHECK(big.error() == ReserveError::too_big);
  CHECK_FALSE(rb.reserve(0, UINT32_MAX));
  CHECK(rb.stats(0).lost_too_big == 2);
  CHECK(to_string(ReserveError::too_big) == "record larger than a sub-buffer");
  rb.commit(big);  // empty reservations: no-ops
  rb.discard(big);
  CHECK(rb.stats(0).conserved(2));  // the bad-cpu attempt is counted in lost_bad_cpu()
}

TEST_CASE("ring buffer: the largest record exactly fills a sub-buffer", "[buffers][reserve]") {
  DropNewestRingBuffer rb(kSmall);
  REQUIRE(put(rb, 0, rb.max_payload(), 1));  // stride == 256 == S
  REQUIRE(put(rb, 0, rb.max_payload(), 2));  // next sub-buffer
  REQUIRE(put(rb, 0, 8, 3));
  CHECK(rb.stats(0).subbuf_switches == 2);
  ConsumingReader reader(rb, 0);
  auto got = drain(reader);
  REQUIRE(got.size() == 3);
  CHECK(got[0].len == rb.max_payload());
  CHECK(got[0].uniform);
  CHECK(got[1].tag == 2);
  CHECK(got[2].tag == 3);
  CHECK(rb.stats(0).conserved(3));
}

TEST_CASE("ring buffer: records whose strides sum to the sub-buffer size fill it exactly",
          "[buffers][reserve]") {
  DropNewestRingBuffer rb(kSmall);
  for (int i = 0; i < 4; ++i) REQUIRE(put(rb, 0, 48, static_cast<uint8_t>(i)));  // 4 x 64 = 256
  CHECK(rb.stats(0).subbuf_switches == 0);
  REQUIRE(put(rb, 0, 48, 4));
  CHECK(rb.stats(0).subbuf_switches == 1);
  ConsumingReader reader(rb, 0);
  CHECK(tags(drain(reader)) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(rb.stats(0).conserved(5));
}

TEST_CASE("ring buffer: overwrite keeps the newest sub-buffers and counts overrun",
          "[buffers][overwrite]") {
  OverwriteRingBuffer rb(kSmall);
  for (int i = 0; i < 100; ++i) REQUIRE(put(rb, 0, 48, static_cast<uint8_t>(i)));
  // 4 records per sub-buffer; the tail is in the 25th; 4 data sub-buffers
  // kept (the spare after the tail is recycled ahead): records 84..99.
  CpuStats s = rb.stats(0);
  CHECK(s.entries == 16);
  CHECK(s.overrun == 84);
  CHECK(s.bytes == 16 * 48);
  ConsumingReader reader(rb, 0);
  std::vector<int> want;
  for (int i = 84; i < 100; ++i) want.push_back(i);
  CHECK(tags(drain(reader)) == want);
  CHECK(rb.stats(0).conserved(100));
}

// The recycle walk steps by the previous record's stride and checks it
// (walk_subbuf): a mix of lengths, zero-length records and padding must
// still be walked record by record, every unread data record counted as
// overrun once and no padding counted.
TEST_CASE("ring buffer: overwrite with mixed lengths and padding counts overrun exactly",
          "[buffers][overwrite]") {
  OverwriteRingBuffer rb(kSmall);
  constexpr size_t kLens[] = {8, 8, 8, 40, 8, 0, 100, 8, 24, 24, 24, 56};
  std::vector<Got> committed;  // what the writer committed, in order
  uint64_t attempts = 0;
  for (int i = 0; i < 400; ++i) {
    const size_t len = kLens[i % std::size(kLens)];
    const auto tag = static_cast<uint8_t>(i % 251);
    if (i % 7 == 3) {  // a discard that is not the last record: padding
      Reservation a = rb.reserve(0, 16);
      Reservation b = rb.reserve(0, static_cast<uint32_t>(len));
      attempts += 2;
      REQUIRE(a);
      REQUIRE(b);
      std::memset(b.payload().data(), tag, len);
      rb.commit(b);
      rb.discard(a);
    } else {
      ++attempts;
      REQUIRE(put(rb, 0, len, tag));
    }
    committed.push_back(Got{0, 0, tag, len, true});
  }
  const CpuStats s = rb.stats(0);
  CHECK(s.discarded == 400 / 7 + (400 % 7 > 3 ? 1 : 0));
  CHECK(s.reclaimed == 0);  // never the last record: all left as padding
  ConsumingReader reader(rb, 0);
  const std::vector<Got> got = drain(reader);
  REQUIRE(!got.empty());
  REQUIRE(got.size() < committed.size());
  CHECK(s.entries == got.size());
  CHECK(s.overrun ==
        committed.size() - got.size());  // every record not read was overwritten, and only those
  for (size_t k = 0; k < got.size(); ++k) {  // what is left is the newest records, whole
    const Got& want = committed[committed.size() - got.size() + k];
    if (want.len != 0) CHECK(got[k].tag == want.tag);  // a zero-length record has no tag byte
    CHECK(got[k].len == want.len);
    CHECK(got[k].uniform);
  }
  CHECK(rb.stats(0).conserved(attempts));
}

TEST_CASE("ring buffer: drop-newest refuses when full, and accepts again once read",
          "[buffers][drop]") {
  DropNewestRingBuffer rb(kSmall);
  int ok = 0, attempts = 0;
  for (int i = 0; i < 30; ++i, ++attempts) ok += put(rb, 0, 48, static_cast<uint8_t>(i));
  CHECK(ok == 20);  // 5 sub-buffers (4 + spare) of 4 records
  CHECK(rb.stats(0).lost_full == 10);
  Reservation r = rb.reserve(0, 48);
  ++attempts;
  CHECK(r.error() == ReserveError::full);
  ConsumingReader reader(rb, 0);
  for (int i = 0; i < 5; ++i) {
    auto v = reader.next();
    REQUIRE(v);
    CHECK(static_cast<int>(v->payload[0]) == i);  // oldest first: nothing was overwritten
  }
  // The first sub-buffer was consumed and freed; the reader took the second
  // one whole (like the kernel's reader page: records 5..7 wait in its
  // copy), so that one is free for writers too: eight more fit, then full.
  for (int i = 0; i < 8; ++i, ++attempts) CHECK(put(rb, 0, 48, static_cast<uint8_t>(100 + i)));
  CHECK_FALSE(put(rb, 0, 48, 200));
  ++attempts;
  CpuStats s = rb.stats(0);
  CHECK(s.lost_full == 12);
  CHECK(s.overrun == 0);
  CHECK(s.entries == 23);  // 5..19 (3 of them in the reader's copy) and 100..107
  CHECK(s.conserved(attempts));
  std::vector<int> want;
  for (int i = 5; i < 20; ++i) want.push_back(i);
  for (int i = 100; i < 108; ++i) want.push_back(i);
  CHECK(tags(drain(reader)) == want);
  CHECK(rb.stats(0).conserved(attempts));
}

TEST_CASE("ring buffer: wrap-around many laps with a reader keeping up",
          "[buffers][drop][overwrite]") {
  DropNewestRingBuffer rb(kSmall);
  ConsumingReader reader(rb, 1);
  int next = 0;
  for (int lap = 0; lap < 200; ++lap) {
    for (int i = 0; i < 7; ++i)
      REQUIRE(put(rb, 1, 8 + (lap + i) % 60, static_cast<uint8_t>((lap * 7 + i) & 0xff)));
    for (int i = 0; i < 7; ++i) {
      auto v = reader.next();
      REQUIRE(v);
      CHECK(static_cast<int>(v->payload[0]) == (next++ & 0xff));
    }
  }
  CpuStats s = rb.stats(1);
  CHECK(s.read == 1400);
  CHECK(s.lost() == 0);
  CHECK(s.entries == 0);
  CHECK(s.subbuf_switches > 100);
  CHECK(s.conserved(1400));
}

TEST_CASE("ring buffer: discard of the last record reclaims its space", "[buffers][discard]") {
  OverwriteRingBuffer rb(kSmall);
  Reservation a = rb.reserve(0, 40);
  REQUIRE(a);
  std::memset(a.payload().data(), 0xAA, 40);
  std::byte* where = a.payload().data();
  rb.discard(a);
  CpuStats s = rb.stats(0);
  CHECK(s.discarded == 1);
  CHECK(s.reclaimed == 1);
  Reservation b = rb.reserve(0, 24);
  REQUIRE(b);
  CHECK(b.payload().data() == where);  // the same space again
  std::memset(b.payload().data(), 0xBB, 24);
  rb.commit(b);
  ConsumingReader reader(rb, 0);
  auto got = drain(reader);
  REQUIRE(got.size() == 1);
  CHECK(got[0].tag == 0xBB);
  CHECK(got[0].len == 24);
  CHECK(got[0].uniform);
  CHECK(rb.stats(0).conserved(2));
}

TEST_CASE("ring buffer: discard of a record that is not last leaves padding",
          "[buffers][discard]") {
  DropNewestRingBuffer rb(kSmall);
  Reservation a = rb.reserve(0, 40);
  Reservation b = rb.reserve(0, 16);
  REQUIRE(a);
  REQUIRE(b);
  std::memset(b.payload().data(), 0xBB, 16);
  rb.discard(a);  // b follows: a becomes padding
  rb.commit(b);
  CpuStats s = rb.stats(0);
  CHECK(s.discarded == 1);
  CHECK(s.reclaimed == 0);
  CHECK(s.entries == 1);
  ConsumingReader reader(rb, 0);
  auto got = drain(reader);
  REQUIRE(got.size() == 1);
  CHECK(got[0].tag == 0xBB);
  CHECK(rb.stats(0).conserved(2));
}

TEST_CASE("ring buffer: discards in reverse order reclaim both", "[buffers][discard]") {
  OverwriteRingBuffer rb(kSmall);
  Reservation a = rb.reserve(0, 40);
  Reservation b = rb.reserve(0, 16);
  std::byte* where = a.payload().data();
  rb.discard(b);
  rb.discard(a);
  CHECK(rb.stats(0).reclaimed == 2);
  Reservation c = rb.reserve(0, 8);
  CHECK(c.payload().data() == where);
  rb.commit(c);
  CHECK(rb.stats(0).conserved(3));
}

TEST_CASE("ring buffer: reclaim at the start of a fresh sub-buffer", "[buffers][discard]") {
  DropNewestRingBuffer rb(kSmall);
  REQUIRE(put(rb, 0, rb.max_payload(), 1));
  Reservation a = rb.reserve(0, 100);  // switches to the second sub-buffer
  REQUIRE(a);
  CHECK(rb.stats(0).subbuf_switches == 1);
  rb.discard(a);
  CHECK(rb.stats(0).reclaimed == 1);
  REQUIRE(put(rb, 0, rb.max_payload(), 2));  // the whole sub-buffer is available again
  CHECK(rb.stats(0).subbuf_switches == 1);
  ConsumingReader reader(rb, 0);
  CHECK(tags(drain(reader)) == std::vector<int>{1, 2});
  CHECK(rb.stats(0).conserved(3));
}

TEST_CASE("ring buffer: pause drops and counts, resume restarts", "[buffers][pause]") {
  OverwriteRingBuffer rb(kSmall);
  Reservation inflight = rb.reserve(0, 8);
  REQUIRE(inflight);
  rb.pause();
  CHECK(rb.paused());
  Reservation r = rb.reserve(0, 8);
  CHECK(r.error() == ReserveError::paused);
  CHECK_FALSE(put(rb, 1, 8, 9));
  std::memset(inflight.payload().data(), 7, 8);
  rb.commit(inflight);  // reserved before the pause: still committed
  CHECK(rb.stats(0).lost_paused == 1);
  CHECK(rb.stats(1).lost_paused == 1);
  rb.resume();
  CHECK_FALSE(rb.paused());
  CHECK(put(rb, 0, 8, 8));
  ConsumingReader reader(rb, 0);
  CHECK(tags(drain(reader)) == std::vector<int>{7, 8});
  CHECK(rb.stats(0).conserved(3));
  CHECK(rb.stats(1).conserved(1));
}

TEST_CASE("ring buffer: discard while paused pads instead of reclaiming",
          "[buffers][pause][discard]") {
  OverwriteRingBuffer rb(kSmall);
  Reservation a = rb.reserve(0, 8);
  rb.pause();
  rb.discard(a);
  rb.resume();
  CHECK(rb.stats(0).discarded == 1);
  CHECK(rb.stats(0).reclaimed == 0);
  CHECK(rb.stats(0).conserved(1));
}

TEST_CASE("ring buffer: stamps never go back even when the clock does", "[buffers][time]") {
  FakeRB<OverflowMode::overwrite> rb(kSmall, &fake_clock);
  const uint64_t clock[] = {100, 50, 200, 200, 10, 300};
  for (uint64_t t : clock) {
    g_fake_now = t;
    REQUIRE(put(rb, 0, 8, 0));
  }
  ConsumingReader reader(rb, 0);
  std::vector<uint64_t> ts;
  for (const Got& g : drain(reader)) ts.push_back(g.ts);
  CHECK(ts == std::vector<uint64_t>{100, 100, 200, 200, 200, 300});
  CHECK(rb.stats(0).conserved(6));
}

TEST_CASE("ring buffer: stats report entries, bytes and the oldest and newest stamps",
          "[buffers][stats]") {
  FakeRB<OverflowMode::drop_newest> rb(kSmall, &fake_clock);
  g_fake_now = 10;
  REQUIRE(put(rb, 0, 30, 1));
  g_fake_now = 20;
  REQUIRE(put(rb, 0, 50, 2));
  g_fake_now = 30;
  REQUIRE(put(rb, 0, 70, 3));
  CpuStats s = rb.stats(0);
  CHECK(s.entries == 3);
  CHECK(s.bytes == 150);
  CHECK(s.oldest_ts == 10);
  CHECK(s.newest_ts == 30);
  ConsumingReader reader(rb, 0);
  REQUIRE(reader.next());
  s = rb.stats(0);
  CHECK(s.entries == 2);
  CHECK(s.read == 1);
  CHECK(s.oldest_ts == 20);
  CHECK(s.conserved(3));
  CHECK(rb.stats(5).entries == 0);  // unknown cpu: empty stats
}

TEST_CASE("ring buffer: only an overwrite ring has spare sub-buffers",
          "[buffers][set_aside][memory]") {
  const RingMemoryLayout ow = ring_memory_layout(kSmall, OverflowMode::overwrite);
  const RingMemoryLayout dn = ring_memory_layout(kSmall, OverflowMode::drop_newest);
  CHECK(ow.nr_spares == 8);  // the default spare_subbufs
  CHECK(dn.nr_spares == 0);  // drop-newest never sets a sub-buffer aside: no memory for it
  CHECK(ow.nr_subbufs == 5);
  CHECK(dn.nr_subbufs == 5);
  CHECK(ow.pages_per_cpu == (5 + 8) * 256);
  CHECK(dn.pages_per_cpu == 5 * 256);
  CHECK(dn.total < ow.total);
  OverwriteRingBuffer o(kSmall);
  DropNewestRingBuffer d(kSmall);
  CHECK(o.cpu_buffer(0).nr_spares == 8);
  CHECK(d.cpu_buffer(1).nr_spares == 0);
  RingBufferConfig none = kSmall;
  none.spare_subbufs = 0;
  CHECK(ring_memory_layout(none, OverflowMode::overwrite).total == dn.total);
  none.spare_subbufs = detail::kMaxSpares + 1;
  CHECK_THROWS_AS(ring_memory_layout(none, OverflowMode::overwrite), ConfigError);
}

// Without spares (spare_subbufs = 0) a pending record blocks its sub-buffer;
// with them (the default) the sub-buffer is set aside instead:
// ring_buffer_set_aside_test.cc.
constexpr RingBufferConfig kSmallNoSpares{
    .cpus = 2, .size_per_cpu = 1024, .subbuf_size = 256, .spare_subbufs = 0};

TEST_CASE("ring buffer: a stalled writer hides later records and blocks recycling",
          "[buffers][overwrite][stall]") {
  OverwriteRingBuffer rb(kSmallNoSpares);
  Reservation stalled = rb.reserve(0, 48);  // first record of the first sub-buffer
  REQUIRE(stalled);
  std::memset(stalled.payload().data(), 0xEE, 48);
  int ok = 0;
  for (int i = 0; i < 40; ++i) ok += put(rb, 0, 48, static_cast<uint8_t>(i));
  // The writer laps onto the stalled sub-buffer: it cannot recycle it, so
  // new records that need it are dropped (commit_overrun), never torn.
  CHECK(ok == 19);  // 3 behind the stalled one + 4 sub-buffers of 4
  CpuStats s = rb.stats(0);
  CHECK(s.commit_overrun == 21);
  CHECK(s.overrun == 0);
  ConsumingReader reader(rb, 0);
  CHECK_FALSE(reader.next());  // the stalled record hides everything after it
  rb.commit(stalled);
  auto first = reader.next();
  REQUIRE(first);
  CHECK(got_of(*first).tag == 0xEE);
  CHECK(got_of(*first).uniform);
  CHECK(tags(drain(reader)).size() == 19);
  CHECK(rb.stats(0).conserved(41));
}

TEST_CASE("ring buffer: once the stalled record commits, its sub-buffer is recycled",
          "[buffers][overwrite][stall]") {
  OverwriteRingBuffer rb(kSmallNoSpares);
  Reservation stalled = rb.reserve(0, 48);
  for (int i = 0; i < 40; ++i) (void)put(rb, 0, 48, static_cast<uint8_t>(i));
  rb.commit(stalled);
  REQUIRE(put(rb, 0, 48, 200));
  CpuStats s = rb.stats(0);
  // Its sub-buffer (the stalled record and 3 more) is recycled, and the one
  // after it too (recycled ahead): 8 overrun, 3 full sub-buffers + 1 left.
  CHECK(s.overrun == 8);
  CHECK(s.entries == 13);
  CHECK(s.commit_overrun == 21);
  CHECK(s.conserved(42));
}
