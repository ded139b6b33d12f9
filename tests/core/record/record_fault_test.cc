// A recording whose disk fills (a real tmpfs of a few hundred KiB, mounted
// by the test: needs root, else skipped): whatever the format, what was
// written stays whole and opens in the real readers (trace-cmd report,
// babeltrace2, protoc with Perfetto's schema), a trace.dat is no larger than
// its data even when the disk is full to its last block, and the counts add
// up: records in the output + the losses it marks + the events lost to the
// write error = the events emitted.
#include <fmt/format.h>
#include <sys/stat.h>
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <regex>
#include <string>

#include "../convert/convert_check.h"
#include "../convert/convert_test_util.h"
#include "../tracedat/tracedat_test_util.h"
#include "record_test_util.h"
#include "small_disk.h"
#include "test_support.h"
#include "tracepipe/core/record/page_batch.h"
#include "tracepipe/core/record/trace_file.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace fs = std::filesystem;
using namespace tracepipe;

namespace {

using Job = EventDecl<"app", "job", Int<"seq", uint32_t>, Int<"value", int64_t>, Chars<"name", 16>,
                      Str<"path">>;

using tp_test::SmallDisk;

uint64_t apparent_size(const fs::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_size);
}

// The end of a trace.dat's last CPU data (what the file must end with).
uint64_t data_end(const fs::path& p) {
  const auto r = TraceDatReader::open(p);
  uint64_t end = 0;
  for (const CpuDataInfo& d : r.cpu_data()) end = std::max(end, d.offset + d.size);
  return end;
}

std::string run_sh(const std::string& cmd) {
  const auto r = tp_test::run_command({"sh", "-c", cmd}, fs::temp_directory_path());
  REQUIRE(r.status == 0);
  return r.out;
}

// trace-cmd report: the job records and the sum of the [N EVENTS DROPPED] counts.
std::pair<uint64_t, uint64_t> report_counts(const fs::path& dat) {
  const std::string rep = run_sh(fmt::format("trace-cmd report -i {} 2>&1", dat.string()));
  const std::regex mark("\\[(\\d+) EVENTS DROPPED\\]");
  uint64_t jobs = 0, marked = 0;
  size_t at = 0;
  while (at < rep.size()) {
    size_t nl = rep.find('\n', at);
    if (nl == std::string::npos) nl = rep.size();
    const std::string line = rep.substr(at, nl - at);
    std::smatch m;
    if (std::regex_search(line, m, mark))
      marked += std::stoull(m[1]);
    else if (line.find(" job:") != std::string::npos)
      ++jobs;
    else
      CHECK(line.find("[EVENTS DROPPED]") == std::string::npos);  // every mark has its count
    at = nl + 1;
  }
  return {jobs, marked};
}

