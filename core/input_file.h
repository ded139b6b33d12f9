#pragma once
// Files named by the user (the input trace.dat, --kallsyms, a config file), checked
// before they are opened or read: a FIFO would block the open (or the read)
// until some writer comes, and /dev/zero or /dev/urandom never end, so only a
// regular file is accepted, and text read whole has a size limit.
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
/// file. Uses stat() only: nothing is opened, so a FIFO cannot block it.
/// A missing or unreachable file: "cannot access it: <strerror>".
void require_regular_file(const std::filesystem::path& path);

/// The whole content of the regular file `path`, at most `max_bytes` bytes.
/// The file is checked with stat() first, opened with O_NONBLOCK (so a file
/// swapped for a FIFO in between does not block) and checked again with
/// fstat(); reading stops with an error past `max_bytes` even if the file
/// grows meanwhile. Throws InputFileError (not a regular file, too large -
/// the message names the limit in MiB -, or an I/O error).
std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace tracepipe
