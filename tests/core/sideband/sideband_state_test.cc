// Replaying sideband records: names in trace order, mappings, round
// completeness, malformed input, reading a trace.dat's formats.
#include <catch2/catch.hpp>

#include "sideband_test_util.h"
#include "test_support.h"

using namespace tracepipe;
using namespace tp_sideband_test;
using namespace tracepipe::sideband;

namespace {

template <class Decl, class... A>
std::vector<std::byte> make(const EventDesc& d, int32_t common_pid, A... a) {
  std::vector<std::byte> rec(Decl::record_size(a...));
  const CommonHeader h{d.id(), 0, 0, common_pid};
  std::memcpy(rec.data(), &h, sizeof h);
  Decl::write_fields(rec.data(), a...);
  return rec;
}

const SidebandEvents& ev() { return SidebandEvents::global(); }

std::vector<std::byte> comm_rec(int32_t tid, std::string_view c,
                                CommReason why = CommReason::first_write) {
  return make<TaskComm>(ev().task_comm(), tid, 100, tid, c, std::string_view{},
                        static_cast<uint8_t>(why));
}
std::vector<std::byte> newtask_rec(uint32_t synth, int32_t tid, std::string_view c) {
  return make<TaskNewtask>(ev().task_newtask(), 1, 100, tid, 0, synth, c, uint64_t{0});
}
std::vector<std::byte> mmap_rec(uint32_t synth, uint64_t addr, uint64_t len,
                                std::string_view path) {
  return make<Mmap>(ev().mmap(), 1, 100, 100, synth, 5u, 2u, 0u, 0u, path, addr, len, uint64_t{0},
                    uint64_t{0});
}
std::vector<std::byte> done_rec(uint32_t synth, uint32_t threads, uint32_t maps, uint32_t lost,
                                uint64_t records) {
  return make<SynthDone>(ev().synth_done(), 1, synth, threads, maps, lost, records);
}

}  // namespace

TEST_CASE("sideband state: the last name in trace order wins, and exits keep the name",
          "[sideband][state]") {
  SidebandState sb;
  CHECK(sb.observe(comm_rec(7, "first")) == SidebandKind::task_comm);
  CHECK(sb.comm(7) == "first");
  CHECK(sb.observe(make<TaskComm>(ev().task_comm(), 7, 100, 7, std::string_view("second"),
                                  std::string_view("first"), uint8_t{1})) ==
        SidebandKind::task_comm);
  CHECK(sb.comm(7) == "second");
  CHECK(sb.observe(make<TaskExit>(ev().task_exit(), 7, 100, 7, std::string_view("second"))) ==
        SidebandKind::task_exit);
  REQUIRE(sb.task(7) != nullptr);
  CHECK(sb.task(7)->exited);
  CHECK(sb.task(7)->pid == 100);
  CHECK(sb.comm(7) == "second");
  CHECK_FALSE(sb.comm(8).has_value());
  // A 16-byte comm without NUL is cut to the kernel's 15.
  sb.observe(comm_rec(9, "0123456789abcdefXYZ"));
  CHECK(sb.comm(9) == "0123456789abcde");
  const auto cl = sb.cmdlines();
  REQUIRE(cl.size() == 2);
  CHECK(cl[0].pid == 7);
  CHECK(cl[0].comm == "second");
  CHECK(cl[1].pid == 9);
  CHECK(sb.observed() == 4);
  CHECK(sb.malformed() == 0);
}

TEST_CASE("sideband state: rounds are complete only with synth_done, no loss and every record seen",
          "[sideband][state]") {
  SidebandState sb;
  // Round 1: complete.
  sb.observe(newtask_rec(1, 10, "a"));
  sb.observe(mmap_rec(1, 0x1000, 0x1000, "/x"));
  sb.observe(done_rec(1, 1, 1, 0, 2));
  // Round 2: its first record was overwritten (2 kept, 1 seen).
  sb.observe(mmap_rec(2, 0x5000, 0x1000, "/y"));
  sb.observe(done_rec(2, 1, 1, 0, 2));
  // Round 2 restated the mappings: /x is gone, /y is there.
  CHECK(sb.mapping_at(0x1800) == nullptr);
  REQUIRE(sb.mapping_at(0x5800) != nullptr);
  CHECK(sb.mapping_at(0x5800)->filename == "/y");
  // Round 3: loss reported by synth_done.
  sb.observe(newtask_rec(3, 10, "a"));
  sb.observe(done_rec(3, 1, 0, 4, 1));
  // Round 4: no synth_done (it was lost).
  sb.observe(newtask_rec(4, 10, "a"));
  const auto r = sb.rounds();
  REQUIRE(r.size() == 4);
  CHECK(r[0].synth == 1);
  CHECK(r[0].complete());
  CHECK(r[0].seen == 2);
  CHECK_FALSE(r[1].complete());
  CHECK(r[1].seen == 1);
  CHECK(r[1].records == 2);
  CHECK_FALSE(r[2].complete());
  CHECK(r[2].lost == 4);
  CHECK_FALSE(r[3].complete());
  CHECK_FALSE(r[3].done);
  CHECK(sb.mappings().empty());  // rounds 3 and 4 restated no mapping
}

