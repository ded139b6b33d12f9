// `tracepipe record` on the command line: what can be checked before the
// command runs is refused before it runs (the command would create a marker
// file: it must not exist afterwards), with one "tracepipe record:" line and
// the documented exit code (docs/record.md, "Exit status"): 2 for a usage
// error, 125 when recording cannot start, 126/127 when the command cannot
// run. And the blocking mode's end-of-run summary.
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using Run = tp_test::CommandResult;

struct Scratch {
  fs::path dir;
  fs::path marker;
  Scratch() {
    dir = fs::temp_directory_path() / ("tp_record_cli_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    marker = dir / "ran";
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path config(const std::string& name, const std::string& text) const {
    const fs::path p = dir / name;
    std::ofstream(p) << text;
    return p;
  }
  // `tracepipe record ARGS... -- sh -c 'touch MARKER'` (ARGS end before the command).
  Run record(std::vector<std::string> args, bool dashes = true) const {
    args.insert(args.begin(), {TP_TRACEPIPE_EXE, "record"});
    if (dashes) args.push_back("--");
    for (const char* a : {"sh", "-c"}) args.push_back(a);
    args.push_back("touch " + marker.string());
    return tp_test::run_command(args, dir, 30);
  }
  bool ran() const { return fs::exists(marker); }
};

// One line, "tracepipe record: ..." (a filter error's caret lines follow it).
void check_one_message(const Run& r, const std::string& contains) {
  INFO(r.err);
  CHECK(r.err.starts_with("tracepipe record: "));
  CHECK(r.err.find(contains) != std::string::npos);
  CHECK(r.err.find("tracepipe: ") == std::string::npos);
  CHECK(r.err.find("tracepipe record: tracepipe") == std::string::npos);
}

}  // namespace

TEST_CASE("tracepipe record: usage errors exit 2 without running the command", "[tools][record]") {
  Scratch s;
  const std::string out = (s.dir / "o.dat").string();
  struct Case {
    std::vector<std::string> args;
    std::string message;
    bool dashes = true;
  };
  const std::vector<Case> cases = {
      {{"--bogus", "-o", out},
       "unknown option --bogus; the command starts at the first word",
       false},
      {{"-o", out, "--bogus"}, "unknown option --bogus", false},
      {{"--config", (s.dir / "missing.toml").string(), "-o", out}, "missing.toml"},
      {{"--block=abc", "-o", out}, "expected microseconds or inf, got 'abc'"},
      {{}, "give -o OUT.dat or -N HOST:PORT"},
      {{"--format", "perfetto", "--file-version", "7", "-o", out}, "are trace.dat's"},
      {{"--format", "ctf", "-N", "localhost:1"}, "trace-cmd listen takes trace.dat only"},
      {{"-N", "no port here", "-o", out}, ""},
  };
  for (const Case& c : cases) {
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    INFO(line);
    const Run r = s.record(c.args, c.dashes);
    CHECK(r.status == 2);
    check_one_message(r, c.message);
    CHECK_FALSE(s.ran());
    CHECK_FALSE(fs::exists(out));
  }
  // After --, a word that looks like an option is the command.
  const Run r =
      tp_test::run_command({TP_TRACEPIPE_EXE, "record", "-o", out, "--", "--bogus"}, s.dir, 30);
  CHECK(r.status == 127);
  check_one_message(r, "cannot run --bogus");
  // Every subcommand's usage errors exit 2 with its own prefix.
  const Run rep = tp_test::run_command({TP_TRACEPIPE_EXE, "report", "--bogus"}, s.dir, 30);
  CHECK(rep.status == 2);
  CHECK(rep.err.starts_with("tracepipe report: "));
}

TEST_CASE("tracepipe record: a config, filter or option it refuses stops it before the command",
          "[tools][record]") {
  Scratch s;
  const std::string out = (s.dir / "o.dat").string();
  struct Case {
    std::string toml;
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      // The kernel's calc_stack errors, with the file, line and key.
      {"mode = \"drop_newest\"\n[events.\"svc:request\"]\nenable = true\nfilter = \"latency_us > "
       "900 "
       "&& (status >= 500\"\n",
       {},
       "bad.toml:4: events.\"svc:request\".filter"},
      {"[events.\"svc:request\"]\nfilter = \"path == \\\"/api\"\n", {}, "Missing matching quote"},
      {"buffer_sise_kb = 64\n", {}, "did you mean 'buffer_size_kb'?"},
      // --block needs a drop-newest buffer; the config's default is overwrite.
      {"buffer_size_kb = 64\n", {"--block=1000"}, "drop-newest"},
      {"mode = \"drop_newest\"\n[recording]\nmode = \"flight_recorder\"\n", {}, "flight_recorder"},
  };
  for (const Case& c : cases) {
    INFO(c.toml);
    const fs::path cfg = s.config("bad.toml", c.toml);
    std::vector<std::string> args = c.args;
    for (const std::string& a : {std::string("--config"), cfg.string(), std::string("-o"), out})
      args.push_back(a);
    const Run r = s.record(args);
    CHECK(r.status == 125);
    check_one_message(r, c.message);
    CHECK_FALSE(s.ran());
    CHECK_FALSE(fs::exists(out));
  }
  // With -N too (the collector itself is not tried before the command).
  const fs::path ow = s.config("ow.toml", "mode = \"overwrite\"\n");
  const Run n = s.record({"--block", "--config", ow.string(), "-N", "localhost:1"});
  CHECK(n.status == 125);
  check_one_message(n, "drop-newest");
  CHECK_FALSE(s.ran());
  // The same --block with a drop-newest buffer runs the command.
  const fs::path good = s.config("good.toml", "mode = \"drop_newest\"\n");
  const Run r = s.record({"-q", "--block=1000", "--config", good.string(), "-o", out});
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(s.ran());
}

TEST_CASE("tracepipe record: an output it cannot write stops it before the command",
          "[tools][record]") {
  Scratch s;
  const fs::path folder = s.dir / "folder";
  fs::create_directories(folder);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"-o", "/nonexistent/x.dat"}, "/nonexistent/x.dat"},
      {{"-o", folder.string()}, folder.string() + ": is a directory"},
      {{"-o", "/sys/x.dat"}, "/sys/x.dat"},
      {{"-o", "/dev/null"}, "/dev/null: not a regular file"},
      {{"--format", "ctf", "-o", "/proc/version"}, "not a directory"},
      // The CTF writer would make the missing folder: refused as for a file.
      {{"--format", "ctf", "-o", (s.dir / "nodir" / "x.ctf").string()},
       (s.dir / "nodir" / "x.ctf").string() + ": cannot create it: " + (s.dir / "nodir").string() +
           " is not an existing folder"},
      {{"--format", "perfetto", "-o", (s.dir / "nodir" / "x.pftrace").string()},
       (s.dir / "nodir" / "x.pftrace").string()},
  };
  for (const Case& c : cases) {
    std::string line;
    for (const auto& a : c.args) line += a + " ";
    INFO(line);
    const Run r = s.record(c.args);
    CHECK(r.status == 125);
    check_one_message(r, c.message);
    // The cause once (a converting sink's error said it twice).
    const std::string cause = "No such file or directory";
    if (const size_t at = r.err.find(cause); at != std::string::npos)
      CHECK(r.err.find(cause, at + 1) == std::string::npos);
    CHECK_FALSE(s.ran());
  }
  CHECK_FALSE(fs::exists(s.dir / "nodir"));
  CHECK(fs::is_directory(folder));
  CHECK(fs::is_empty(folder));
  CHECK_FALSE(fs::exists("/sys/x.dat"));
  CHECK(fs::is_character_file("/dev/null"));
  // Nothing of the check is left beside the outputs.
  for (const auto& e : fs::directory_iterator(s.dir))
    CHECK(e.path().filename().string().find("probe") == std::string::npos);
}

