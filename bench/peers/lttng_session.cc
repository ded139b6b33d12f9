#include "tracepipe/bench/peers/lttng_session.h"

#include <fmt/core.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace tracepipe::peers {
namespace fs = std::filesystem;
namespace {

/// Numbers inside every <tag>N</tag> of `xml`, summed; `found` counts them.
uint64_t sum_tag(const std::string& xml, const std::string& tag, int& found) {
  const std::string open = "<" + tag + ">";
  uint64_t sum = 0;
  for (size_t pos = xml.find(open); pos != std::string::npos; pos = xml.find(open, pos)) {
    pos += open.size();
    char* end = nullptr;
    const unsigned long long v = std::strtoull(xml.c_str() + pos, &end, 10);
    if (end == xml.c_str() + pos || *end != '<')
      throw std::runtime_error(fmt::format("lttng MI: <{}> does not hold a number", tag));
    sum += v;
    ++found;
  }
  return sum;
}

/// A directory for the private root: a tmpfs if there is one.
fs::path make_temp_root() {
  std::string base = "/dev/shm";
  if (::access(base.c_str(), W_OK) != 0) {
    const char* t = std::getenv("TMPDIR");
    base = t != nullptr ? t : "/tmp";
  }
  std::string tmpl = base + "/tracepipe-peers-lttng-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw PeerUnavailable(
        fmt::format("cannot create a directory in {}: {}", base, std::strerror(errno)));
  return tmpl;
}

/// The last non-empty line of a log file (for a one-line skip reason).
std::string last_line(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return "no log";
  std::string last, line;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f) != nullptr) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      if (!line.empty()) last = line;
      line.clear();
    }
  }
  if (!line.empty()) last = line;
  std::fclose(f);
  if (last.size() > 200) last = last.substr(last.size() - 200);
  return last.empty() ? "empty log" : last;
}

