// `tracepipe record` as a user runs it, on a program of their own
// (record_app.cc: declared events, two threads, TRACEPIPE_TRACE, no
// recorder code): every loss marked where trace-cmd prints it, the
// statistics trace-cmd report --stat prints, the summary, Ctrl-C, options
// after the command, exit codes, config triggers and hists. The results
// are read by trace-cmd report and trace-cmd listen.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "../convert/convert_check.h"
#include "../convert/convert_test_util.h"
#include "../tracedat/tracedat_test_util.h"
#include "collector.h"
#include "test_support.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using tp_tracedat_test::have_trace_cmd;
using tp_tracedat_test::run;
using tp_tracedat_test::TempPath;

namespace {

using Clock = std::chrono::steady_clock;

struct Ran {
  int status = -1;  // the shell's $? (exit code, or 128 + signal)
  std::string out, err;
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `cmd` through the shell, stdout and stderr apart.
Ran shell(const std::string& cmd) {
  TempPath o("user_out"), e("user_err");
  const int rc =
      std::system(fmt::format("{} >{} 2>{}", cmd, o.path.string(), e.path.string()).c_str());
  Ran r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = slurp(o.path);
  r.err = slurp(e.path);
  return r;
}

TempPath config(const std::string& name, const std::string& text) {
  TempPath p(name);
  std::ofstream(p.path) << text;
  return p;
}

// "emitted R requests, N notes" -> R + N.
uint64_t emitted(const std::string& out) {
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("emitted (\\d+) requests, (\\d+) notes")));
  return std::stoull(m[1]) + std::stoull(m[2]);
}

// What trace-cmd report shows of a recording: the app's records and the
// events its [N EVENTS DROPPED] marks count (every mark carries its count).
struct Seen {
  uint64_t records = 0, marked = 0, marks = 0, unmarked_drops = 0, lost_at_end = 0;
};
Seen trace_cmd_view(const std::filesystem::path& file) {
  const std::string rep = run(fmt::format("trace-cmd report -i {}", file.string()));
  Seen s;
  std::istringstream in(rep);
  std::string line;
  const std::regex mark("CPU:\\d+ \\[(\\d+) EVENTS DROPPED\\]");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, mark)) {
      s.marked += std::stoull(m[1]);
      ++s.marks;
    } else if (line.find("[EVENTS DROPPED]") != std::string::npos) {
      ++s.unmarked_drops;
    } else if (line.find(" request: ") != std::string::npos ||
               line.find(" note: ") != std::string::npos) {
      ++s.records;
    } else if (line.find(" lost_at_end: ") != std::string::npos) {
      ++s.lost_at_end;
    }
  }
  return s;
}

uint64_t count_if_records(const std::filesystem::path& p) {
  const auto r = TraceDatReader::open(p);
  uint64_t n = 0;
  auto m = r.records();
  while (m.next()) ++n;
  return n;
}

std::string app_cmd(const std::string& args) {
  return fmt::format("{} {}", TP_RECORD_APP_EXE, args);
}

const char* kSmallDropNewest =
    "mode = \"drop_newest\"\nbuffer_size_kb = 32\n[events.\"app:*\"]\nenable = true\n[recording]\n";
const char* kSmallOverwrite =
    "mode = \"overwrite\"\nbuffer_size_kb = 32\n[events.\"app:*\"]\nenable = true\n[recording]\n";

// The invariant of a recording that overflowed, as trace-cmd report reads it.
void check_every_loss_marked(const std::filesystem::path& file, uint64_t emitted_events) {
  const Seen s = trace_cmd_view(file);
  INFO("records " << s.records << ", marked " << s.marked << ", emitted " << emitted_events);
  CHECK(s.unmarked_drops == 0);
  CHECK(s.marked > 0);  // the rate overflowed the 32 KiB buffer
  CHECK(s.records + s.marked == emitted_events);
}

}  // namespace

