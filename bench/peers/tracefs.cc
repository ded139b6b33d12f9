#include "tracepipe/bench/peers/tracefs.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "tracepipe/bench/peers/lttng_session.h"  // PeerUnavailable

namespace tracepipe::peers {
namespace {

constexpr const char* kPrefix = "tracepipe-peers-";
constexpr long kTracefsMagic = 0x74726163;  // TRACEFS_MAGIC
constexpr long kDebugfsMagic = 0x64626720;  // DEBUGFS_MAGIC

bool is_tracefs(const std::string& dir) {
  struct statfs st {};
  if (::statfs(dir.c_str(), &st) != 0) return false;
  return (st.f_type == kTracefsMagic || st.f_type == kDebugfsMagic) &&
         ::access((dir + "/trace").c_str(), F_OK) == 0;
}

std::string read_file(const std::string& path, bool& ok) {
  ok = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = n == 0;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

/// rmdir, retried while the kernel says busy (a reader that just closed).
bool remove_instance_dir(const std::string& path) {
  for (int i = 0; i < 50; ++i) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

uint64_t field(const std::string& text, const char* key, bool& found) {
  const std::string k = std::string(key) + ":";
  size_t pos = 0;
  while ((pos = text.find(k, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      found = true;
      return std::strtoull(text.c_str() + pos + k.size(), nullptr, 10);
    }
    pos += k.size();
  }
  found = false;
  return 0;
}

}  // namespace

std::string tracefs_root() {
  for (const char* d : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"})
    if (is_tracefs(d)) return d;
  return "";
}

void add_stats_text(const std::string& text, TracefsCounts& into) {
  bool found = false;
  const uint64_t entries = field(text, "entries", found);
  if (!found) throw std::runtime_error("per_cpu stats without an 'entries:' line");
  into.entries += entries;
  into.overrun += field(text, "overrun", found);
  into.dropped += field(text, "dropped events", found);
}

std::unique_ptr<TracefsInstance> TracefsInstance::create() {
  const std::string root = tracefs_root();
  if (root.empty()) throw PeerUnavailable("tracefs is not mounted (/sys/kernel/tracing)");
  const std::string instances = root + "/instances";
  if (::access(instances.c_str(), W_OK) != 0)
    throw PeerUnavailable(
        fmt::format("{} is not writable ({}): run as root", instances, std::strerror(errno)));
  // Remove instances left by bench processes that no longer exist.
  if (DIR* d = ::opendir(instances.c_str())) {
    while (dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.rfind(kPrefix, 0) != 0) continue;
      const std::string pid = n.substr(std::strlen(kPrefix));
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      if (::access(("/proc/" + pid).c_str(), F_OK) == 0) continue;  // its owner still runs
      remove_instance_dir(instances + "/" + n);
    }
    ::closedir(d);
  }
  std::unique_ptr<TracefsInstance> t(new TracefsInstance());
  t->root_ = root;
  t->name_ = kPrefix + std::to_string(::getpid());
  t->path_ = instances + "/" + t->name_;
  if (::mkdir(t->path_.c_str(), 0755) != 0) {
    const int err = errno;
    if (err != EEXIST)
      throw PeerUnavailable(fmt::format("cannot create {}: {}", t->path_, std::strerror(err)));
  }
  return t;
}

TracefsInstance::~TracefsInstance() {
  // Disable what we enabled first: removing an instance with live events
  // works, but disabling first keeps the removal cheap and certain.
  size_t pos = 0;
  while (pos < enabled_.size()) {
    const size_t nl = enabled_.find('\n', pos);
    const std::string ev = enabled_.substr(pos, nl - pos);
    pos = nl + 1;
    try {
      write("events/" + ev + "/enable", "0");
    } catch (...) {
    }
  }
  remove_instance_dir(path_);
}

void TracefsInstance::write(const std::string& rel, const std::string& value) {
  const std::string p = path_ + "/" + rel;
  const int fd = ::open(p.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("open {}: {}", p, std::strerror(errno)));
  ssize_t n;
  do {
    n = ::write(fd, value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (n < 0 || static_cast<size_t>(n) != value.size()) {
    std::string detail;
    if (rel.find("/filter") != std::string::npos) {
      bool ok = false;
      std::string log = read_file(path_ + "/error_log", ok);
      while (!log.empty() && log.back() == '\n') log.pop_back();
      const size_t last = log.rfind('\n');
      if (ok && !log.empty())
        detail = "; error_log: " + log.substr(last == std::string::npos ? 0 : last + 1);
    }
    throw std::runtime_error(fmt::format("write '{}' to {}: {}{}", value, p,
                                         n < 0 ? std::strerror(err) : "short write", detail));
  }
}

std::string TracefsInstance::read(const std::string& rel) const {
  bool ok = false;
  std::string s = read_file(path_ + "/" + rel, ok);
  if (!ok) throw std::runtime_error(fmt::format("cannot read {}/{}", path_, rel));
  return s;
}

bool TracefsInstance::has_event(const std::string& system, const std::string& event) const {
  struct stat st {};
  return ::stat((path_ + "/events/" + system + "/" + event).c_str(), &st) == 0 &&
         S_ISDIR(st.st_mode);
}

void TracefsInstance::enable_event(const std::string& system, const std::string& event, bool on) {
  write("events/" + system + "/" + event + "/enable", on ? "1" : "0");
  const std::string key = system + "/" + event + "\n";
  if (on && enabled_.find(key) == std::string::npos) enabled_ += key;
}

void TracefsInstance::set_filter(const std::string& system, const std::string& event,
                                 const std::string& expr) {
  write("events/" + system + "/" + event + "/filter", expr.empty() ? "0" : expr);
}

void TracefsInstance::clear() { write("trace", ""); }

TracefsCounts TracefsInstance::counts() const {
  TracefsCounts c;
  for (int cpu = 0;; ++cpu) {
    bool ok = false;
    const std::string text = read_file(fmt::format("{}/per_cpu/cpu{}/stats", path_, cpu), ok);
    if (!ok) break;
    add_stats_text(text, c);
  }
  return c;
}

}  // namespace tracepipe::peers
