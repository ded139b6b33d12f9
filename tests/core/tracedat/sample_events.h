#pragma once
// Tracepipe-declared sample events used by the writer and trace-cmd tests:
// every field kind trace-cmd must decode, and a record generator that
// exercises time extends and long (type_len 0) records.
#include <fmt/format.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tp_tracedat_test {
using namespace tracepipe;

// A tracepipe-declared event with every kind of field trace-cmd must decode.
inline EventFormat sample_format() {
  return EventFormat{
      "tracepipe",
      "sample",
      1000,
      kernel_common_fields(),
      {{"u64", "value", 8, 8, false},
       {"char[8]", "tag", 16, 8, false},
       {"__data_loc char[]", "name", 24, 4, false},
       {"int", "delta", 28, 4, true},
       {"short", "small", 32, 2, true},
       {"unsigned char", "flag", 34, 1, false}},
      "\"value=%llu tag=%s name=%s delta=%d small=%hd flag=%u\", REC->value, REC->tag, "
      "__get_str(name), REC->delta, REC->small, REC->flag"};
}

inline EventFormat tick_format() {
  return EventFormat{
      "tracepipe",       "tick", 1001, kernel_common_fields(), {{"unsigned int", "n", 8, 4, false}},
      "\"n=%u\", REC->n"};
}

struct Sample {
  uint64_t value;
  std::string tag, name;
  int32_t delta;
  int16_t small;
  uint8_t flag;
  int32_t pid;
};

inline std::vector<std::byte> encode(const Sample& s) {
  std::vector<std::byte> b(36 + s.name.size() + 1);
  const uint16_t id = 1000;
  std::memcpy(&b[0], &id, 2);
  b[2] = std::byte{1};  // common_flags
  std::memcpy(&b[4], &s.pid, 4);
  std::memcpy(&b[8], &s.value, 8);
  std::memcpy(&b[16], s.tag.data(), std::min<size_t>(s.tag.size(), 8));
  const uint32_t loc = (static_cast<uint32_t>(s.name.size() + 1) << 16) | 36u;
  std::memcpy(&b[24], &loc, 4);
  std::memcpy(&b[28], &s.delta, 4);
  std::memcpy(&b[32], &s.small, 2);
  b[34] = std::byte{s.flag};
  std::memcpy(&b[36], s.name.c_str(), s.name.size() + 1);
  return b;
}

inline std::vector<std::byte> encode_tick(uint32_t n, int32_t pid) {
  std::vector<std::byte> b(12);
  const uint16_t id = 1001;
  std::memcpy(&b[0], &id, 2);
  std::memcpy(&b[4], &pid, 4);
  std::memcpy(&b[8], &n, 4);
  return b;
}

struct Written {
  uint32_t cpu;
  uint64_t ts;
  std::vector<std::byte> payload;
  Sample s;
  bool is_tick;
};

// Records on 3 CPUs with small gaps, > 2^27 gaps (time extends), long
// payloads (type_len 0), and one lost-events mark.
inline std::vector<Written> make_records(TraceDatWriter& w, size_t n) {
  std::mt19937_64 rng(42);
  std::vector<Written> out;
  uint64_t ts[3] = {5'000'000'000, 5'000'000'100, 5'000'000'200};
  for (size_t i = 0; i < n; ++i) {
    const uint32_t cpu = static_cast<uint32_t>(rng() % 3);
    ts[cpu] += (i % 97 == 0) ? (uint64_t{1} << 28) + rng() % 1000 : rng() % 5000;
    Written r{cpu, ts[cpu], {}, {}, i % 5 == 4};
    const int32_t pid = 100 + static_cast<int32_t>(rng() % 4);
    if (r.is_tick) {
      r.payload = encode_tick(static_cast<uint32_t>(i), pid);
    } else {
      r.s = Sample{i * 1000003ull,
                   i % 2 ? "odd" : "even-tag",
                   std::string(i % 7 == 0 ? 150 : i % 13, 'a' + i % 26),
                   static_cast<int32_t>(i) - 500,
                   static_cast<int16_t>(-static_cast<int>(i % 300)),
                   static_cast<uint8_t>(i % 256),
                   pid};
      r.payload = encode(r.s);
    }
    w.add_record(cpu, r.ts, r.payload);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace tp_tracedat_test