// Records jobs into `out` on `disk` until the disk is full, then some more
// (lost to the write error), from one thread: a 16 KiB drop-newest buffer
// that the recorder does not always keep up with.
struct Filled {
  record::RecorderStats stats;
  std::string error, summary;
  uint64_t emitted = 0;
};
Filled fill(const fs::path& out, record::OutputFormat format) {
  InstanceOptions o;
  o.buffer_size_kb = 16;
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  inst.enable(Job::desc());
  std::atomic<int> reports{0};
  Filled f;
  record::RecorderOptions ro;
  ro.output = out;
  ro.format = format;
  ro.on_error = [&](const std::string& m) {
    f.error = m;
    reports.fetch_add(1);
  };
  record::Recorder rec(inst, ro);
  const auto emit = [&](uint32_t n) {
    for (uint32_t i = 0; i < n; ++i, ++f.emitted)
      Job::emit(inst, static_cast<uint32_t>(f.emitted), -static_cast<int64_t>(f.emitted), "worker",
                "/a/path/of/some/length/to/fill/the/disk/sooner");
  };
  for (int round = 0; round < 2000 && reports.load() == 0; ++round) {
    emit(2000);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  REQUIRE(reports.load() == 1);
  emit(20000);  // after the fault: lost to the write error, in the ring or after it
  f.stats = rec.stop();
  CHECK(reports.load() == 1);
  f.summary = record::format_summary(f.stats, f.error, "tracepipe: ");
  INFO(f.summary);
  CHECK(f.error.find(std::strerror(ENOSPC)) != std::string::npos);
  CHECK(f.stats.failed);
  CHECK(f.stats.records > 0);
  CHECK(f.stats.unwritten > 0);
  CHECK(f.stats.unmarked <= f.stats.dropped);
  // Each event emitted is a record, a loss, or a record not written.
  CHECK(f.stats.records + f.stats.dropped + f.stats.unwritten == f.emitted);
  // The summary names what the output does not hold, and says so.
  CHECK(f.summary.find(fmt::format("{} events lost to the write error",
                                   f.stats.unwritten + f.stats.unmarked)) != std::string::npos);
  if (f.stats.unmarked != 0) CHECK(f.summary.find(", each marked in") == std::string::npos);
  return f;
}

// One page of `n` 8-byte records.
std::vector<std::byte> page_of(uint32_t from, uint32_t n, uint64_t ts0) {
  auto page = tp_record_test::pages_of(from, n, ts0);
  REQUIRE(page.size() == 4096);
  return page;
}

// The statistics of a one-CPU recording of `records` records to `output`,
// for the summary's wording.
record::RecorderStats one_cpu(std::string output, uint64_t records, bool collector = false) {
  record::RecorderStats st;
  st.output = std::move(output);
  st.collector = collector;
  st.cpus.resize(1);
  st.cpus[0].records = st.records = records;
  return st;
}

}  // namespace

TEST_CASE("trace file: a disk full to its last block is still compacted, no larger than its data",
          "[record][fault]") {
  SmallDisk disk("last-block", 1024);
  const fs::path out = disk / "full.dat";
  TraceDatWriter meta(TraceDatWriterConfig{2, 4096, "local"});
  meta.add_format(tp_record_test::rec_format());
  record::TraceFile tf(record::TraceFileOptions{.path = out, .cpu_region = 0, .v7 = std::nullopt},
                       meta);
  // One page at a time, CPU 0 and 1 in turn: the append that fails finds
  // not one free block (nothing of it was written, nothing to return).
  uint32_t seq = 0;
  int err = 0;
  uint64_t pages = 0;
  for (uint32_t cpu = 0; err == 0 && pages < 10000; cpu ^= 1) {
    err = tf.append(cpu, page_of(seq, 300, uint64_t{seq} * 10));
    if (err == 0) {
      seq += 300;
      ++pages;
    }
  }
  REQUIRE(err == ENOSPC);
  REQUIRE(pages > 10);
  const uint64_t cpu0 = tf.cpu_bytes(0), cpu1 = tf.cpu_bytes(1);
  CHECK(tf.finalize(meta) == 0);
  // Contiguous: CPU 1's data right after CPU 0's, the file ends with it.
  const auto r = TraceDatReader::open(out);
  REQUIRE(r.cpu_data().size() == 2);
  CHECK(r.cpu_data()[0].size == cpu0);
  CHECK(r.cpu_data()[1].size == cpu1);
  CHECK(r.cpu_data()[1].offset == r.cpu_data()[0].offset + cpu0);
  CHECK(apparent_size(out) == data_end(out));
  CHECK(apparent_size(out) <= 1024 * 1024);  // the whole disk: not CPU 1 at 16 GiB
  // Every record written is there, once.
  uint64_t n = 0;
  uint64_t sum = 0;
  auto m = r.records();
  while (auto rec = m.next()) {
    uint32_t s;
    std::memcpy(&s, rec->payload.data() + 4, 4);
    sum += s;
    ++n;
  }
  CHECK(n == seq);
  CHECK(sum == uint64_t{seq} * (seq - 1) / 2);
  if (tp_tracedat_test::have_trace_cmd())
    CHECK(std::stoull(run_sh(fmt::format("trace-cmd report -i {} 2>/dev/null | grep -c ' rec:'",
                                         out.string()))) == seq);
}

