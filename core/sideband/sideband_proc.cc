// Readers of /proc for state synthesis (see core/sideband/sideband_proc.h).
#include "tracepipe/core/sideband/sideband_proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "tracepipe/core/sideband/sideband_events.h"

namespace tracepipe {

std::string_view Comm::view() const noexcept { return {bytes.data(), strnlen(bytes.data(), 15)}; }

Comm Comm::from(std::string_view s) noexcept {
  Comm c;
  const size_t n = std::min<size_t>(s.size(), 15);
  std::memcpy(c.bytes.data(), s.data(), n);
  // A name stops at its first NUL, as the kernel's strscpy does.
  const size_t real = strnlen(c.bytes.data(), n);
  std::memset(c.bytes.data() + real, 0, c.bytes.size() - real);
  return c;
}

namespace {

// Parses hex digits at the front of `s` into `out`; advances `s`.
bool take_hex(std::string_view& s, uint64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  if (r.ec != std::errc() || r.ptr == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(r.ptr - s.data()));
  return true;
}

bool take_dec(std::string_view& s, uint64_t& out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out, 10);
  if (r.ec != std::errc() || r.ptr == s.data()) return false;
  s.remove_prefix(static_cast<size_t>(r.ptr - s.data()));
  return true;
}

bool take_char(std::string_view& s, char c) {
  if (s.empty() || s.front() != c) return false;
  s.remove_prefix(1);
  return true;
}

bool take_spaces(std::string_view& s) {
  if (s.empty() || s.front() != ' ') return false;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return true;
}

// "start-end perms offset maj:min inode [path]"
std::optional<ProcMapping> parse_line(std::string_view s) {
  ProcMapping m;
  uint64_t maj = 0, min = 0;
  if (!take_hex(s, m.start) || !take_char(s, '-') || !take_hex(s, m.end) || !take_spaces(s))
    return std::nullopt;
  if (s.size() < 4) return std::nullopt;
  const std::string_view perms = s.substr(0, 4);
  s.remove_prefix(4);
  if (perms[0] == 'r')
    m.prot |= MapProt::read;
  else if (perms[0] != '-')
    return std::nullopt;
  if (perms[1] == 'w')
    m.prot |= MapProt::write;
  else if (perms[1] != '-')
    return std::nullopt;
  if (perms[2] == 'x')
    m.prot |= MapProt::exec;
  else if (perms[2] != '-')
    return std::nullopt;
  if (perms[3] == 's')
    m.flags = MapFlags::shared;
  else if (perms[3] == 'p')
    m.flags = MapFlags::private_;
  else
    return std::nullopt;
  if (!take_spaces(s) || !take_hex(s, m.pgoff) || !take_spaces(s)) return std::nullopt;
  if (!take_hex(s, maj) || !take_char(s, ':') || !take_hex(s, min) || !take_spaces(s))
    return std::nullopt;
  if (!take_dec(s, m.ino)) return std::nullopt;
  if (maj > UINT32_MAX || min > UINT32_MAX || m.end <= m.start) return std::nullopt;
  m.maj = static_cast<uint32_t>(maj);
  m.min = static_cast<uint32_t>(min);
  if (!s.empty()) {
    if (s.front() != ' ') return std::nullopt;  // junk glued to the inode
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    m.path.assign(s);
  }
  return m;
}

std::error_code last_error() { return {errno, std::generic_category()}; }

}  // namespace

MapsParse parse_proc_maps(std::string_view text) {
  MapsParse out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    if (auto m = parse_line(line))
      out.mappings.push_back(std::move(*m));
    else
      ++out.malformed;
  }
  return out;
}

ProcRead read_proc_file(const char* path) {
  ProcRead r;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r.error = last_error();
    return r;
  }
  size_t used = 0;
  r.text.resize(64 * 1024);
  for (;;) {
    if (used == r.text.size()) r.text.resize(r.text.size() * 2);
    const ssize_t n = ::read(fd, r.text.data() + used, r.text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      r.error = last_error();
      break;
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  r.text.resize(used);
  return r;
}

ThreadList list_threads() {
  ThreadList out;
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) {
    out.error = last_error();
    return out;
  }
  while (const dirent* e = ::readdir(d)) {
    int32_t tid = 0;
    const char* name = e->d_name;
    const auto r = std::from_chars(name, name + std::strlen(name), tid, 10);
    if (r.ec == std::errc() && *r.ptr == '\0' && tid > 0) out.tids.push_back(tid);
  }
  ::closedir(d);
  std::sort(out.tids.begin(), out.tids.end());
  return out;
}

std::optional<Comm> read_thread_comm(int32_t tid, int task_dir_fd) {
  char path[48];
  int fd;
  if (task_dir_fd >= 0) {
    auto r = std::to_chars(path, path + sizeof path - 8, tid);
    std::memcpy(r.ptr, "/comm", 6);
    fd = ::openat(task_dir_fd, path, O_RDONLY | O_CLOEXEC);
  } else {
    std::memcpy(path, "/proc/self/task/", 16);
    auto r = std::to_chars(path + 16, path + sizeof path - 8, tid);
    std::memcpy(r.ptr, "/comm", 6);
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) return std::nullopt;
  char buf[64];
  ssize_t n;
  do n = ::read(fd, buf, sizeof buf);
  while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n <= 0) return std::nullopt;  // a thread that is gone reads ESRCH or nothing
  size_t len = static_cast<size_t>(n);
  if (buf[len - 1] == '\n') --len;
  return Comm::from({buf, len});
}

std::string read_exe_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace tracepipe
