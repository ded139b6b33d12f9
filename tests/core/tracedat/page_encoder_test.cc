#include "tracepipe/core/tracedat/page_encoder.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <vector>

#include "tracepipe/core/tracedat/kernel_page.h"

using namespace tracepipe::kpage;

namespace {
std::vector<std::byte> payload_of(uint32_t size, uint32_t seed) {
  std::vector<std::byte> p(size);
  for (uint32_t i = 0; i < size; ++i) p[i] = std::byte(static_cast<uint8_t>(seed * 31 + i));
  return p;
}
}  // namespace

TEST_CASE("page_encoder: record sizes follow rb_calculate_event_length", "[tracedat][page]") {
  CHECK(PageEncoder::record_size(0) == 8);  // bumped to 1 byte, padded to 4
  CHECK(PageEncoder::record_size(8) == 12);
  CHECK(PageEncoder::record_size(9) == 16);
  CHECK(PageEncoder::record_size(112) == 116);  // largest small record: type_len 28
  CHECK(PageEncoder::record_size(113) == 124);  // type_len 0: + length word
  CHECK(PageEncoder::max_payload(PageLayout{4096, 8}) == 4080 - 24);
}

TEST_CASE("page_encoder: the worked example of the reference", "[tracedat][page]") {
  PageEncoder e(PageLayout{});
  std::vector<std::byte> p(16);
  REQUIRE(e.try_append(1000, p));
  REQUIRE(e.try_append(1250, p));
  const auto page = e.finish();
  uint32_t w;
  std::memcpy(&w, page.data() + 16 + 20, 4);
  CHECK(w == 0x00001F44);  // (250 << 5) | 4
  uint64_t ts, commit;
  std::memcpy(&ts, page.data(), 8);
  std::memcpy(&commit, page.data() + 8, 8);
  CHECK(ts == 1000);
  CHECK(commit == 40);
}

TEST_CASE("page_encoder: encode then decode gives back every record", "[tracedat][page]") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    PageEncoder e(PageLayout{round % 2 ? 4096u : 1024u, round % 3 ? 8u : 4u});
    struct Rec {
      uint64_t ts;
      std::vector<std::byte> p;
    };
    std::vector<Rec> in;
    uint64_t ts = rng() >> 8;
    for (;;) {
      const uint64_t gap_kind = rng() % 10;
      if (gap_kind < 6)
        ts += rng() % 1000;
      else if (gap_kind < 8)
        ts += (uint64_t{1} << 27) + rng() % (uint64_t{1} << 40);  // needs an extend
      else if (gap_kind == 8)
        ts -= std::min<uint64_t>(ts, rng() % 5000);  // backwards: absolute
      const uint32_t size = rng() % 3 == 0 ? 2 + rng() % 300 : 8 + rng() % 40;
      auto p = payload_of(size, static_cast<uint32_t>(in.size()));
      if (!e.try_append(ts, p)) break;
      in.push_back({ts, std::move(p)});
    }
    REQUIRE(!in.empty());
    if (round % 5 == 0) e.mark_missed(round % 10 == 0 ? std::optional<uint64_t>(77) : std::nullopt);
    const auto page = e.finish();
    const auto parsed = parse_page_untrusted(page, e.layout());
    REQUIRE(parsed.page);
    CHECK(parsed.page->missed_events == (round % 5 == 0));
    if (round % 10 == 0 && e.used() + e.layout().commit_size <= e.layout().data_capacity())
      CHECK(parsed.page->lost_events == 77u);
    PageCursor cur(*parsed.page);
    size_t i = 0;
    while (auto r = cur.next()) {
      REQUIRE(i < in.size());
      CHECK(r->ts == in[i].ts);
      REQUIRE(r->payload.size() >= in[i].p.size());
      CHECK(r->payload.size() == ((in[i].p.size() + 3) & ~size_t{3}));
      CHECK(std::memcmp(r->payload.data(), in[i].p.data(), in[i].p.size()) == 0);
      ++i;
    }
    CHECK_FALSE(cur.error());
    CHECK(i == in.size());
  }
}

TEST_CASE("page_encoder: a full page refuses the record and stays intact", "[tracedat][page]") {
  PageEncoder e(PageLayout{256, 8});
  std::vector<std::byte> p(100);
  REQUIRE(e.try_append(1, p));
  REQUIRE(e.try_append(2, p));
  const uint32_t used = e.used();
  CHECK_FALSE(e.try_append(3, p));
  CHECK(e.used() == used);
  CHECK(e.records() == 2);
  std::vector<std::byte> huge(PageEncoder::max_payload(e.layout()) + 1);
  e.reset();
  CHECK_FALSE(e.try_append(1, huge));
  huge.pop_back();
  CHECK(e.try_append(1, huge));
}