TEST_CASE(
    "tracepipe record: records in the file + events the marks count = events emitted (drop-newest, "
    "overwrite)",
    "[record][cli][user]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  for (const char* text : {kSmallDropNewest, kSmallOverwrite}) {
    const std::string mode = text == kSmallDropNewest ? "drop_newest" : "overwrite";
    INFO(mode);
    TempPath cfg = config("user_inv.toml", text);
    TempPath out("user_inv.dat");
    const Ran r =
        shell(fmt::format("{} record --config {} -o {} {}", TP_TRACEPIPE_EXE, cfg.path.string(),
                          out.path.string(), app_cmd("--events 100000 --threads 2")));
    INFO(r.err);
    REQUIRE(r.status == 0);
    check_every_loss_marked(out.path, emitted(r.out));
    // The summary: a line per CPU, the total with the file, the warning.
    CHECK(r.err.find("tracepipe record: CPU 0: ") != std::string::npos);
    CHECK(r.err.find(fmt::format("tracepipe record: {}: ", out.path.string())) !=
          std::string::npos);
    CHECK(r.err.find("tracepipe record: warning: ") != std::string::npos);
    CHECK(r.err.find(mode == "overwrite" ? "overwritten " : "buffer full ") != std::string::npos);
    // The per-CPU statistics, as trace-cmd report --stat prints them, and
    // tracepipe report --stat the same.
    const std::string st = run(fmt::format("trace-cmd report --stat -i {}", out.path.string()));
    CHECK(st.find("No stats in this file") == std::string::npos);
    CHECK(st.find("CPU: 0\nentries: ") != std::string::npos);
    CHECK(st.find(mode == "overwrite" ? "overrun: " : "dropped events: ") != std::string::npos);
    CHECK(run(fmt::format("{} report --stat {}", TP_TRACEPIPE_EXE, out.path.string())) == st);
  }
}

TEST_CASE(
    "tracepipe record -N: every loss marked in trace-cmd listen's file, and listen logs no error",
    "[record][cli][user][net]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  tp_record_test::Collector col;
  if (!col.ok()) TP_SKIP("cannot start trace-cmd listen: " + col.why());
  std::vector<uint64_t> emitted_per_session;
  for (const char* text : {kSmallDropNewest, kSmallOverwrite}) {
    TempPath cfg = config("user_net.toml", text);
    const Ran r =
        shell(fmt::format("{} record --config {} -N {} {}", TP_TRACEPIPE_EXE, cfg.path.string(),
                          col.address(), app_cmd("--events 50000 --threads 2")));
    INFO(r.err);
    REQUIRE(r.status == 0);
    emitted_per_session.push_back(emitted(r.out));
  }
  REQUIRE(col.wait_file());  // both sessions joined
  INFO(col.log());
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(col.dir()))
    if (e.path().extension() == ".dat") files.push_back(e.path());
  REQUIRE(files.size() == 2);
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    return std::filesystem::last_write_time(a) < std::filesystem::last_write_time(b);
  });
  for (size_t i = 0; i < 2; ++i) check_every_loss_marked(files[i], emitted_per_session[i]);
  // trace-cmd record -N's end of the protocol: nothing to complain about.
  CHECK(col.log().find("reading client") == std::string::npos);
  CHECK(col.log().find("Message: cmd=") == std::string::npos);
}

TEST_CASE("tracepipe record: options end at the command, with or without --",
          "[record][cli][user]") {
  TempPath out("user_opts.dat");
  TempPath other = config("user_opts_other.toml", "mode = \"bogus\"\n");
  // Without --: --events, --threads are the program's.
  Ran r = shell(fmt::format("{} record -o {} {}", TP_TRACEPIPE_EXE, out.path.string(),
                            app_cmd("--events 1000 --threads 1")));
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(emitted(r.out) == 1125);
  // A --config after the command is the command's (record_app refuses it: 2),
  // not applied to the recording.
  r = shell(fmt::format("{} record -o {} {} --config {}", TP_TRACEPIPE_EXE, out.path.string(),
                        TP_RECORD_APP_EXE, other.path.string()));
  CHECK(r.status == 2);
  CHECK(r.err.find("record_app: unknown argument --config") != std::string::npos);
  // With --, the same.
  r = shell(fmt::format("{} record -o {} -- {}", TP_TRACEPIPE_EXE, out.path.string(),
                        app_cmd("--events 10 --threads 1")));
  CHECK(r.status == 0);
  CHECK(emitted(r.out) == 11);
}