TEST_CASE("recorder: a disk full leaves a trace.dat of its data, losses counted by where they went",
          "[record][fault]") {
  SmallDisk disk("dat", 512);
  const fs::path out = disk / "full.dat";
  const Filled f = fill(out, record::OutputFormat::tracedat);
  CHECK(apparent_size(out) == data_end(out));
  CHECK(apparent_size(out) <= 512 * 1024);
  if (!tp_tracedat_test::have_trace_cmd()) return;
  const auto [jobs, marked] = report_counts(out);
  CHECK(jobs == f.stats.records);
  CHECK(marked == f.stats.dropped - f.stats.unmarked);
}

TEST_CASE("recorder: a CTF recording that fills the disk opens in babeltrace2", "[record][fault]") {
  tp_convert_test::babeltrace_or_skip();
  SmallDisk disk("ctf", 512);
  const fs::path out = disk / "full.ctf";
  const Filled f = fill(out, record::OutputFormat::ctf);
  tp_convert_test::Scratch s("recfault-ctf");
  std::vector<std::pair<uint32_t, uint64_t>> lost;
  std::vector<tp_convert_test::Rec> recs;
  REQUIRE_NOTHROW(recs = tp_convert_test::babeltrace_records(out, s.dir, &lost));
  CHECK(recs.size() == f.stats.records);
  uint64_t discarded = 0;
  for (const auto& [cpu, n] : lost) discarded += n;
  CHECK(discarded == f.stats.dropped - f.stats.unmarked);
  for (const auto& e : fs::directory_iterator(out))  // no temporary left to read as a stream
    CHECK(e.path().filename().string().find("tmp") == std::string::npos);
}

TEST_CASE("recorder: a Perfetto recording that fills the disk ends with whole packets",
          "[record][fault]") {
  (void)tp_convert_test::perfetto_proto_or_skip();
  SmallDisk disk("pf", 512);
  const fs::path out = disk / "full.pftrace";
  const Filled f = fill(out, record::OutputFormat::perfetto);
  tp_convert_test::Scratch s("recfault-pf");
  tp_convert_test::PerfettoExtras ex;
  std::vector<tp_convert_test::Rec> recs;
  REQUIRE_NOTHROW(recs = tp_convert_test::protoc_records(out, s.dir, &ex));
  CHECK(recs.size() == f.stats.records);
  // The closing statistics, when there was room for them, count what the file holds.
  uint64_t overrun = 0;
  for (const auto& [cpu, n] : ex.overrun) overrun += n;
  if (!ex.overrun.empty()) CHECK(overrun == f.stats.dropped - f.stats.unmarked);
}

TEST_CASE("recorder summary: losses whose marks were not written are not said to be marked",
          "[record]") {
  record::RecorderStats st = one_cpu("full.dat", 100);
  st.cpus[0].dropped = st.dropped = 30;
  st.cpus[0].lost_full = 30;
  st.cpus[0].unwritten = st.unwritten = 50;
  st.cpus[0].unmarked = st.unmarked = 30;
  std::string s = record::format_summary(st, std::string("writing: No space left"), "tp: ");
  INFO(s);
  CHECK(s.find("each marked") == std::string::npos);
  CHECK(s.find("none marked in full.dat") != std::string::npos);
  CHECK(s.find("tp: warning: 80 events lost to the write error, neither in full.dat nor marked "
               "there (50 recorded but not written, 30 dropped with their marks)") !=
        std::string::npos);
  st.unmarked = st.cpus[0].unmarked = 10;
  s = record::format_summary(st, std::string("writing: No space left"), "tp: ");
  CHECK(s.find("20 of them marked in full.dat where they happened ([EVENTS DROPPED]), 10 not") !=
        std::string::npos);
  CHECK(s.find("60 events lost to the write error") != std::string::npos);
  st.unmarked = st.cpus[0].unmarked = 0;
  st.unwritten = st.cpus[0].unwritten = 0;
  s = record::format_summary(st, std::nullopt, "tp: ");
  CHECK(s.find("each marked in full.dat where it happened ([EVENTS DROPPED])") !=
        std::string::npos);
  CHECK(s.find("write error") == std::string::npos);
}

