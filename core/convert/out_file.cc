#include "tracepipe/core/convert/out_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tracepipe::convert {
namespace {
[[noreturn]] void fail(const std::filesystem::path& p, const char* op, int err) {
  throw ConvertOutputError(p.string() + ": " + op + ": " + std::strerror(err), err);
}
}  // namespace

OutFile::OutFile(std::filesystem::path path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, "cannot create", errno);
}

OutFile::~OutFile() {
  if (fd_ >= 0) ::close(fd_);
}

OutFile::OutFile(OutFile&& o) noexcept
    : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)), size_(o.size_) {}

OutFile& OutFile::operator=(OutFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
  }
  return *this;
}

void OutFile::write(const void* p, size_t n) {
  const auto* c = static_cast<const char*>(p);
  const uint64_t start = size_;
  while (n > 0) {
    const ssize_t w = ::write(fd_, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : EIO;
      (void)truncate(
          start);  // a write cut short (disk full): the file ends with the last whole one
      fail(path_, "write failed", err);
    }
    c += w;
    n -= static_cast<size_t>(w);
    size_ += static_cast<uint64_t>(w);
  }
}

bool OutFile::truncate(uint64_t size) noexcept {
  if (size > size_) return false;
  if (size == size_) return true;
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0 ||
      ::lseek(fd_, static_cast<off_t>(size), SEEK_SET) < 0)
    return false;
  size_ = size;
  return true;
}

void OutFile::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(path_, "close failed", errno);
}

}  // namespace tracepipe::convert
