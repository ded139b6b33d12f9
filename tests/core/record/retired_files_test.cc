// Rotation's removed files (core/record/retired_files.h): the name goes at
// once, the blocks a slice per step, and a full file system gets them back
// at once.
#include "tracepipe/core/record/retired_files.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "small_disk.h"
#include "test_support.h"

using tracepipe::record::RetiredFiles;

namespace {

size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

uint64_t free_bytes(const std::filesystem::path& dir) {
  struct statvfs fs {};
  REQUIRE(::statvfs(dir.c_str(), &fs) == 0);
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

void write_file(const std::filesystem::path& p, uint64_t bytes) {
  std::ofstream f(p, std::ios::binary);
  const std::string chunk(1 << 20, 'x');
  for (uint64_t left = bytes; left != 0;) {
    const uint64_t n = std::min<uint64_t>(left, chunk.size());
    f.write(chunk.data(), static_cast<std::streamsize>(n));
    left -= n;
  }
  REQUIRE(f.good());
}

}  // namespace

TEST_CASE("retired files: the name goes at once, the blocks one slice per step",
          "[record][rotation]") {
  // A tmpfs sees the blocks come back at each step (the free count).
  tp_test::SmallDisk disk("retire", 64 * 1024);
  const auto p = disk / "old.dat";
  const uint64_t size = 3 * RetiredFiles::kSliceBytes + 12345;
  write_file(p, size);
  const uint64_t free_with = free_bytes(disk.dir);
  const size_t fds = open_fds();

  RetiredFiles r;
  REQUIRE(r.retire(p));
  CHECK_FALSE(std::filesystem::exists(p));
  CHECK(r.queued() == 1);
  CHECK(open_fds() == fds + 1);
  CHECK(free_bytes(disk.dir) == free_with);  // held: nothing freed yet

  // ceil(size / slice) steps: three slices, then the last 12345 bytes.
  for (int i = 1; i <= 3; ++i) {
    r.step();
    INFO("step " << i);
    CHECK(free_bytes(disk.dir) >= free_with + i * RetiredFiles::kSliceBytes);
    CHECK(r.queued() == 1);
  }
  r.step();
  CHECK(r.queued() == 0);
  CHECK(open_fds() == fds);
  CHECK(free_bytes(disk.dir) >= free_with + size - 4096);
  r.step();  // nothing queued: nothing to do
  CHECK(r.queued() == 0);
}

TEST_CASE("retired files: a queue beyond its bound, finish() and a missing file",
          "[record][rotation]") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tp_retire_q_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const size_t fds = open_fds();
  RetiredFiles r;
  for (int i = 0; i < 4; ++i) {
    const auto p = dir / ("f" + std::to_string(i));
    tp_test::sparse_file(p, 2 * RetiredFiles::kSliceBytes);  // sizes, no blocks
    REQUIRE(r.retire(p));
    CHECK_FALSE(std::filesystem::exists(p));
  }
  CHECK(r.queued() == 4);
  r.step();  // the two oldest closed whole, one slice of the third
  CHECK(r.queued() == RetiredFiles::kMaxQueued);
  r.finish();
  CHECK(r.queued() == 0);
  CHECK(open_fds() == fds);
  // A name that is already gone: nothing to retire, and no error.
  CHECK(r.retire(dir / "never-there"));
  CHECK(r.queued() == 0);
  std::filesystem::remove_all(dir);
}
