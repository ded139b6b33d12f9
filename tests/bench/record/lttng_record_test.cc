// tracepipe_record_bench's LTTng-UST side: one short run with a real session
// daemon and consumer daemon, its counts checked against the trace; and the
// packet-index reader on an index built byte by byte.
#include "tracepipe/bench/record/lttng_record.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.h"
#include "tracepipe/bench/peers/lttng_index.h"

using namespace tracepipe;
namespace fs = std::filesystem;

namespace {

void put_be(std::string& b, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) b.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// An index file: header, then one 9-word (index 1.1) entry per
/// {content bits, events_discarded}.
void write_index(const fs::path& p, const std::vector<std::pair<uint64_t, uint64_t>>& packets) {
  std::string b;
  put_be(b, 0xC1F1DCC1u, 4);
  put_be(b, 1, 4);
  put_be(b, 1, 4);
  put_be(b, 72, 4);
  uint64_t off = 0;
  for (const auto& [content_bits, discarded] : packets) {
    for (uint64_t w : {off, uint64_t{4096 * 8}, content_bits, uint64_t{100}, uint64_t{200},
                       discarded, uint64_t{0}, uint64_t{0}, uint64_t{7}})
      put_be(b, w, 8);
    off += 4096;
  }
  std::ofstream(p, std::ios::binary) << b;
}

}  // namespace

TEST_CASE("record bench: the LTTng packet index gives each stream's last discarded count, summed",
          "[bench][record][lttng]") {
  const fs::path dir = fs::temp_directory_path() / ("tp_lttng_index_" + std::to_string(::getpid()));
  fs::create_directories(dir / "index");
  // events_discarded is a running count per stream: 0, 5, 12 means 12 in all.
  write_index(dir / "index" / "ch_0.idx", {{8000, 0}, {16000, 5}, {800, 12}});
  write_index(dir / "index" / "ch_1.idx", {{4000, 3}});
  std::ofstream(dir / "ch_0", std::ios::binary) << "not an index";
  const peers::LttngIndexStats s = peers::read_lttng_index(dir);
  CHECK(s.streams == 2);
  CHECK(s.packets == 4);
  CHECK(s.events_discarded == 15);
  CHECK(s.content_bytes == (8000 + 16000 + 800 + 4000) / 8);
  std::ofstream(dir / "index" / "bad.idx", std::ios::binary) << std::string(20, 'x');
  CHECK_THROWS_WITH(peers::read_lttng_index(dir),
                    Catch::Contains("bad.idx: not an LTTng packet index"));
  fs::remove_all(dir);
}

TEST_CASE("record bench: the LTTng-UST side records a paced run whose counts the trace confirms",
          "[bench][record][lttng]") {
  std::unique_ptr<record_bench::LttngRecordSide> side;
  try {
    side = record_bench::LttngRecordSide::open("");
  } catch (const peers::PeerUnavailable& e) {
    TP_SKIP(std::string("LTTng-UST cannot run here: ") + e.what());
  }
  // 0.2 s at 100 000 events/s: 20 000 events, 1.2 MB, fewer than the 2 MiB
  // of sub-buffers per CPU hold, so nothing is lost however late the
  // consumer daemon is scheduled on a loaded machine.
  const record_bench::Run r = side->run(0.2, 100000, /*keep_trace=*/true);
  INFO("note: " << r.note);
  CHECK(r.note.empty());  // `lttng list` and the packet indexes agree
  // The paced writer skips what it owes after a preemption (record_run.h):
  // on a loaded machine it emits less than asked, never more.
  CHECK(r.emitted >= 1000);
  CHECK(r.emitted + r.skipped <= 20000);
  CHECK(r.written + r.dropped == r.emitted);
  CHECK(r.dropped == 0);
  CHECK(r.bytes >= r.written * 56);  // every record holds the 56-byte payload
  CHECK(r.consumer_ns_per_event > 0);
  std::string why;
  const auto counted = record_bench::count_events(*side->last_trace(), why);
  if (!counted) {
    WARN("trace not read back: " << why);
  } else {
    CHECK(*counted == r.written);
  }
  // A second run in the same daemon: sessions are independent.
  const record_bench::Run r2 = side->run(0.05, 100000);
  CHECK(r2.emitted >= 250);
  CHECK(r2.written + r2.dropped == r2.emitted);
}
