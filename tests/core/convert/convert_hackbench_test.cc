// The kernel's hackbench.dat (trace-cmd, v6) converted to CTF and Perfetto:
// babeltrace2 and protoc (Perfetto's schema) read every record, each with
// every field equal to what trace-cmd report -R prints. Labelled long.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "convert_check.h"
#include "convert_test_util.h"
#include "test_support.h"
#include "tracepipe/core/convert/converter.h"

namespace fs = std::filesystem;
using namespace tp_convert_test;
namespace cv = tracepipe::convert;

TEST_CASE(
    "hackbench.dat to CTF: babeltrace2 reads every record, fields equal to trace-cmd report -R") {
  const fs::path dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  if (std::system("command -v babeltrace2 >/dev/null 2>&1") != 0)
    tp_test::skip("babeltrace2 is not installed");
  Scratch s("hb-ctf");
  const auto reader = tracepipe::TraceDatReader::open(dat);
  cv::ConvertOptions o;
  o.format = cv::Format::ctf;
  const auto st = cv::convert(reader, s / "hb.ctf", o);
  CHECK(st.records == 257346);
  const auto want = tracecmd_records(dat, s.dir);
  REQUIRE(want.size() == 257346);
  CHECK(compare(want, babeltrace_records(s / "hb.ctf", s.dir)) == "");
}

TEST_CASE(
    "hackbench.dat to Perfetto: protoc decodes every record, fields equal to trace-cmd report -R") {
  const fs::path dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  Scratch s("hb-pf");
  perfetto_proto_or_skip();
  const auto reader = tracepipe::TraceDatReader::open(dat);
  const auto st = cv::convert(reader, s / "hb.pftrace");
  CHECK(st.records == 257346);
  const auto want = tracecmd_records(dat, s.dir);
  PerfettoExtras ex;
  const auto got = protoc_records(s / "hb.pftrace", s.dir, &ex);
  CHECK(compare(want, got) == "");
  // The clock is declared on every bundle; saved_cmdlines name the threads.
  REQUIRE(!ex.clocks.empty());
  CHECK(std::all_of(ex.clocks.begin(), ex.clocks.end(),
                    [](const auto& c) { return c == "FTRACE_CLOCK_LOCAL"; }));
  CHECK(ex.threads.size() == reader.cmdlines().size());
}
