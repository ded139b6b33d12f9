// The machine's CPUs from sysfs (see buffers/sysfs_cpus.h).
#include "tracepipe/buffers/sysfs_cpus.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace tracepipe::buffers {

std::optional<uint32_t> last_cpu_in_list(std::string_view s) noexcept {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  size_t i = s.size();
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
  if (i == s.size() || s.size() - i > 10) return std::nullopt;
  uint64_t v = 0;
  for (size_t k = i; k < s.size(); ++k) v = v * 10 + static_cast<uint64_t>(s[k] - '0');
  if (v > (uint64_t{1} << 31)) return std::nullopt;
  return static_cast<uint32_t>(v);
}

std::optional<std::string_view> read_sysfs_file(const char* path, char* buf,
                                                size_t buf_size) noexcept {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  size_t n = 0;
  while (n < buf_size) {
    const ssize_t r = ::read(fd, buf + n, buf_size - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    if (r == 0) break;
    n += static_cast<size_t>(r);
  }
  ::close(fd);
  if (n == buf_size) return std::nullopt;  // longer than the buffer: refuse a cut text
  return std::string_view(buf, n);
}

std::optional<uint32_t> nr_cpu_ids_from_sysfs() noexcept {
  char buf[4096];
  const auto text = read_sysfs_file("/sys/devices/system/cpu/possible", buf, sizeof buf);
  if (!text) return std::nullopt;
  const auto last = last_cpu_in_list(*text);
  if (!last) return std::nullopt;
  return *last + 1;
}

bool cpu_online(uint32_t cpu) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%u", cpu);
  struct stat st;
  if (::stat(path, &st) !=
      0)  // no such CPU, unless sysfs cannot tell (then the safe answer for a fence)
    return ::stat("/sys/devices/system/cpu/possible", &st) != 0;
  std::snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%u/online", cpu);
  char buf[8];
  const auto text = read_sysfs_file(path, buf, sizeof buf);
  return !text || text->empty() || (*text)[0] != '0';
}

}  // namespace tracepipe::buffers
