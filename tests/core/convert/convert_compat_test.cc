// tracepipe's own recordings, a recovered flight file, a damaged file and
// losses, converted and read back by the real readers (babeltrace2, protoc
// with Perfetto's schema), every record compared with trace-cmd report -R.
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>

#include "convert_check.h"
#include "convert_test_util.h"
#include "test_support.h"
#include "tracepipe/core/convert/converter.h"
#include "tracepipe/core/tracedat/kernel_page.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace fs = std::filesystem;
using namespace tp_convert_test;
namespace cv = tracepipe::convert;

namespace {

cv::ConvertStats convert_to(const fs::path& in, const fs::path& out, cv::Format f) {
  const auto reader = tracepipe::TraceDatReader::open(in);
  cv::ConvertOptions o;
  o.format = f;
  return cv::convert(reader, out, o);
}

void check_both(const fs::path& dat, const Scratch& s, bool expect_sideband_threads) {
  const auto want = tracecmd_records(dat, s.dir);
  REQUIRE(want.size() > 100);
  babeltrace_or_skip();
  perfetto_proto_or_skip();

  const auto st = convert_to(dat, s / "out.ctf", cv::Format::ctf);
  CHECK(st.records == want.size());
  CHECK(tp_test::read_file(s / "out.ctf" / "metadata").starts_with("/* CTF 1.8"));
  const auto bt = babeltrace_records(s / "out.ctf", s.dir);
  uint64_t stale = 0;
  CHECK(compare(want, bt, &stale) == "");
  uint64_t empty = 0;
  for (const auto& r : want)
    for (const auto& f : r.fields) empty += f.second.empty();
  CHECK(stale <= empty);

  const auto sp = convert_to(dat, s / "out.pftrace", cv::Format::perfetto);
  CHECK(sp.records == want.size());
  PerfettoExtras ex;
  const auto pf = protoc_records(s / "out.pftrace", s.dir, &ex);
  CHECK(compare(want, pf) == "");
  if (expect_sideband_threads) {
    // The sideband names this thread with its process as tgid.
    bool found = false;
    for (size_t i = 0; i < ex.threads.size(); ++i)
      found |= ex.threads[i].first == gettid() && ex.thread_tgids[i] == getpid();
    CHECK(found);
  }
}

}  // namespace

TEST_CASE("a tracepipe recording of declared events: every record and field in CTF and Perfetto") {
  Scratch s("declared");
  const fs::path dat = record_declared(s, 3000);
  check_both(dat, s, true);
}

TEST_CASE("a recovered flight file: every record and field in CTF and Perfetto") {
  Scratch s("flight");
  const fs::path dat = recover_flight(s, 3000);
  check_both(dat, s, false);
}

TEST_CASE(
    "a damaged page: the error names the file and offset, what came before is converted and "
    "valid") {
  Scratch s("damaged");
  const fs::path dat = record_declared(s, 4000);
  babeltrace_or_skip();
  perfetto_proto_or_skip();
  // Page 3 of the first CPU claims more committed bytes than a page holds.
  const auto reader0 = tracepipe::TraceDatReader::open(dat);
  REQUIRE(reader0.cpu_data().size() >= 1);
  const size_t ci = busiest_cpu(dat);
  const uint64_t at = page_offset(dat, ci, 3);
  poke_u64(dat, at + 8, 0x7ffffff);
  uint64_t before = 0;
  {
    const auto r = tracepipe::TraceDatReader::open(dat);
    auto c = r.cpu_records(ci);
    try {
      while (c.next()) ++before;
    } catch (const tracepipe::TraceDatError&) {
    }
  }
  REQUIRE(before > 0);
  for (const auto f : {cv::Format::ctf, cv::Format::perfetto}) {
    const fs::path out = s / (f == cv::Format::ctf ? "out.ctf" : "out.pftrace");
    const auto reader = tracepipe::TraceDatReader::open(dat);
    cv::ConvertOptions o;
    o.format = f;
    try {
      cv::convert(reader, out, o);
      FAIL("no error for a damaged page");
    } catch (const tracepipe::TraceDatError& e) {
      const std::string what = e.what();
      CHECK(what.find(dat.string()) != std::string::npos);
      CHECK(e.offset() == at + 8);
      CHECK(what.find("cpu") != std::string::npos);
    }
    const auto recs =
        f == cv::Format::ctf ? babeltrace_records(out, s.dir) : protoc_records(out, s.dir);
    uint64_t cpu0 = 0;
    for (const auto& r : recs) cpu0 += r.cpu == reader0.cpu_data()[ci].cpu;
    CHECK(cpu0 == before);
  }
}