TEST_CASE("tracepipe record: a full disk stops it before the command and leaves no output",
          "[tools][record]") {
  Scratch s;
  const fs::path mnt = s.dir / "full";
  fs::create_directories(mnt);
  if (geteuid() != 0) TP_SKIP("mounting a small tmpfs needs root");
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) TP_SKIP("cannot mount a tmpfs");
  struct Unmount {
    const char* p;
    ~Unmount() { ::umount2(p, MNT_DETACH); }
  } unmount{mnt.c_str()};
  {  // Fill it.
    std::ofstream fill(mnt / "fill", std::ios::binary);
    const std::string block(4096, 'x');
    for (int i = 0; i < 64 && fill; ++i) fill << block << std::flush;
  }
  const fs::path out = mnt / "o.dat";
  const Run r = s.record({"-o", out.string()});
  CHECK(r.status == 125);
  check_one_message(r, "No space left on device");
  CHECK_FALSE(s.ran());
  CHECK_FALSE(fs::exists(out));  // no 0-byte file that trace-cmd cannot read
  for (const auto& e : fs::directory_iterator(mnt)) CHECK(e.path().filename() == "fill");
}

TEST_CASE("tracepipe record --block: the summary shows the writers' waits", "[tools][record]") {
  Scratch s;
  // 2 sub-buffers per CPU and a 1 us bound: writers wait, and some time out.
  const fs::path cfg =
      s.config("block.toml",
               "mode = \"drop_newest\"\nbuffer_size_kb = 8\n[events.\"app:*\"]\nenable = true\n");
  const fs::path out = s.dir / "b.dat";
  const Run r = tp_test::run_command(
      {TP_TRACEPIPE_EXE, "record", "--block=1", "--config", cfg.string(), "-o", out.string(),
       TP_RECORD_APP_EXE, "--events", "100000", "--threads", "2"},
      s.dir, 60);
  INFO(r.err);
  CHECK(r.status == 0);
  const auto at = r.err.find("tracepipe record: blocking (up to 1 us): writers waited ");
  REQUIRE(at != std::string::npos);
  CHECK(r.err.find(" dropped after a time-out\n", at) != std::string::npos);
  // Events dropped after a time-out get the blocking mode's advice, not
  // the one for a recorder that did not keep up.
  const bool timed_out = r.err.find(" 0 dropped after a time-out") == std::string::npos;
  CHECK((r.err.find("a longer block time-out") != std::string::npos) == timed_out);
  if (timed_out) CHECK(r.err.find("the recorder did not keep up") == std::string::npos);
}

