// Recording without code changes: the config's [recording] table, and
// `tracepipe record -- COMMAND` running a program that only traces
// (examples/record_env.cc) or one that does not use tracepipe at all.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "../convert/convert_check.h"
#include "../convert/convert_test_util.h"
#include "../tracedat/tracedat_test_util.h"
#include "collector.h"
#include "test_support.h"
#include "tracepipe/core/config/config.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using tp_tracedat_test::have_trace_cmd;
using tp_tracedat_test::run;
using tp_tracedat_test::TempPath;

namespace {
uint64_t count_records(const std::filesystem::path& p) {
  const auto r = TraceDatReader::open(p);
  uint64_t n = 0;
  auto m = r.records();
  while (m.next()) ++n;
  return n;
}
}  // namespace

TEST_CASE("config: [recording] keys, and errors at their line", "[record][config]") {
  // `cpu` must be one this process may run on: the last allowed one.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  int cpu = 0;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &allowed)) cpu = i;
  const Config c = parse_config(
      "mode = \"drop_newest\"\n"
      "[recording]\n"
      "output = \"x.dat\"\n"
      "mode = \"flight_recorder\"\n"
      "watermark_percent = 50\n"
      "flush_interval_ms = 20\n"
      "max_poll_interval_us = 100\n"
      "max_file_kb = 1024\n"
      "max_files = 4\n"
      "realtime_priority = 10\n" +
          fmt::format("cpu = {}\n", cpu),
      "r.toml");
  REQUIRE(c.recording.has_value());
  CHECK(c.recording->output == "x.dat");
  CHECK(c.recording->flight_recorder);
  CHECK(c.recording->watermark_percent == 50);
  CHECK(c.recording->flush_interval_ms == 20);
  CHECK(c.recording->max_poll_interval_us == 100);
  CHECK(c.recording->max_file_kb == 1024);
  CHECK(c.recording->max_files == 4);
  CHECK(c.recording->realtime_priority == 10);
  CHECK(c.recording->cpu == cpu);
  // A CPU the recorder could not be pinned to was accepted, and the pinning
  // failed unseen.
  CHECK_THROWS_WITH(parse_config("[recording]\ncpu = 4095\n", "r.toml"),
                    "r.toml:2: recording.cpu: CPU 4095 is not one this process may run on (see "
                    "taskset -p, nproc); -1 pins nothing");
  CHECK(parse_config("[recording]\n", "r.toml").recording->realtime_priority == 0);
  CHECK(parse_config("[recording]\n", "r.toml").recording->cpu == -1);
  CHECK_THROWS_WITH(parse_config("[recording]\nrealtime_priority = 100\n", "r.toml"),
                    "r.toml:2: recording.realtime_priority: value 100 is outside 0..99");
  CHECK(!parse_config("mode = \"overwrite\"\n", "r.toml").recording.has_value());
  CHECK_THROWS_WITH(parse_config("[recording]\nwatermark_percent = 101\n", "r.toml"),
                    "r.toml:2: recording.watermark_percent: value 101 is outside 0..100");
  CHECK_THROWS_WITH(parse_config("[recording]\nmode = \"tape\"\n", "r.toml"),
                    "r.toml:2: recording.mode: unknown recording mode 'tape' (expected stream or "
                    "flight_recorder)");
  try {
    parse_config("[recording]\noutptu = \"x\"\n", "r.toml");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(e.line() == 2);
    CHECK(std::string(e.what()).find("did you mean 'output'") != std::string::npos);
  }
  // Only the top level records.
  CHECK_THROWS_AS(parse_config("[instances.x.recording]\noutput = \"y\"\n", "r.toml"), ConfigError);
}

TEST_CASE("tracepipe record: a program that only traces records through the environment",
          "[record][cli]") {
  TempPath out("cli_record.dat");
  const std::string cmd =
      fmt::format("cd {}/examples && {} record --config record.toml -o {} -- {} --work",
                  TP_SOURCE_DIR, TP_TRACEPIPE_EXE, out.path.string(), TP_RECORD_ENV_EXE);
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(count_records(out.path) == 10000);
  if (have_trace_cmd()) {
    const std::string n =
        run(fmt::format("trace-cmd report -i {} | grep -c 'order:'", out.path.string()));
    CHECK(std::stoull(n) == 10000);
  }
}

TEST_CASE("tracepipe record: a command that traced nothing still leaves a valid trace",
          "[record][cli]") {
  TempPath out("cli_empty.dat");
  REQUIRE(std::system(fmt::format("{} record -o {} -- true 2>/dev/null", TP_TRACEPIPE_EXE,
                                  out.path.string())
                          .c_str()) == 0);
  CHECK(count_records(out.path) == 0);
  if (have_trace_cmd())
    CHECK_NOTHROW(run(fmt::format("trace-cmd report -i {}", out.path.string())));
  // The command's exit status is tracepipe's.
  const int rc = std::system(fmt::format("{} record -o {} -- sh -c 'exit 3' 2>/dev/null",
                                         TP_TRACEPIPE_EXE, out.path.string())
                                 .c_str());
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 3);
}

