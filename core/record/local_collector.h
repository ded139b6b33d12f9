#pragma once
// core/record/local_collector.h — an unmodified `trace-cmd listen` started on
// this host, on a free loopback port, in a directory of its own: the
// collector that a recording to `record::RecorderOptions::collector` (the
// network sink, net_sink.h) talks to when tests, benches and examples need a
// real one. In real use the collector runs on another host, started by hand
// (`trace-cmd listen -p PORT -d DIR`); nothing here is needed for that.
//
// The process: trace-cmd listen forks one child per session (connection) and
// joins that session's per-CPU temp files into DIR/trace.HOST:PORT.dat when
// the session ends (tracecmd/trace-listen.c: process_client, put_together_file).
// It runs in its own process group, dies with the process that started it
// (PR_SET_PDEATHSIG), and holds none of that process's file descriptors (a
// collector that kept an inherited lock file open once outlived a crashed
// test and held the lock).
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace tracepipe::record {

/// A `trace-cmd listen -p PORT -d DIR` child process, on a port the kernel
/// picked as free.
///
/// Construction starts it and waits (at most `start_timeout`) until it
/// listens; it never throws: ok() is false and why() says why when trace-cmd
/// is missing, exits, or does not listen in time. Destruction kills it and
/// every session it forked (SIGKILL to its group) and removes the directory
/// when the collector made it. Not thread-safe: one owner thread.
class LocalCollector {
 public:
  /// `dir`: where the collector writes its files and `listen.log` (its
  /// stdout and stderr); empty: a new directory under the temp directory,
  /// removed again by the destructor.
  explicit LocalCollector(std::filesystem::path dir = {},
                          std::chrono::milliseconds start_timeout = std::chrono::seconds(5));
  ~LocalCollector();
  LocalCollector(const LocalCollector&) = delete;
  LocalCollector& operator=(const LocalCollector&) = delete;

  /// True when `trace-cmd` runs on this host (Debian package trace-cmd).
  static bool available();

  bool ok() const { return pid_ > 0 && why_.empty(); }
  /// Why the collector is not running: "" while ok().
  const std::string& why() const { return why_; }
  uint16_t port() const { return port_; }
  /// The listener's process ID (its process group's too: every session and
  /// reader it forks is in that group); -1 when it is not running.
  pid_t pid() const { return pid_; }
  /// "localhost:PORT", as `RecorderOptions::collector` and `tracepipe record -N` take it.
  std::string address() const;
  const std::filesystem::path& dir() const { return dir_; }
  /// What the collector printed (listen.log).
  std::string log() const;

  /// Whether a session is still being received or joined: one of the
  /// collector's children is running (not a zombie).
  bool busy() const;
  /// Waits (at most `max`) until no session is busy, then returns the newest
  /// trace.dat the collector wrote in dir(), if any.
  std::optional<std::filesystem::path> wait_file(
      std::chrono::milliseconds max = std::chrono::seconds(15)) const;

  /// Stops (SIGSTOP) or resumes (SIGCONT) the collector and its sessions: a
  /// collector that no longer reads, for fault tests.
  void freeze(bool on);
  /// Kills the collector and its sessions now (SIGKILL to the group); idempotent.
  void kill();

 private:
  std::filesystem::path dir_;
  bool own_dir_ = false;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::string why_;
};

/// A TCP port nothing listens on at the time of the call (the kernel picks
/// it; the socket is closed again, so it may be taken by the time it is used).
uint16_t free_tcp_port();

/// True when a socket listens on TCP `port`, IPv4 or IPv6 (/proc/net/tcp and
/// tcp6, state LISTEN).
bool tcp_listening(uint16_t port);

}  // namespace tracepipe::record
