#include "test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tp_test {

void skip(const std::string& reason) {
  std::fprintf(stdout, "SKIPPED: %s\n", reason.c_str());
  std::fflush(stdout);
  std::_Exit(77);
}

std::filesystem::path shared_data_or_skip(const std::string& rel) {
  std::filesystem::path p = std::filesystem::path(TP_SHARED_DATA) / rel;
  if (!std::filesystem::exists(p))
    skip("shared data absent: " + p.string() +
         " (configure with -DTP_SHARED_DATA=<dir> to use a copy kept elsewhere)");
  return p;
}

bool tracefs_writable() { return access("/sys/kernel/tracing/tracing_on", W_OK) == 0; }

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::filesystem::path sparse_file(const std::filesystem::path& p, uint64_t size) {
  std::ofstream(p, std::ios::binary).close();
  std::filesystem::resize_file(p, size);
  return p;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CommandResult run_command(const std::vector<std::string>& argv,
                          const std::filesystem::path& scratch_dir, int timeout_s) {
  // Names of this process and call: test cases run as separate processes
  // side by side (ctest -j), often with the same scratch folder (/tmp), and
  // shared names let one case read another's output.
  static std::atomic<uint64_t> calls{0};
  const std::string stem = "tp-cmd-" + std::to_string(::getpid()) + "-" + std::to_string(calls++);
  const std::filesystem::path out = scratch_dir / (stem + ".stdout"),
                              err = scratch_dir / (stem + ".stderr");
  std::string cmd = "timeout " + std::to_string(timeout_s);
  for (const std::string& a : argv) cmd += " " + shell_quote(a);
  cmd += " </dev/null >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string());
  const int rc = std::system(cmd.c_str());
  CommandResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  std::error_code ec;
  std::filesystem::remove(out, ec);
  std::filesystem::remove(err, ec);
  return r;
}

}  // namespace tp_test
