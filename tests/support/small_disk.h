// A tmpfs of a few KiB mounted over a fresh folder for one test (needs root,
// else the test is skipped), unmounted and removed at the end: a real
// filesystem that fills, for the disk-full tests.
#pragma once

#include <fmt/format.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "test_support.h"

namespace tp_test {

struct SmallDisk {
  std::filesystem::path dir;
  bool mounted = false;
  SmallDisk(const std::string& name, unsigned kib) {
    if (::geteuid() != 0) TP_SKIP("mounting a small tmpfs needs root");
    dir = std::filesystem::temp_directory_path() / fmt::format("tp-disk-{}-{}", name, ::getpid());
    std::filesystem::create_directories(dir);
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, fmt::format("size={}k", kib).c_str()) != 0) {
      std::filesystem::remove(dir);
      TP_SKIP("cannot mount a tmpfs here");
    }
    mounted = true;
  }
  ~SmallDisk() {
    if (mounted) ::umount2(dir.c_str(), MNT_DETACH);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;
  std::filesystem::path operator/(const std::string& n) const { return dir / n; }
};

}  // namespace tp_test
