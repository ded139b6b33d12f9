// convert() called by a library user with its reader's own file as the
// output: the reader maps that file, so truncating it would make the next
// read a SIGBUS. It is refused before anything is written, under any name.
#include <fmt/core.h>
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "small_disk.h"
#include "test_support.h"
// converter.h alone, as a library user has it installed: ConvertOutputError
// is caught by type below through it.
#include "tracepipe/core/convert/converter.h"

namespace fs = std::filesystem;
namespace cv = tracepipe::convert;

namespace {
using OutEv = tracepipe::EventDecl<"conv_out", "ev", tracepipe::Int<"a", uint32_t>>;

uint64_t count_records(const tracepipe::TraceDatReader& r) {
  uint64_t n = 0;
  for (auto c = r.records(); c.next();) ++n;
  return n;
}

}  // namespace

TEST_CASE("convert refuses an output that is its reader's own file, and the input survives") {
  const fs::path dir = fs::temp_directory_path() / ("tp-convert-out-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path in = dir / "in.dat";
  {
    tracepipe::Instance inst;
    inst.enable(OutEv::desc());
    for (uint32_t i = 0; i < 300; ++i) OutEv::emit(inst, i);
    tracepipe::write_trace_dat(inst, in);
  }
  const uint64_t size = fs::file_size(in);
  const auto reader = tracepipe::TraceDatReader::open(in);
  REQUIRE(count_records(reader) == 300);
  fs::create_hard_link(in, dir / "hard.dat");
  fs::create_symlink(in, dir / "soft.dat");
  fs::create_directories(dir / "ctf");
  fs::create_hard_link(in, dir / "ctf" / "channel0_0");

  for (const fs::path& out : {in, dir / "hard.dat", dir / "soft.dat", dir / "." / "in.dat"}) {
    cv::ConvertOptions o;
    o.format = cv::Format::perfetto;
    CHECK_THROWS_WITH(cv::convert(reader, out, o),
                      Catch::Contains("is the input trace (" + in.string() + ")"));
  }
  cv::ConvertOptions ctf;
  ctf.format = cv::Format::ctf;
  CHECK_THROWS_AS(cv::convert(reader, in, ctf), std::invalid_argument);
  CHECK_THROWS_WITH(cv::convert(reader, dir / "ctf", ctf),
                    Catch::Contains("as " + (dir / "ctf" / "channel0_0").string()));
  CHECK(fs::exists(dir / "ctf" / "channel0_0"));
  CHECK(fs::file_size(in) == size);
  CHECK(count_records(reader) == 300);

  // Another file converts, and so does a reader of bytes in memory whose name
  // is the output's: a name is no file.
  const cv::ConvertStats st = cv::convert(reader, dir / "out.pftrace");
  CHECK(st.records == 300);
  const std::string text = tp_test::read_file(in);
  const std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()),
                                     reinterpret_cast<const std::byte*>(text.data()) + text.size());
  const fs::path named = dir / "named.pftrace";
  const tracepipe::TraceDatReader copy(tracepipe::MappedFile::copy_of(bytes), named.string());
  CHECK(cv::convert(copy, named).records == 300);
  fs::remove_all(dir);
}

TEST_CASE("convert into a full disk throws, says so, and removes what it created") {
  const fs::path in = fs::temp_directory_path() / fmt::format("tp-convfull-{}.dat", ::getpid());
  {
    tracepipe::Instance inst;
    inst.enable(OutEv::desc());
    for (uint32_t i = 0; i < 20000; ++i) OutEv::emit(inst, i);
    tracepipe::write_trace_dat(inst, in);
  }
  const auto reader = tracepipe::TraceDatReader::open(in);
  REQUIRE(count_records(reader) > 5000);
  tp_test::SmallDisk disk("convfull", 64);
  // The user's files beside the output and in the CTF directory stay.
  fs::create_directories(disk.dir / "mine.ctf");
  std::ofstream(disk.dir / "mine.ctf" / "notes") << "kept";
  for (const auto& [format, name] :
       {std::pair{cv::Format::perfetto, "o.pftrace"}, std::pair{cv::Format::ctf, "o.ctf"},
        std::pair{cv::Format::ctf, "mine.ctf"}}) {
    cv::ConvertOptions o;
    o.format = format;
    const fs::path out = disk.dir / name;
    try {
      (void)cv::convert(reader, out, o);
      FAIL("converted " << name << " into 64 KiB");
    } catch (const cv::ConvertOutputError& e) {
      CHECK(e.code() == ENOSPC);
      CHECK_THAT(e.what(), Catch::Contains("(the partial output was removed)"));
    }
  }
  CHECK(!fs::exists(disk.dir / "o.pftrace"));
  CHECK(!fs::exists(disk.dir / "o.ctf"));
  CHECK(tp_test::read_file(disk.dir / "mine.ctf" / "notes") == "kept");
  CHECK(std::distance(fs::directory_iterator(disk.dir / "mine.ctf"), fs::directory_iterator()) ==
        1);
  fs::remove(in);
}

TEST_CASE("convert's output error is caught by type through converter.h, with its errno") {
  const fs::path in = fs::temp_directory_path() / fmt::format("tp-converr-{}.dat", ::getpid());
  {
    tracepipe::Instance inst;
    inst.enable(OutEv::desc());
    OutEv::emit(inst, 1);
    tracepipe::write_trace_dat(inst, in);
  }
  const auto reader = tracepipe::TraceDatReader::open(in);
  const fs::path out =
      fs::temp_directory_path() / fmt::format("tp-converr-missing-{}", ::getpid()) / "out.pftrace";
  int code = -1;
  std::string what;
  try {
    (void)cv::convert(reader, out);
  } catch (const cv::ConvertOutputError& e) {  // not std::runtime_error: the type a user catches
    code = e.code();
    what = e.what();
  }
  CHECK(code == ENOENT);
  CHECK_THAT(what, Catch::StartsWith(out.string() + ": "));
  CHECK(!fs::exists(out.parent_path()));
  fs::remove(in);
}
