// The table `tracepipe replay` prints (format_result): every cell under its
// header, the filter's route in a ROUTE column of its own (a long filter cut
// with "..." cannot hide it), on a made-up result and on a real replay.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "replay_test_util.h"
#include "tracepipe/core/replay/replay.h"

using namespace tracepipe;
using namespace tracepipe::replay;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The text of `line` that ends at column `end` (inclusive) and starts after a
// space: a right-aligned cell. Empty when `end` holds a space or the cell does
// not end there.
std::string cell_ending_at(const std::string& line, size_t end) {
  if (end >= line.size() || line[end] == ' ') return {};
  if (end + 1 < line.size() && line[end + 1] != ' ') return {};
  size_t b = end;
  while (b > 0 && line[b - 1] != ' ') --b;
  return line.substr(b, end + 1 - b);
}

// The word of `line` that starts at column `begin`, after a space: a
// left-aligned cell.
std::string cell_starting_at(const std::string& line, size_t begin) {
  if (begin == 0 || begin >= line.size() || line[begin - 1] != ' ') return {};
  return line.substr(begin, line.find(' ', begin) - begin);
}

struct Cells {
  std::string route, replayed, kept, discarded, lost, ns;
};

// The cells of each row, found by the header's positions: ROUTE from its
// first column, the counts by their last.
std::vector<Cells> cells_under_headers(const std::string& table, bool timing) {
  const std::vector<std::string> lines = lines_of(table);
  REQUIRE(!lines.empty());
  const std::string& h = lines[0];
  auto end_of = [&](const char* name) {
    const size_t at = h.find(name);
    REQUIRE(at != std::string::npos);
    return at + std::string(name).size() - 1;
  };
  const size_t route = h.find("ROUTE");
  REQUIRE(route != std::string::npos);
  const size_t replayed = end_of("REPLAYED"), kept = end_of("KEPT"),
               discarded = end_of("DISCARDED"), lost = end_of("LOST");
  const size_t ns = timing ? end_of("NS/EVENT") : 0;
  std::vector<Cells> out;
  for (size_t i = 1; i < lines.size() && !lines[i].empty(); ++i) {
    const std::string& l = lines[i];
    INFO("row: " << l);
    Cells c{cell_starting_at(l, route), cell_ending_at(l, replayed),
            cell_ending_at(l, kept),    cell_ending_at(l, discarded),
            cell_ending_at(l, lost),    timing ? cell_ending_at(l, ns) : ""};
    // Nothing but the cells themselves between the route cell and the counts.
    CHECK(l.size() == (timing ? ns : lost) + 1);
    out.push_back(c);
  }
  return out;
}

EventRow event(std::string name, std::string filter, FilterRoute route, EventCounts c) {
  EventRow e;
  e.name = std::move(name);
  e.filter = std::move(filter);
  e.route = route;
  e.counts = c;
  return e;
}

}  // namespace