TEST_CASE("tracepipe record: exit codes, and one line naming the cause", "[record][cli][user]") {
  TempPath out("user_exit.dat");
  SECTION("the command's status when the recording succeeded") {
    const Ran r = shell(
        fmt::format("{} record -o {} -- sh -c 'exit 7'", TP_TRACEPIPE_EXE, out.path.string()));
    CHECK(r.status == 7);
  }
  SECTION("a filter the kernel rejects: 125, the kernel's message and caret, nothing else") {
    TempPath cfg = config(
        "user_bad.toml",
        "[events.\"app:request\"]\nenable = true\nfilter = \"latency_uss > 4000\"\n[recording]\n");
    const Ran r = shell(fmt::format("{} record --config {} -o {} {}", TP_TRACEPIPE_EXE,
                                    cfg.path.string(), out.path.string(), app_cmd("--events 10")));
    INFO(r.err);
    CHECK(r.status == 125);
    CHECK(r.err.find("Field not found") != std::string::npos);
    // The kernel's error_log puts the caret under the operator after an
    // unknown field ("  Command: " is 11 columns).
    CHECK(r.err.find("  Command: latency_uss > 4000\n" + std::string(11 + 12, ' ') + "^\n") !=
          std::string::npos);
    CHECK(r.err.find("recorded nothing") == std::string::npos);
  }
  SECTION("a collector that refuses: 125 and the cause, once") {
    const uint16_t port = tp_record_test::free_port();
    const Ran r = shell(fmt::format("{} record -N 127.0.0.1:{} {}", TP_TRACEPIPE_EXE, port,
                                    app_cmd("--events 10")));
    INFO(r.err);
    CHECK(r.status == 125);
    CHECK(r.err.find("Connection refused") != std::string::npos);
  }
  SECTION("an unknown host: 125, the resolver's words and no unrelated errno") {
    const Ran r = shell(fmt::format("{} record -N collector.tracepipe-test.invalid:4321 {}",
                                    TP_TRACEPIPE_EXE, app_cmd("--events 10")));
    INFO(r.err);
    CHECK(r.status == 125);
    CHECK(r.err.find("resolving collector.tracepipe-test.invalid") != std::string::npos);
    CHECK(r.err.find("No route to host") == std::string::npos);
  }
  SECTION("a command gone by _exit() after its recording started: its status and a warning") {
    const Ran r = shell(fmt::format("{} record -o {} {}", TP_TRACEPIPE_EXE, out.path.string(),
                                    app_cmd("--events 1000 --quick-exit")));
    INFO(r.err);
    CHECK(r.status == 3);
    CHECK(r.err.find("warning: " + std::string(TP_RECORD_APP_EXE) +
                     " ended (exit status 3) without finishing its recording: _exit(), "
                     "quick_exit() or an exec skip the exit handlers") != std::string::npos);
    CHECK(r.err.find(out.path.string() +
                     " holds what was written until then (a sparse file: ls -l shows the space "
                     "reserved for each CPU, du what it holds") != std::string::npos);
    CHECK(r.err.find("recorded nothing") == std::string::npos);
  }
  SECTION("a command that never starts a recording: its status, and it says so") {
    const Ran r = shell(
        fmt::format("{} record -o {} -- sh -c 'exit 4'", TP_TRACEPIPE_EXE, out.path.string()));
    INFO(r.err);
    CHECK(r.status == 4);
    CHECK(r.err.find("sh recorded nothing (not linked with tracepipe::tracepipe?); " +
                     out.path.string() + " is an empty trace") != std::string::npos);
  }
  SECTION("the output removed while recording: 125") {
    TempPath cfg = config("user_rm.toml", "[events.\"app:*\"]\nenable = true\n[recording]\n");
    // Removed once the recording has written to it (however slowly the
    // machine starts the program).
    const std::string cmd = fmt::format(
        "{} record --config {} -o {} {} & i=0; while [ ! -s {} ] && [ $i -lt 200 ]; do sleep 0.05; "
        "i=$((i+1)); "
        "done; sleep 0.2; rm -f {}; wait $!",
        TP_TRACEPIPE_EXE, cfg.path.string(), out.path.string(), app_cmd("--seconds 2 --threads 1"),
        out.path.string(), out.path.string());
    const Ran r = shell("sh -c '" + cmd + "'");
    INFO(r.err);
    CHECK(r.status == 125);
    CHECK(r.err.find("the output file was removed") != std::string::npos);
  }
}

