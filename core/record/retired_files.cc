#include "tracepipe/core/record/retired_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

namespace tracepipe::record {

bool RetiredFiles::retire(const std::filesystem::path& path) noexcept {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  struct stat s {};
  if (fd < 0 || ::fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
    if (fd >= 0) ::close(fd);
    std::error_code ec;
    return std::filesystem::remove(path, ec) || !ec;
  }
  if (::unlink(path.c_str()) != 0) {
    ::close(fd);
    return false;
  }
  try {
    files_.push_back({fd, static_cast<uint64_t>(s.st_size)});
  } catch (...) {
    ::close(fd);  // no memory for the queue: free it now
  }
  return true;
}

void RetiredFiles::step() noexcept {
  while (files_.size() > kMaxQueued) {
    ::close(files_.front().fd);
    files_.pop_front();
  }
  if (files_.empty()) return;
  File& f = files_.front();
  f.size -= std::min(f.size, kSliceBytes);
  if (f.size == 0 || ::ftruncate(f.fd, static_cast<off_t>(f.size)) != 0) {
    ::close(f.fd);
    files_.pop_front();
  }
}

void RetiredFiles::finish() noexcept {
  for (const File& f : files_) ::close(f.fd);
  files_.clear();
}

}  // namespace tracepipe::record