TEST_CASE("tracepipe record: -o naming the command or its config is refused, both kept",
          "[tools][record]") {
  Scratch s;
  // The stale output is removed before the command runs: it removed the
  // command (then "cannot run", 127) or the config the command reads.
  const fs::path script = s.dir / "cmd.sh";
  std::ofstream(script) << "#!/bin/sh\ntouch " << s.marker.string() << "\n";
  fs::permissions(script, fs::perms::owner_all);
  Run r = tp_test::run_command(
      {TP_TRACEPIPE_EXE, "record", "-o", script.string(), "--", script.string()}, s.dir, 30);
  CHECK(r.status == 2);
  check_one_message(r, "-o " + script.string() + ": is the command");
  CHECK(fs::is_regular_file(script));
  CHECK_FALSE(s.ran());
  const fs::path cfg = s.config("c.toml", "mode = \"drop_newest\"\n");
  r = s.record({"--config", cfg.string(), "-o", cfg.string()});
  CHECK(r.status == 2);
  check_one_message(r, "-o " + cfg.string() + ": is the config");
  CHECK(fs::file_size(cfg) > 0);
  CHECK_FALSE(s.ran());
}

TEST_CASE(
    "tracepipe record: a command killed by a signal is said to be, not to have recorded nothing",
    "[tools][record]") {
  Scratch s;
  const fs::path out = s.dir / "o.dat";
  // Killed before it recorded anything: an empty trace, and why.
  Run r = tp_test::run_command(
      {TP_TRACEPIPE_EXE, "record", "-o", out.string(), "--", "sh", "-c", "kill -9 $$"}, s.dir, 30);
  CHECK(r.status == 128 + 9);
  check_one_message(r, "sh was killed by signal 9 (SIGKILL) before its recording ended; " +
                           out.string() + " is an empty trace");
  CHECK(r.err.find("recorded nothing") == std::string::npos);
  Run rep = tp_test::run_command({TP_TRACEPIPE_EXE, "report", out.string()}, s.dir, 30);
  CHECK(rep.status == 0);
  // Killed while it records: no summary came, so the line says what the file is.
  const std::string app = TP_RECORD_APP_EXE;
  r = tp_test::run_command({TP_TRACEPIPE_EXE, "record", "-o", out.string(), "--", "sh", "-c",
                            "(sleep 1; kill -9 $$) & exec " + app + " --seconds 30"},
                           s.dir, 60);
  INFO(r.err);
  CHECK(r.status == 128 + 9);
  CHECK(r.err.find("was killed by signal 9 (SIGKILL) before its recording ended; " + out.string() +
                   " holds what was written until then") != std::string::npos);
  rep = tp_test::run_command({TP_TRACEPIPE_EXE, "report", out.string()}, s.dir, 60);
  CHECK(rep.status == 0);
  // Killed while it rewrote its recording as version 7 (a second Ctrl-C):
  // the rewrite's temporary file does not stay beside the output.
  const fs::path tmp = out.string() + ".v7.tmp";
  r = tp_test::run_command({TP_TRACEPIPE_EXE, "record", "--file-version", "7", "-o", out.string(),
                            "--", "sh", "-c", "echo partial > " + tmp.string() + "; kill -9 $$"},
                           s.dir, 30);
  CHECK(r.status == 128 + 9);
  CHECK_FALSE(fs::exists(tmp));
  check_one_message(r, "sh was killed by signal 9 (SIGKILL) before its recording ended; " +
                           out.string() +
                           " is an empty trace (its version 7 rewrite was cut "
                           "short: " +
                           tmp.string() + " removed)");
}

