// Multi-buffer files against the real trace-cmd: `tracepipe report`
// prints what `trace-cmd report` prints (top and instances merged, names
// as prefixes), for the committed v7 zstd captures and for their
// `trace-cmd convert` to version 6 and to uncompressed version 7.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tracedat_test_util.h"
#include "tracepipe/core/tracedat/trace_report.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_tracedat_test;

namespace {

// What TraceReport::print_all writes (all buffers), as a string.
std::string print_all_text(const std::filesystem::path& p, ReportOptions o) {
  const auto r = TraceDatReader::open(p);
  TraceReport rep(r, o);
  TempPath tmp("inst_report.txt");
  std::FILE* f = std::fopen(tmp.path.c_str(), "w");
  REQUIRE(f);
  rep.print_all(f);
  std::fclose(f);
  return tp_test::read_file(tmp.path);
}

void same_report(const std::filesystem::path& p, size_t want_lines) {
  const struct {
    const char* flag;
    ReportOptions opt;
  } modes[] = {{"", {true, false}}, {"-N", {false, false}}, {"-t", {true, true}}};
  for (const auto& m : modes) {
    INFO(p.filename().string() << " " << m.flag);
    const std::string want = run(fmt::format("trace-cmd report {} '{}'", m.flag, p.string()));
    const std::string got = print_all_text(p, m.opt);
    REQUIRE(lines(want).size() == want_lines);
    const auto w = lines(want), g = lines(got);
    REQUIRE(g.size() == w.size());
    for (size_t i = 0; i < g.size(); ++i) {
      INFO("line " << i + 1);
      REQUIRE(g[i] == w[i]);
    }
    REQUIRE(got == want);  // byte for byte
  }
}

}  // namespace

TEST_CASE("tracedat_instances: reports equal trace-cmd report (v7 zstd, v7 none, v6)",
          "[tracedat][report][trace-cmd]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  const auto dir = std::filesystem::path(TP_SOURCE_DIR) / "tests/core/tracedat/data";
  const struct {
    const char* file;
    size_t lines;  // "cpus=2" + records
  } files[] = {{"instances_zstd.dat", 1 + 37 + 11 + 28}, {"instance_only_zstd.dat", 1 + 40}};
  for (const auto& f : files) {
    const auto p = dir / f.file;
    same_report(p, f.lines);
    for (const char* conv :
         {"--file-version 6 --compression none", "--file-version 7 --compression none"}) {
      TempPath out(std::string("inst_conv_") + f.file);
      REQUIRE(std::system(fmt::format("trace-cmd convert -i '{}' {} -o '{}' >/dev/null 2>&1",
                                      p.string(), conv, out.path.string())
                              .c_str()) == 0);
      const auto r = TraceDatReader::open(out.path);
      // Same named instances (convert may drop an empty top BUFFER option).
      CHECK(r.buffers().back().name == TraceDatReader::open(p).buffers().back().name);
      CHECK(r.find_buffer("ib"));
      same_report(out.path, f.lines);
    }
  }
}