TEST_CASE("recorder summary: with rotation the counts are the run's, and removed files are said",
          "[record]") {
  record::RecorderStats st = one_cpu("run.9.dat", 45000);
  st.files = 9;
  st.files_removed = 8;
  st.kept_files = {"run.9.dat"};
  std::string s = record::format_summary(st, std::nullopt, "tp: ");
  INFO(s);
  // It said "run.9.dat: 45000 records" of a file that holds the last few.
  CHECK(s.find("tp: run.9.dat and the 8 files before it: 45000 records") != std::string::npos);
  CHECK(s.find("tp: warning: 8 of the 9 files were removed to keep the newest 1 (max_files): "
               "their records, counted above, are no longer on disk; kept: run.9.dat to "
               "run.9.dat") != std::string::npos);
  st.files_removed = 0;
  st.kept_files.clear();
  s = record::format_summary(st, std::nullopt, "tp: ");
  CHECK(s.find("removed") == std::string::npos);
  st.files = 1;
  s = record::format_summary(st, std::nullopt, "tp: ");
  CHECK(s.find("tp: run.9.dat: 45000 records") != std::string::npos);
}

TEST_CASE(
    "recorder: a version 7 rewrite that does not fit keeps the file as version 6, and says so",
    "[record][fault]") {
  using Rnd = EventDecl<"app", "rnd", Int<"a", uint64_t>, Int<"b", uint64_t>, Int<"c", uint64_t>,
                        Int<"d", uint64_t>>;
  SmallDisk disk("v7", 2048);
  const fs::path out = disk / "v7.dat";
  InstanceOptions o;
  o.cpus = 1;
  o.buffer_size_kb = 4096;
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  inst.enable(Rnd::desc());
  record::RecorderOptions ro;
  ro.output = out;
  ro.file_version = 7;
  ro.compression = "zstd";
  std::string error;
  ro.on_error = [&](const std::string& m) { error = m; };
  record::Recorder rec(inst, ro);
  // Values zstd cannot shrink: the compressed copy needs as much room as
  // the recording, which the disk no longer has.
  uint64_t x = 88172645463325252ull;
  auto next = [&] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
  constexpr uint32_t kEvents = 30000;  // about 1.4 MB of data: twice that is over 2 MiB
  for (uint32_t i = 0; i < kEvents; ++i)
    REQUIRE(Rnd::emit(inst, next(), next(), next(), next()) == EmitResult::kept);
  const record::RecorderStats s = rec.stop();
  INFO(error);
  CHECK(s.records == kEvents);
  CHECK(error.find(out.string() + ": rewriting it as version 7 (it is kept, complete, as version "
                                  "6): No space left on device") != std::string::npos);
  const auto r = TraceDatReader::open(out);
  CHECK(r.version() == 6);
  uint64_t n = 0;
  auto m = r.records();
  while (m.next()) ++n;
  CHECK(n == kEvents);
  for (const auto& e : fs::directory_iterator(disk.dir))  // no temporary left
    CHECK(e.path() == out);
}