TEST_CASE("tracepipe record: the files a killed tracepipe record left in the temp folder go",
          "[tools][record]") {
  Scratch s;
  // A pid that is gone: a child that ended and was reaped.
  const pid_t gone = ::fork();
  REQUIRE(gone >= 0);
  if (gone == 0) ::_exit(0);
  REQUIRE(::waitpid(gone, nullptr, 0) == gone);
  const fs::path tmp = fs::temp_directory_path();
  const fs::path status = tmp / ("tracepipe_record_" + std::to_string(gone) + ".status");
  const fs::path config = tmp / ("tracepipe_record_" + std::to_string(gone) + ".toml");
  const fs::path alive = tmp / ("tracepipe_record_" + std::to_string(::getpid()) + ".toml");
  for (const fs::path& p : {status, config, alive}) std::ofstream(p) << "left\n";
  const fs::path out = s.dir / "o.dat";
  const Run r = tp_test::run_command({TP_TRACEPIPE_EXE, "record", "-o", out.string(), "--", "true"},
                                     s.dir, 30);
  CHECK(r.status == 0);
  CHECK_FALSE(fs::exists(status));
  CHECK_FALSE(fs::exists(config));
  CHECK(fs::exists(alive));  // its process runs: kept
  fs::remove(alive);
}

TEST_CASE("tracepipe record: an inherited ignored SIGINT and SIGTERM stay ignored in the command",
          "[tools][record]") {
  // A background job of a script, or nohup: the shell starts tracepipe with
  // the signals ignored, and the command must inherit that, not the default
  // its forwarder would leave after exec.
  Scratch s;
  const fs::path out = s.dir / "o.dat";
  const std::string inner = "grep SigIgn /proc/self/status > " + s.marker.string();
  const Run r =
      tp_test::run_command({"sh", "-c",
                            "trap '' INT TERM; exec " + std::string(TP_TRACEPIPE_EXE) +
                                " record -q -o " + out.string() + " -- sh -c '" + inner + "'"},
                           s.dir, 30);
  INFO(r.err);
  CHECK(r.status == 0);
  const std::string line = tp_test::read_file(s.marker);
  REQUIRE(line.starts_with("SigIgn:"));
  const uint64_t ignored = std::stoull(line.substr(7), nullptr, 16);
  CHECK((ignored >> (SIGINT - 1) & 1) == 1);
  CHECK((ignored >> (SIGTERM - 1) & 1) == 1);
}

TEST_CASE("tracepipe record: a forked child that exits leaves the recording to its parent",
          "[tools][record]") {
  Scratch s;
  const fs::path out = s.dir / "o.dat";
  // The child's exit() ran the recording's stop on the parent's file: a
  // second summary (the parent's counts at the fork, as the child's own),
  // a status line, and the file finalized under the parent's writes.
  const Run r =
      tp_test::run_command({TP_TRACEPIPE_EXE, "record", "-o", out.string(), "--", TP_RECORD_APP_EXE,
                            "--events", "1000", "--threads", "1", "--fork-exit"},
                           s.dir, 60);
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.out == "emitted 1000 requests, 125 notes\n");
  size_t summaries = 0;
  for (size_t at = r.err.find(out.string() + ": "); at != std::string::npos;
       at = r.err.find(out.string() + ": ", at + 1))
    ++summaries;
  CHECK(summaries == 1);
  CHECK(r.err.find(out.string() + ": 1125 records") != std::string::npos);
  const Run rep = tp_test::run_command({TP_TRACEPIPE_EXE, "report", out.string()}, s.dir, 60);
  CHECK(rep.status == 0);
}
