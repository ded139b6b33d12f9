// Recovery of flight files (core/recover): an instance read live against its
// own iterator, a child killed with SIGKILL, a reservation that never
// commits, and damaged files naming the part and offset. The flight file
// itself is tested in tests/core/flight.
#include "tracepipe/core/recover/recover.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "../instance/test_events.h"
#include "test_support.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/flight/flight_file.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_core_test;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("tp-flight-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

InstanceOptions flight_options(const fs::path& dir, BufferMode mode = BufferMode::drop_newest) {
  InstanceOptions o = small_options(Staging::per_thread, mode);
  o.flight_recorder = true;
  o.flight_dir = dir.string();
  return o;
}

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

template <class T>
T load_at(const std::vector<std::byte>& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}
template <class T>
void store_at(std::vector<std::byte>& b, size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}

}  // namespace

TEST_CASE("flight: a live snapshot equals the ring's own iterator, record for record",
          "[recover]") {
  const fs::path dir = scratch("live");
  Instance inst(flight_options(dir));
  inst.enable(Sample::desc());
  inst.enable(Other::desc());
  std::vector<std::thread> ts;
  for (uint32_t t = 0; t < 3; ++t)
    ts.emplace_back([&, t] {
      for (uint32_t i = 0; i < 500; ++i)
        REQUIRE(emit_sample(inst, t, i, "payload") == EmitResult::kept);
      REQUIRE(Other::emit(inst, -1, "bye") == EmitResult::kept);
    });
  for (auto& t : ts) t.join();
  const auto rec = recover::recover_file(inst.flight_path(), {.live = true});
  REQUIRE(rec.cpus.size() == inst.cpus());
  REQUIRE(rec.records() == 1503);
  CHECK(rec.uncommitted() == 0);
  CHECK(rec.cut_short() == 0);
  CHECK(rec.warnings.empty());
  for (uint32_t c = 0; c < inst.cpus(); ++c) {
    buffers::Iterator it(inst.ring(), c);
    size_t i = 0;
    const auto& rc = rec.cpus[c];
    while (auto r = it.next()) {
      REQUIRE(i < rc.records.size());
      CHECK(rc.records[i].ts == r->ts);
      const auto p = rc.payload(rc.records[i]);
      REQUIRE(p.size() == r->payload.size());
      CHECK(std::memcmp(p.data(), r->payload.data(), p.size()) == 0);
      ++i;
    }
    CHECK(i == rc.records.size());
  }
  // The formats of both events are in the file.
  std::map<std::string, uint32_t> ids;
  for (const auto& f : rec.formats) ids[f.name] = f.id;
  CHECK(ids.at("sample") == Sample::desc().id());
  CHECK(ids.at("other") == Other::desc().id());
  fs::remove_all(dir);
}

TEST_CASE(
    "flight: a child killed with SIGKILL: every committed record is recovered, trace-cmd reads "
    "them",
    "[recover]") {
  const fs::path dir = scratch("kill");
  constexpr uint32_t kRecords = 3000;
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    Instance* inst =
        new Instance(flight_options(dir, BufferMode::overwrite));  // never destroyed: killed
    inst->enable(Sample::desc());
    for (uint32_t i = 0; i < kRecords; ++i)
      if (emit_sample(*inst, 7, i, "crash") != EmitResult::kept) _exit(3);
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  const fs::path file = dir / ("main-" + std::to_string(child) + ".tpflight");
  REQUIRE(fs::exists(file));
  const auto t = recover::recover_file(file);
  CHECK(t.pid == child);
  CHECK(t.state == flight::FileState::live);
  uint64_t overrun = 0;
  std::vector<uint32_t> seqs;
  for (const auto& c : t.cpus) {
    overrun += c.counters.overrun;
    for (const auto& r : c.records) {
      const auto p = c.payload(r);
      REQUIRE(p.size() == Sample::fixed_size);
      uint32_t seq;
      std::memcpy(&seq, p.data() + 12, 4);
      seqs.push_back(seq);
    }
  }
  std::sort(seqs.begin(), seqs.end());
  // Overwrite mode with a ring that holds them all: nothing overrun, all there.
  CHECK(overrun == 0);
  REQUIRE(seqs.size() == kRecords);
  for (uint32_t i = 0; i < kRecords; ++i) REQUIRE(seqs[i] == i);

  const fs::path dat = dir / "out.dat";
  recover::write_trace_dat(t, dat);
  const auto reader = TraceDatReader::open(dat);
  uint64_t n = 0;
  for (size_t i = 0; i < reader.cpu_data().size(); ++i) {
    auto cur = reader.cpu_records(i);
    while (cur.next()) ++n;
  }
  CHECK(n == kRecords);
  const auto r = tp_test::run_command({"trace-cmd", "report", dat.string()}, dir);
  if (r.status == -1 || r.err.find("not found") != std::string::npos) {
    WARN("trace-cmd not available: " << r.err);
  } else {
    CHECK(r.status == 0);
    size_t lines = 0;
    for (size_t p = r.out.find("sample:"); p != std::string::npos; p = r.out.find("sample:", p + 1))
      ++lines;
    CHECK(lines == kRecords);
    CHECK(r.out.find("seq=2999") != std::string::npos);
    // The writers' counters at the crash, per CPU, as a recording carries them.
    const auto st = tp_test::run_command({"trace-cmd", "report", "--stat", dat.string()}, dir);
    INFO(st.out << st.err);
    CHECK(st.out.find("No stats in this file") == std::string::npos);
    uint64_t entries = 0;
    for (size_t p = st.out.find("\nentries: "); p != std::string::npos;
         p = st.out.find("\nentries: ", p + 1))
      entries += std::stoull(st.out.substr(p + 10));
    CHECK(entries == kRecords);
    for (const auto& c : t.cpus)
      if (!c.records.empty())
        CHECK(st.out.find(fmt::format("CPU: {}\nentries: {}\n", c.cpu, c.records.size())) !=
              std::string::npos);
  }
  fs::remove_all(dir);
}