TEST_CASE("recorder summary: a full buffer is blamed on what the recorder waited for", "[record]") {
  record::RecorderStats st = one_cpu("collector db1:12345", 100, /*collector=*/true);
  st.cpus[0].dropped = st.dropped = 30;
  st.cpus[0].lost_full = 30;
  st.pass_ns = 10'000'000;
  st.longest_gap_ns = 3'000'000;
  // Busy: the passes' work was the recorder's own (CPU), writes did not wait.
  st.write_ns = 1'000'000;
  st.write_wait_ns = 100'000;
  st.longest_write_wait_ns = 50'000;
  std::string s = record::format_summary(st, std::nullopt, "tp: ");
  INFO(s);
  CHECK(s.find("(buffer full 30: the recorder did not keep up; a larger buffer_size_kb holds "
               "longer bursts)") != std::string::npos);
  // Half the passes' work waiting in writes: the output's fault.
  st.write_ns = 6'000'000;
  st.write_wait_ns = 5'000'000;
  s = record::format_summary(st, std::nullopt, "tp: ");
  CHECK(s.find("(buffer full 30: the output (collector db1:12345) did not take the data fast "
               "enough: the recorder waited for it up to 0.1 ms in one write, 5.0 ms in all, "
               "while writers filled the buffer; a larger buffer_size_kb rides out shorter "
               "stalls)") != std::string::npos);
  CHECK(s.find("did not keep up") == std::string::npos);
  // One write that waited as long as half the longest gap: the output's too.
  st.write_wait_ns = 2'000'000;
  st.longest_write_wait_ns = 1'500'000;
  s = record::format_summary(st, std::nullopt, "tp: ");
  CHECK(s.find("waited for it up to 1.5 ms in one write, 2.0 ms in all") != std::string::npos);
  // Writers that timed out in blocking mode keep their own advice.
  st.block_timed_out = 30;
  s = record::format_summary(st, std::nullopt, "tp: ");
  CHECK(s.find("writers waited the whole block time-out") != std::string::npos);
  CHECK(s.find("did not take the data") == std::string::npos);
}

TEST_CASE("recorder summary: a failed output says what it kept", "[record]") {
  record::RecorderStats st = one_cpu("full.dat", 100);
  std::string s = record::format_summary(st,
                                         std::string("recording to full.dat: writing: No "
                                                     "space left on device"),
                                         "tp: ");
  INFO(s);
  CHECK(s.find("tp: warning: the recording failed: recording to full.dat: writing: No space left "
               "on device; full.dat keeps the 100 records written before it\n") !=
        std::string::npos);
  st.records = st.cpus[0].records = 0;
  s = record::format_summary(st, std::string("x"), "tp: ");
  CHECK(s.find("tp: warning: the recording failed: x; full.dat keeps no record\n") !=
        std::string::npos);
  st.output = "collector db1:12345";
  st.collector = true;
  s = record::format_summary(st, std::string("x"), "tp: ");
  CHECK(s.find("tp: warning: the recording failed: x; no record was sent\n") != std::string::npos);
  st.records = st.cpus[0].records = 7;
  s = record::format_summary(st, std::string("x"), "tp: ");
  CHECK(s.find("tp: warning: the recording failed: x; the 7 records before it were sent\n") !=
        std::string::npos);
}

TEST_CASE("recorder summary: a collector's bytes are sent, and those unacknowledged are said",
          "[record]") {
  record::RecorderStats st = one_cpu("collector db1:12345", 100, /*collector=*/true);
  st.cpus[0].bytes = st.bytes = 8192;
  std::string s = record::format_summary(st, std::nullopt, "tp: ");
  INFO(s);
  CHECK(s.find("tp: CPU 0: 100 records, 8192 bytes sent\n") != std::string::npos);
  CHECK(s.find("tp: collector db1:12345: 100 records, 8192 bytes sent, 0 dropped\n") !=
        std::string::npos);
  CHECK(s.find("acknowledged") == std::string::npos);
  st.unacked_bytes = 4096;
  s = record::format_summary(st, std::nullopt, "tp: ");
  CHECK(s.find("tp: warning: 4096 bytes sent to collector db1:12345 were not acknowledged by its "
               "host when the connection closed: they may not have arrived\n") !=
        std::string::npos);
  // A file's bytes are written, not sent.
  st.collector = false;
  st.unacked_bytes = 0;
  st.output = "out.dat";
  s = record::format_summary(st, std::nullopt, "tp: ");
  CHECK(s.find("tp: out.dat: 100 records, 8192 bytes, 0 dropped\n") != std::string::npos);
}
