// Blocking mode of a drop-newest ring (ring_buffer.h, "Blocking"): a writer
// that finds its buffer full waits for the reader up to the bound instead of
// dropping; what it still drops is counted by cause.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/buffers/subbuf_reader.h"

using namespace tracepipe::buffers;
using Clock = std::chrono::steady_clock;

namespace {

// 1 CPU, 4 sub-buffers of 256 bytes (+ the spare): fills after a few dozen records.
RingBufferConfig small() {
  RingBufferConfig c;
  c.cpus = 1;
  c.subbuf_size = 256;
  c.size_per_cpu = 4 * 256;
  return c;
}

// Writes 32-byte records carrying a sequence number until one is refused.
uint32_t fill(DropNewestRingBuffer& rb) {
  uint32_t n = 0;
  std::byte p[32]{};
  for (;;) {
    std::memcpy(p, &n, 4);
    if (!rb.write(0, p)) return n;
    ++n;
  }
}

// Collects the sequence numbers a SubbufReader hands out.
struct Seqs {
  std::vector<uint32_t> v;
  size_t mark = 0;
  void record(uint64_t, std::span<const std::byte> p) {
    uint32_t x;
    std::memcpy(&x, p.data(), 4);
    v.push_back(x);
  }
  void rollback() { v.resize(mark); }
};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

}  // namespace

TEST_CASE("ring blocking: a slow reader loses nothing, the writer waits for it",
          "[buffers][block]") {
  DropNewestRingBuffer rb(small());
  rb.set_block_timeout(RingBufferBase::kBlockForever);
  constexpr uint32_t kN = 3000;
  std::atomic<bool> done{false};
  std::thread w([&] {
    std::byte p[32]{};
    for (uint32_t i = 0; i < kN; ++i) {
      std::memcpy(p, &i, 4);
      REQUIRE(rb.write(0, p));
    }
    done = true;
  });
  SubbufReader rd(rb, 0);
  Seqs got;
  // A reader much slower than the writer: one sub-buffer per 200 µs.
  while (!done || got.v.size() < kN) {
    got.mark = got.v.size();
    const Taken t = rd.consume(got, done.load());
    if (t != Taken::none)
      rb.wake_blocked(0);
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (done && t == Taken::none && got.v.size() >= kN) break;
  }
  w.join();
  REQUIRE(got.v.size() == kN);
  for (uint32_t i = 0; i < kN; ++i) REQUIRE(got.v[i] == i);
  const CpuStats s = rb.stats(0);
  CHECK(s.lost_full == 0);
  CHECK(s.lost_busy == 0);
  const auto b = rb.block_stats(0);
  CHECK(b.waits > 0);
  CHECK(b.wait_ns > 0);
  CHECK(b.max_wait_ns > 0);
  CHECK(b.max_wait_ns <= b.wait_ns);
  CHECK(b.timed_out == 0);
  CHECK(b.not_allowed == 0);
  CHECK(s.read == kN);
}

TEST_CASE("ring blocking: the bound is honoured, then the record is dropped and counted",
          "[buffers][block]") {
  DropNewestRingBuffer rb(small());
  const uint32_t n = fill(rb);  // blocking off: the refusal is immediate
  REQUIRE(n > 0);
  CHECK(rb.stats(0).lost_full == 1);
  CHECK(rb.block_stats(0).waits == 0);
  rb.set_block_timeout(20'000'000);  // 20 ms
  std::byte p[32]{};
  const auto t0 = Clock::now();
  CHECK_FALSE(rb.write(0, p));
  const double ms = ms_since(t0);
  CHECK(ms >= 20.0);
  CHECK(ms < 1000.0);  // generous: a loaded machine may wake it late, never this late
  const auto b = rb.block_stats(0);
  CHECK(b.waits == 1);
  CHECK(b.timed_out == 1);
  CHECK(b.not_allowed == 0);
  CHECK(b.wait_ns >= 20'000'000);
  CHECK(b.max_wait_ns >= 20'000'000);
  CHECK(rb.stats(0).lost_full == 2);  // the drop is a lost_full as without blocking
}

TEST_CASE("ring blocking: a writer the policy refuses drops at once", "[buffers][block]") {
  DropNewestRingBuffer rb(small());
  (void)fill(rb);
  rb.set_block_timeout(RingBufferBase::kBlockForever);
  rb.set_block_policy([]() noexcept { return false; });
  std::byte p[32]{};
  const auto t0 = Clock::now();
  CHECK_FALSE(rb.write(0, p));
  CHECK(ms_since(t0) < 500.0);  // no wait (forever would never return)
  const auto b = rb.block_stats(0);
  CHECK(b.not_allowed == 1);
  CHECK(b.waits == 0);
  CHECK(b.timed_out == 0);
  CHECK(rb.stats(0).lost_full == 2);
}

TEST_CASE("ring blocking: setting the timeout to 0 releases a writer waiting forever",
          "[buffers][block]") {
  DropNewestRingBuffer rb(small());
  (void)fill(rb);
  rb.set_block_timeout(RingBufferBase::kBlockForever);
  std::atomic<int> result{-1};
  std::thread w([&] {
    std::byte p[32]{};
    result = rb.write(0, p) ? 1 : 0;
  });
  // Wait until it waits (bounded: 5 s).
  const auto t0 = Clock::now();
  while (rb.block_stats(0).waits == 0 && ms_since(t0) < 5000)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(rb.block_stats(0).waits == 1);
  CHECK(result == -1);
  rb.set_block_timeout(0);
  w.join();
  CHECK(result == 0);
  CHECK(rb.block_stats(0).timed_out == 1);
}

TEST_CASE("ring blocking: a waiting writer reserves as soon as the reader frees a sub-buffer",
          "[buffers][block]") {
  DropNewestRingBuffer rb(small());
  const uint32_t n = fill(rb);
  rb.set_block_timeout(RingBufferBase::kBlockForever);
  std::atomic<int> result{-1};
  std::thread w([&] {
    std::byte p[32]{};
    std::memcpy(p, &n, 4);
    result = rb.write(0, p) ? 1 : 0;
  });
  const auto t0 = Clock::now();
  while (rb.block_stats(0).waits == 0 && ms_since(t0) < 5000)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(rb.block_stats(0).waits == 1);
  SubbufReader rd(rb, 0);
  Seqs got;
  REQUIRE(rd.consume(got, false) == Taken::records);
  rb.wake_blocked(0);
  w.join();
  CHECK(result == 1);
  // Everything written is read back in order, the waiting record last.
  while (rd.consume(got, true) != Taken::none) {
  }
  REQUIRE(got.v.size() == n + 1);
  for (uint32_t i = 0; i <= n; ++i) CHECK(got.v[i] == i);
  CHECK(rb.block_stats(0).timed_out == 0);
  CHECK(rb.stats(0).lost_full == 1);  // only the fill's own refusal
}

TEST_CASE("ring blocking: an overwrite ring never blocks", "[buffers][block]") {
  OverwriteRingBuffer rb(small());
  rb.set_block_timeout(RingBufferBase::kBlockForever);
  CHECK(rb.block_timeout() == 0);
  std::byte p[32]{};
  for (int i = 0; i < 1000; ++i) CHECK(rb.write(0, p));  // recycles
  CHECK(rb.block_stats(0).waits == 0);
}
