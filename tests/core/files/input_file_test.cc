// Files named on the command line that are not plain files: load_config
// (--config) and read_regular_file (--kallsyms) refuse FIFOs and devices
// without blocking and refuse text over their size limit, naming the path and
// the limit. A hang is a failure: every case runs under an alarm.
#include "tracepipe/core/files/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_support.h"
#include "tracepipe/core/config/config.h"

namespace {

namespace fs = std::filesystem;
using tracepipe::InputFileError;
using tracepipe::read_regular_file;
using tracepipe::require_regular_file;

// A temp directory removed at the end; SIGALRM (default action: terminate)
// ends the test run if something blocks.
struct InputScratch {
  fs::path dir;
  InputScratch() {
    dir = fs::temp_directory_path() / ("tp_input_file_" + std::to_string(getpid()));
    fs::create_directories(dir);
    alarm(60);
  }
  ~InputScratch() {
    alarm(0);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path fifo() const {
    const fs::path p = dir / "fifo";
    REQUIRE(mkfifo(p.c_str(), 0600) == 0);
    return p;
  }
  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path p = dir / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // A sparse file of `size` bytes (costs no disk space).
  fs::path sparse(const std::string& name, uint64_t size) const {
    return tp_test::sparse_file(dir / name, size);
  }
};

std::string config_error(const fs::path& p) {
  try {
    (void)tracepipe::load_config(p);
  } catch (const tracepipe::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string input_error(const fs::path& p, uint64_t max) {
  try {
    (void)read_regular_file(p, max);
  } catch (const InputFileError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("load_config: a FIFO, a device or a directory is refused without blocking",
          "[tools][config]") {
  InputScratch s;
  const fs::path fifo = s.fifo();
  // With a blocking open this would wait forever for a writer.
  CHECK(config_error(fifo) == fifo.string() + ": not a regular file (a FIFO)");
  // /dev/zero never ends: unbounded memory before the fix.
  CHECK(config_error("/dev/zero") == "/dev/zero: not a regular file (a character device)");
  CHECK(config_error(s.dir) == s.dir.string() + ": not a regular file (a directory)");
  CHECK(config_error(s.dir / "missing.toml") ==
        (s.dir / "missing.toml").string() + ": cannot open it: No such file or directory");
}

TEST_CASE("load_config: a file over 64 MiB is refused, naming the limit", "[tools][config]") {
  InputScratch s;
  const fs::path big = s.sparse("big.toml", (uint64_t{64} << 20) + 1);
  CHECK(config_error(big) ==
        big.string() + ": 67108865 bytes is over the limit of 64 MiB for a config file");
  // A regular file under the limit still loads, through a symbolic link too.
  const fs::path ok =
      s.write("ok.toml",
              "buffer_size_kb = 64\n[events.\"sched:sched_switch\"]\nfilter = \"prev_pid == 0\"\n");
  fs::create_symlink(ok, s.dir / "link.toml");
  const tracepipe::Config c = tracepipe::load_config(s.dir / "link.toml");
  REQUIRE(c.instances.size() == 1);
  CHECK(c.instances[0].options.buffer_size_kb == 64);
  REQUIRE(c.instances[0].events.size() == 1);
  CHECK(c.instances[0].events[0].filter == "prev_pid == 0");
}

TEST_CASE("read_regular_file: FIFOs and devices refused, the limit named, content exact",
          "[tools][input]") {
  InputScratch s;
  const fs::path fifo = s.fifo();
  CHECK(input_error(fifo, 1 << 20) == fifo.string() + ": not a regular file (a FIFO)");
  CHECK(input_error("/dev/zero", 1 << 20) == "/dev/zero: not a regular file (a character device)");
  CHECK_THROWS_AS(require_regular_file(fifo), InputFileError);
  CHECK_THROWS_AS(require_regular_file("/dev/null"), InputFileError);
  CHECK_NOTHROW(require_regular_file(s.write("x", "x")));

  const fs::path big = s.sparse("big", (uint64_t{256} << 20) + 1);
  CHECK(input_error(big, uint64_t{256} << 20) ==
        big.string() + ": 268435457 bytes is over the limit of 256 MiB");

  // The limit is inclusive, and a limit that is no whole MiB is given in bytes.
  const fs::path ten = s.write("ten", "0123456789");
  CHECK(read_regular_file(ten, 10) == "0123456789");
  CHECK(input_error(ten, 9) == ten.string() + ": 10 bytes is over the limit of 9 bytes");
  CHECK(read_regular_file(s.write("empty", ""), 0).empty());

  // procfs files say size 0 but have content: read to the end all the same,
  // and still bounded.
  const std::string status = read_regular_file("/proc/self/status", 1 << 20);
  CHECK(status.find("Pid:") != std::string::npos);
  const std::string err = input_error("/proc/self/status", 16);
  CHECK(err == "/proc/self/status: longer than the limit of 16 bytes");
}