TEST_CASE("tracepipe record: a full disk is reported (125) and the file is no larger than its data",
          "[record][cli][user]") {
  if (::geteuid() != 0) TP_SKIP("mounting a small tmpfs needs root");
  TempPath dir("user_full");
  std::filesystem::create_directories(dir.path);
  if (::mount("tmpfs", dir.path.c_str(), "tmpfs", 0, "size=2m") != 0)
    TP_SKIP("cannot mount a tmpfs");
  struct Unmount {
    const char* p;
    ~Unmount() { ::umount2(p, MNT_DETACH); }
  } unmount{dir.path.c_str()};
  TempPath cfg = config("user_full.toml",
                        "buffer_size_kb = 4096\n[events.\"app:*\"]\nenable = true\n[recording]\n");
  const auto out = dir.path / "full.dat";
  const Ran r =
      shell(fmt::format("{} record --config {} -o {} {}", TP_TRACEPIPE_EXE, cfg.path.string(),
                        out.string(), app_cmd("--events 100000 --threads 1")));
  INFO(r.err);
  CHECK(r.status == 125);
  CHECK(r.err.find("No space left on device") != std::string::npos);
  REQUIRE(std::filesystem::exists(out));
  struct stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK(st.st_size <= 2 * 1024 * 1024);  // not the CPU regions' 16 GiB of address space
  const auto reader = TraceDatReader::open(out);
  uint64_t pages = 0;
  for (const CpuDataInfo& d : reader.cpu_data()) pages += d.size / reader.page_size();
  CHECK(pages > 0);  // what was written before the disk filled is there
  if (have_trace_cmd()) CHECK_NOTHROW(run(fmt::format("trace-cmd report -i {}", out.string())));
}

namespace {

// Runs `cmd` in a new session on a pseudo-terminal (as in a user's shell),
// types Ctrl-C after `after` (twice with `twice`), and returns its exit
// status and what it printed.
Ran ctrl_c(const std::string& cmd, std::chrono::milliseconds after, Clock::duration* took) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Ran r;
  std::string out;
  const auto read_some = [&](int ms) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) return false;
    out.append(buf, static_cast<size_t>(n));
    return true;
  };
  const auto t0 = Clock::now();
  while (Clock::now() - t0 < after) (void)read_some(10);
  const char etx = 3;  // ^C: the terminal sends SIGINT to its foreground process group
  REQUIRE(::write(master, &etx, 1) == 1);
  const auto t1 = Clock::now();
  int status = 0;
  for (;;) {
    (void)read_some(20);
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (Clock::now() - t1 > std::chrono::seconds(20)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("the recording did not end within 20 s of Ctrl-C");
    }
  }
  *took = Clock::now() - t1;
  while (read_some(50)) {
  }
  ::close(master);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = out;
  return r;
}

}  // namespace

TEST_CASE("tracepipe record: Ctrl-C stops tracing, drains and finalizes before the command ends",
          "[record][cli][user]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  TempPath cfg = config("user_int.toml", "[events.\"app:*\"]\nenable = true\n[recording]\n");
  TempPath out("user_int.dat");
  Clock::duration took{};
  // The shell execs tracepipe: tracepipe and the program are the terminal's
  // foreground process group, as in a user's shell.
  const Ran r =
      ctrl_c(fmt::format("exec {} record --config {} -o {} {}", TP_TRACEPIPE_EXE, cfg.path.string(),
                         out.path.string(), app_cmd("--seconds 20 --pace-us 500")),
             std::chrono::milliseconds(700), &took);
  INFO(r.out);
  CHECK(r.status == 128 + SIGINT);  // the command ended by its SIGINT, as the shell reports it
  CHECK(took < std::chrono::seconds(5));
  CHECK(r.out.find("tracepipe record: " + out.path.string() + ": ") !=
        std::string::npos);  // the summary
  // The file is finalized (contiguous: the size of its data and headers, not
  // the regions' address space) and holds the records up to the Ctrl-C.
  const auto reader = TraceDatReader::open(out.path);
  uint64_t data = 0;
  for (const CpuDataInfo& d : reader.cpu_data()) data += d.size;
  CHECK(std::filesystem::file_size(out.path) < data + (1u << 20));
  const Seen s = trace_cmd_view(out.path);
  CHECK(s.records > 1000);
  CHECK(s.marks == 0);
}