TEST_CASE(
    "losses trace.dat marks: lost_events bundles and overrun in Perfetto, discarded events in "
    "CTF") {
  Scratch s("lost");
  const fs::path src = record_declared(s, 4000);
  babeltrace_or_skip();
  perfetto_proto_or_skip();
  // The same records rewritten with two losses on CPU 1: one of unknown
  // size (RB_MISSED_EVENTS alone), one of 1234 events (the count stored).
  const auto in = tracepipe::TraceDatReader::open(src);
  tracepipe::TraceDatWriter w({.cpus = 2});
  for (const auto& f : in.formats()) w.add_format(f);
  for (const auto& [pid, comm] : in.cmdlines()) w.set_cmdline(pid, comm);
  auto merged = in.records();
  uint64_t n = 0;
  while (auto r = merged.next()) {
    if (n == 700) w.add_lost(1, std::nullopt);
    if (n == 2500) w.add_lost(1, 1234);
    w.add_record(1, r->ts, r->payload);
    ++n;
  }
  const fs::path dat = s / "lost.dat";
  w.write(dat);
  // What the file holds: a stored count where the page had room, else
  // "some" (counted 1).
  uint64_t expect = 0, marks = 0;
  {
    const auto r = tracepipe::TraceDatReader::open(dat);
    auto c = r.cpu_records(1);
    while (auto rec = c.next()) {
      if (rec->lost_before) ++marks;
      expect += rec->lost_before > 0 ? static_cast<uint64_t>(rec->lost_before)
                : rec->lost_before   ? 1
                                     : 0;
    }
  }
  REQUIRE(marks == 2);

  const auto sp = convert_to(dat, s / "out.pftrace", cv::Format::perfetto);
  REQUIRE(sp.cpus.size() == 2);
  CHECK(sp.cpus[1].loss_marks == 2);
  CHECK(sp.cpus[1].lost_events == expect);
  PerfettoExtras ex;
  const auto pf = protoc_records(s / "out.pftrace", s.dir, &ex);
  CHECK(std::count(ex.lost_bundles.begin(), ex.lost_bundles.end(), 1u) == 2);
  bool overrun = false;
  for (const auto& [c, k] : ex.overrun) overrun |= c == 1 && k == expect;
  CHECK(overrun);
  CHECK(compare(tracecmd_records(dat, s.dir), pf) == "");

  convert_to(dat, s / "out.ctf", cv::Format::ctf);
  std::vector<std::pair<uint32_t, uint64_t>> lost;
  babeltrace_records(s / "out.ctf", s.dir, &lost);
  uint64_t total = 0;
  for (const auto& [c, k] : lost) total += k;
  CHECK(total == expect);
}

TEST_CASE("the CLI: a summary line, --to required, a damaged file named with its offset") {
  Scratch s("cli");
  const fs::path dat = record_declared(s, 500);
  const std::string tp = std::string(TP_BINARY_DIR) + "/tools/tracepipe";
  if (!fs::exists(tp)) tp_test::skip("build/tools/tracepipe is not built");
  auto r = tp_test::run_command(
      {tp, "convert", dat.string(), "-o", (s / "x.pftrace").string(), "--to", "perfetto"}, s.dir);
  CHECK(r.status == 0);
  CHECK(r.err.find("records from") != std::string::npos);
  r = tp_test::run_command({tp, "convert", dat.string(), "-o", (s / "y").string()}, s.dir);
  CHECK(r.status != 0);
  poke_u64(dat, page_offset(dat, busiest_cpu(dat), 1) + 8, 0x7ffffff);
  r = tp_test::run_command(
      {tp, "convert", dat.string(), "-o", (s / "z.ctf").string(), "--to", "ctf"}, s.dir);
  CHECK(r.status == 1);
  CHECK(r.err.find(dat.string() + ": cpu") != std::string::npos);
  CHECK(r.err.find("offset") != std::string::npos);
}

TEST_CASE(
    "a trace-cmd version 7 file (zstd) converts to the same Perfetto trace as its version 6 "
    "original") {
  const fs::path v6 = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  Scratch s("v7");
  const auto r = tp_test::run_command({"trace-cmd", "convert", "-i", v6.string(), "--file-version",
                                       "7", "-o", (s / "v7.dat").string()},
                                      s.dir);
  REQUIRE(r.status == 0);
  REQUIRE(tracepipe::TraceDatReader::open(s / "v7.dat").compression() == "zstd");
  const auto a = convert_to(v6, s / "v6.pftrace", cv::Format::perfetto);
  const auto b = convert_to(s / "v7.dat", s / "v7.pftrace", cv::Format::perfetto);
  CHECK(a.records == 257346);
  CHECK(b.records == a.records);
  CHECK(tp_test::read_file(s / "v6.pftrace") == tp_test::read_file(s / "v7.pftrace"));
  const auto c = convert_to(s / "v7.dat", s / "v7.ctf", cv::Format::ctf);
  CHECK(c.records == a.records);
}

TEST_CASE("named instances: --buffer picks one, each converts with its own records") {
  const fs::path dat = fs::path(TP_SOURCE_DIR) / "tests/core/tracedat/data/instances_zstd.dat";
  babeltrace_or_skip();
  Scratch s("instances");
  const auto reader = tracepipe::TraceDatReader::open(dat);
  REQUIRE(reader.buffers().size() >= 2);
  for (const auto& b : reader.buffers()) {
    uint64_t want = 0;
    auto m = reader.buffer_records(*reader.find_buffer(b.name));
    while (m.next()) ++want;
    cv::ConvertOptions o;
    o.format = cv::Format::ctf;
    o.buffer = b.name;
    const fs::path out = s / ("b-" + (b.name.empty() ? std::string("top") : b.name));
    CHECK(cv::convert(reader, out, o).records == want);
    CHECK(babeltrace_records(out, s.dir).size() == want);
  }
  cv::ConvertOptions o;
  o.buffer = "no-such-instance";
  CHECK_THROWS_AS(cv::convert(reader, s / "x.pftrace", o), std::invalid_argument);
}