TEST_CASE("tracepipe record: a command that cannot run exits 127 or 126, as the shell does",
          "[record][cli]") {
  TempPath out("cli_norun.dat");
  const std::string err =
      (std::filesystem::temp_directory_path() / ("cli_norun_" + std::to_string(::getpid())))
          .string();
  int rc = std::system(fmt::format("{} record -o {} -- /nonexistent/cmd 2>{}", TP_TRACEPIPE_EXE,
                                   out.path.string(), err)
                           .c_str());
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 127);
  std::ifstream in(err);
  const std::string msg(std::istreambuf_iterator<char>(in), {});
  CHECK(msg == "tracepipe record: cannot run /nonexistent/cmd: No such file or directory\n");
  // Found but not executable: 126.
  TempPath plain("cli_norun_plain");
  std::ofstream(plain.path) << "not a program\n";
  rc = std::system(fmt::format("{} record -o {} -- {} 2>/dev/null", TP_TRACEPIPE_EXE,
                               out.path.string(), plain.path.string())
                       .c_str());
  REQUIRE(WIFEXITED(rc));
  CHECK(WEXITSTATUS(rc) == 126);
  std::filesystem::remove(err);
}

TEST_CASE("config: [recording] collector, file_version and compression", "[record][config]") {
  const Config c = parse_config(
      "[recording]\ncollector = \"host:1234\"\nfile_version = 7\ncompression = \"none\"\n",
      "r.toml");
  REQUIRE(c.recording.has_value());
  CHECK(c.recording->collector == "host:1234");
  CHECK(c.recording->output.empty());
  CHECK(c.recording->file_version == 7);
  CHECK(c.recording->compression == "none");
  CHECK(parse_config("[recording]\ncollector = \"4321\"\n", "r.toml").recording->collector ==
        "4321");
  CHECK_THROWS_WITH(
      parse_config("[recording]\noutput = \"x.dat\"\ncollector = \"h:1\"\n", "r.toml"),
      "r.toml:3: recording.collector: output and collector both given (choose one)");
  CHECK_THROWS_WITH(
      parse_config("[recording]\ncollector = \"host\"\n", "r.toml"),
      "r.toml:2: recording.collector: expected HOST:PORT (as trace-cmd record -N takes it)");
  CHECK_THROWS_WITH(parse_config("[recording]\nfile_version = 8\n", "r.toml"),
                    "r.toml:2: recording.file_version: value 8 is outside 6..7");
  CHECK_THROWS_WITH(
      parse_config("[recording]\ncompression = \"lz4\"\n", "r.toml"),
      "r.toml:2: recording.compression: unknown compression 'lz4' (expected zstd, zlib or none)");
}

TEST_CASE("tracepipe record --file-version 7: the command's recording is a zstd version 7 file",
          "[record][cli][v7]") {
  TempPath out("cli_record_v7.dat");
  const std::string cmd = fmt::format(
      "cd {}/examples && {} record --config record.toml --file-version 7 -o {} -- {} --work",
      TP_SOURCE_DIR, TP_TRACEPIPE_EXE, out.path.string(), TP_RECORD_ENV_EXE);
  REQUIRE(std::system(cmd.c_str()) == 0);
  CHECK(TraceDatReader::open(out.path).compression() == "zstd");
  CHECK(count_records(out.path) == 10000);
  if (have_trace_cmd()) {
    const std::string n =
        run(fmt::format("trace-cmd report -i {} | grep -c 'order:'", out.path.string()));
    CHECK(std::stoull(n) == 10000);
  }
}

TEST_CASE("tracepipe record -N: the command's recording reaches trace-cmd listen",
          "[record][cli][net]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  tp_record_test::Collector col;
  if (!col.ok()) TP_SKIP("cannot start trace-cmd listen: " + col.why());
  const std::string cmd =
      fmt::format("cd {}/examples && {} record -q --config record.toml -N {} -- {} --work",
                  TP_SOURCE_DIR, TP_TRACEPIPE_EXE, col.address(), TP_RECORD_ENV_EXE);
  // Short sessions, back to back: each ends its data within milliseconds of
  // its headers, the case where a late MSG_FIN_DATA made trace-cmd listen
  // log "reading client -4" and "Message: cmd=4 size=12" (its poll for
  // FIN_DATA interrupted by its readers' exit).
  for (int i = 0; i < 6; ++i) REQUIRE(std::system(cmd.c_str()) == 0);
  const auto file = col.wait_file();
  INFO(col.log());
  REQUIRE(file);
  CHECK(count_records(*file) == 10000);
  const std::string n =
      run(fmt::format("trace-cmd report -i {} | grep -c 'order:'", file->string()));
  CHECK(std::stoull(n) == 10000);
  CHECK(col.log().find("reading client") == std::string::npos);
  CHECK(col.log().find("Message: cmd=") == std::string::npos);
}

