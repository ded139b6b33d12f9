// `tracepipe report` and `tracepipe replay` on a trace.dat holding one event
// format that does not parse: the file still opens, the format is named in a
// warning, and that event's records print as an unknown type.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../core/replay/replay_test_util.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("tp_format_warning_" + std::to_string(getpid()));
  fs::path dat = dir / "in.dat";
  Scratch() {
    fs::create_directories(dir);
    tracepipe::TraceDatWriter w = replay_test::make_writer(2);
    // Prints "print fmt: \"x=%d\", REC->x\nstray\n": text after the print fmt.
    tracepipe::EventFormat bad;
    bad.system = "bad";
    bad.name = "broken";
    bad.id = 4000;
    bad.common_fields = tracepipe::kernel_common_fields();
    bad.fields = {{"int", "x", 8, 4, true}};
    bad.print_fmt = "\"x=%d\", REC->x\nstray";
    w.add_format(bad);
    for (uint64_t i = 0; i < 4; ++i)
      w.add_record(static_cast<uint32_t>(i % 2), 1000 + i, replay_test::kmalloc(1, i, i));
    std::vector<std::byte> rec(12);
    const uint16_t id = 4000;
    std::memcpy(rec.data(), &id, 2);
    w.add_record(0, 2000, rec);
    w.write(dat);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  tp_test::CommandResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), TP_TRACEPIPE_EXE);
    return tp_test::run_command(args, dir, 60);
  }
};

}  // namespace

TEST_CASE("cli: report and replay skip an unparsable format with a warning", "[tools][cli]") {
  const Scratch s;
  const auto rep = s.run({"report", s.dat.string()});
  INFO("stdout:\n" << rep.out << "\nstderr:\n" << rep.err);
  CHECK(rep.status == 0);
  // Named by the path given, as errors are.
  CHECK_THAT(rep.err, Catch::StartsWith("tracepipe report: warning: " + s.dat.string() +
                                        ": event formats at offset "));
  CHECK_THAT(rep.err,
             Catch::Contains(
                 "bad/broken: format line 12: text after 'print fmt:': 'stray'; format skipped\n"));
  CHECK_THAT(rep.out, Catch::Contains("kmalloc:"));
  CHECK_THAT(rep.out, Catch::Contains("[UNKNOWN TYPE 4000]\n"));

  const auto rp = s.run({"replay", "--no-progress", "--no-timing", s.dat.string()});
  INFO("replay stdout:\n" << rp.out << "\nstderr:\n" << rp.err);
  CHECK(rp.status == 0);
  CHECK_THAT(rp.out + rp.err,
             Catch::Contains("warning: " + s.dat.string() + ": event formats at offset "));
  CHECK_THAT(rp.out + rp.err, Catch::Contains("bad/broken: format line 12"));
}