TEST_CASE(
    "tracepipe record: SIGTERM to tracepipe is passed on, and a program's own SIGINT handler is "
    "kept",
    "[record][cli][user]") {
  TempPath cfg = config("user_term.toml", "[events.\"app:*\"]\nenable = true\n[recording]\n");
  TempPath out("user_term.dat");
  SECTION("SIGTERM") {
    const Ran r = shell(
        fmt::format("sh -c '{} record --config {} -o {} {} & sleep 0.5; kill -TERM $!; wait $!'",
                    TP_TRACEPIPE_EXE, cfg.path.string(), out.path.string(),
                    app_cmd("--seconds 20 --pace-us 500")));
    INFO(r.err);
    CHECK(r.status == 128 + SIGTERM);
    CHECK(r.err.find("tracepipe record: " + out.path.string() + ": ") != std::string::npos);
    CHECK(count_if_records(out.path) > 0);
  }
  SECTION("the program's own handler") {
    Clock::duration took{};
    const Ran r = ctrl_c(
        fmt::format("exec {} record --config {} -o {} {}", TP_TRACEPIPE_EXE, cfg.path.string(),
                    out.path.string(), app_cmd("--seconds 20 --pace-us 500 --handler")),
        std::chrono::milliseconds(500), &took);
    INFO(r.out);
    CHECK(r.status == 0);  // the program ended by itself
    CHECK(r.out.find("emitted ") != std::string::npos);
    CHECK(r.out.find("tracepipe record: " + out.path.string() + ": ") != std::string::npos);
  }
}

TEST_CASE(
    "config triggers and hists: under tracepipe record and TRACEPIPE_CONFIG, whatever the link "
    "order",
    "[record][cli][user][triggers]") {
  TempPath cfg =
      config("user_trig.toml",
             "[events.\"app:request\"]\nenable = true\nfilter = \"latency_us >= 4000\"\n"
             "trigger = \"hist:keys=path:vals=latency_us\"\n[recording]\nprint_hist = true\n");
  TempPath out("user_trig.dat");
  // Under tracepipe record the program's lines carry the subcommand's prefix.
  const auto check = [&](const Ran& r, const std::string& prefix) {
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(r.err.find("triggers need the triggers library") == std::string::npos);
    CHECK(r.err.find(prefix + "hist of app:request (instance main):\n# event histogram\n") !=
          std::string::npos);
    // The hist runs on every record, kept or discarded by the filter: 5000
    // requests, half of them on each path.
    CHECK(
        r.err.find(
            "{ path: /api/items                                         } hitcount:       2500") !=
        std::string::npos);
    CHECK(r.err.find("    Hits: 5000\n") != std::string::npos);
    // The filter kept latency_us (i % 5000) >= 4000: 1000 records.
    CHECK(count_if_records(out.path) == 1000);
  };
  check(shell(fmt::format("{} record --config {} -o {} {}", TP_TRACEPIPE_EXE, cfg.path.string(),
                          out.path.string(), app_cmd("--events 5000 --threads 1"))),
        "tracepipe record: ");
  check(shell(fmt::format("TRACEPIPE_CONFIG={} TRACEPIPE_RECORD_OUTPUT={} {}", cfg.path.string(),
                          out.path.string(), app_cmd("--events 5000 --threads 1"))),
        "tracepipe: ");
}

TEST_CASE(
    "tracepipe report: a truncated recording prints what precedes the cut and says where it "
    "stopped",
    "[record][cli][user]") {
  TempPath out("user_cut.dat");
  const Ran r = shell(fmt::format("{} record -q -o {} {}", TP_TRACEPIPE_EXE, out.path.string(),
                                  app_cmd("--events 20000 --threads 1")));
  REQUIRE(r.status == 0);
  const uint64_t whole = count_if_records(out.path);
  REQUIRE(whole == emitted(r.out));
  const uint64_t size = std::filesystem::file_size(out.path);
  std::filesystem::resize_file(out.path, size - size / 3);
  const Ran rr = shell(fmt::format("{} report {}", TP_TRACEPIPE_EXE, out.path.string()));
  const std::string& rep = rr.out;
  const std::string& warn = rr.err;
  INFO(warn);
  CHECK(rr.status == 0);
  CHECK(warn.find("tracepipe report: warning: " + out.path.string() + ": truncated: cpu ") !=
        std::string::npos);
  CHECK(warn.find("read up to byte ") != std::string::npos);
  uint64_t lines = 0;
  for (size_t at = rep.find(" request: "); at != std::string::npos;
       at = rep.find(" request: ", at + 1))
    ++lines;
  CHECK(lines > 0);
  CHECK(lines < whole);
}

