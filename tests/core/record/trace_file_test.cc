// TraceFile's preallocation (what `replay -o` uses to move the allocation of
// its output out of the pipeline): space reserved ahead, filled by appends,
// the rest released at finalize; a full disk refuses the reservation and the
// appends still go as far as they can. And the one record encoder: PageBatch
// (recorder, replay -o) and PageEncoder (snapshot writer) give the same pages.
#include "tracepipe/core/record/trace_file.h"

#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "../tracedat/tracedat_test_util.h"
#include "record_test_util.h"
#include "test_support.h"
#include "tracepipe/core/record/page_batch.h"
#include "tracepipe/core/tracedat/page_encoder.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

using namespace tracepipe;
using tp_tracedat_test::TempPath;

namespace {

TraceDatWriter meta(uint32_t cpus) {
  TraceDatWriter w(TraceDatWriterConfig{cpus, 4096, "local"});
  w.add_format(tp_record_test::rec_format());
  return w;
}

std::vector<uint32_t> seqs(const std::filesystem::path& p) {
  const auto r = TraceDatReader::open(p);
  std::vector<uint32_t> out;
  auto m = r.records();
  while (auto rec = m.next()) {
    uint32_t s;
    std::memcpy(&s, rec->payload.data() + 4, 4);
    out.push_back(s);
  }
  return out;
}

uint64_t allocated_bytes(const std::filesystem::path& p) {
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

}  // namespace

TEST_CASE("trace file: preallocated space is filled by appends and the rest released at finalize",
          "[record][file]") {
  TempPath out("tf_prealloc.dat");
  const TraceDatWriter m = meta(2);
  record::TraceFile f(record::TraceFileOptions{out.path, 64 << 20, std::nullopt}, m);
  const int pre0 = f.preallocate(0, 8 << 20);
  if (pre0 == EOPNOTSUPP) TP_SKIP("no fallocate on this file system");
  REQUIRE(pre0 == 0);
  REQUIRE(f.preallocate(1, 8 << 20) == 0);
  CHECK(allocated_bytes(out.path) >= (16u << 20));  // both reservations are real blocks
  const auto a = tp_record_test::pages_of(0, 3000, 1000);
  const auto b = tp_record_test::pages_of(3000, 2000, 500000);
  REQUIRE(f.append(0, a) == 0);
  REQUIRE(f.append(1, b) == 0);
  CHECK(f.preallocate(0, 1 << 20) == 0);  // within what is reserved: nothing to do
  REQUIRE(f.finalize(m) == 0);
  // Contiguous, truncated after the last page, and no reserved block left.
  const uint64_t size = std::filesystem::file_size(out.path);
  CHECK(allocated_bytes(out.path) <= size + 4096);
  CHECK(f.total_bytes() == a.size() + b.size());
  auto got = seqs(out.path);
  std::sort(got.begin(), got.end());
  REQUIRE(got.size() == 5000);
  for (uint32_t i = 0; i < 5000; ++i) REQUIRE(got[i] == i);
}

TEST_CASE(
    "trace file: on a full disk the reservation fails with ENOSPC and appends go on until full",
    "[record][file][fault]") {
  if (::geteuid() != 0) TP_SKIP("mounting a tmpfs needs root");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("tp_tf_tmpfs_{}", ::getpid());
  std::filesystem::create_directories(dir);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") != 0) {
    std::filesystem::remove(dir);
    TP_SKIP("cannot mount a tmpfs here");
  }
  struct Unmount {
    std::filesystem::path d;
    ~Unmount() {
      ::umount2(d.c_str(), MNT_DETACH);
      std::error_code ec;
      std::filesystem::remove(d, ec);
    }
  } unmount{dir};
  const auto path = dir / "full.dat";
  const TraceDatWriter m = meta(1);
  record::TraceFile f(record::TraceFileOptions{path, 0, std::nullopt}, m);
  CHECK(f.preallocate(0, 4 << 20) == ENOSPC);  // more than the disk holds: nothing reserved
  CHECK(allocated_bytes(path) < (1u << 20));
  // Appends of 16 pages until the disk is full.
  int err = 0;
  uint32_t written = 0;
  for (uint32_t at = 0; at < 100000 && err == 0; at += 400) {
    const auto p = tp_record_test::pages_of(at, 400, 1000 + uint64_t{at} * 10);
    err = f.append(0, p);
    if (err == 0) written += 400;
  }
  CHECK(err == ENOSPC);
  REQUIRE(written > 0);
  // What was appended stays readable after finalize.
  CHECK(f.finalize(m) == 0);
  const auto got = seqs(path);
  REQUIRE(got.size() == written);
  for (uint32_t i = 0; i < written; ++i) REQUIRE(got[i] == i);
}

TEST_CASE("one record encoder: PageBatch and PageEncoder give the same pages",
          "[record][tracedat][page]") {
  std::mt19937_64 rng(11);
  record::PageBatch batch(4096, 2048);  // holds every page: no flush
  kpage::PageEncoder enc(kpage::PageLayout{4096, 8});
  std::vector<std::byte> encoded;  // PageEncoder's pages, back to back
  uint64_t ts = 1'000'000;
  for (int i = 0; i < 20000; ++i) {
    const uint64_t k = rng() % 20;
    if (k < 15)
      ts += rng() % 5000;
    else if (k < 18)
      ts += (uint64_t{1} << 27) + rng() % (uint64_t{1} << 33);  // a time extend
    else if (k == 18)
      ts -= std::min<uint64_t>(ts, rng() % 3000);  // backwards: absolute stamp
    const uint32_t size = k == 19 ? 113 + rng() % 400 : 2 + rng() % 111;  // long and small records
    std::vector<std::byte> p(size);
    for (auto& c : p) c = std::byte(static_cast<uint8_t>(rng()));
    batch.record(ts, p);
    if (!enc.try_append(ts, p)) {
      const auto page = enc.finish();
      encoded.insert(encoded.end(), page.begin(), page.end());
      enc.reset();
      REQUIRE(enc.try_append(ts, p));
    }
  }
  batch.close_open();
  const auto page = enc.finish();
  encoded.insert(encoded.end(), page.begin(), page.end());
  const auto got = batch.finished();
  REQUIRE(got.size() == encoded.size());
  CHECK(std::memcmp(got.data(), encoded.data(), got.size()) == 0);
}

TEST_CASE("one record encoder: every payload size is copied exactly and zero-padded",
          "[record][tracedat][page]") {
  for (uint32_t size = 0; size <= 300; ++size) {
    std::vector<std::byte> src(size + 64,
                               std::byte{0xee});  // 0xee after the payload must not be copied
    for (uint32_t i = 0; i < size; ++i) src[i] = std::byte(static_cast<uint8_t>(i * 7 + 1));
    std::vector<std::byte> stream(1024, std::byte{0xaa});
    uint32_t used = 0;
    uint64_t running = 0;
    REQUIRE(kpage::encode_record(stream.data(), 1024, used, running, true, 5, src.data(), size));
    const uint32_t len = (std::max<uint32_t>(size, 1) + 3) & ~3u;
    const uint32_t head = len <= kpage::kMaxSmallData ? 4 : 8;
    REQUIRE(used == head + len);
    CHECK(std::memcmp(stream.data() + head, src.data(), size) == 0);
    for (uint32_t i = size; i < len; ++i) REQUIRE(stream[head + i] == std::byte{0});
    CHECK(stream[used] == std::byte{0xaa});  // nothing written past the record
  }
}
