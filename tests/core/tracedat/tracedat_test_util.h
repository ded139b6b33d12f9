#pragma once
// Helpers for the trace.dat tests: temp files, running trace-cmd, reports.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"
#include "tracepipe/core/tracedat/trace_report.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tp_tracedat_test {

/// The number of records when x and y hold the same records (time stamp,
/// CPU, payload) in the same merged order; a REQUIRE fails at the first
/// difference. Include catch2 before this header.
inline size_t same_records(const tracepipe::TraceDatReader& x, const tracepipe::TraceDatReader& y) {
  auto a = x.records();
  auto b = y.records();
  size_t n = 0;
  for (;;) {
    auto p = a.next();
    auto q = b.next();
    REQUIRE(p.has_value() == q.has_value());
    if (!p) return n;
    REQUIRE(p->ts == q->ts);
    REQUIRE(p->cpu == q->cpu);
    REQUIRE(std::equal(p->payload.begin(), p->payload.end(), q->payload.begin(), q->payload.end()));
    ++n;
  }
}

/// A file path in the temp directory, removed when the object dies.
struct TempPath {
  std::filesystem::path path;
  explicit TempPath(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             ("tp_" + std::to_string(::getpid()) + "_" + name)) {}
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

/// A whole file printed the way `tracepipe report` prints it (header, then
/// every record merged by time stamp).
inline std::string report_text(const std::filesystem::path& p, tracepipe::ReportOptions o) {
  const auto r = tracepipe::TraceDatReader::open(p);
  tracepipe::TraceReport rep(r, o);
  std::string out = rep.header();
  auto m = r.records();
  fmt::memory_buffer b;
  while (auto rec = m.next()) rep.format(*rec, b);
  out.append(b.data(), b.size());
  return out;
}

inline bool have_trace_cmd() { return std::system("trace-cmd list -c >/dev/null 2>&1") == 0; }

/// Runs a shell command and returns its stdout; fails the test (throws) if
/// it exits non-zero.
inline std::string run(const std::string& cmd) {
  std::FILE* p = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  if (rc != 0) throw std::runtime_error("command failed (" + std::to_string(rc) + "): " + cmd);
  return out;
}

inline std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> v;
  size_t pos = 0;
  while (pos < s.size()) {
    auto nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    v.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return v;
}

inline std::vector<std::byte> to_bytes(const std::string& s) {
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

}  // namespace tp_tracedat_test