TEST_CASE("replay table: the route has its own column and every count sits under its header",
          "[replay][report]") {
  ReplayResult r;
  r.cpus = 2;
  r.events.push_back(event("app:request_done", "COMM ~ \"example*\"", FilterRoute::replay_side,
                           {1000, 400, 600, 0, 0, 50000}));
  r.events.push_back(event("kmem:kmalloc", "bytes_req > 100", FilterRoute::instance,
                           {42345, 42091, 254, 0, 0, 2240000}));
  r.events.push_back(event("kmem:kfree", "", FilterRoute::none, {44757, 44757, 0, 0, 0, 1630000}));
  // Longer than the filter column (48): cut, the route still shown.
  r.events.push_back(event("sched:sched_switch",
                           "COMM ~ \"hack*\" && prev_prio < 120 && next_pid != 0 && prev_pid != 0",
                           FilterRoute::replay_side, {3596, 0, 3596, 0, 0, 250000}));
  EventRow soft =
      event("sched:sched_waking", "pid > 5", FilterRoute::instance, {2187, 0, 2187, 0, 0, 0});
  soft.soft_disabled = true;
  r.events.push_back(soft);
  EventRow skipped = event("timer:hrtimer_start", "", FilterRoute::none, {0, 0, 0, 0, 48, 0});
  skipped.replayed = false;
  r.events.push_back(skipped);
  for (const EventRow& e : r.events) r.total += e.counts;

  const std::string table = format_result(r, true);
  INFO("table:\n" << table);
  const std::vector<std::string> lines = lines_of(table);
  REQUIRE(lines.size() >= 8);
  CHECK(lines[0] ==
        "EVENT                FILTER                                            ROUTE          "
        "REPLAYED        KEPT"
        "   DISCARDED    LOST  NS/EVENT");
  CHECK(lines[1] ==
        "app:request_done     COMM ~ \"example*\"                                 replay-side      "
        "  1000         400"
        "         600       0      50.0");
  CHECK(lines[2] ==
        "kmem:kmalloc         bytes_req > 100                                   instance          "
        "42345       42091"
        "         254       0      52.9");
  CHECK(lines[3] ==
        "kmem:kfree           -                                                 -                 "
        "44757       44757"
        "           0       0      36.4");
  CHECK(lines[4] ==
        "sched:sched_switch   COMM ~ \"hack*\" && prev_prio < 120 && next_pid...  replay-side      "
        "  3596           0"
        "        3596       0      69.5");
  CHECK(lines[5] ==
        "sched:sched_waking   (soft-disabled)                                   -                  "
        "2187           0"
        "        2187       0       0.0");
  CHECK(lines[6] ==
        "timer:hrtimer_start  (not replayed)                                    -                  "
        "   0           0"
        "           0       0         -");
  CHECK(lines[7] ==
        "total                                                                                    "
        "93885       87248"
        "        6637       0      44.4");  // 4170000 ns / 93933 records

  const std::vector<Cells> cells = cells_under_headers(table, true);
  REQUIRE(cells.size() == 7);
  const char* routes[] = {"replay-side", "instance", "-", "replay-side", "-", "-", ""};
  for (size_t i = 0; i < 6; ++i) {
    INFO("row " << i);
    CHECK(cells[i].route == routes[i]);
    CHECK(cells[i].replayed == std::to_string(r.events[i].counts.replayed));
    CHECK(cells[i].kept == std::to_string(r.events[i].counts.kept));
    CHECK(cells[i].discarded == std::to_string(r.events[i].counts.discarded));
    CHECK(cells[i].lost == std::to_string(r.events[i].counts.lost));
  }
  CHECK(cells[6].replayed == "93885");
  CHECK(cells[6].lost == "0");
}

TEST_CASE("replay table: a COMM filter replayed replay-side lines up (real replay, --no-timing)",
          "[replay][report]") {
  replay_test::TempPath in("replay_report_in");
  TraceDatWriter w = replay_test::make_writer(2);
  w.set_cmdline(100, "hackbench");
  w.set_cmdline(200, "bash");
  uint64_t ts = 10;
  w.add_record(0, ts++, replay_test::sched_switch(100, "bash", 100, "x", 1));
  w.add_record(0, ts++, replay_test::sched_switch(200, "hackbench", 200, "x", 1));
  w.add_record(1, ts++, replay_test::sched_switch(200, "hackbench", 200, "x", 1));
  w.add_record(0, ts++, replay_test::sched_waking(100, "bash", 5, 0));
  w.add_record(1, ts++, replay_test::sched_waking(200, "hackbench", 5, 1));
  w.add_record(1, ts++, replay_test::kmalloc(100, 1, 50));
  w.write(in.path);

  ReplayOptions o;
  o.input = in.path;
  o.filter_args = {"sched_switch: COMM ~ \"hack*\"", "kmalloc: bytes_req > 100"};
  o.progress = ProgressMode::off;
  o.timing = false;
  const ReplayResult r = run_replay(o);
  const std::string table = format_result(r, false);
  INFO("table:\n" << table);
  const std::vector<std::string> lines = lines_of(table);
  REQUIRE(lines.size() >= 5);
  CHECK(lines[0] ==
        "EVENT               FILTER           ROUTE          REPLAYED        KEPT   DISCARDED    "
        "LOST");
  CHECK(lines[1] ==
        "kmem:kmalloc        bytes_req > 100  instance              1           0           1      "
        " 0");
  CHECK(lines[2] ==
        "sched:sched_switch  COMM ~ \"hack*\"   replay-side           3           2           1    "
        "   0");
  CHECK(lines[3] ==
        "sched:sched_waking  -                -                     2           2           0      "
        " 0");
  CHECK(lines[4] ==
        "total                                                      6           4           2      "
        " 0");
  const std::vector<Cells> cells = cells_under_headers(table, false);
  REQUIRE(cells.size() == 4);
  CHECK(cells[1].route == "replay-side");
  CHECK(cells[1].replayed == "3");
  CHECK(cells[1].kept == "2");
  CHECK(cells[1].discarded == "1");
  // The tests' own reader (the last four columns) agrees.
  CHECK(replay_test::replayed_kept(table, "sched:sched_switch") ==
        std::pair<uint64_t, uint64_t>{3, 2});
}
