// MappedFile::open (and RegularFile::open under it): a FIFO with no writer, a
// directory or a device is refused promptly, with the path and the kind of
// file in the message; a regular file maps byte for byte.
//
// A blocking open is a failure, not a hang: the open runs on a thread that
// the test waits for with a timeout; if it is stuck, the test opens the FIFO
// for writing to release it and fails.
#include "tracepipe/core/files/mapped_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include "tracepipe/core/files/input_file.h"

namespace {

namespace fs = std::filesystem;
using tracepipe::InputFileError;
using tracepipe::MappedFile;

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("tp_mapped_file_" + std::to_string(::getpid()));
  Scratch() { fs::create_directories(dir); }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// The message of MappedFile::open(p), or "(no error, N bytes)". Fails the
// test (instead of hanging) if the open has not returned within 10 s; a
// FIFO is then released by opening it for writing.
std::string open_error(const fs::path& p) {
  std::promise<std::string> done;
  std::future<std::string> result = done.get_future();
  std::thread t([&] {
    try {
      const MappedFile m = MappedFile::open(p);
      done.set_value("(no error, " + std::to_string(m.bytes().size()) + " bytes)");
    } catch (const InputFileError& e) {
      done.set_value(e.what());
    } catch (const std::exception& e) {
      done.set_value(std::string("(other exception) ") + e.what());
    }
  });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    FAIL_CHECK("MappedFile::open(" << p << ") blocked");
    const int w = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    t.join();
    if (w >= 0) ::close(w);
    return "(blocked) " + result.get();
  }
  t.join();
  return result.get();
}

}  // namespace

TEST_CASE("mapped_file: a FIFO without a writer is refused at once, not waited on",
          "[core][mapped_file]") {
  Scratch s;
  const fs::path fifo = s.dir / "trace.dat";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(open_error(fifo) == fifo.string() + ": not a regular file (a FIFO)");
  // Through a symbolic link too: the descriptor is checked, not the name.
  fs::create_symlink(fifo, s.dir / "link.dat");
  CHECK(open_error(s.dir / "link.dat") ==
        (s.dir / "link.dat").string() + ": not a regular file (a FIFO)");
}

TEST_CASE("mapped_file: directories and devices are refused, naming the kind",
          "[core][mapped_file]") {
  Scratch s;
  CHECK(open_error(s.dir) == s.dir.string() + ": not a regular file (a directory)");
  CHECK(open_error("/dev/null") == "/dev/null: not a regular file (a character device)");
  CHECK(open_error(s.dir / "missing.dat") ==
        (s.dir / "missing.dat").string() + ": cannot open it: No such file or directory");
}

TEST_CASE("mapped_file: a regular file maps byte for byte, an empty one to an empty span",
          "[core][mapped_file]") {
  Scratch s;
  const std::string text("tracing\0data", 12);
  std::ofstream(s.dir / "f", std::ios::binary) << text;
  MappedFile m = MappedFile::open(s.dir / "f");
  REQUIRE(m.bytes().size() == 12);
  CHECK(std::string(reinterpret_cast<const char*>(m.bytes().data()), 12) == text);
  // A move keeps the mapping.
  MappedFile moved = std::move(m);
  CHECK(m.bytes().empty());
  REQUIRE(moved.bytes().size() == 12);
  CHECK(static_cast<char>(moved.bytes()[7]) == '\0');
  CHECK(static_cast<char>(moved.bytes()[11]) == 'a');

  std::ofstream(s.dir / "empty", std::ios::binary).flush();
  CHECK(open_error(s.dir / "empty") == "(no error, 0 bytes)");
}

TEST_CASE("mapped_file: is_file knows the mapped file under any name, and nothing else",
          "[core][mapped_file]") {
  Scratch s;
  std::ofstream(s.dir / "f", std::ios::binary) << "trace";
  std::ofstream(s.dir / "g", std::ios::binary) << "trace";
  fs::create_hard_link(s.dir / "f", s.dir / "hard");
  fs::create_symlink(s.dir / "f", s.dir / "soft");
  MappedFile m = MappedFile::open(s.dir / "f");
  CHECK(m.is_file(s.dir / "f"));
  CHECK(m.is_file(s.dir / "hard"));
  CHECK(m.is_file(s.dir / "soft"));
  CHECK(m.is_file(s.dir / "." / "f"));
  CHECK_FALSE(m.is_file(s.dir / "g"));
  CHECK_FALSE(m.is_file(s.dir / "missing"));
  // Renamed, it is still the mapped file; a move carries the identity.
  fs::rename(s.dir / "f", s.dir / "renamed");
  const MappedFile moved = std::move(m);
  CHECK(moved.is_file(s.dir / "renamed"));
  CHECK_FALSE(m.is_file(s.dir / "renamed"));
  // Bytes in memory are no file, whatever file holds the same bytes.
  const MappedFile copy = MappedFile::copy_of(moved.bytes());
  CHECK_FALSE(copy.is_file(s.dir / "renamed"));
  // An empty file is not mapped, but it is still the file opened.
  std::ofstream(s.dir / "empty", std::ios::binary).flush();
  CHECK(MappedFile::open(s.dir / "empty").is_file(s.dir / "empty"));
}
