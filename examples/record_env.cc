// Recording without code changes: this program only declares and traces its
// events (TRACEPIPE_TRACE); it has no recorder code. `--work` is the
// application: it traces 10 000 shop:order events and exits. Recorded by
// `tracepipe record` (or by the environment) with examples/record.toml:
//
//   cd examples
//   ../build/tools/tracepipe record --config record.toml -o /tmp/out.dat --
//   ../build/examples/example_record_env --work TRACEPIPE_CONFIG=record.toml
//   TRACEPIPE_RECORD_OUTPUT=/tmp/out.dat ../build/examples/example_record_env --work
//
// each writes the 10 000 records to /tmp/out.dat (core/record/autostart.cc;
// `trace-cmd report -i /tmp/out.dat`). Without `--work` (as the example test
// runs it, from examples/), it does the second of these itself: it starts
// itself again with --work and those variables, then reads the file back.
// It needs record.toml in the current directory (or examples/record.toml
// below it) and says so when it is missing. Exit 0 = pass.
#include <sys/wait.h>
#include <tracepipe/core/tracedat/tracedat_reader.h>
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tracepipe/core/tracedat/tracedat_reader.h"

using Order = tracepipe::EventDecl<"shop", "order", tracepipe::Int<"id", uint64_t>,
                                   tracepipe::Int<"cents", uint32_t>>;

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--work") {
    for (uint64_t i = 0; i < 10000; ++i) TRACEPIPE_TRACE(Order, i, static_cast<uint32_t>(100 * i));
    return 0;
  }
  // The demonstration: run this program again, recorded through the environment.
  std::string config = "record.toml";
  if (!std::filesystem::exists(config) && std::filesystem::exists("examples/record.toml"))
    config = "examples/record.toml";
  if (!std::filesystem::exists(config)) {
    std::fprintf(
        stderr,
        "example_record_env: record.toml not found in %s: run it from the source tree's examples/ "
        "directory (or its root), e.g. cd examples && ../build/examples/example_record_env\n",
        std::filesystem::current_path().c_str());
    return 1;
  }
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("tracepipe_record_env_" + std::to_string(getpid()) + ".dat"))
                              .string();
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("TRACEPIPE_CONFIG", config.c_str(), 1);
    setenv("TRACEPIPE_RECORD_OUTPUT", out.c_str(), 1);
    execl("/proc/self/exe", argv[0], "--work", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "example_record_env: the recorded run (--work) failed\n");
    return 1;
  }
  if (!std::filesystem::exists(out)) {
    std::fprintf(stderr, "example_record_env: %s was not written (the message above says why)\n",
                 out.c_str());
    return 1;
  }
  uint64_t n = 0;
  try {
    const tracepipe::TraceDatReader r = tracepipe::TraceDatReader::open(out);
    auto m = r.records();
    while (m.next()) ++n;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example_record_env: reading %s: %s\n", out.c_str(), e.what());
    std::filesystem::remove(out);
    return 1;
  }
  std::printf("%s: %llu shop:order records (trace-cmd report -i %s)\n", out.c_str(),
              static_cast<unsigned long long>(n), out.c_str());
  std::filesystem::remove(out);
  return n == 10000 ? 0 : 1;
}
