#pragma once
// Shared by the recorder's tests: reading back what a recording holds.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <vector>

#include "../instance/test_events.h"
#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/record/page_batch.h"
#include "tracepipe/core/record/testing/hooks.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tp_record_test {

/// The format of 8-byte records (common_type 42, then a u32 `seq`), which
/// the trace-file tests write page by page.
inline tracepipe::EventFormat rec_format() {
  tracepipe::EventFormat f;
  f.system = "tp";
  f.name = "rec";
  f.id = 42;
  f.common_fields.push_back({"unsigned short", "common_type", 0, 2, false});
  f.fields.push_back({"unsigned int", "seq", 4, 4, false});
  f.print_fmt = "\"seq=%u\", REC->seq";
  return f;
}

// `n` records of 8 bytes (common_type 42, seq) from seq `from`, in pages.
inline std::vector<std::byte> pages_of(uint32_t from, uint32_t n, uint64_t ts0) {
  tracepipe::record::PageBatch b(4096, n / 400 + 4);
  for (uint32_t i = 0; i < n; ++i) {
    std::byte p[8]{};
    const uint16_t id = 42;
    const uint32_t seq = from + i;
    std::memcpy(p, &id, 2);
    std::memcpy(p + 4, &seq, 4);
    b.record(ts0 + i * 10, p);
  }
  b.close_open();
  return {b.finished().begin(), b.finished().end()};
}

/// Installs record::pass_test_hook for one recorder's life: declare it
/// before the Recorder, so that it is cleared after the recorder stopped.
struct PassHook {
  std::function<void()> fn;
  explicit PassHook(std::function<void()> f) : fn(std::move(f)) {
    tracepipe::record::pass_test_hook.store(&fn);
  }
  ~PassHook() { tracepipe::record::pass_test_hook.store(nullptr); }
};

/// Holds the recorder thread in its pass hook (PassHook calling pass())
/// while `stalled`; `entered` tells that it got there.
struct Stall {
  std::mutex mu;
  std::condition_variable cv;
  bool stalled = true;
  std::atomic<bool> entered{false};
  void pass() {
    std::unique_lock lk(mu);
    entered.store(true);
    cv.wait(lk, [&] { return !stalled; });
  }
  void release() {
    {
      std::lock_guard lk(mu);
      stalled = false;
    }
    cv.notify_all();
  }
};

/// The seq field of every Sample record of a trace.dat, in the reader's
/// merged order (our reader, not trace-cmd).
inline std::vector<uint32_t> sample_seqs(const std::filesystem::path& p) {
  const auto r = tracepipe::TraceDatReader::open(p);
  std::vector<uint32_t> out;
  auto m = r.records();
  while (auto rec = m.next()) {
    if (rec->payload.size() != tp_core_test::Sample::fixed_size) continue;
    uint32_t s;
    std::memcpy(&s, rec->payload.data() + 12, 4);
    out.push_back(s);
  }
  return out;
}

}  // namespace tp_record_test
