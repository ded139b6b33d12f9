// tracepipe_record_bench's command line (bench/record/record_bench.h): what
// each option sets, the exit codes of --help and bad options, and the
// combinations run() refuses before it starts a thread or writes a file.
#include "tracepipe/bench/record/record_bench.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

using namespace tracepipe::record_bench;

namespace {

int parse(std::vector<std::string> args, Options& o) {
  args.insert(args.begin(), "tracepipe_record_bench");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parse_args(static_cast<int>(argv.size()), argv.data(), o);
}

}  // namespace

TEST_CASE("record bench: every option lands in its field", "[bench][record]") {
  Options o;
  REQUIRE(parse({"--dir",       "/tmp/x", "--seconds",    "0.5",        "--repeats",      "3",
                 "--steady",    "1e6",    "--rotate-mib", "64",         "--floor",        "0",
                 "--collector", "auto",   "--peers",      "lttng",      "--lttng-plugin", "/p.so",
                 "--realtime",  "10",     "--block",      "250",        "--equal-kb",     "4096",
                 "--buffer-kb", "16384",  "--verify",     "--max-only", "--formats"},
                o) == -1);
  CHECK(o.dir == "/tmp/x");
  CHECK(o.seconds == 0.5);
  CHECK(o.repeats == 3);
  CHECK(o.steady_rate == 1e6);
  CHECK(o.rotate_mib == 64);
  CHECK(o.floor_seconds == 0);
  CHECK(o.collector == "auto");
  CHECK(o.peers == "lttng");
  CHECK(o.plugin == "/p.so");
  CHECK(o.realtime == 10);
  CHECK(o.block_us == 250);
  CHECK(o.equal_kb == 4096);
  CHECK(o.buffer_kb == 16384);
  CHECK(o.verify);
  CHECK(o.max_only);
  CHECK(o.formats);
}

TEST_CASE("record bench: defaults, bounds and --block inf", "[bench][record]") {
  Options o;
  REQUIRE(parse({}, o) == -1);
  CHECK(o.dir == "/dev/shm");
  CHECK(o.seconds == 1);
  CHECK(o.repeats == 5);
  CHECK(o.equal_kb == 2048);
  CHECK(o.buffer_kb == 0);  // the instance's default
  CHECK(o.block_us == 0);
  REQUIRE(parse({"--repeats", "0", "--equal-kb", "1", "--buffer-kb", "1", "--block", "inf"}, o) ==
          -1);
  CHECK(o.repeats == 1);
  CHECK(o.equal_kb == 4);
  CHECK(o.buffer_kb == 4);
  CHECK(o.block_us == -1);
}

TEST_CASE("record bench: --help exits 0, a bad option 2", "[bench][record]") {
  Options o;
  CHECK(parse({"--help"}, o) == 0);
  CHECK(parse({"-h"}, o) == 0);
  CHECK(parse({"--bogus", "1"}, o) == 2);
  CHECK(parse({"--seconds"}, o) == 2);
}

TEST_CASE("record bench: run refuses options that do not combine", "[bench][record]") {
  Options o;
  o.peers = "perf";
  CHECK(run(o) == 2);
  o.peers = "lttng";
  o.collector = "localhost:1";
  CHECK(run(o) == 2);
  o.peers.clear();
  o.formats = true;
  // Past the checks on the options alone, a machine of one CPU is told to skip.
  CHECK(run(o) == (std::thread::hardware_concurrency() >= 2 ? 2 : 77));
}
