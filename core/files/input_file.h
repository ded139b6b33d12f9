#pragma once
// Files named by the user (the input trace.dat, --kallsyms, a config file):
// only a regular file is accepted. A FIFO would block a plain open (or the
// read) until some writer comes, and /dev/zero or /dev/urandom never end; text
// read whole has a size limit.
//
// The check is made on the open descriptor, never on the path beforehand: a
// stat() of the path followed by an open() races with the file being replaced
// by a FIFO in between. So every file is opened with O_NONBLOCK (an open of a
// FIFO for reading then returns at once, writer or not) and O_NOCTTY (a
// terminal does not become the controlling one), and fstat() decides.
//
// Thread-safety: free functions without shared state.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tracepipe {

/// A named file that cannot be used. what() is "PATH: PROBLEM", e.g.
/// "/tmp/f: not a regular file (a FIFO)"; callers add the option's name.
class InputFileError : public std::runtime_error {
 public:
  InputFileError(const std::filesystem::path& path, std::string problem);
  const std::string& path() const noexcept { return path_; }
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

/// "a FIFO", "a character device", "a directory", ... for a stat st_mode.
std::string_view file_kind(unsigned mode) noexcept;

/// Throws InputFileError unless `path` (symbolic links followed) is a regular
/// file. Uses stat() only: nothing is opened, so a FIFO cannot block it. A
/// check only: the answer may be stale by the time the path is opened, so
/// code that goes on to read the file uses RegularFile::open instead.
/// A missing or unreachable file: "cannot access it: <strerror>".
void require_regular_file(const std::filesystem::path& path);

/// A read-only descriptor of a regular file, closed when the object dies.
/// Move-only; not thread-safe (one owner).
class RegularFile {
 public:
  /// Opens `path` (symbolic links followed) with O_RDONLY | O_NONBLOCK |
  /// O_CLOEXEC | O_NOCTTY, so the open itself never blocks, then fstat()s the
  /// descriptor. Throws InputFileError: "cannot open it: <strerror>",
  /// "cannot stat it: <strerror>", or "not a regular file (a FIFO)" (also
  /// "a directory", "a character device", ... as file_kind()).
  static RegularFile open(const std::filesystem::path& path);

  RegularFile(RegularFile&& o) noexcept;
  RegularFile& operator=(RegularFile&& o) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const noexcept { return fd_; }
  /// st_size when opened, in bytes (0 for procfs files that still have content).
  uint64_t size() const noexcept { return size_; }

 private:
  RegularFile(int fd, uint64_t size) noexcept : fd_(fd), size_(size) {}
  int fd_ = -1;
  uint64_t size_ = 0;
};

/// The whole content of the regular file `path`, at most `max_bytes` bytes.
/// Opened by RegularFile::open (so neither a FIFO nor a file swapped for one
/// blocks it); reading stops with an error past `max_bytes` even if the file
/// grows meanwhile. Throws InputFileError (as RegularFile::open, too large -
/// the message names the limit in MiB -, or an I/O error).
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace tracepipe