namespace {
// A flight file with a bare ring buffer (no instance), for the protocol cases.
struct BareFlight {
  std::unique_ptr<flight::FlightFile> file;
  std::unique_ptr<buffers::DropNewestRingBuffer> ring;
  explicit BareFlight(const fs::path& dir) {
    flight::FlightFileConfig fc;
    fc.dir = dir;
    fc.instance = "bare";
    fc.ring.cpus = 1;
    fc.ring.size_per_cpu = 4096;
    fc.ring.subbuf_size = 1024;
    fc.mode = buffers::OverflowMode::drop_newest;
    file = flight::FlightFile::create(fc);
    buffers::RingBufferConfig rc = fc.ring;
    rc.memory = file->ring_memory();
    rc.memory_size = file->ring_size();
    ring = std::make_unique<buffers::DropNewestRingBuffer>(rc);
    file->set_live();
  }
  buffers::Reservation put(uint32_t v, bool commit = true) {
    buffers::Reservation r = ring->reserve(0, 8);
    REQUIRE(r);
    std::memcpy(r.payload().data(), &v, 4);
    std::memset(r.payload().data() + 4, 0, 4);
    if (commit) ring->commit(r);
    return r;
  }
};
std::vector<uint32_t> values(const recover::RecoveredTrace& t) {
  std::vector<uint32_t> out;
  for (const auto& c : t.cpus)
    for (const auto& r : c.records) {
      uint32_t v;
      std::memcpy(&v, c.payload(r).data(), 4);
      out.push_back(v);
    }
  return out;
}
}  // namespace

TEST_CASE(
    "recover: a reservation never committed is skipped and counted, the records after it kept",
    "[recover]") {
  const fs::path dir = scratch("uncommitted");
  BareFlight f(dir);
  f.put(1);
  auto pending = f.put(2, /*commit=*/false);
  f.put(3);
  // Into the next sub-buffers too (1024-byte sub-buffers, 24-byte records).
  for (uint32_t v = 10; v < 100; ++v) f.put(v);
  auto t = recover::recover_file(f.file->path(), {.live = true});
  std::vector<uint32_t> want{1, 3};
  for (uint32_t v = 10; v < 100; ++v) want.push_back(v);
  CHECK(values(t) == want);
  CHECK(t.uncommitted() == 1);
  CHECK(t.cut_short() == 0);
  // The writer died between its tail CAS and storing the stride: the
  // reservation has no length; the walk stops there and says so.
  auto bytes = read_bytes(f.file->path());
  const size_t page0 =
      flight::kHeaderBytes + flight::kMetaCapacity +
      buffers::ring_memory_layout({.cpus = 1, .size_per_cpu = 4096, .subbuf_size = 1024},
                                  buffers::OverflowMode::drop_newest)
          .pages_offset;
  REQUIRE(load_at<uint32_t>(bytes, page0 + 24) == 0);   // the pending word
  REQUIRE(load_at<uint32_t>(bytes, page0 + 28) == 24);  // its stride
  store_at<uint32_t>(bytes, page0 + 28, 0);
  store_at<uint64_t>(bytes, page0 + 32, 0);  // nor its stamp (stored with it),
  store_at<uint64_t>(bytes, page0 + 40, 0);  // nor its payload (written after)
  // A zero gap, then records that chain to the sub-buffer's END: skipped as one.
  t = recover::recover_bytes(bytes);
  CHECK(values(t) == want);
  CHECK(t.uncommitted() == 1);
  CHECK(t.cut_short() == 0);
  // If the record after the gap does not chain (its stride is wrong), the
  // rest of sub-buffer 0 is out of reach: cut short, never misread.
  store_at<uint32_t>(bytes, page0 + 52, 40);
  t = recover::recover_bytes(bytes);
  CHECK(t.cut_short() == 1);
  CHECK(t.uncommitted() == 0);
  const auto got = values(t);
  REQUIRE(got.size() > 1);
  CHECK(got.front() == 1);
  CHECK(std::find(got.begin(), got.end(), 3u) == got.end());
  CHECK(got.back() == 99);
  CHECK(got.size() ==
        want.size() -
            40);  // sub-buffer 0 holds 42 records of 24 bytes: 1, the pending one, 3, 10..48
  f.ring->commit(pending);
  fs::remove_all(dir);
}

