// Recording without code changes: this program only declares and traces its
// events (TRACEPIPE_TRACE); it has no recorder code. Started with
//
//   TRACEPIPE_CONFIG=record.toml TRACEPIPE_RECORD_OUTPUT=out.dat ./example_record_env
//   tracepipe record --config record.toml -o out.dat -- ./example_record_env
//
// it records its events into out.dat (core/record/autostart.cc). Run with no
// variable set, as the example test does, it starts itself again that way
// and checks the file. Exit 0 = pass.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <tracepipe/tracepipe.h>
#include "tracepipe/core/tracedat/tracedat_reader.h"

using Order = tracepipe::EventDecl<"shop", "order", tracepipe::Int<"id", uint64_t>, tracepipe::Int<"cents", uint32_t>>;

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--work") {
    for (uint64_t i = 0; i < 10000; ++i) TRACEPIPE_TRACE(Order, i, static_cast<uint32_t>(100 * i));
    return 0;
  }
  // The demonstration: run this program again, recorded through the environment.
  const std::string out =
      (std::filesystem::temp_directory_path() / ("tracepipe_record_env_" + std::to_string(getpid()) + ".dat")).string();
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("TRACEPIPE_CONFIG", "record.toml", 1);
    setenv("TRACEPIPE_RECORD_OUTPUT", out.c_str(), 1);
    execl("/proc/self/exe", argv[0], "--work", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  const tracepipe::TraceDatReader r = tracepipe::TraceDatReader::open(out);
  uint64_t n = 0;
  auto m = r.records();
  while (m.next()) ++n;
  std::printf("%s: %llu shop:order records (trace-cmd report -i %s)\n", out.c_str(), static_cast<unsigned long long>(n),
              out.c_str());
  std::filesystem::remove(out);
  return n == 10000 ? 0 : 1;
}
