// Untrusted input: a recording with random bytes changed in its page data
// (record headers, lengths, __data_loc words, strings) is converted to both
// formats. The converter either finishes or throws TraceDatError naming an
// offset; it never reads outside the file (run under ASan as "parser").
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <random>

#include "test_support.h"
#include "tracepipe/core/convert/converter.h"

namespace fs = std::filesystem;
namespace cv = tracepipe::convert;

namespace {
using Ev =
    tracepipe::EventDecl<"fuzz", "ev", tracepipe::Int<"a", int16_t>, tracepipe::Chars<"name", 8>,
                         tracepipe::Str<"path">, tracepipe::Int<"b", uint64_t>>;
}

TEST_CASE(
    "corrupted page data: both writers finish or report the damage, never read outside the "
    "records") {
  const fs::path dir =
      fs::temp_directory_path() / ("tp-convert-corrupt-" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    tracepipe::Instance inst;
    inst.enable(Ev::desc());
    for (uint32_t i = 0; i < 600; ++i)
      Ev::emit(inst, static_cast<int16_t>(i), "name", i % 2 ? "/some/path" : "", uint64_t{i} * 77);
    tracepipe::write_trace_dat(inst, dir / "in.dat");
  }
  const std::string text = tp_test::read_file(dir / "in.dat");
  const std::vector<std::byte> clean(reinterpret_cast<const std::byte*>(text.data()),
                                     reinterpret_cast<const std::byte*>(text.data()) + text.size());
  uint64_t data_start = clean.size();
  {
    const tracepipe::TraceDatReader r(tracepipe::MappedFile::copy_of(clean), "in.dat");
    for (const auto& d : r.cpu_data())
      if (d.size) data_start = std::min<uint64_t>(data_start, d.offset);
  }
  REQUIRE(data_start < clean.size());
  std::mt19937_64 rng(42);
  uint64_t finished = 0, damaged = 0;
  for (int iter = 0; iter < 200; ++iter) {
    std::vector<std::byte> bytes = clean;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < flips; ++k) {
      const uint64_t at = data_start + rng() % (bytes.size() - data_start);
      bytes[at] = static_cast<std::byte>(rng());
    }
    const tracepipe::TraceDatReader r(tracepipe::MappedFile::copy_of(bytes), "in.dat");
    for (const auto f : {cv::Format::perfetto, cv::Format::ctf}) {
      cv::ConvertOptions o;
      o.format = f;
      try {
        cv::convert(r, dir / (f == cv::Format::ctf ? "o.ctf" : "o.pftrace"), o);
        ++finished;
      } catch (const tracepipe::TraceDatError& e) {
        CHECK(std::string(e.what()).find("offset") != std::string::npos);
        ++damaged;
      }
    }
  }
  CHECK(finished + damaged == 400);
  CHECK(finished > 0);
  fs::remove_all(dir);
}
