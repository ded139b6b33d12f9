// Recording to a collector: an application's events go to an unmodified
// `trace-cmd listen` (on another host in real use; here one this example
// starts on a loopback port), as `trace-cmd record -N HOST:PORT` sends the
// kernel's (core/record/net_sink.h). The collector writes DIR/trace.*.dat,
// which `trace-cmd report` opens. Exit 0 = pass, 77 = trace-cmd not installed.
//
//   on the collector:  trace-cmd listen -p 12345 -d /var/traces
//   in the app:        ro.collector = "collector:12345";
//   or without code:   tracepipe record -N collector:12345 -- ./myapp
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <tracepipe/tracepipe.h>
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;

using Request = EventDecl<"myapp", "request", Int<"id", uint64_t>, Int<"bytes", uint32_t>, Str<"path">>;

namespace {

// A port the kernel picks as free.
uint16_t free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  (void)bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t l = sizeof a;
  (void)getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l);
  close(fd);
  return ntohs(a.sin_port);
}

// Whether `path` (/proc/PID/task/PID/children) lists a child: the collector
// handles each session in a child process, which joins the file and exits.
bool has_children(const std::string& path) {
  std::ifstream in(path);
  int pid;
  return static_cast<bool>(in >> pid);
}

bool listening(uint16_t port) {
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", port);
  for (const char* f : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string sl, local, remote, st;
      ls >> sl >> local >> remote >> st;
      if (st == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, want) == 0) return true;
    }
  }
  return false;
}

}  // namespace

int main() {
  if (std::system("trace-cmd list -c >/dev/null 2>&1") != 0) {
    std::printf("trace-cmd is not installed (Debian package trace-cmd): nothing to send to\n");
    return 77;
  }
  // The collector: trace-cmd listen in a directory of its own.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tracepipe_example_collector_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const uint16_t port = free_port();
  const pid_t listener = fork();
  if (listener == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // it ends with this program, however that ends
    const int log = open((dir / "listen.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(log, 1);  // the collector's messages go to its log
    dup2(log, 2);
    close_range(3, ~0u, 0);  // and keeps none of this program's files open
    const std::string p = std::to_string(port);
    execlp("trace-cmd", "trace-cmd", "listen", "-p", p.c_str(), "-d", dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 5000 && !listening(port); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // The application: records to the collector instead of a file.
  InstanceOptions o;
  o.mode = BufferMode::drop_newest;
  o.buffer_size_kb = 4096;  // per CPU: holds this example's whole burst, however the network goes
  Instance inst(o);
  inst.enable(Request::desc());
  record::RecorderOptions ro;
  ro.collector = "localhost:" + std::to_string(port);
  ro.file_version = 7;  // the collector writes trace-cmd 3.x's zstd-compressed format
  record::Recorder rec(inst, ro);
  // Optional: start emitting once the collector takes data (bounded). Without
  // it, events emitted while connecting wait in the ring, or drop (counted)
  // when it fills first.
  if (!rec.wait_ready(std::chrono::seconds(2))) std::printf("collector not ready: %s\n", rec.error().value_or("timed out").c_str());
  for (uint64_t i = 0; i < 50000; ++i) {
    (void)Request::emit(inst, i, 512, "/index.html");
    if (i % 1000 == 0) std::this_thread::yield();
  }
  const record::RecorderStats s = rec.stop();  // ends the session: the collector joins its file
  std::printf("sent %llu events in %llu pages to %s (%llu dropped in the ring, %llu unsent)\n",
              static_cast<unsigned long long>(s.records), static_cast<unsigned long long>(s.pages),
              ro.collector.c_str(), static_cast<unsigned long long>(s.dropped),
              static_cast<unsigned long long>(s.unwritten));

  // Wait (bounded) for the collector's session to end, then read its file.
  const std::string children = "/proc/" + std::to_string(listener) + "/task/" + std::to_string(listener) + "/children";
  for (int i = 0; i < 3000 && has_children(children); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  uint64_t n = 0;
  std::filesystem::path file;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".dat") file = e.path();
  if (!file.empty()) {
    const TraceDatReader r = TraceDatReader::open(file);
    auto m = r.records();
    while (m.next()) ++n;
    std::printf("the collector wrote %s (version 7, %s): %llu records\n", file.filename().c_str(),
                r.compression().c_str(), static_cast<unsigned long long>(n));
  }
  kill(-listener, SIGKILL);
  waitpid(listener, nullptr, 0);
  std::filesystem::remove_all(dir);
  return n == s.records && s.records + s.dropped == 50000 && !rec.error() ? 0 : 1;
}
