// tracepipe_convert_bench: events per second converting a trace.dat to each
// output format, one core, the input already mapped (as after `tracepipe
// convert` opened it), the output on a tmpfs (/dev/shm) so the figure is the
// converter's and not a disk's.
//
//   tracepipe_convert_bench [FILE.dat] [-r RUNS] [-o DIR]
//
// Prints, per format, the median and the min..max of RUNS runs in M events/s
// of the thread's CPU time (user + system: the writes' kernel work counts,
// time spent waiting for a CPU on a shared machine does not), the wall-clock
// median beside it, and the output size. Default input: the shared hackbench.dat.
#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "tracepipe/core/convert/converter.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace fs = std::filesystem;
namespace cv = tracepipe::convert;

static double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

int main(int argc, char** argv) {
  std::string in = TP_CONVERT_BENCH_DEFAULT;
  std::string dir = "/dev/shm";
  int runs = 7;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-r" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "-o" && i + 1 < argc)
      dir = argv[++i];
    else if (a == "-h" || a == "--help") {
      fmt::print("usage: tracepipe_convert_bench [FILE.dat] [-r RUNS] [-o DIR]\n");
      return 0;
    } else
      in = a;
  }
  const auto reader = tracepipe::TraceDatReader::open(in);
  fmt::print("input: {} ({} bytes of page data)\n", in, [&] {
    uint64_t b = 0;
    for (const auto& d : reader.cpu_data()) b += d.size;
    return b;
  }());
  for (const auto f : {cv::Format::perfetto, cv::Format::ctf}) {
    const fs::path out = fs::path(dir) / fmt::format("tp-convert-bench-{}{}", getpid(),
                                                     f == cv::Format::ctf ? ".ctf" : ".pftrace");
    std::vector<double> rate, wall;
    cv::ConvertStats st;
    cv::ConvertOptions o;
    o.format = f;
    for (int r = 0; r < runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_seconds();
      st = cv::convert(reader, out, o);
      const double c = cpu_seconds() - c0;
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rate.push_back(static_cast<double>(st.records) / c / 1e6);
      wall.push_back(static_cast<double>(st.records) / s / 1e6);
    }
    std::sort(rate.begin(), rate.end());
    std::sort(wall.begin(), wall.end());
    fmt::print(
        "{:9} {} records  median {:.2f} M events/s of CPU time (min {:.2f} .. max {:.2f}, {} runs; "
        "wall-clock median {:.2f})  output {} bytes\n",
        f == cv::Format::ctf ? "ctf" : "perfetto", st.records, rate[rate.size() / 2], rate.front(),
        rate.back(), runs, wall[wall.size() / 2], st.bytes_out);
    fs::remove_all(out);
  }
  return 0;
}
