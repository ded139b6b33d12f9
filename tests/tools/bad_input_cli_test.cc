// The `tracepipe` command on bad input: a clear error that names the option
// (or file) and the problem, a non-zero exit, and never a hang - every run is
// under `timeout`, whose exit 124 fails the checks.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../core/replay/replay_test_util.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;

using Run = tp_test::CommandResult;

// A scratch directory with a small valid trace.dat (kmalloc records on 2 CPUs).
struct Scratch {
  fs::path dir;
  fs::path dat;
  Scratch() {
    dir = fs::temp_directory_path() / ("tp_bad_input_" + std::to_string(getpid()));
    fs::create_directories(dir);
    dat = dir / "in.dat";
    tracepipe::TraceDatWriter w = replay_test::make_writer(2);
    for (uint64_t i = 0; i < 10; ++i)
      w.add_record(static_cast<uint32_t>(i % 2), 1000 + i, replay_test::kmalloc(1, i, i));
    w.write(dat);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path fifo(const std::string& name) const {
    const fs::path p = dir / name;
    REQUIRE(mkfifo(p.c_str(), 0600) == 0);
    return p;
  }
  fs::path sparse(const std::string& name, uint64_t size) const {
    return tp_test::sparse_file(dir / name, size);
  }
  // `tracepipe ARGS...` with a 60 s limit.
  Run run(std::vector<std::string> args) const {
    args.insert(args.begin(), TP_TRACEPIPE_EXE);
    return tp_test::run_command(args, dir, 60);
  }
  Run replay(std::vector<std::string> args) const {
    args.insert(args.begin(), {"replay", "--no-progress", "--no-timing"});
    return run(args);
  }
};

// REPLAYED, KEPT of the row `name` of replay's table.
std::pair<uint64_t, uint64_t> counts_of(const std::string& table, const std::string& name) {
  const auto c = replay_test::replayed_kept(table, name);
  INFO("table:\n" << table);
  REQUIRE(c);
  return *c;
}

}  // namespace

TEST_CASE("cli: replay --config and --kallsyms refuse devices, FIFOs and huge files",
          "[tools][cli]") {
  Scratch s;
  // The trace itself replays fine.
  Run r = s.replay({s.dat.string()});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(counts_of(r.out, "kmem:kmalloc") == std::pair<uint64_t, uint64_t>{10, 10});

  r = s.replay({s.dat.string(), "--config", "/dev/zero"});
  CHECK(r.status == 2);
  CHECK(r.err == "tracepipe replay: /dev/zero: not a regular file (a character device)\n");

  r = s.replay({s.dat.string(), "--kallsyms", "/dev/zero"});
  CHECK(r.status == 2);
  CHECK(r.err ==
        "tracepipe replay: --kallsyms: /dev/zero: not a regular file (a character device)\n");

  const fs::path fifo = s.fifo("syms");
  r = s.replay({s.dat.string(), "--kallsyms", fifo.string()});
  CHECK(r.status == 2);
  CHECK(r.err ==
        "tracepipe replay: --kallsyms: " + fifo.string() + ": not a regular file (a FIFO)\n");
  r = s.replay({s.dat.string(), "--config", fifo.string()});
  CHECK(r.status == 2);
  CHECK(r.err == "tracepipe replay: " + fifo.string() + ": not a regular file (a FIFO)\n");

  const fs::path big = s.sparse("big_kallsyms", (uint64_t{256} << 20) + 1);
  r = s.replay({s.dat.string(), "--kallsyms", big.string()});
  CHECK(r.status == 2);
  CHECK(r.err == "tracepipe replay: --kallsyms: " + big.string() +
                     ": 268435457 bytes is over the limit of 256 MiB\n");
  const fs::path big_config = s.sparse("big.toml", (uint64_t{64} << 20) + 1);
  r = s.replay({s.dat.string(), "--config", big_config.string()});
  CHECK(r.status == 2);
  CHECK(r.err == "tracepipe replay: " + big_config.string() +
                     ": 67108865 bytes is over the limit of 64 MiB for a config file\n");
  // Nothing was printed as if the replay had run.
  CHECK(r.out.empty());
}

