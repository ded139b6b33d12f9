#include "tracepipe/core/files/input_file.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tracepipe {
namespace {

std::string limit_text(uint64_t max_bytes) {
  if (max_bytes % (1024 * 1024) == 0) return fmt::format("{} MiB", max_bytes / (1024 * 1024));
  return fmt::format("{} bytes", max_bytes);
}

[[noreturn]] void too_large(const std::filesystem::path& path, uint64_t size, uint64_t max_bytes) {
  throw InputFileError(
      path, fmt::format("{} bytes is over the limit of {}", size, limit_text(max_bytes)));
}
// Found while reading (the file grew, or procfs said size 0).
[[noreturn]] void too_long(const std::filesystem::path& path, uint64_t max_bytes) {
  throw InputFileError(path, fmt::format("longer than the limit of {}", limit_text(max_bytes)));
}

}  // namespace

InputFileError::InputFileError(const std::filesystem::path& path, std::string problem)
    : std::runtime_error(path.string() + ": " + problem),
      path_(path.string()),
      problem_(std::move(problem)) {}

std::string_view file_kind(unsigned mode) noexcept {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a file";
}

void require_regular_file(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputFileError(path, fmt::format("cannot access it: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw InputFileError(path, fmt::format("not a regular file ({})", file_kind(st.st_mode)));
}

RegularFile RegularFile::open(const std::filesystem::path& path) {
  // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting
  // for a writer. It changes nothing for a regular file's reads or mmap.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw InputFileError(path, fmt::format("cannot open it: {}", std::strerror(errno)));
  RegularFile f(fd, 0);  // closes fd if we throw below
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw InputFileError(path, fmt::format("cannot stat it: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw InputFileError(path, fmt::format("not a regular file ({})", file_kind(st.st_mode)));
  f.size_ = static_cast<uint64_t>(st.st_size);
  return f;
}

RegularFile::RegularFile(RegularFile&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), size_(o.size_) {}

RegularFile& RegularFile::operator=(RegularFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes) {
  const RegularFile f = RegularFile::open(path);
  const uint64_t size = f.size();
  if (size > max_bytes) too_large(path, size, max_bytes);

  std::string text;
  text.resize(static_cast<size_t>(size) + 1);  // one more: a file that grew is noticed
  size_t have = 0;
  while (true) {
    if (have == text.size()) {
      if (have > max_bytes) too_long(path, max_bytes);
      text.resize(std::min<uint64_t>(max_bytes + 1, have + have / 2 + 4096));
    }
    const ssize_t n = ::read(f.fd(), text.data() + have, text.size() - have);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputFileError(path, fmt::format("cannot read it: {}", std::strerror(errno)));
    }
    if (n == 0) break;
    have += static_cast<size_t>(n);
  }
  if (have > max_bytes) too_long(path, max_bytes);
  text.resize(have);
  return text;
}

}  // namespace tracepipe
