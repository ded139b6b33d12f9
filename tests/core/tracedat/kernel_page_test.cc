#include "tracepipe/core/tracedat/kernel_page.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "test_support.h"
#include "tracepipe/core/events/event_format.h"

using namespace tracepipe;
using namespace tracepipe::kpage;

namespace {

// Builds a 64-bit little-endian page by hand, word by word.
struct PageBytes {
  std::vector<std::byte> b = std::vector<std::byte>(16);
  void u32(uint32_t v) {
    const auto n = b.size();
    b.resize(n + 4);
    std::memcpy(&b[n], &v, 4);
  }
  void header(uint32_t type_len, uint32_t delta) { u32((delta << 5) | type_len); }
  void data(uint32_t delta, std::initializer_list<uint32_t> words) {
    header(static_cast<uint32_t>(words.size()), delta);
    for (auto w : words) u32(w);
  }
  std::vector<std::byte> finish(uint64_t ts, uint64_t extra_commit_bits = 0, size_t page = 4096) {
    const uint64_t commit = (b.size() - 16) | extra_commit_bits;
    std::memcpy(&b[0], &ts, 8);
    std::memcpy(&b[8], &commit, 8);
    auto out = b;
    out.resize(std::max(page, out.size()));
    return out;
  }
};

uint32_t first_word(std::span<const std::byte> p) {
  uint32_t w;
  std::memcpy(&w, p.data(), 4);
  return w;
}

}  // namespace

TEST_CASE("kernel_page: header_page and header_event text equal the kernel's files",
          "[tracedat][page]") {
  const auto dir = tp_test::shared_data_or_skip("kernel/formats");
  CHECK(header_page_text(PageLayout{4096, 8}) == tp_test::read_file(dir / "header_page"));
  CHECK(header_event_text() == tp_test::read_file(dir / "header_event"));
  const std::string hp32 = header_page_text(PageLayout{4096, 4});
  CHECK(hp32.find("commit;\toffset:8;\tsize:4;") != std::string::npos);
  CHECK(hp32.find("data;\toffset:12;\tsize:4084;") != std::string::npos);
}

TEST_CASE("kernel_page: decodes every record type with kbuffer's time rules", "[tracedat][page]") {
  PageBytes p;
  p.data(0, {0x11110001, 0xaaaa});     // small data, delta 0
  p.data(250, {0x22220002, 1, 2, 3});  // delta 250
  p.header(kTypeTimeExtend, 5);        // extend: (3 << 27) | 5
  p.u32(3);
  p.data(0, {0x33330003});
  p.header(kTypePadding, 7);  // discarded 8-byte event: delta 7 counts,
  p.u32(8);                   // array[0] = 8 covers itself and one word
  p.u32(0xdead);
  p.header(0, 10);  // long data: length word 4 + 120 payload
  p.u32(124);
  for (uint32_t i = 0; i < 30; ++i) p.u32(0x44440000 + i);
  p.header(kTypeTimeStamp, 123);  // absolute: (1 << 27) | 123
  p.u32(1);
  p.data(4, {0x55550005});
  p.header(kTypePadding, 0);  // rest of page empty
  const auto page = p.finish(1'000'000);

  const auto parsed = parse_page_untrusted(page, PageLayout{});
  REQUIRE(parsed.page);
  CHECK_FALSE(parsed.page->missed_events);
  PageCursor cur(*parsed.page);
  std::vector<PageRecord> recs;
  while (auto r = cur.next()) recs.push_back(*r);
  CHECK_FALSE(cur.error());
  REQUIRE(recs.size() == 5);
  CHECK(recs[0].ts == 1'000'000);
  CHECK(recs[0].payload.size() == 8);
  CHECK(first_word(recs[0].payload) == 0x11110001);
  CHECK(recs[1].ts == 1'000'250);
  CHECK(recs[1].payload.size() == 16);
  CHECK(recs[2].ts == 1'000'250 + ((uint64_t{3} << 27) | 5));
  CHECK(first_word(recs[2].payload) == 0x33330003);
  CHECK(recs[3].ts == recs[2].ts + 7 + 10);
  CHECK(recs[3].payload.size() == 120);
  CHECK(first_word(recs[3].payload) == 0x44440000);
  CHECK(recs[4].ts == ((uint64_t{1} << 27) | 123) + 4);
  CHECK(first_word(recs[4].payload) == 0x55550005);
  CHECK(cur.counts().data == 5);
  CHECK(cur.counts().discarded == 1);
  CHECK(cur.counts().time_extends == 1);
  CHECK(cur.counts().time_stamps == 1);
}