TEST_CASE("sideband state: a mapping replaces the ones it overlaps", "[sideband][state]") {
  SidebandState sb;
  sb.observe(mmap_rec(0, 0x1000, 0x3000, "/a"));  // [0x1000, 0x4000)
  sb.observe(mmap_rec(0, 0x5000, 0x1000, "/b"));  // [0x5000, 0x6000)
  sb.observe(mmap_rec(0, 0x8000, 0x1000, "/c"));
  sb.observe(mmap_rec(0, 0x3000, 0x2800, "/d"));  // [0x3000, 0x5800): overlaps /a and /b
  CHECK(sb.mappings().size() == 2);
  CHECK(sb.mapping_at(0x1000) == nullptr);
  REQUIRE(sb.mapping_at(0x57ff) != nullptr);
  CHECK(sb.mapping_at(0x57ff)->filename == "/d");
  CHECK(sb.mapping_at(0x5800) == nullptr);
  CHECK(sb.mapping_at(0x8000)->filename == "/c");
  CHECK(sb.rounds().empty());  // live records form no round
}

TEST_CASE("sideband state: malformed records are counted, never read out of bounds",
          "[sideband][state]") {
  SidebandState sb;
  // Too short for the format.
  auto rec = comm_rec(5, "x");
  rec.resize(30);
  CHECK_FALSE(sb.observe(rec).has_value());
  // A __data_loc pointing past the end.
  auto mm = mmap_rec(0, 0x1000, 0x1000, "/lib/libc.so.6");
  const uint32_t bad = (200u << 16) | 72u;
  std::memcpy(mm.data() + 36, &bad, 4);
  CHECK_FALSE(sb.observe(mm).has_value());
  // A zero-length mapping.
  CHECK_FALSE(sb.observe(mmap_rec(0, 0x1000, 0, "/z")).has_value());
  // Shorter than a common header, and an unknown ID: not sideband, not malformed.
  std::vector<std::byte> tiny(4);
  CHECK_FALSE(sb.observe(tiny).has_value());
  auto other = comm_rec(5, "x");
  const uint16_t id = 1;
  std::memcpy(other.data(), &id, 2);
  CHECK_FALSE(sb.observe(other).has_value());
  CHECK(sb.malformed() == 3);
  CHECK(sb.observed() == 0);
  CHECK(sb.cmdlines().empty());
  CHECK(sb.mappings().empty());
  // Every truncation of a good record: no crash, never a half-decoded name.
  const auto good = mmap_rec(0, 0x9000, 0x1000, "/lib/ok.so");
  for (size_t n = 0; n < good.size(); ++n) {
    SidebandState s2;
    const auto k = s2.observe(std::span(good.data(), n));
    CHECK_FALSE(k.has_value());
  }
}

TEST_CASE("sideband state: formats from a trace (other IDs) are found by name",
          "[sideband][state]") {
  std::vector<EventFormat> formats = sideband_formats();
  uint32_t id = 500;
  for (EventFormat& f : formats) f.id = id++;
  formats.push_back(Seen::make_format());
  formats.back().id = 499;
  SidebandState sb(formats);
  auto rec = comm_rec(3, "fromfile");
  const uint16_t comm_id = 500;
  std::memcpy(rec.data(), &comm_id, 2);
  CHECK(sb.observe(rec) == SidebandKind::task_comm);
  CHECK(sb.comm(3) == "fromfile");
  // The global registry's ID means nothing in this trace.
  CHECK_FALSE(sb.observe(comm_rec(4, "x")).has_value());
}
