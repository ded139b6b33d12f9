// Flight files (core/flight): created with the instance, live while it lives
// and removed after; the write path into one makes no system call; the
// config keys; a forked child's copy leaves the parent's file. What is in a
// file is read back through core/recover.
#include "tracepipe/core/flight/flight_file.h"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "../instance/test_events.h"
#include "syscall_jail.h"
#include "test_support.h"
#include "tracepipe/core/recover/recover.h"

using namespace tracepipe;
using namespace tp_core_test;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("tp-flight-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

InstanceOptions flight_options(const fs::path& dir, BufferMode mode = BufferMode::drop_newest) {
  InstanceOptions o = small_options(Staging::per_thread, mode);
  o.flight_recorder = true;
  o.flight_dir = dir.string();
  return o;
}

}  // namespace

TEST_CASE("flight: the file is created, live while the instance lives, and removed after",
          "[flight]") {
  const fs::path dir = scratch("life");
  fs::path path;
  {
    Instance inst(flight_options(dir));
    path = inst.flight_path();
    REQUIRE(!path.empty());
    CHECK(path.parent_path() == dir);
    CHECK(path.filename().string() == "main-" + std::to_string(getpid()) + ".tpflight");
    REQUIRE(fs::exists(path));
    const auto t = recover::recover_file(path, {.live = true});
    CHECK(t.state == flight::FileState::live);
    CHECK(t.pid == getpid());
    CHECK(t.cpus.size() == inst.cpus());
    CHECK(t.records() == 0);
    CHECK(t.instance == "main");
    CHECK(t.clock == "local");
  }
  CHECK_FALSE(fs::exists(path));
  InstanceOptions plain = small_options(Staging::per_thread);
  Instance p(plain);
  CHECK(p.flight_path().empty());
  fs::remove_all(dir);
}

TEST_CASE(
    "flight: the write path into a flight file makes no system call, through wraps and recycles",
    "[flight]") {
  const fs::path dir = scratch("jail");
  constexpr uint32_t kRecords = 20000;  // a 16 KiB ring per CPU wraps many times
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    InstanceOptions o = flight_options(dir, BufferMode::overwrite);
    o.buffer_size_kb = 16;
    auto* inst = new Instance(o);
    inst->enable(Sample::desc());
    if (!inst->set_filter(Sample::desc(), "value == 7").ok()) _exit(2);  // staged, accepted
    prepare_thread();
    if (!tp_test::enter_syscall_jail()) _exit(3);
    for (uint32_t i = 0; i < kRecords; ++i)
      if (emit_sample(*inst, 7, i, "jail") != EmitResult::kept) _exit(4);
    _exit(0);  // exit_group: allowed; any other system call was SIGSYS
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  INFO("status " << status);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const auto files = recover::find_flight_files(dir);
  REQUIRE(files.size() == 1);
  const auto t = recover::recover_file(files[0]);
  uint64_t overrun = 0;
  uint32_t last = 0;
  for (const auto& c : t.cpus) {
    overrun += c.counters.overrun;
    for (const auto& r : c.records) {
      uint32_t seq;
      std::memcpy(&seq, c.payload(r).data() + 12, 4);
      last = std::max(last, seq);
    }
  }
  CHECK(overrun > 0);
  CHECK(t.records() + overrun == kRecords);
  CHECK(last == kRecords - 1);
  fs::remove_all(dir);
}

TEST_CASE("flight: the config keys flight_recorder and flight_dir", "[flight][config]") {
  const fs::path dir = scratch("config");
  const Config c = parse_config("flight_recorder = true\nflight_dir = \"" + dir.string() + "\"\n");
  REQUIRE(c.instances.size() == 1);
  CHECK(c.instances[0].options.flight_recorder);
  CHECK(c.instances[0].options.flight_dir == dir.string());
  {
    auto inst = Instance::from_config(c.instances[0]);
    CHECK(inst->flight_path().parent_path() == dir);
    CHECK(fs::exists(inst->flight_path()));
  }
  CHECK_THROWS_WITH(parse_config("flight_dir = \"\"\n"),
                    Catch::Contains("flight_dir") && Catch::Contains("must name a directory"));
  CHECK_THROWS_WITH(parse_config("flight_recorder = 3\n"), Catch::Contains("flight_recorder"));
  // A directory that cannot be created: the constructor names it.
  InstanceOptions o = flight_options("/proc/no-such-dir/x");
  CHECK_THROWS_WITH(Instance(o), Catch::Contains("/proc/no-such-dir/x"));
  fs::remove_all(dir);
}

TEST_CASE("flight: a forked child that destroys its copy of the instance leaves the parent's file",
          "[flight]") {
  const fs::path dir = scratch("fork");
  Instance inst(flight_options(dir));
  inst.enable(Sample::desc());
  REQUIRE(emit_sample(inst, 1, 1, "parent") == EmitResult::kept);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child's records go to the shared mapping too; then it ends the
    // way exit() would end a global Instance: through its destructor.
    (void)emit_sample(inst, 2, 2, "child");
    inst.~Instance();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(fs::exists(inst.flight_path()));
  const auto t = recover::recover_file(inst.flight_path(), {.live = true});
  CHECK(t.state == flight::FileState::live);
  CHECK(t.records() == 2);
  fs::remove_all(dir);
}
