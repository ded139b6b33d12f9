// `tracepipe report --info` on a file with named instances (trace-cmd
// record/extract -B): each instance is listed after the top one, with its
// clock, CPU count and per-CPU data, and its record counts are the reader's.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "test_support.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace {

namespace fs = std::filesystem;

// Records of CPU position i of buffer b, counted through the reader.
uint64_t count(const tracepipe::TraceDatReader& r, size_t b, size_t i) {
  auto c = r.buffer_cpu_records(b, i);
  uint64_t n = 0;
  while (c.next()) ++n;
  return n;
}

}  // namespace

TEST_CASE("cli: report --info lists every instance buffer of the file", "[tools][cli][tracedat]") {
  const fs::path dat = fs::path(TP_SOURCE_DIR) / "tests/core/tracedat/data/instances_zstd.dat";
  const auto res = tp_test::run_command({TP_TRACEPIPE_EXE, "report", "--info", dat.string()},
                                        fs::temp_directory_path(), 60);
  INFO("stdout:\n" << res.out << "\nstderr:\n" << res.err);
  REQUIRE(res.status == 0);
  const auto r = tracepipe::TraceDatReader::open(dat);
  REQUIRE(r.buffers().size() == 3);  // the top, then "ib2" and "ib" (tracedat_instances_test.cc)
  CHECK_THAT(res.out, Catch::Contains("cpus: 2\n"));
  size_t at = res.out.find("buffer 'ib2': clock local cpus 2\n");
  REQUIRE(at != std::string::npos);
  CHECK(res.out.find("buffer 'ib': clock local cpus 2\n") > at);  // in the file's order
  uint64_t named_records = 0;
  for (size_t b = 1; b < 3; ++b) {
    const auto& buf = r.buffers()[b];
    const size_t head = res.out.find(fmt::format("buffer '{}':", buf.name));
    REQUIRE(head != std::string::npos);
    for (size_t i = 0; i < buf.cpu_data.size(); ++i) {
      const uint64_t n = count(r, b, i);
      named_records += n;
      const std::string line =
          fmt::format("  cpu {}: offset {} size {} pages ", buf.cpu_data[i].cpu,
                      buf.cpu_data[i].offset, buf.cpu_data[i].size);
      const size_t l = res.out.find(line, head);
      REQUIRE(l != std::string::npos);
      CHECK(res.out.substr(l, res.out.find('\n', l) - l).find(fmt::format(" records {} ", n)) !=
            std::string::npos);
    }
  }
  uint64_t top_records = 0;
  for (size_t i = 0; i < r.buffers()[0].cpu_data.size(); ++i) top_records += count(r, 0, i);
  CHECK(named_records > 0);
  CHECK(top_records + named_records ==
        37 + 11 + 28);  // what trace-cmd report prints (instances compat test)
}