namespace {
// Builds a payload: the kernel's common fields, then `body` at offset 8.
std::vector<std::byte> payload(uint16_t id, int32_t pid, const std::vector<uint8_t>& body) {
  std::vector<std::byte> p(8 + body.size());
  std::memcpy(p.data(), &id, 2);
  std::memcpy(p.data() + 4, &pid, 4);
  std::memcpy(p.data() + 8, body.data(), body.size());
  return p;
}
template <typename T>
void put_at(std::vector<uint8_t>& b, size_t at, T v) {
  if (b.size() < at + sizeof v) b.resize(at + sizeof v);
  std::memcpy(b.data() + at, &v, sizeof v);
}
std::string common_text() {
  std::string t;
  for (const auto& f : tracepipe::kernel_common_fields()) t += tracepipe::to_format_field_line(f);
  return t;
}
}  // namespace

TEST_CASE(
    "dynamic and fixed arrays, __rel_loc, and ftrace print's char buf[]: every field in CTF and "
    "Perfetto") {
  babeltrace_or_skip();
  perfetto_proto_or_skip();
  Scratch s("arrays");
  const auto arrays = tracepipe::parse_event_format(
      "name: arrays\nID: 900\nformat:\n" + common_text() +
          "\n\tfield:__data_loc u32[] ids;\toffset:8;\tsize:4;\tsigned:0;\n"
          "\tfield:unsigned long caller[4];\toffset:16;\tsize:32;\tsigned:0;\n"
          "\tfield:s16 vals[3];\toffset:48;\tsize:6;\tsigned:1;\n"
          "\tfield:__rel_loc char[] note;\toffset:56;\tsize:4;\tsigned:0;\n"
          "\tfield:int last;\toffset:60;\tsize:4;\tsigned:1;\n\n"
          "print fmt: \"last=%d\", REC->last\n",
      "demo");
  const auto print = tracepipe::parse_event_format(
      "name: print\nID: 5\nformat:\n" + common_text() +
          "\n\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
          "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:0;\n\n"
          "print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n",
      "ftrace");
  tracepipe::TraceDatWriter w({.cpus = 2});
  w.add_format(arrays);
  w.add_format(print);
  w.set_cmdline(4321, "demo-task");
  for (uint32_t i = 0; i < 300; ++i) {
    std::vector<uint8_t> b;  // offsets relative to 8
    const uint32_t nids = i % 4;
    const std::string note = i % 3 ? "note " + std::to_string(i) : "";
    const size_t ids_at = 64, note_at = ids_at + 4 * nids;
    put_at<uint32_t>(b, 0, static_cast<uint32_t>((4 * nids) << 16 | ids_at));
    for (uint32_t k = 0; k < 4; ++k)
      put_at<uint64_t>(b, 8 + 8 * k, 0xffffffff81000000ull + i * 16 + k);
    for (uint32_t k = 0; k < 3; ++k)
      put_at<int16_t>(b, 40 + 2 * k, static_cast<int16_t>(k == 1 ? -static_cast<int>(i) : i));
    // __rel_loc: offset from the end of the word (at 56, so from 60).
    put_at<uint32_t>(b, 48, static_cast<uint32_t>((note.size() + 1) << 16 | (note_at - 60)));
    put_at<int32_t>(b, 52, -static_cast<int32_t>(i));
    for (uint32_t k = 0; k < nids; ++k) put_at<uint32_t>(b, ids_at - 8 + 4 * k, 1000 + k * i);
    b.resize(note_at - 8 + note.size() + 1, 0);
    std::memcpy(b.data() + note_at - 8, note.c_str(), note.size() + 1);
    w.add_record(i % 2, 1000000 + i * 1000, payload(900, 4321, b));
    if (i % 50 == 0) {
      std::vector<uint8_t> pb;
      put_at<uint64_t>(pb, 0, 0xffffffff81234567ull);
      const std::string text = "hello world " + std::to_string(i);
      pb.resize(8 + text.size() + 1, 0);
      std::memcpy(pb.data() + 8, text.c_str(), text.size() + 1);
      w.add_record(i % 2, 1000000 + i * 1000 + 1, payload(5, 4321, pb));
    }
  }
  const fs::path dat = s / "arrays.dat";
  w.write(dat);
  const auto want = tracecmd_records(dat, s.dir);
  REQUIRE(want.size() == 306);
  convert_to(dat, s / "out.ctf", cv::Format::ctf);
  uint64_t stale = 0;
  CHECK(compare(want, babeltrace_records(s / "out.ctf", s.dir), &stale) == "");
  convert_to(dat, s / "out.pftrace", cv::Format::perfetto);
  CHECK(compare(want, protoc_records(s / "out.pftrace", s.dir)) == "");
}
