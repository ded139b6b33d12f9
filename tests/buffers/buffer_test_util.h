#pragma once
// Helpers for the buffers tests: a settable clock, record builders, drains.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/ring_buffer.h"

namespace tp_buffers_test {

using namespace tracepipe::buffers;

/// A clock the test sets by hand (ns). Shared by all buffers of a test.
inline std::atomic<uint64_t> g_fake_now{0};
inline uint64_t fake_clock() noexcept { return g_fake_now.load(std::memory_order_relaxed); }

/// Payload of `len` bytes whose bytes all equal `tag` (len >= 0).
inline std::vector<std::byte> bytes_of(size_t len, uint8_t tag) {
  return std::vector<std::byte>(len, std::byte{tag});
}

/// Writes a record of `len` bytes filled with `tag`; true when written.
template <class RB>
bool put(RB& rb, uint32_t cpu, size_t len, uint8_t tag) {
  auto b = bytes_of(len, tag);
  return rb.write(cpu, b);
}

/// One record as read back: stamp, cpu, first byte (the tag), length.
struct Got {
  uint64_t ts;
  uint32_t cpu;
  uint8_t tag;
  size_t len;
  bool uniform;  // every byte equals the first
};
inline Got got_of(const RecordView& v) {
  Got g{v.ts, v.cpu, 0, v.payload.size(), true};
  if (!v.payload.empty()) g.tag = static_cast<uint8_t>(v.payload[0]);
  for (std::byte b : v.payload) g.uniform &= static_cast<uint8_t>(b) == g.tag;
  return g;
}

/// Drains a reader (consuming or not) into a vector.
template <class Reader>
std::vector<Got> drain(Reader& r) {
  std::vector<Got> out;
  while (auto v = r.next()) out.push_back(got_of(*v));
  return out;
}

/// Tags of a vector of Got.
inline std::vector<int> tags(const std::vector<Got>& g) {
  std::vector<int> t;
  for (const Got& x : g) t.push_back(x.tag);
  return t;
}

}  // namespace tp_buffers_test
