// trace.dat version 7 (zstd, trace-cmd 3.1's default) from the recorder:
// trace-cmd report prints the same records as from the version 6 recording
// of the same events; our reader opens it too; a collector gets version 7.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "collector.h"
#include "record_test_util.h"
#include "test_support.h"
#include "tracepipe/core/record/recorder.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_core_test;
using tp_record_test::big_options;
using tp_record_test::Collector;
using tp_record_test::emit_range;
using tp_record_test::report_records;
using tp_tracedat_test::have_trace_cmd;
using tp_tracedat_test::run;
using tp_tracedat_test::TempPath;

namespace {

constexpr uint32_t kEvents = 20000;

// kEvents samples (seq 0..) over up to two CPUs, recorded with `ro`.
record::RecorderStats record_events(record::RecorderOptions ro) {
  const int cpus = static_cast<int>(std::min(2u, std::thread::hardware_concurrency()));
  Instance inst(big_options());
  inst.enable(Sample::desc());
  record::Recorder rec(inst, ro);
  uint64_t kept = 0;
  for (uint32_t at = 0; at < kEvents; at += 1000)
    kept += emit_range(inst, at, at + 1000, static_cast<int>(at / 1000) % cpus);
  const record::RecorderStats s = rec.stop();
  REQUIRE(!rec.error());
  CHECK(kept == kEvents);
  CHECK(s.records == kEvents);
  CHECK(s.dropped == 0);
  return s;
}

using tp_record_test::sample_seqs;

std::string file_version(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  char h[12] = {};
  in.read(h, sizeof h);
  return std::string(h + 10, 1);
}

}  // namespace

TEST_CASE("v7: a zstd recording prints the same records in trace-cmd report as the v6 one",
          "[record][v7]") {
  TempPath v6("v7_cmp6.dat"), v7("v7_cmp7.dat");
  record::RecorderOptions o6;
  o6.output = v6.path;
  (void)record_events(o6);
  record::RecorderOptions o7;
  o7.output = v7.path;
  o7.file_version = 7;  // compression "zstd" by default
  (void)record_events(o7);
  CHECK(file_version(v6.path) == "6");
  REQUIRE(file_version(v7.path) == "7");
  CHECK_FALSE(std::filesystem::exists(v7.path.string() + ".v7.tmp"));
  {
    const auto r = TraceDatReader::open(v7.path);
    CHECK(r.compression() == "zstd");
  }
  // Compressed: 20000 near-identical 64-byte records shrink a lot.
  CHECK(std::filesystem::file_size(v7.path) * 4 < std::filesystem::file_size(v6.path));
  const auto s6 = sample_seqs(v6.path), s7 = sample_seqs(v7.path);
  CHECK(s6.size() == kEvents);
  CHECK(s7 == s6);
  if (!have_trace_cmd())
    TP_SKIP("trace-cmd is not installed: the files were checked with our reader only");
  const auto want = report_records(v6.path);
  const auto got = report_records(v7.path);
  REQUIRE(want.size() == kEvents);
  CHECK(got == want);
}

TEST_CASE("v7: zlib and none are written as trace-cmd writes them", "[record][v7]") {
  for (const char* algo : {"zlib", "none"}) {
    INFO(algo);
    TempPath out(fmt::format("v7_{}.dat", algo));
    record::RecorderOptions o;
    o.output = out.path;
    o.file_version = 7;
    o.compression = algo;
    (void)record_events(o);
    REQUIRE(file_version(out.path) == "7");
    CHECK(TraceDatReader::open(out.path).compression() == algo);
    CHECK(sample_seqs(out.path).size() == kEvents);
    // Debian's trace-cmd 3.1.6 is built with zstd only (trace-cmd list -c).
    const bool readable =
        std::string(algo) == "none" || run("trace-cmd list -c").find(algo) != std::string::npos;
    if (have_trace_cmd() && readable) CHECK(report_records(out.path).size() == kEvents);
  }
  Instance inst(big_options());
  record::RecorderOptions bad;
  bad.output = "never.dat";
  bad.file_version = 7;
  bad.compression = "lz4";
  CHECK_THROWS_AS(record::Recorder(inst, bad), std::invalid_argument);
  bad.file_version = 8;
  CHECK_THROWS_AS(record::Recorder(inst, bad), std::invalid_argument);
}

TEST_CASE("v7: an empty recording is a valid version 7 file", "[record][v7]") {
  TempPath out("v7_empty.dat");
  Instance inst(big_options());
  inst.enable(Sample::desc());
  record::RecorderOptions o;
  o.output = out.path;
  o.file_version = 7;
  record::Recorder rec(inst, o);
  const auto s = rec.stop();
  REQUIRE(!rec.error());
  CHECK(s.records == 0);
  REQUIRE(file_version(out.path) == "7");
  CHECK(sample_seqs(out.path).empty());
  if (have_trace_cmd())
    CHECK_NOTHROW(run(fmt::format("trace-cmd report -i {}", out.path.string())));
}

TEST_CASE("v7: a collector given version 7 headers writes a zstd file with the same records",
          "[record][v7][net]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  Collector col;
  if (!col.ok()) TP_SKIP("cannot start trace-cmd listen: " + col.why());
  TempPath local("v7_net_local.dat");
  record::RecorderOptions lo;
  lo.output = local.path;
  (void)record_events(lo);
  record::RecorderOptions no;
  no.collector = col.address();
  no.file_version = 7;
  (void)record_events(no);
  const auto file = col.wait_file();
  INFO(col.log());
  REQUIRE(file);
  REQUIRE(file_version(*file) == "7");
  CHECK(TraceDatReader::open(*file).compression() == "zstd");
  CHECK(sample_seqs(*file) == sample_seqs(local.path));
  CHECK(report_records(*file) == report_records(local.path));
}