namespace {

// A Perfetto or CTF recording as its reader shows it: the app's records and
// the losses marked (CTF: events_discarded; Perfetto: END_OF_TRACE overrun,
// the sum of the bundles' lost counts), and whether it was finished.
struct FormatView {
  uint64_t records = 0, marked = 0;
  bool finished = false;
};
FormatView format_view(const std::string& format, const std::filesystem::path& out,
                       const tp_convert_test::Scratch& s) {
  FormatView v;
  std::vector<tp_convert_test::Rec> recs;
  if (format == "ctf") {
    std::vector<std::pair<uint32_t, uint64_t>> lost;
    recs = tp_convert_test::babeltrace_records(out, s.dir, &lost);
    for (const auto& [cpu, n] : lost) v.marked += n;
    v.finished = tp_test::read_file(out / "metadata").starts_with("/* CTF 1.8");
  } else {
    tp_convert_test::PerfettoExtras ex;
    recs = tp_convert_test::protoc_records(out, s.dir, &ex);
    // END_OF_TRACE's per-CPU statistics close the file.
    for (const auto& [cpu, n] : ex.overrun) v.marked += n;
    v.finished = !ex.overrun.empty();
  }
  for (const auto& r : recs) v.records += r.event == "request" || r.event == "note";
  return v;
}

void need_format_readers() {
  tp_convert_test::babeltrace_or_skip();
  tp_convert_test::perfetto_proto_or_skip();
}

}  // namespace

TEST_CASE(
    "tracepipe record --format ctf|perfetto: records + marked losses = emitted (drop-newest, "
    "overwrite)",
    "[record][cli][user][format]") {
  need_format_readers();
  tp_convert_test::Scratch s("user-format");
  for (const char* text : {kSmallDropNewest, kSmallOverwrite}) {
    const std::string mode = text == kSmallDropNewest ? "drop_newest" : "overwrite";
    TempPath cfg = config("user_fmt.toml", text);
    for (const std::string format : {"ctf", "perfetto"}) {
      INFO(mode << " " << format);
      const std::filesystem::path out = s / (mode + "." + format);
      const Ran r = shell(fmt::format("{} record --config {} --format {} -o {} {}",
                                      TP_TRACEPIPE_EXE, cfg.path.string(), format, out.string(),
                                      app_cmd("--events 40000 --threads 2")));
      INFO(r.err);
      REQUIRE(r.status == 0);
      const FormatView v = format_view(format, out, s);
      CHECK(v.finished);
      CHECK(v.marked > 0);  // the rate overflowed the 32 KiB buffer
      // What the output holds is what the recorder counted: its summary's
      // records written and events dropped.
      std::smatch m;
      REQUIRE(std::regex_search(r.err, m,
                                std::regex(": (\\d+) records, \\d+ bytes, (\\d+) dropped\n")));
      CHECK(v.records == std::stoull(m[1]));
      CHECK(v.marked == std::stoull(m[2]));
      // And that is every event emitted, in both modes (overwrite included:
      // a record its writer committed into a set-aside sub-buffer is counted
      // too, "set aside").
      CHECK(v.records + v.marked == emitted(r.out));
      CHECK(r.err.find(format == "ctf" ? "a packet's events_discarded"
                                       : "a bundle's lost_events") != std::string::npos);
    }
  }
}

TEST_CASE("tracepipe record --format ctf|perfetto: SIGTERM finalizes the output",
          "[record][cli][user][format]") {
  need_format_readers();
  tp_convert_test::Scratch s("user-format-term");
  TempPath cfg = config("user_fmt_term.toml", "[events.\"app:*\"]\nenable = true\n[recording]\n");
  for (const std::string format : {"ctf", "perfetto"}) {
    INFO(format);
    const std::filesystem::path out = s / ("term." + format);
    const Ran r = shell(fmt::format(
        "sh -c '{} record --config {} --format {} -o {} {} & sleep 0.5; kill -TERM $!; wait $!'",
        TP_TRACEPIPE_EXE, cfg.path.string(), format, out.string(),
        app_cmd("--seconds 20 --pace-us 20000")));
    INFO(r.err);
    CHECK(r.status == 128 + SIGTERM);
    const FormatView v = format_view(format, out, s);
    CHECK(v.finished);
    CHECK(v.records > 0);
    CHECK(r.err.find(fmt::format("tracepipe record: {}: {} records", out.string(), v.records)) !=
          std::string::npos);
  }
}
