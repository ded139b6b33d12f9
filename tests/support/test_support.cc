#include "test_support.h"

#include <unistd.h>

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
  if (!std::filesystem::exists(p)) skip("shared data absent: " + p.string());
  return p;
}

bool tracefs_writable() {
  return access("/sys/kernel/tracing/tracing_on", W_OK) == 0;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tp_test
