// `tracepipe recover`: a running process's file is refused without --live
// and snapshotted with it; after the process is killed the file becomes a
// trace.dat; --list; a damaged file is an error naming the part.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "test_support.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
namespace fs = std::filesystem;

namespace {
using Tick = EventDecl<"tpcli", "tick", Int<"n", uint32_t>>;

uint64_t records_in(const fs::path& dat) {
  const auto r = TraceDatReader::open(dat);
  uint64_t n = 0;
  for (size_t i = 0; i < r.cpu_data().size(); ++i) {
    auto c = r.cpu_records(i);
    while (c.next()) ++n;
  }
  return n;
}
}  // namespace

TEST_CASE("recover cli: --live on a running process, then the crashed file", "[recover][cli]") {
  const fs::path dir = fs::temp_directory_path() / ("tp-recover-cli-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  int ready[2], hold[2];
  REQUIRE(pipe(ready) == 0);
  REQUIRE(pipe(hold) == 0);
  (void)Tick::desc();
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    InstanceOptions o;
    o.buffer_size_kb = 64;
    o.flight_recorder = true;
    o.flight_dir = dir.string();
    auto* inst = new Instance(o);
    inst->enable(Tick::desc());
    for (uint32_t i = 0; i < 500; ++i) Tick::emit(*inst, i);
    char c = 1;
    if (write(ready[1], &c, 1) != 1) _exit(2);
    (void)read(hold[0], &c, 1);  // until the parent kills us
    _exit(0);
  }
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  } reaper{child};
  char c = 0;
  REQUIRE(read(ready[0], &c, 1) == 1);
  const std::string exe = TP_TRACEPIPE_EXE;
  const fs::path dat = dir / "out.dat";

  auto r = tp_test::run_command({exe, "recover", dir.string(), "-o", dat.string()}, dir);
  CHECK(r.status == 1);
  CHECK(r.err.find("is still running") != std::string::npos);
  CHECK(r.err.find("--live") != std::string::npos);
  CHECK_FALSE(fs::exists(dat));

  r = tp_test::run_command({exe, "recover", dir.string(), "--live", "-o", dat.string()}, dir);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("500 records written") != std::string::npos);
  CHECK(records_in(dat) == 500);

  r = tp_test::run_command({exe, "recover", dir.string(), "--list"}, dir);
  CHECK(r.status == 0);
  CHECK(r.out.find("pid " + std::to_string(child)) != std::string::npos);
  CHECK(r.out.find("running") != std::string::npos);

  REQUIRE(kill(child, SIGKILL) == 0);
  REQUIRE(waitpid(child, nullptr, 0) == child);
  reaper.pid = 0;
  fs::remove(dat);
  r = tp_test::run_command(
      {exe, "recover", dir.string(), "--pid", std::to_string(child), "-o", dat.string()}, dir);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(records_in(dat) == 500);
  const auto report = tp_test::run_command({"trace-cmd", "report", dat.string()}, dir);
  if (report.status == 0) CHECK(report.out.find("tick:") != std::string::npos);

  // -o naming the flight file itself is refused: recover wrote its trace.dat
  // over the only copy of the crashed process's buffers.
  const fs::path file = dir / ("main-" + std::to_string(child) + ".tpflight");
  const auto flight_size = fs::file_size(file);
  r = tp_test::run_command({exe, "recover", file.string(), "-o", file.string()}, dir);
  CHECK(r.status == 2);
  CHECK(r.err.starts_with("tracepipe recover: -o " + file.string() + ": is the flight file"));
  CHECK(fs::file_size(file) == flight_size);
  r = tp_test::run_command({exe, "recover", file.string(), "-o", dat.string()}, dir);
  CHECK(r.status == 0);
  CHECK(records_in(dat) == 500);

  // A damaged file: truncated.
  fs::resize_file(file, fs::file_size(file) - 4096);
  r = tp_test::run_command({exe, "recover", file.string(), "--strict", "-o", dat.string()}, dir);
  CHECK(r.status == 1);
  CHECK(r.err.find("tracepipe recover: " + file.string() + ": header.file_size") !=
        std::string::npos);
  // Without --strict: what precedes the cut, and where the reading stopped.
  r = tp_test::run_command({exe, "recover", file.string(), "-o", dat.string()}, dir);
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.err.find("tracepipe recover: warning: " + file.string() +
                   ": truncated: the header says") != std::string::npos);
  CHECK(records_in(dat) <= 500);
  close(ready[0]);
  close(ready[1]);
  close(hold[0]);
  close(hold[1]);
  fs::remove_all(dir);
}