TEST_CASE(
    "recover: an overwrite ring that set a stalled sub-buffer aside is read where its positions "
    "are now",
    "[recover]") {
  const fs::path dir = scratch("set-aside");
  flight::FlightFileConfig fc;
  fc.dir = dir;
  fc.instance = "aside";
  fc.ring.cpus = 1;
  fc.ring.size_per_cpu = 4096;
  fc.ring.subbuf_size = 1024;
  fc.mode = buffers::OverflowMode::overwrite;
  auto file = flight::FlightFile::create(fc);
  buffers::RingBufferConfig rc = fc.ring;
  rc.memory = file->ring_memory();
  rc.memory_size = file->ring_size();
  buffers::OverwriteRingBuffer ring(rc);
  file->set_live();
  auto put = [&](uint32_t v, bool commit = true) {
    buffers::Reservation r = ring.reserve(0, 8);
    REQUIRE(r);
    std::memcpy(r.payload().data(), &v, 4);
    std::memset(r.payload().data() + 4, 0, 4);
    if (commit) ring.commit(r);
    return r;
  };
  put(1);
  buffers::Reservation stalled = put(0xEEEE, /*commit=*/false);
  for (uint32_t v = 2; v < 700; ++v)
    put(v);  // 3 laps of 5 x 42 records: position 0 is set aside once
  REQUIRE(ring.cpu_buffer(0).set_aside.load() == 1);
  REQUIRE(ring.cpu_buffer(0).slots[0].load() != 0);  // position 0 uses a spare's memory
  std::vector<uint32_t> want;
  buffers::Iterator it(ring, 0);
  while (auto r = it.next()) {
    uint32_t v;
    std::memcpy(&v, r->payload.data(), 4);
    want.push_back(v);
  }
  REQUIRE(!want.empty());
  CHECK(want.back() == 699);
  const auto t = recover::recover_file(file->path(), {.live = true});
  CHECK(values(t) == want);
  CHECK(t.warnings.empty());
  // The stalled reservation is in the set-aside memory: counted uncommitted,
  // not lost (not committed yet).
  CHECK(t.cpus[0].uncommitted == 1);
  CHECK(t.cpus[0].counters.lost_set_aside == 0);
  ring.commit(stalled);  // into the set-aside memory: never recovered, never shown
  // The ring has not reclaimed the memory (no swap needed a spare, no
  // stats()), so its counter still says 0: recover counts the record it
  // finds committed there, by its cause, as the reclaim would have.
  REQUIRE(ring.cpu_buffer(0).lost_set_aside.load() == 0);
  const auto after = recover::recover_file(file->path(), {.live = true});
  CHECK(values(after) == want);
  CHECK(after.cpus[0].uncommitted == 0);
  CHECK(after.cpus[0].counters.lost_set_aside == 1);
  CHECK(after.warnings.empty());
  // Once the ring reclaimed it (stats()), the file's counter holds it and
  // the memory is EMPTY again: still counted once.
  CHECK(ring.stats(0).lost_set_aside == 1);
  CHECK(recover::recover_file(file->path(), {.live = true}).cpus[0].counters.lost_set_aside == 1);
  {
    // A spare word naming a live position's sub-buffer: damage in a dead
    // file, and in a live one what a reader sees when a swap sets a
    // sub-buffer aside between its reading the positions and the spares.
    buffers::Reservation held = put(0xEEEF, /*commit=*/false);  // the next laps set it aside
    for (uint32_t v = 701; v < 1400; ++v) put(v);
    ring.commit(held);
    std::vector<std::byte> b = read_bytes(file->path());
    const auto lay = buffers::ring_memory_layout(fc.ring, fc.mode);
    const size_t ring_off = flight::kHeaderBytes + flight::kMetaCapacity;
    const uint32_t live_slot = load_at<uint32_t>(b, ring_off + lay.slots_offset + 4);  // position 1
    size_t aside = 0;
    for (uint32_t i = 0; i < lay.nr_spares && aside == 0; ++i) {
      const size_t at = ring_off + lay.spares_offset + i * 8;
      if (buffers::detail::sw_state(load_at<uint64_t>(b, at)) == buffers::detail::SpareState::aside)
        aside = at;
    }
    REQUIRE(aside != 0);
    store_at<uint64_t>(b, aside,
                       buffers::detail::make_sw(buffers::detail::SpareState::aside, live_slot, 0));
    const auto dead = recover::recover_bytes(b);
    REQUIRE(dead.warnings.size() == 1);
    CHECK(dead.warnings[0].find("cpu 0 spare word") != std::string::npos);
    CHECK(dead.warnings[0].find("is also a LIVE position's") != std::string::npos);
    CHECK(dead.cpus[0].damaged == 1);
    const auto live = recover::recover_bytes(b, {.live = true});
    CHECK(live.warnings.empty());
    CHECK(live.cpus[0].damaged == 0);
    CHECK(live.cpus[0].raced >= 1);
  }
  fs::remove_all(dir);
}

