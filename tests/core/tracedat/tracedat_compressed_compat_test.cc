// Compressed version-7 files against the real trace-cmd: `tracepipe report`
// prints what `trace-cmd report` prints, and the records equal those of
// the uncompressed `trace-cmd convert` of the same file.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "tracedat_test_util.h"
#include "tracepipe/core/tracedat/trace_report.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_tracedat_test;

namespace {

void convert(const std::filesystem::path& in, const std::filesystem::path& out,
             const char* compression) {
  const std::string cmd = fmt::format(
      "trace-cmd convert -i '{}' --file-version 7 --compression {} -o '{}' >/dev/null 2>&1",
      in.string(), compression, out.string());
  REQUIRE(std::system(cmd.c_str()) == 0);
}

}  // namespace

TEST_CASE("tracedat_compressed: a real zstd capture prints exactly like trace-cmd report",
          "[tracedat][report][trace-cmd]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  const auto p =
      std::filesystem::path(TP_SOURCE_DIR) / "tests/core/tracedat/data/sched_switch_zstd.dat";
  const struct {
    const char* flag;
    ReportOptions opt;
  } modes[] = {{"", {true, false}}, {"-N", {false, false}}, {"-t", {true, true}}};
  for (const auto& m : modes) {
    INFO(m.flag);
    const auto want = lines(run(fmt::format("trace-cmd report {} '{}'", m.flag, p.string())));
    const auto got = lines(report_text(p, m.opt));
    REQUIRE(want.size() == 363 + 1);  // "cpus=2" + the events
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("line " << i + 1);
      REQUIRE(got[i] == want[i]);
    }
  }
  // The uncompressed conversion holds the same records.
  TempPath none("sched_switch_none.dat");
  convert(p, none.path, "none");
  const auto z = TraceDatReader::open(p);
  const auto n = TraceDatReader::open(none.path);
  CHECK(n.compression() == "none");
  CHECK(z.kallsyms_text() == n.kallsyms_text());
  CHECK(z.cmdlines() == n.cmdlines());
  CHECK(same_records(z, n) == 363);
}

TEST_CASE(
    "tracedat_compressed: hackbench.dat converted to zstd gives the same records as version 6",
    "[tracedat][reader][trace-cmd]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  if (!have_trace_cmd()) TP_SKIP("trace-cmd not installed");
  TempPath out("hackbench_zstd.dat");
  convert(path, out.path, "zstd");
  const auto v6 = TraceDatReader::open(path);
  const auto z = TraceDatReader::open(out.path);
  CHECK(z.compression() == "zstd");
  CHECK(z.formats() == v6.formats());
  CHECK(z.kallsyms_text() == v6.kallsyms_text());
  CHECK(same_records(v6, z) == 257346);
}