TEST_CASE("tracepipe record -N: a command that traced nothing still sends a valid trace",
          "[record][cli][net]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  tp_record_test::Collector col;
  if (!col.ok()) TP_SKIP("cannot start trace-cmd listen: " + col.why());
  const std::string cmd =
      fmt::format("{} record -N {} -- true 2>/dev/null", TP_TRACEPIPE_EXE, col.address());
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto file = col.wait_file();
  INFO(col.log());
  REQUIRE(file);
  CHECK(count_records(*file) == 0);
  CHECK_NOTHROW(run(fmt::format("trace-cmd report -i {}", file->string())));
  // Neither -o nor -N, or both: refused before the command runs.
  CHECK(std::system(fmt::format("{} record -- true 2>/dev/null", TP_TRACEPIPE_EXE).c_str()) != 0);
  CHECK(std::system(
            fmt::format("{} record -o x.dat -N 1 -- true 2>/dev/null", TP_TRACEPIPE_EXE).c_str()) !=
        0);
}

TEST_CASE("config: [recording] format, and a collector refused with it",
          "[record][config][format]") {
  CHECK(parse_config("[recording]\n", "r.toml").recording->format == "tracedat");
  CHECK(parse_config("[recording]\noutput = \"x.ctf\"\nformat = \"ctf\"\n", "r.toml")
            .recording->format == "ctf");
  CHECK(parse_config("[recording]\nformat = \"perfetto\"\n", "r.toml").recording->format ==
        "perfetto");
  CHECK_THROWS_WITH(
      parse_config("[recording]\nformat = \"json\"\n", "r.toml"),
      "r.toml:2: recording.format: unknown format 'json' (expected tracedat, perfetto or ctf)");
  CHECK_THROWS_WITH(parse_config("[recording]\ncollector = \"h:1\"\nformat = \"ctf\"\n", "r.toml"),
                    "r.toml:3: recording.format: format ctf with a collector: trace-cmd listen "
                    "takes trace.dat only");
}

TEST_CASE("tracepipe record --format ctf|perfetto: the command's recording in each format",
          "[record][cli][format]") {
  tp_convert_test::babeltrace_or_skip();
  tp_convert_test::perfetto_proto_or_skip();
  tp_convert_test::Scratch s("record-cli-format");
  const auto count = [](const std::vector<tp_convert_test::Rec>& v) {
    return std::count_if(v.begin(), v.end(),
                         [](const tp_convert_test::Rec& r) { return r.event == "order"; });
  };
  for (const std::string format : {"ctf", "perfetto"}) {
    INFO(format);
    const std::filesystem::path out = s / ("app." + format);
    const std::filesystem::path err = s / "err.txt";
    const std::string cmd = fmt::format(
        "cd {}/examples && {} record --config record.toml --format {} -o {} -- {} --work 2>{}",
        TP_SOURCE_DIR, TP_TRACEPIPE_EXE, format, out.string(), TP_RECORD_ENV_EXE, err.string());
    REQUIRE(std::system(cmd.c_str()) == 0);
    if (format == "ctf")
      CHECK(count(tp_convert_test::babeltrace_records(out, s.dir)) == 10000);
    else
      CHECK(count(tp_convert_test::protoc_records(out, s.dir)) == 10000);
    // The summary, as for trace.dat.
    CHECK(tp_test::read_file(err).find(out.string() + ": 10000 records") != std::string::npos);
  }
}

TEST_CASE(
    "tracepipe record --format: refused with -N and with trace.dat's options, and nothing traced "
    "is an empty trace",
    "[record][cli][format]") {
  TempPath err("cli_record_fmt_n.err");
  int rc = std::system(fmt::format("{} record --format ctf -N localhost:12345 -- true 2>{}",
                                   TP_TRACEPIPE_EXE, err.path.string())
                           .c_str());
  CHECK(WEXITSTATUS(rc) != 0);
  CHECK(tp_test::read_file(err.path).find("trace-cmd listen takes trace.dat only") !=
        std::string::npos);
  TempPath pf("cli_record_fmt_empty.pftrace");
  rc = std::system(fmt::format("{} record --format perfetto --file-version 7 -o {} -- true 2>{}",
                               TP_TRACEPIPE_EXE, pf.path.string(), err.path.string())
                       .c_str());
  CHECK(WEXITSTATUS(rc) != 0);
  CHECK(tp_test::read_file(err.path).find("trace.dat's") != std::string::npos);
  // A command that traced nothing: an empty but valid trace in the format asked.
  rc = std::system(fmt::format("{} record --format perfetto -o {} -- true 2>/dev/null",
                               TP_TRACEPIPE_EXE, pf.path.string())
                       .c_str());
  REQUIRE(WEXITSTATUS(rc) == 0);
  CHECK(std::filesystem::file_size(pf.path) > 0);  // the start and end ftrace_stats
  TempPath ctf("cli_record_fmt_empty.ctf");
  rc = std::system(fmt::format("{} record --format ctf -o {} -- true 2>/dev/null", TP_TRACEPIPE_EXE,
                               ctf.path.string())
                       .c_str());
  REQUIRE(WEXITSTATUS(rc) == 0);
  CHECK(tp_test::read_file(ctf.path / "metadata").starts_with("/* CTF 1.8"));
  std::filesystem::remove_all(ctf.path);
}