bool mount_tmpfs(const std::string& where, std::string& why) {
  if (::mount("tracepipe-peers", where.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    why = fmt::format("mount tmpfs on {}: {}", where, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

LttngChannelStats parse_mi_channel_stats(const std::string& xml) {
  LttngChannelStats s;
  int channels = 0, lost = 0;
  s.discarded_events = sum_tag(xml, "discarded_events", channels);
  s.lost_packets = sum_tag(xml, "lost_packets", lost);
  if (channels == 0)
    throw std::runtime_error("lttng MI: no channel statistics in the session listing");
  return s;
}

std::unique_ptr<LttngDaemon> LttngDaemon::start() {
  const std::string lttng = find_in_path("lttng");
  const std::string sessiond = find_in_path("lttng-sessiond");
  if (lttng.empty() || sessiond.empty())
    throw PeerUnavailable("lttng-tools is not installed (no lttng or lttng-sessiond in PATH)");

  std::unique_ptr<LttngDaemon> d(new LttngDaemon());
  if (::geteuid() == 0) {
    // A root daemon uses /run/lttng and /dev/shm whatever LTTNG_HOME says:
    // give this thread (and the children it spawns) private ones.
    std::string why;
    bool isolated = false;
    if (::unshare(CLONE_NEWNS) == 0 &&
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
      isolated = true;
      if (::access("/run/lttng", F_OK) != 0) {
        if (::mkdir("/run/lttng", 0755) == 0) d->created_rundir_ = "/run/lttng";
      }
      if (!mount_tmpfs("/run/lttng", why))
        isolated = false;
      else
        d->mounts_.push_back("/run/lttng");
      if (isolated) {
        if (!mount_tmpfs("/dev/shm", why))
          isolated = false;
        else
          d->mounts_.push_back("/dev/shm");
      }
    } else {
      why = fmt::format("unshare(CLONE_NEWNS): {}", std::strerror(errno));
    }
    if (!isolated) {
      if (::access("/run/lttng/client-lttng-sessiond", F_OK) == 0)
        throw PeerUnavailable(
            fmt::format("a root lttng-sessiond already runs and this process cannot get private "
                        "LTTng directories ({})",
                        why));
      d->isolation_ = fmt::format("shared /run/lttng ({}; no other root session daemon runs)", why);
    } else {
      d->isolation_ = "private mount namespace (tmpfs on /run/lttng and /dev/shm)";
    }
  }
  d->root_ = make_temp_root();
  const fs::path home = d->root_ / "home";
  d->output_root_ = d->root_ / "sessions";
  fs::create_directories(home);
  fs::create_directories(d->output_root_);
  ::setenv("LTTNG_HOME", home.c_str(), 1);
  // The app waits this long for the daemon at registration (ms).
  ::setenv("LTTNG_UST_REGISTER_TIMEOUT", "5000", 1);
  if (d->isolation_.empty()) d->isolation_ = "LTTNG_HOME=" + home.string();

  const std::string log = (d->root_ / "lttng-sessiond.log").string();
  d->daemon_ = ChildProcess({sessiond, "--no-kernel"}, log);
  // Ready when the CLI gets an answer.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  for (;;) {
    if (!d->daemon_.running())
      throw PeerUnavailable(fmt::format("lttng-sessiond exited at start-up: {}", last_line(log)));
    ProcessResult r = run_process({lttng, "list"}, std::chrono::seconds(5));
    if (r.ok()) break;
    if (std::chrono::steady_clock::now() > deadline)
      throw PeerUnavailable(
          fmt::format("lttng-sessiond did not answer within 15 s: {}", last_line(log)));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return d;
}

LttngDaemon::~LttngDaemon() {
  daemon_.stop();
  std::error_code ec;
  if (!root_.empty()) fs::remove_all(root_, ec);
  for (auto it = mounts_.rbegin(); it != mounts_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
  if (!created_rundir_.empty()) ::rmdir(created_rundir_.c_str());
}

std::vector<pid_t> LttngDaemon::consumer_pids() const {
  std::vector<pid_t> out;
  for (const pid_t c : child_pids(daemon_.pid()))
    if (process_name(c).starts_with("lttng-consumerd")) out.push_back(c);
  return out;
}

std::string LttngDaemon::lttng(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"lttng"};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = run_process(argv, std::chrono::seconds(60));
  if (!r.ok()) {
    std::string cmd;
    for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' '))
      r.output.pop_back();
    throw std::runtime_error(
        fmt::format("`{}` failed ({}): {}", cmd,
                    r.timed_out ? "timed out" : fmt::format("exit {}", r.exit_code), r.output));
  }
  return r.output;
}

LttngSession::LttngSession(LttngDaemon& daemon, std::string name, const LttngChannelSpec& spec,
                           const std::string& filter)
    : daemon_(daemon), name_(std::move(name)), out_(daemon.output_root() / name_) {
  std::vector<std::string> create{"create", name_, "--output=" + out_.string()};
  if (spec.overwrite) create.push_back("--snapshot");
  daemon_.lttng(create);
  try {
    std::vector<std::string> ch{"enable-channel", "--userspace", "--session=" + name_,
                                spec.per_pid ? "--buffers-pid" : "--buffers-uid",
                                spec.overwrite ? "--overwrite" : "--discard"};
    if (spec.subbuf_bytes != 0) ch.push_back("--subbuf-size=" + std::to_string(spec.subbuf_bytes));
    if (spec.num_subbuf != 0) ch.push_back("--num-subbuf=" + std::to_string(spec.num_subbuf));
    ch.push_back("ch");
    daemon_.lttng(ch);
    std::vector<std::string> ev{"enable-event", "--userspace", "--session=" + name_, "--channel=ch",
                                "tracepipe_peer:sched_switch"};
    if (!filter.empty()) ev.push_back("--filter=" + filter);
    daemon_.lttng(ev);
    daemon_.lttng({"start", name_});
    started_ = true;
  } catch (...) {
    try {
      daemon_.lttng({"destroy", name_});
    } catch (...) {
    }
    throw;
  }
}

LttngChannelStats LttngSession::stop() {
  if (stats_) return *stats_;
  if (started_) daemon_.lttng({"stop", name_});
  started_ = false;
  stats_ = parse_mi_channel_stats(daemon_.lttng({"--mi", "xml", "list", name_}));
  return *stats_;
}

uint64_t LttngSession::stream_bytes() const {
  uint64_t sum = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(out_, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string n = it->path().filename().string();
    if (n == "metadata" || it->path().extension() == ".idx") continue;
    sum += it->file_size(ec);
  }
  return sum;
}

LttngSession::~LttngSession() {
  try {
    daemon_.lttng({"destroy", name_});
  } catch (...) {
  }
  std::error_code ec;
  fs::remove_all(out_, ec);
}

}  // namespace tracepipe::peers
