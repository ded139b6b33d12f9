// CPU list parsing (see buffers/cpu_list.h).
#include "tracepipe/buffers/cpu_list.h"

#include <fcntl.h>
#include <cerrno>
#include <unistd.h>

namespace tracepipe::buffers {

namespace {

constexpr uint32_t kMaxCpuNumber = 1u << 31;

// Calls f(lo, hi) for each range of a well-formed list; false if malformed.
template <class F>
bool for_each_range(std::string_view s, F&& f) noexcept {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  if (s.empty()) return false;
  size_t i = 0;
  auto number = [&](uint32_t& out) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    uint64_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      v = v * 10 + static_cast<uint64_t>(s[i] - '0');
      if (v > kMaxCpuNumber) return false;
      ++i;
    }
    out = static_cast<uint32_t>(v);
    return true;
  };
  for (;;) {
    uint32_t lo = 0, hi = 0;
    if (!number(lo)) return false;
    hi = lo;
    if (i < s.size() && s[i] == '-') {
      ++i;
      if (!number(hi) || hi < lo) return false;
    }
    f(lo, hi);
    if (i == s.size()) return true;
    if (s[i] != ',') return false;
    ++i;
  }
}

}  // namespace

std::optional<uint32_t> cpu_list_max(std::string_view list) noexcept {
  uint32_t max = 0;
  if (!for_each_range(list, [&](uint32_t, uint32_t hi) { max = hi > max ? hi : max; })) return std::nullopt;
  return max;
}

std::optional<bool> cpu_list_contains(std::string_view list, uint32_t cpu) noexcept {
  bool in = false;
  if (!for_each_range(list, [&](uint32_t lo, uint32_t hi) { in |= cpu >= lo && cpu <= hi; })) return std::nullopt;
  return in;
}

std::optional<std::string_view> read_cpu_list_file(const char* path, char* buf, size_t buf_size) noexcept {
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
  if (n == buf_size) return std::nullopt;  // longer than the buffer: refuse a cut list
  return std::string_view(buf, n);
}

std::optional<uint32_t> nr_cpu_ids_from_sysfs() noexcept {
  char buf[4096];
  const auto text = read_cpu_list_file("/sys/devices/system/cpu/possible", buf, sizeof buf);
  if (!text) return std::nullopt;
  const auto max = cpu_list_max(*text);
  if (!max) return std::nullopt;
  return *max + 1;
}

}  // namespace tracepipe::buffers
