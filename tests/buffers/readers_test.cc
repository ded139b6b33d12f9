// Unit tests of the readers: iterator, snapshot (oldest and newest first),
// merge by time stamp, and the waiter's immediate cases (the blocking cases
// run with threads in ring_buffer_interleave_test.cc).
#include <catch2/catch.hpp>
#include <chrono>
#include <stdexcept>

#include "buffer_test_util.h"
#include "tracepipe/buffers/subbuf_reader.h"

using namespace tp_buffers_test;

namespace {
constexpr RingBufferConfig kReaderRing{.cpus = 2, .size_per_cpu = 1024, .subbuf_size = 256};

std::vector<int> range(int from, int to) {
  std::vector<int> v;
  for (int i = from; i < to; ++i) v.push_back(i);
  return v;
}
}  // namespace

TEST_CASE("readers: an unknown cpu is a clear error", "[buffers][readers]") {
  OverwriteRingBuffer rb(kReaderRing);
  CHECK_THROWS_AS(ConsumingReader(rb, 2), std::out_of_range);
  CHECK_THROWS_WITH(Iterator(rb, 7), Catch::Contains("cpu 7 >= cpus() 2"));
  rb.pause();
  CHECK_FALSE(Snapshot::take(rb, 2));
}

TEST_CASE("readers: the iterator does not consume", "[buffers][readers][iterator]") {
  DropNewestRingBuffer rb(kReaderRing);
  for (int i = 0; i < 10; ++i) REQUIRE(put(rb, 0, 40, static_cast<uint8_t>(i)));
  Iterator it(rb, 0);
  CHECK(tags(drain(it)) == range(0, 10));
  CHECK(rb.stats(0).read == 0);
  CHECK(rb.stats(0).entries == 10);
  // It continues with records written after it reached the end.
  REQUIRE(put(rb, 0, 40, 10));
  REQUIRE(put(rb, 0, 40, 11));
  CHECK(tags(drain(it)) == range(10, 12));
  // Consumed records are gone for a new iterator. A consuming reader takes
  // a sub-buffer's committed records at once (4 here), like the kernel's
  // reader page: they still count as entries, but the iterator skips them.
  ConsumingReader reader(rb, 0);
  for (int i = 0; i < 3; ++i) REQUIRE(reader.next());
  CHECK(rb.stats(0).read == 3);
  CHECK(rb.stats(0).entries == 9);
  Iterator it2(rb, 0);
  CHECK(tags(drain(it2)) == range(4, 12));
  CHECK(rb.stats(0).conserved(12));
}

TEST_CASE("readers: the iterator starts at the oldest surviving sub-buffer",
          "[buffers][readers][iterator]") {
  OverwriteRingBuffer rb(kReaderRing);
  for (int i = 0; i < 100; ++i) REQUIRE(put(rb, 0, 48, static_cast<uint8_t>(i)));
  Iterator it(rb, 0);
  CHECK(tags(drain(it)) == range(84, 100));
  CHECK(rb.stats(0).conserved(100));
}

TEST_CASE("readers: snapshot of a paused overwrite buffer, oldest and newest first",
          "[buffers][readers][snapshot]") {
  OverwriteRingBuffer rb(kReaderRing);
  for (int i = 0; i < 100; ++i) REQUIRE(put(rb, 0, 48, static_cast<uint8_t>(i)));
  CHECK_FALSE(Snapshot::take(rb, 0));  // not paused
  rb.pause();
  {
    std::optional<Snapshot> snap = Snapshot::take(rb, 0);
    REQUIRE(snap);
    REQUIRE(snap->size() == 16);
    std::vector<int> oldest, newest;
    for (const RecordView& v : snap->records()) oldest.push_back(static_cast<int>(v.payload[0]));
    for (const RecordView& v : snap->newest_first())
      newest.push_back(static_cast<int>(v.payload[0]));
    CHECK(oldest == range(84, 100));
    std::vector<int> rev(oldest.rbegin(), oldest.rend());
    CHECK(newest == rev);
    uint64_t prev = 0;
    for (const RecordView& v : snap->records()) {
      CHECK(v.ts >= prev);
      CHECK(v.cpu == 0);
      prev = v.ts;
    }
    // Writes are refused while paused; the snapshot does not change.
    CHECK_FALSE(put(rb, 0, 48, 0));
    CHECK(snap->size() == 16);
    CHECK(static_cast<int>(snap->records().front().payload[0]) == 84);
    std::optional<Snapshot> moved(std::move(*snap));
    CHECK(moved->size() == 16);
  }
  rb.resume();
  CHECK(put(rb, 0, 48, 1));
  CHECK(rb.stats(0).conserved(102));
}

TEST_CASE("readers: a snapshot skips what a pending record hides", "[buffers][readers][snapshot]") {
  DropNewestRingBuffer rb(kReaderRing);
  Reservation pending = rb.reserve(0, 48);
  for (int i = 0; i < 5; ++i) REQUIRE(put(rb, 0, 48, static_cast<uint8_t>(i)));
  rb.pause();
  auto snap = Snapshot::take(rb, 0);
  REQUIRE(snap);
  // Records 0..2 share the pending record's sub-buffer, after it: hidden.
  std::vector<int> got;
  for (const RecordView& v : snap->records()) got.push_back(static_cast<int>(v.payload[0]));
  CHECK(got == std::vector<int>{3, 4});
  rb.commit(pending);
  snap.reset();
  rb.resume();
  CHECK(rb.stats(0).conserved(6));
}