TEST_CASE("kernel_page: absolute time stamps keep the top 5 bits of the running time",
          "[tracedat][page]") {
  PageBytes p;
  const uint64_t base = (uint64_t{3} << 59) | 1000;
  p.header(kTypeTimeStamp, 500);  // low 59 bits = 500 < 1000: wrapped -> carry into bit 59
  p.u32(0);
  p.data(0, {1});
  const auto page = p.finish(base);
  const auto parsed = parse_page_untrusted(page, PageLayout{});
  PageCursor cur(*parsed.page);
  const auto r = cur.next();
  REQUIRE(r);
  CHECK(r->ts == (uint64_t{4} << 59) + 500);
}

TEST_CASE("kernel_page: lost events flags and stored count", "[tracedat][page]") {
  PageBytes p;
  p.data(0, {1});
  const size_t used = p.b.size() - 16;
  p.u32(42);  // stored lost count (a long) right after the data
  p.u32(0);
  auto page = p.finish(5, kMissedEvents | kMissedStored);
  const uint64_t commit = used | kMissedEvents | kMissedStored;  // commit excludes the count
  std::memcpy(&page[8], &commit, 8);
  const auto parsed = parse_page_untrusted(page, PageLayout{});
  REQUIRE(parsed.page);
  CHECK(parsed.page->missed_events);
  CHECK(parsed.page->lost_events == 42u);
  CHECK(parsed.page->data.size() == used);

  PageBytes q;
  q.data(0, {1});
  const auto page2 = q.finish(5, kMissedEvents);
  const auto parsed2 = parse_page_untrusted(page2, PageLayout{});
  CHECK(parsed2.page->missed_events);
  CHECK_FALSE(parsed2.page->lost_events.has_value());
}

TEST_CASE("kernel_page: 32-bit layout has a 12-byte header", "[tracedat][page]") {
  std::vector<std::byte> page(4096);
  const uint64_t ts = 77;
  const uint32_t commit = 8;
  const uint32_t words[2] = {(3u << 5) | 1u, 0xabcd};
  std::memcpy(&page[0], &ts, 8);
  std::memcpy(&page[8], &commit, 4);
  std::memcpy(&page[12], words, 8);
  const auto parsed = parse_page_untrusted(page, PageLayout{4096, 4});
  REQUIRE(parsed.page);
  PageCursor cur(*parsed.page);
  const auto r = cur.next();
  REQUIRE(r);
  CHECK(r->ts == 80);
  CHECK(first_word(r->payload) == 0xabcd);
}

TEST_CASE("kernel_page: malformed pages are rejected with the offset", "[tracedat][page]") {
  SECTION("short page") {
    std::vector<std::byte> page(10);
    const auto parsed = parse_page_untrusted(page, PageLayout{});
    CHECK(parsed.error.code == PageErr::short_page);
  }
  SECTION("commit larger than the page") {
    PageBytes p;
    auto page = p.finish(0);
    const uint64_t commit = 4081;
    std::memcpy(&page[8], &commit, 8);
    CHECK(parse_page_untrusted(page, PageLayout{}).error.code == PageErr::commit_too_large);
  }
  SECTION("record runs past the commit") {
    PageBytes p;
    p.data(0, {1});
    p.header(5, 0);  // claims 20 bytes, none follow
    const auto c = check_page_untrusted(p.finish(0), PageLayout{});
    CHECK(c.error.code == PageErr::record_overruns);
    CHECK(c.error.offset == 16 + 8);
    CHECK(c.counts.data == 1);
  }
  SECTION("long record with a bad length") {
    PageBytes p;
    p.header(0, 0);
    p.u32(2);
    CHECK(check_page_untrusted(p.finish(0), PageLayout{}).error.code == PageErr::bad_length);
  }
  SECTION("padding whose length runs past the commit") {
    PageBytes p;
    p.header(kTypePadding, 3);
    p.u32(4000);
    CHECK(check_page_untrusted(p.finish(0), PageLayout{}).error.code == PageErr::record_overruns);
  }
  SECTION("time extend cut by the commit") {
    PageBytes p;
    p.header(kTypeTimeExtend, 3);
    CHECK(check_page_untrusted(p.finish(0), PageLayout{}).error.code == PageErr::truncated_length);
  }
  SECTION("commit not a multiple of 4") {
    PageBytes p;
    p.data(0, {1});
    auto page = p.finish(0);
    const uint64_t commit = 10;
    std::memcpy(&page[8], &commit, 8);
    CHECK(check_page_untrusted(page, PageLayout{}).error.code == PageErr::truncated_header);
  }
  for (auto e : {PageErr::short_page, PageErr::commit_too_large, PageErr::truncated_header,
                 PageErr::truncated_length, PageErr::bad_length, PageErr::record_overruns})
    CHECK(page_error_text(e) != page_error_text(PageErr::none));
}
