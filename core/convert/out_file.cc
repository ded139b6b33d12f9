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
  while (n > 0) {
    const ssize_t w = ::write(fd_, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(path_, "write failed", errno);
    }
    if (w == 0) fail(path_, "write failed", EIO);
    c += w;
    n -= static_cast<size_t>(w);
    size_ += static_cast<uint64_t>(w);
  }
}

void OutFile::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(path_, "close failed", errno);
}

}  // namespace tracepipe::convert