TEST_CASE("readers: merge of all CPUs by time stamp", "[buffers][readers][merge]") {
  RingBuffer<OverflowMode::drop_newest, FunctionClock> rb(kReaderRing, &fake_clock);
  auto at = [&](uint64_t t, uint32_t cpu, uint8_t tag) {
    g_fake_now = t;
    REQUIRE(put(rb, cpu, 16, tag));
  };
  at(10, 0, 1);
  at(20, 1, 2);
  at(30, 0, 3);
  at(30, 1, 4);
  at(40, 1, 5);
  at(50, 0, 6);
  std::vector<int> want{1, 2, 3, 4, 5, 6};
  std::vector<uint32_t> want_cpu{0, 1, 0, 1, 1, 0};
  {
    auto m = merged_iterator(rb);
    std::vector<int> got;
    std::vector<uint32_t> cpus;
    while (auto v = m.next()) {
      got.push_back(static_cast<int>(v->payload[0]));
      cpus.push_back(v->cpu);
    }
    CHECK(got == want);
    CHECK(cpus == want_cpu);
  }
  auto m = merged_consumer(rb);
  std::vector<int> got;
  while (auto v = m.next()) got.push_back(static_cast<int>(v->payload[0]));
  CHECK(got == want);
  CHECK(rb.stats(0).read == 3);
  CHECK(rb.stats(1).read == 3);
  CHECK(rb.stats(0).conserved(3));
  CHECK(rb.stats(1).conserved(3));
}

TEST_CASE("readers: wait returns at once when data is there, times out when not",
          "[buffers][readers][wait]") {
  DropNewestRingBuffer rb(kReaderRing);
  ConsumingReader reader(rb, 0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(reader.wait(0, std::chrono::milliseconds(5)) == WaitResult::timeout);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(5));
  REQUIRE(put(rb, 0, 8, 1));
  CHECK(reader.wait(0, std::chrono::seconds(10)) == WaitResult::ready);
  // 50% of the 4 data sub-buffers = 2 full and unread; one record is not enough.
  CHECK(reader.wait(50, std::chrono::milliseconds(2)) == WaitResult::timeout);
  for (int i = 0; i < 12; ++i) REQUIRE(put(rb, 0, 48, 2));
  CHECK(reader.wait(50, std::chrono::seconds(10)) == WaitResult::ready);
  CHECK(tags(drain(reader)).size() == 13);
  CHECK(rb.stats(0).conserved(13));
}

// SubbufReader (buffers/subbuf_reader.h, step 3): a closed sub-buffer walked
// to its END is consumed and freed by one CAS from the reader's own pin; a
// second pin (another reader, stats()) makes that CAS fail, and the reader
// then consumes by read_off and leaves the freeing to whoever comes after
// the last pin, as before.
TEST_CASE("readers: the sub-buffer reader consumes and frees a closed sub-buffer in one step",
          "[buffers][readers][subbuf]") {
  using namespace tracepipe::buffers::detail;
  DropNewestRingBuffer rb({.cpus = 1, .size_per_cpu = 4 * 256, .subbuf_size = 256});
  CpuBuffer& cb = rb.cpu_buffer(0);
  uint64_t written = 0;
  // 40-byte payloads: 56-byte strides, 4 to a 256-byte sub-buffer.
  while (tail_idx(load_relaxed(cb.tail.pos)) < 2) {
    REQUIRE(put(rb, 0, 40, static_cast<uint8_t>(written + 1)));
    ++written;
  }
  struct Count {
    uint64_t n = 0;
    std::vector<uint8_t> tags;
    void record(uint64_t, std::span<const std::byte> p) {
      ++n;
      tags.push_back(static_cast<uint8_t>(p[0]));
    }
    void rollback() {}
  } sink;
  SubbufReader rd(rb, 0);
  REQUIRE(rd.consume(sink, false) == Taken::records);
  CHECK(sink.n == 4);
  uint64_t w = cb.positions[0].load();
  CHECK(pw_phase(w) == Phase::free);  // freed by the reader itself, lap kept
  CHECK(pw_lap(w) == 0);
  CHECK(cb.read.load() == 4);
  for (uint64_t off = 0; off < 256; off += 4) {  // zeroed for the next lap (I1)
    INFO("offset " << off);
    CHECK(load_word(cb.page(0) + off) == 0);
  }

  // Position 1 pinned by someone else: consumed, not freed under that pin.
  REQUIRE(pin(cb, 1, 0));
  REQUIRE(rd.consume(sink, false) == Taken::records);
  CHECK(sink.n == 8);
  w = cb.positions[1].load();
  CHECK(pw_phase(w) == Phase::live);
  CHECK(pw_pins(w) == 1);
  CHECK(pw_read_off(w) == 256);
  CHECK(cb.read.load() == 8);
  unpin(cb, 1);
  CHECK(rd.consume(sink, false) == Taken::none);  // the rest is the tail's sub-buffer

  // The writers go on round the ring: the switch frees position 1 (fully
  // consumed) and every record is accounted for.
  uint64_t attempts = written;
  while (written < 20) {
    ++attempts;
    if (!put(rb, 0, 40, static_cast<uint8_t>(written + 1))) break;
    ++written;
  }
  while (rd.consume(sink, true) != Taken::none) {
  }
  REQUIRE(sink.tags.size() == written);
  for (size_t i = 0; i < sink.tags.size(); ++i) CHECK(sink.tags[i] == static_cast<uint8_t>(i + 1));
  const CpuStats s = rb.stats(0);
  CHECK(s.read == written);
  CHECK(s.entries == 0);
  CHECK(s.lost_full == attempts - written);
  CHECK(s.conserved(attempts));
}