TEST_CASE("recover: damaged files name the part and the offset", "[recover]") {
  const fs::path dir = scratch("damaged");
  BareFlight f(dir);
  for (uint32_t v = 0; v < 20; ++v) f.put(v);
  const auto good = read_bytes(f.file->path());
  REQUIRE(values(recover::recover_bytes(good)).size() == 20);
  auto expect_error = [](std::vector<std::byte> b, const std::string& part, uint64_t offset) {
    try {
      (void)recover::recover_bytes(b);
      FAIL("no error for " << part);
    } catch (const recover::RecoverError& e) {
      CHECK(e.part() == part);
      CHECK(e.offset() == offset);
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  SECTION("empty and short") {
    expect_error({}, "header", 0);
    expect_error(std::vector<std::byte>(good.begin(), good.begin() + 100), "header", 0);
  }
  SECTION("not a flight file") {
    auto b = good;
    b[0] = std::byte{'X'};
    expect_error(b, "header.magic", 0);
  }
  SECTION("header bit flip: checksum") {
    auto b = good;
    b[offsetof(flight::FileHeader, cpus)] ^= std::byte{4};
    expect_error(b, "header", offsetof(flight::FileHeader, header_crc));
  }
  SECTION("a clock name that is not one (checksum made valid)") {
    auto b = good;
    const char name[] = "a b";  // byte by byte through at(): gcc 12 took the memcpy's
                                // destination for an empty vector's (-Warray-bounds)
    for (size_t i = 0; i < sizeof name; ++i)
      b.at(offsetof(flight::FileHeader, clock) + i) = static_cast<std::byte>(name[i]);
    store_at<uint32_t>(b, offsetof(flight::FileHeader, header_crc),
                       flight::crc32_bytes(b.data(), offsetof(flight::FileHeader, header_crc)));
    expect_error(b, "header.clock", offsetof(flight::FileHeader, clock));
  }
  SECTION("truncated: an error with strict, else what precedes the cut") {
    auto b = good;
    b.resize(b.size() - 4096);
    try {
      (void)recover::recover_bytes(b, {.strict = true});
      FAIL("no error");
    } catch (const recover::RecoverError& e) {
      CHECK(e.part() == "header.file_size");
      CHECK(e.offset() == offsetof(flight::FileHeader, file_size));
    }
    const recover::RecoveredTrace whole = recover::recover_bytes(good);
    const recover::RecoveredTrace t = recover::recover_bytes(b);
    REQUIRE(!t.warnings.empty());
    CHECK(t.warnings.front().find("truncated: the header says") != std::string::npos);
    CHECK(t.records() <= whole.records());
    CHECK(t.cpus.size() == whole.cpus.size());
    // Cut inside the metadata log: nothing to read records with.
    b.resize(flight::kHeaderBytes + 100);
    expect_error(b, "header.meta_offset", offsetof(flight::FileHeader, meta_offset));
  }
  SECTION("half-written: died during creation") {
    auto b = good;
    store_at<uint32_t>(b, offsetof(flight::FileHeader, state), 0);
    expect_error(b, "header.state", offsetof(flight::FileHeader, state));
  }
  SECTION("tail word out of range") {
    auto b = good;
    const size_t cb = flight::kHeaderBytes + flight::kMetaCapacity;
    store_at<uint64_t>(b, cb, buffers::detail::make_tail(0, 77, 0));
    expect_error(b, "cpu 0 tail word", cb);
  }
  SECTION("a record whose length runs past its sub-buffer: warning, or error when strict") {
    auto b = good;
    const size_t page0 =
        flight::kHeaderBytes + flight::kMetaCapacity +
        buffers::ring_memory_layout({.cpus = 1, .size_per_cpu = 4096, .subbuf_size = 1024},
                                    buffers::OverflowMode::drop_newest)
            .pages_offset;
    store_at<uint32_t>(b, page0 + 48, buffers::detail::make_word(buffers::detail::kKindData, 5000));
    const auto t = recover::recover_bytes(b);
    REQUIRE(t.warnings.size() == 1);
    CHECK(t.warnings[0].find("cpu 0 sub-buffer 0") != std::string::npos);
    CHECK(t.warnings[0].find("offset " + std::to_string(page0 + 48)) != std::string::npos);
    CHECK(t.cpus[0].damaged == 1);
    CHECK(values(t).empty());  // the only sub-buffer is dropped whole, never shown in part
    try {
      (void)recover::recover_bytes(b, {.strict = true});
      FAIL("strict");
    } catch (const recover::RecoverError& e) {
      CHECK(e.part() == "cpu 0 sub-buffer 0");
      CHECK(e.offset() == page0 + 48);
    }
  }
  SECTION("a damaged metadata entry is skipped with a warning") {
    auto b = good;
    b[flight::kHeaderBytes + 20] ^= std::byte{1};  // inside the first entry (the cmdline)
    const auto t = recover::recover_bytes(b);
    REQUIRE(t.warnings.size() == 1);
    CHECK(t.warnings[0].find("metadata log (at offset 4096)") != std::string::npos);
    CHECK(values(t).size() == 20);
  }
  fs::remove_all(dir);
}

TEST_CASE("flight: live snapshots while writers wrap the ring: every record intact, no warning",
          "[recover]") {
  const fs::path dir = scratch("livewrap");
  InstanceOptions o = flight_options(dir, BufferMode::overwrite);
  o.buffer_size_kb = 16;  // wraps every few hundred records
  Instance inst(o);
  inst.enable(Sample::desc());
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (uint32_t t = 0; t < 2; ++t)
    ts.emplace_back([&, t] {
      char pad[48];
      for (uint32_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
        for (size_t k = 0; k < sizeof pad; ++k) pad[k] = static_cast<char>('a' + (i + k) % 26);
        (void)emit_sample(inst, t, i, std::string_view(pad, sizeof pad));
      }
    });
  uint64_t records = 0, raced = 0;
  // 50 snapshots, and more while none has found a record: on a loaded
  // machine the writers can overwrite every sub-buffer a snapshot reads
  // (each counted as raced), which is right, but checks nothing.
  for (int snap = 0; snap < 50 || (records == 0 && snap < 5000); ++snap) {
    const auto t = recover::recover_file(inst.flight_path(), {.live = true});
    CHECK(t.warnings.empty());
    for (const auto& w : t.warnings) WARN("recover warning: " << w);
    for (const auto& c : t.cpus) {
      raced += c.raced;
      std::map<uint32_t, uint32_t> last;  // per writer: its seqs rise in one CPU's buffer order
      for (const auto& r : c.records) {
        const auto p = c.payload(r);
        REQUIRE(p.size() == Sample::fixed_size);
        uint32_t value, seq;
        std::memcpy(&value, p.data() + 8, 4);
        std::memcpy(&seq, p.data() + 12, 4);
        REQUIRE(value < 2);
        for (size_t k = 0; k < 48; ++k)
          REQUIRE(static_cast<char>(p[16 + k]) == static_cast<char>('a' + (seq + k) % 26));
        if (auto it = last.find(value); it != last.end()) REQUIRE(seq > it->second);
        last[value] = seq;
        ++records;
      }
    }
  }
  stop = true;
  for (auto& t : ts) t.join();
  CHECK(records > 0);
  WARN("live snapshots: " << records << " records, " << raced
                          << " sub-buffers overwritten while read");
  fs::remove_all(dir);
}
