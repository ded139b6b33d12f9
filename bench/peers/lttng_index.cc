#include "tracepipe/bench/peers/lttng_index.h"

#include <fmt/core.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace tracepipe::peers {
namespace fs = std::filesystem;
namespace {

constexpr uint32_t kIndexMagic = 0xC1F1DCC1u;
constexpr size_t kHeaderBytes = 16;
/// Fields of an entry used here, as 64-bit word numbers.
constexpr size_t kContentSizeWord = 2, kEventsDiscardedWord = 5, kWordsNeeded = 6;

uint64_t be(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

}  // namespace

LttngIndexStats read_lttng_index(const fs::path& trace_dir) {
  LttngIndexStats s;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(trace_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->path().extension() != ".idx") continue;
    std::ifstream in(it->path(), std::ios::binary);
    const std::vector<unsigned char> b{std::istreambuf_iterator<char>(in),
                                       std::istreambuf_iterator<char>()};
    if (b.size() < kHeaderBytes || be(b.data(), 4) != kIndexMagic)
      throw std::runtime_error(fmt::format("{}: not an LTTng packet index", it->path().string()));
    const size_t entry = be(b.data() + 12, 4);
    if (entry < kWordsNeeded * 8)
      throw std::runtime_error(
          fmt::format("{}: index entries of {} bytes", it->path().string(), entry));
    ++s.streams;
    uint64_t last_discarded = 0;
    for (size_t off = kHeaderBytes; off + entry <= b.size(); off += entry) {
      ++s.packets;
      s.content_bytes += be(b.data() + off + kContentSizeWord * 8, 8) / 8;
      last_discarded = be(b.data() + off + kEventsDiscardedWord * 8, 8);
    }
    if ((b.size() - kHeaderBytes) % entry != 0)
      throw std::runtime_error(fmt::format("{}: ends inside an entry", it->path().string()));
    s.events_discarded += last_discarded;
  }
  return s;
}

}  // namespace tracepipe::peers
