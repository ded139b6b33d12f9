// The crash nobody could reproduce: an instance with the flight recorder
// keeps its ring buffers in a file mapping, so what was committed before the
// process died is still there. Here a child process records requests and
// then aborts; the parent (as `tracepipe recover` would, after the fact)
// recovers the file and writes /tmp/tracepipe-crash.dat (the temp folder),
// which `trace-cmd report` opens.
// See docs/flight.md.
#include <sys/resource.h>
#include <sys/wait.h>
#include <tracepipe/core/recover/recover.h>
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tracepipe/core/recover/recover.h"

using Request = tracepipe::EventDecl<"example", "request", tracepipe::Int<"id", uint32_t>,
                                     tracepipe::Int<"latency_us", uint32_t>>;

int main() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tp-crash-example-" + std::to_string(getpid()));
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);  // abort() without a core file
    tracepipe::InstanceOptions o;
    o.flight_recorder = true;  // the ring buffers live in a file...
    o.flight_dir = dir;        // ...here (default: /dev/shm/tracepipe)
    auto* inst = new tracepipe::Instance(o);
    inst->enable(Request::desc());
    for (uint32_t id = 0; id < 100; ++id) Request::emit(*inst, id, 1000 + id);
    std::abort();  // the crash: no destructor runs, the file stays
  }
  int status = 0;
  waitpid(child, &status, 0);
  std::printf("child %d died by signal %d\n", child, WIFSIGNALED(status) ? WTERMSIG(status) : 0);

  // `tracepipe recover DIR -o crash.dat` does the same.
  const auto files = tracepipe::recover::find_flight_files(dir);
  if (files.size() != 1) return 1;
  const auto trace = tracepipe::recover::recover_file(files.front());
  std::printf("recovered %llu records of pid %d (%s), %llu uncommitted reservations skipped\n",
              static_cast<unsigned long long>(trace.records()), trace.pid, trace.comm.c_str(),
              static_cast<unsigned long long>(trace.uncommitted()));
  tracepipe::recover::write_trace_dat(trace, fs::temp_directory_path() / "tracepipe-crash.dat");
  fs::remove_all(dir);
  return trace.records() == 100 ? 0 : 1;
}