TEST_CASE("cli: replay --config with rings larger than the machine is refused at once, at its key",
          "[tools][cli]") {
  Scratch s;
  // 4096 CPUs x 1 GiB: the instance zeroed its rings for tens of seconds.
  const fs::path cfg = s.dir / "huge.toml";
  std::ofstream(cfg) << "cpus = 4096\nbuffer_size_kb = 1048576\n";
  const Run r = s.replay({s.dat.string(), "--config", cfg.string()});
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::StartsWith("tracepipe replay: " + cfg.string() +
                                      ":2: buffer_size_kb: 4096 CPUs x 1048576 KiB: rings of "));
  CHECK_THAT(r.err, Catch::EndsWith(" MiB); lower buffer_size_kb or cpus\n"));
  CHECK(r.out.empty());
}

TEST_CASE("cli: replay -F with an empty event name list is an error naming the option and the text",
          "[tools][cli]") {
  Scratch s;
  Run r = s.replay({s.dat.string(), "-F", ",,: bytes_req > 1"});
  CHECK(r.status == 2);
  CHECK(r.err ==
        "tracepipe replay: -F ',,: bytes_req > 1': no event name in the event list ',,'\n");
  CHECK(r.out.empty());

  r = s.replay({s.dat.string(), "-F", "kmalloc,,kmalloc: bytes_req > 1"});
  CHECK(r.status == 2);
  CHECK(r.err ==
        "tracepipe replay: -F 'kmalloc,,kmalloc: bytes_req > 1': an empty event name in the event "
        "list "
        "'kmalloc,,kmalloc'\n");
  r = s.replay({s.dat.string(), "-F", "kmalloc,: bytes_req > 1"});
  CHECK(r.status == 2);
  CHECK(r.err ==
        "tracepipe replay: -F 'kmalloc,: bytes_req > 1': an empty event name in the event list "
        "'kmalloc,'\n");

  // The well-formed list still works: 5 of the 10 records have bytes_req > 4.
  r = s.replay({s.dat.string(), "-F", "kmalloc,kmem:kmalloc: bytes_req > 4"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(counts_of(r.out, "kmem:kmalloc") == std::pair<uint64_t, uint64_t>{10, 5});
}

TEST_CASE("cli: report and replay refuse a FIFO or a device as the input trace, without blocking",
          "[tools][cli]") {
  Scratch s;
  // No writer ever opens this FIFO: opening it for reading would block.
  const fs::path fifo = s.fifo("trace.dat");
  Run r = s.run({"report", fifo.string()});
  CHECK(r.status == 1);
  CHECK(r.err == "tracepipe report: " + fifo.string() + ": not a regular file (a FIFO)\n");
  CHECK(r.out.empty());
  r = s.run({"report", "--info", "-i", fifo.string()});
  CHECK(r.status == 1);
  CHECK(r.err == "tracepipe report: " + fifo.string() + ": not a regular file (a FIFO)\n");
  r = s.run({"report", "/dev/zero"});
  CHECK(r.status == 1);
  CHECK(r.err == "tracepipe report: /dev/zero: not a regular file (a character device)\n");
  r = s.run({"report", s.dir.string()});
  CHECK(r.status == 1);
  CHECK(r.err == "tracepipe report: " + s.dir.string() + ": not a regular file (a directory)\n");

  r = s.replay({fifo.string()});
  CHECK(r.status == 2);
  CHECK(r.err == "tracepipe replay: " + fifo.string() + ": not a regular file (a FIFO)\n");
  CHECK(r.out.empty());
  r = s.replay({"-i", "/dev/zero", "--bench", "--reps", "1"});
  CHECK(r.status == 2);
  CHECK(r.err == "tracepipe replay: /dev/zero: not a regular file (a character device)\n");
  r = s.replay({(s.dir / "missing.dat").string()});
  CHECK(r.status == 2);
  CHECK(r.err == "tracepipe replay: " + (s.dir / "missing.dat").string() +
                     ": cannot open it: No such file or directory\n");

  // A regular file still reads: report prints the 10 records.
  r = s.run({"report", s.dat.string()});
  INFO(r.err);
  REQUIRE(r.status == 0);
  size_t lines = 0;
  for (size_t p = r.out.find("kmalloc:"); p != std::string::npos; p = r.out.find("kmalloc:", p + 1))
    ++lines;
  CHECK(lines == 10);
}

TEST_CASE("cli: out-of-range sizes and counts are errors naming the option and the range",
          "[tools][cli]") {
  Scratch s;
  struct Case {
    std::vector<std::string> args;
    std::string err;  // stderr after "tracepipe SUBCOMMAND: "
  };
  const std::string dat = s.dat.string();
  const std::vector<Case> cases = {
      // replay: 0 meant "automatic" inside and was taken silently.
      {{"replay", dat, "--buffer-size-kb", "0"},
       "--buffer-size-kb: Value 0 not in range 1 to 1048576"},
      {{"replay", dat, "--buffer-size-kb", "1048577"},
       "--buffer-size-kb: Value 1048577 not in range 1 to 1048576"},
      {{"replay", dat, "--subbuf-size-kb", "0"},
       "--subbuf-size-kb: Value 0 is not a power of two in 4 to 1024"},
      {{"replay", dat, "--subbuf-size-kb", "12"},
       "--subbuf-size-kb: Value 12 is not a power of two in 4 to 1024"},
      {{"replay", dat, "--subbuf-size-kb", "2048"},
       "--subbuf-size-kb: Value 2048 is not a power of two in 4 to 1024"},
      {{"replay", dat, "-j", "0"}, "--threads: Value 0 not in range 1 to 1024"},
      {{"replay", dat, "--threads", "-1"}, "--threads: Value -1 not in range 1 to 1024"},
      {{"replay", dat, "--bench", "--reps", "0"}, "--reps: Value 0 not in range 1 to 1000"},
      // bench: unbounded counts (a run of 2^64 events) and an unreadable range message.
      {{"bench", "-l", "0"}, "--loops: Value 0 not in range 1 to 1000000"},
      {{"bench", "--perf-events", "1000000001"},
       "--perf-events: Value 1000000001 not in range 0 to 1000000000"},
      {{"bench", "--warn-spread", "0"}, "--warn-spread: Value 0 not in range 0.01 to 1000"},
      // bench's buffer bound is the config file's and replay's (kMaxBufferSizeKb, 1 GiB).
      {{"bench", "-b", "0"}, "--buffer-kb: Value 0 not in range 8 to 1048576"},
      {{"bench", "--buffer-size-kb", "1048577"},
       "--buffer-kb: Value 1048577 not in range 8 to 1048576"},
      {{"bench", "--mode", "drop-newest"},
       "--mode: drop-newest not in {overwrite,drop_newest,drop}"},
      {{"bench-peers", "--overwrite-kb", "1048577"},
       "--overwrite-kb: Value 1048577 not in range 64 to 1048576"},
      {{"bench-peers", "--buffer-kb", "1048577"},
       "--buffer-kb: Value 1048577 not in range 0 to 1048576"},
      {{"bench-peers", "-l", "0"}, "--loops: Value 0 not in range 1 to 1000000"},
  };
  for (const Case& c : cases) {
    std::string cmd;
    for (const std::string& a : c.args) cmd += a + " ";
    INFO(cmd);
    const Run r = s.run(c.args);
    CHECK(r.status == 2);  // a usage error (CLI11's ValidationError): nothing ran
    CHECK(r.err == "tracepipe " + c.args[0] + ": " + c.err + "\n");
    CHECK(r.out.empty());
  }

  // The bounds themselves are accepted and the replay runs.
  for (const std::vector<std::string>& ok :
       {std::vector<std::string>{"--buffer-size-kb", "1", "--subbuf-size-kb", "4", "-j", "1"},
        std::vector<std::string>{"--subbuf-size-kb", "1024", "-j", "1024"}}) {
    std::vector<std::string> args{dat};
    args.insert(args.end(), ok.begin(), ok.end());
    const Run r = s.replay(args);
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(counts_of(r.out, "kmem:kmalloc") == std::pair<uint64_t, uint64_t>{10, 10});
  }
}

TEST_CASE("cli: a malformed input trace is named by the path given, not as 'trace.dat'",
          "[tools][cli]") {
  Scratch s;
  const std::string magic_error = ": file header at offset 0 (0x0): expected the trace.dat magic";
  // Not a trace.dat at all (a TOML file), and a trace cut short, called s6.dat.
  const fs::path toml = s.dir / "good.toml";
  std::ofstream(toml) << "[instance]\nbuffer_size_kb = 64\n";
  const fs::path cut = s.dir / "s6.dat";
  const std::string whole = tp_test::read_file(s.dat);
  std::ofstream(cut, std::ios::binary) << whole.substr(0, whole.size() / 3);

  Run r = s.run({"report", toml.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::StartsWith("tracepipe report: " + toml.string() + magic_error));
  CHECK(r.err.find("trace.dat:") == std::string::npos);
  r = s.run({"report", "-i", toml.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::StartsWith("tracepipe report: " + toml.string() + magic_error));
  r = s.run({"report", cut.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::StartsWith("tracepipe report: " + cut.string() + ": "));
  CHECK(r.err.find("trace.dat:") == std::string::npos);
  r = s.run({"report", "--info", cut.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::StartsWith("tracepipe report: " + cut.string() + ": "));
  CHECK(r.err.find("trace.dat:") == std::string::npos);

  r = s.replay({toml.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::StartsWith("tracepipe replay: " + toml.string() + magic_error));
  CHECK(r.err.find("trace.dat:") == std::string::npos);
  r = s.replay({cut.string()});
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::StartsWith("tracepipe replay: " + cut.string() + ": "));
  CHECK(r.err.find("trace.dat:") == std::string::npos);
}

TEST_CASE("cli: replay --staging with an unknown mode is a usage error like replay's others",
          "[tools][cli]") {
  Scratch s;
  Run r = s.replay({s.dat.string(), "--staging", "bogus"});
  CHECK(r.status == 2);
  CHECK(r.err ==
        "tracepipe replay: --staging 'bogus': expected off, per_cpu (or on), per_thread or "
        "adaptive\n");
  CHECK(r.out.empty());
  // Every documented spelling runs.
  for (const char* mode : {"off", "per_cpu", "on", "per_thread", "adaptive"}) {
    INFO(mode);
    r = s.replay({s.dat.string(), "--staging", mode});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(counts_of(r.out, "kmem:kmalloc") == std::pair<uint64_t, uint64_t>{10, 10});
  }
}

TEST_CASE("cli: bare tracepipe prints the usage with the subcommands and exits 2", "[tools][cli]") {
  Scratch s;
  const Run r = s.run({});
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Contains("Usage:"));
  CHECK_THAT(r.err, Catch::Contains("Subcommands:"));
  for (const char* sub : {"report", "replay", "bench"})
    CHECK_THAT(r.err, Catch::Contains(std::string("\n  ") + sub));
  // Help asked for is not an error, and an unknown option stays CLI11's.
  const Run h = s.run({"--help"});
  CHECK(h.status == 0);
  CHECK_THAT(h.out, Catch::Contains("Subcommands:"));
}

TEST_CASE("cli: an output that names the input (by any name) is refused and the input kept",
          "[tools][cli]") {
  Scratch s;
  const auto bytes = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string before = bytes(s.dat);
  const fs::path hard = s.dir / "hard.dat", sym = s.dir / "sym.dat";
  fs::create_hard_link(s.dat, hard);
  fs::create_symlink(s.dat, sym);
  const fs::path config = s.dir / "c.toml";
  std::ofstream(config) << "mode = \"overwrite\"\n";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      // convert mapped its input and truncated it: SIGBUS, the input lost.
      {{"convert", s.dat.string(), "-o", s.dat.string(), "--to", "perfetto"},
       "tracepipe convert: -o " + s.dat.string() + ": is the input trace"},
      {{"convert", s.dat.string(), "-o", sym.string(), "--to", "perfetto"},
       "tracepipe convert: -o " + sym.string() + ": is the input trace"},
      // replay renamed its output over the input.
      {{"replay", "--no-progress", s.dat.string(), "-o", s.dat.string()},
       "tracepipe replay: -o " + s.dat.string() + ": is the input trace"},
      {{"replay", "--no-progress", s.dat.string(), "-o", hard.string()},
       "tracepipe replay: -o " + hard.string() + ": is the input trace"},
      {{"replay", "--no-progress", s.dat.string(), "--config", config.string(), "-o",
        config.string()},
       "tracepipe replay: -o " + config.string() + ": is the config"},
  };
  for (const Case& c : cases) {
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    INFO(line);
    const Run r = s.run(c.args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.starts_with(c.message));
    CHECK(r.out.empty());
    CHECK(bytes(s.dat) == before);
    CHECK(fs::is_symlink(sym));
    CHECK(fs::file_size(config) > 0);
  }
  // Another output still works.
  const Run ok = s.run(
      {"convert", s.dat.string(), "-o", (s.dir / "out.pftrace").string(), "--to", "perfetto"});
  INFO(ok.err);
  CHECK(ok.status == 0);
}
