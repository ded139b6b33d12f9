// kallsyms ranges for `FIELD.function == SYM`, and where COMM comes from.
#include "tracepipe/core/replay/symbols.h"

#include <catch2/catch.hpp>

#include "replay_test_util.h"
#include "tracepipe/core/events/event_format.h"

using namespace tracepipe;
using namespace tracepipe::replay;

TEST_CASE("replay symbols: a symbol's size is the distance to the next one", "[replay][symbols]") {
  // Unsorted on purpose, with a module symbol, a data symbol and junk lines.
  const SymbolRanges s(
      "ffffffff81e3d6c0 T __pfx_napi_alloc_skb\n"
      "ffffffff81e3d520 T __alloc_skb\n"
      "not a line\n"
      "ffffffff82000000 D some_data\n"
      "ffffffff81e3d520 t __alloc_skb_alias\n"
      "ffffffffc0000000 t modfunc\t[mymod]\n"
      "zzzz T bad_address\n");
  CHECK(s.size() == 5);
  auto r = s.by_name("__alloc_skb");
  REQUIRE(r);
  CHECK(r->start == 0xffffffff81e3d520ull);
  CHECK(r->size == 0x1a0);  // as 054/notes.txt says
  CHECK(s.by_name("modfunc"));
  CHECK(s.by_name("modfunc")->size == 1);  // last symbol
  CHECK_FALSE(s.by_name("nosuch"));
  auto a = s.by_address(0xffffffff81e3d600ull);
  REQUIRE(a);
  CHECK(a->start == 0xffffffff81e3d520ull);
  CHECK_FALSE(s.by_address(0x1000));
  CHECK(s.by_address(0xffffffff81e3d6c0ull)->start == 0xffffffff81e3d6c0ull);
}

TEST_CASE("replay symbols: COMM is prev_comm for sched_switch, the pid's comm otherwise",
          "[replay][symbols]") {
  const auto sw = parse_event_format(replay_test::kSchedSwitch, "sched");
  const auto wk = parse_event_format(replay_test::kSchedWaking, "sched");
  const CommSource a = comm_source(sw);
  CHECK(a.field_offset == 8);
  CHECK(a.field_size == 16);
  const CommSource b = comm_source(wk);
  CHECK(b.field_size == 0);
}
