// pwrite_all (see core/files/output_file.h).
#include "tracepipe/core/files/output_file.h"

#include <unistd.h>

#include <cerrno>

namespace tracepipe {

int pwrite_all(int fd, std::span<const std::byte> bytes, uint64_t offset) noexcept {
  const std::byte* p = bytes.data();
  size_t n = bytes.size();
  while (n != 0) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return 0;
}

}  // namespace tracepipe
