// The replay engine on synthetic trace.dat files (no shared data needed):
// counts, per-CPU order and recorded stamps through -o, every staging policy
// and thread count, the replay-side route (COMM), soft-disable, unknown IDs,
// lost marks.
#include <catch2/catch.hpp>
#include <fstream>

#include "replay_test_util.h"
#include "tracepipe/core/replay/filter_plan.h"
#include "tracepipe/core/replay/replay.h"

using namespace tracepipe;
using namespace tracepipe::replay;
using replay_test::TempPath;

namespace {

struct Expected {
  // per CPU: (ts, payload) of the records the filter must keep, in order
  std::vector<std::vector<std::pair<uint64_t, std::vector<std::byte>>>> kept;
  uint64_t total = 0, kmalloc = 0, kmalloc_kept = 0, sched_switch = 0;
};

// CPU 0: 10000 kmalloc (bytes_req = seq % 300); CPU 1: 9000 records, one
// sched_switch every third. More than two batches per CPU.
Expected write_input(const std::filesystem::path& p) {
  TraceDatWriter w = replay_test::make_writer(2);
  w.set_cmdline(100, "hackbench");
  w.set_cmdline(200, "bash");
  Expected e;
  e.kept.resize(2);
  uint64_t ts = 1'000'000;
  for (uint64_t i = 0; i < 10000; ++i) {
    const auto r = replay_test::kmalloc(100, i, i % 300);
    ts += 1 + i % 7;
    w.add_record(0, ts, r);
    ++e.total, ++e.kmalloc;
    if (i % 300 > 100) {
      e.kept[0].emplace_back(ts, r);
      ++e.kmalloc_kept;
    }
  }
  ts = 2'000'000;
  for (uint64_t i = 0; i < 9000; ++i) {
    ts += 3;
    if (i % 3 == 0) {
      const auto r =
          replay_test::sched_switch(200, i % 2 ? "bash" : "hackbench", 200, "swapper/1", 0);
      w.add_record(1, ts, r);
      e.kept[1].emplace_back(ts, r);  // unfiltered: kept
      ++e.sched_switch;
    } else {
      const auto r = replay_test::kmalloc(200, 100000 + i, i % 300);
      w.add_record(1, ts, r);
      ++e.kmalloc;
      if (i % 300 > 100) {
        e.kept[1].emplace_back(ts, r);
        ++e.kmalloc_kept;
      }
    }
    ++e.total;
  }
  w.write(p);
  return e;
}

const EventRow* row(const ReplayResult& r, std::string_view name) {
  for (const EventRow& e : r.events)
    if (e.name == name) return &e;
  return nullptr;
}

void check_output(const std::filesystem::path& out, const Expected& e) {
  const auto rd = TraceDatReader::open(out);
  REQUIRE(rd.cpu_count() == 2);
  for (size_t i = 0; i < rd.cpu_data().size(); ++i) {
    const uint32_t cpu = rd.cpu_data()[i].cpu;
    auto c = rd.cpu_records(i);
    size_t k = 0;
    bool same = true;
    while (auto r = c.next()) {
      if (k >= e.kept[cpu].size()) {
        same = false;
        break;
      }
      const auto& [ts, bytes] = e.kept[cpu][k++];
      // Payloads are 4-byte padded in the file: compare the record's bytes.
      if (r->ts != ts || r->payload.size() < bytes.size() ||
          std::memcmp(r->payload.data(), bytes.data(), bytes.size()) != 0) {
        INFO("cpu " << cpu << " record " << k - 1 << " ts " << r->ts << " expected " << ts);
        same = false;
        break;
      }
    }
    INFO("cpu " << cpu);
    CHECK(same);
    CHECK(k == e.kept[cpu].size());
  }
}

/// Options replaying `in` into `out` with the config file `cfg`, which gets `text`.
ReplayOptions with_config(const TempPath& in, const TempPath& out, const TempPath& cfg,
                          const char* text) {
  {
    std::ofstream f(cfg.path);
    f << text;
  }
  ReplayOptions o;
  o.input = in.path;
  o.config = cfg.path;
  o.output = out.path;
  o.progress = ProgressMode::off;
  return o;
}

}  // namespace

TEST_CASE("replay engine: counts, per-CPU order and recorded stamps through -o",
          "[replay][engine]") {
  TempPath in("replay_in"), out("replay_out");
  const Expected e = write_input(in.path);
  const auto staging =
      GENERATE(Staging::off, Staging::per_cpu, Staging::per_thread, Staging::adaptive);
  const unsigned threads = GENERATE(1u, 2u);
  INFO("staging " << to_string(staging) << ", threads " << threads);
  ReplayOptions o;
  o.input = in.path;
  o.filter_args = {"kmalloc: bytes_req > 100"};
  o.output = out.path;
  o.staging = staging;
  o.threads = threads;
  o.progress = ProgressMode::off;
  const ReplayResult r = run_replay(o);
  CHECK(r.cpus == 2);
  CHECK(r.total.replayed == e.total);
  CHECK(r.total.kept + r.total.discarded + r.total.lost == r.total.replayed);
  CHECK(r.total.lost == 0);
  CHECK(r.unknown == 0);
  const EventRow* km = row(r, "kmem:kmalloc");
  REQUIRE(km != nullptr);
  CHECK(km->counts.replayed == e.kmalloc);
  CHECK(km->counts.kept == e.kmalloc_kept);
  CHECK(km->counts.discarded == e.kmalloc - e.kmalloc_kept);
  CHECK(km->route == FilterRoute::instance);
  CHECK(km->filter == "bytes_req > 100");
  // The instance's own counters agree, and say which path ran.
  CHECK(km->path.kept == e.kmalloc_kept);
  CHECK(km->path.discarded == e.kmalloc - e.kmalloc_kept);
  if (staging == Staging::off) CHECK(km->path.direct == e.kmalloc);
  if (staging == Staging::per_thread) CHECK(km->path.staged == e.kmalloc);
  const EventRow* sw = row(r, "sched:sched_switch");
  REQUIRE(sw != nullptr);
  CHECK(sw->counts.kept == e.sched_switch);
  CHECK(sw->path.unfiltered == e.sched_switch);
  CHECK(row(r, "sched:sched_waking") == nullptr);  // no records: no row
  CHECK(r.output_records == e.kmalloc_kept + e.sched_switch);
  // Everything kept went through the ring and was read back from it.
  uint64_t read = 0;
  for (const auto& c : r.ring) read += c.read;
  CHECK(read == r.output_records);
  check_output(out.path, e);
}

TEST_CASE("replay engine: without -o, the same counts (ring in overwrite mode)",
          "[replay][engine]") {
  TempPath in("replay_in");
  const Expected e = write_input(in.path);
  ReplayOptions o;
  o.input = in.path;
  o.filter_args = {"kmalloc: bytes_req > 100"};
  o.progress = ProgressMode::off;
  const ReplayResult r = run_replay(o);
  CHECK(r.total.kept == e.kmalloc_kept + e.sched_switch);
  CHECK(r.output_records == 0);
  // The ring (kernel-default size) kept the newest records and overwrote the rest.
  uint64_t entries = 0, overrun = 0;
  for (const auto& c : r.ring) entries += c.entries, overrun += c.overrun;
  CHECK(entries + overrun == r.total.kept);
  CHECK(r.total.ns > 0);  // timing on by default
  // --only-filtered: sched_switch is not replayed.
  o.only_filtered = true;
  const ReplayResult q = run_replay(o);
  CHECK(q.total.kept == e.kmalloc_kept);
  CHECK(q.total.skipped == e.sched_switch);
  CHECK(q.total.replayed == e.kmalloc);
  const EventRow* sw = row(q, "sched:sched_switch");
  REQUIRE(sw != nullptr);
  CHECK_FALSE(sw->replayed);
}

TEST_CASE("replay engine: COMM and CPU filters use the recorded context", "[replay][engine]") {
  TempPath in("replay_in"), out("replay_out");
  TraceDatWriter w = replay_test::make_writer(2);
  w.set_cmdline(100, "hackbench");
  w.set_cmdline(200, "bash");
  uint64_t ts = 10;
  // sched_switch: COMM is prev_comm (not the pid's cmdline).
  w.add_record(0, ts++, replay_test::sched_switch(100, "bash", 100, "x", 1));  // prev bash
  w.add_record(0, ts++,
               replay_test::sched_switch(200, "hackbench", 200, "x", 1));  // prev hackbench
  w.add_record(1, ts++, replay_test::sched_switch(200, "hackbench", 200, "x", 1));
  // sched_waking has its own comm field: a COMM filter uses the name the
  // trace gives common_pid at that record (pid 100 switched out as bash,
  // pid 200 as hackbench above), not saved_cmdlines (which says the reverse).
  w.add_record(0, ts++, replay_test::sched_waking(100, "bash", 5, 0));  // pid 100 = bash here
  w.add_record(0, ts++,
               replay_test::sched_waking(200, "hackbench", 5, 1));  // pid 200 = hackbench here
  w.write(in.path);

  ReplayOptions o;
  o.input = in.path;
  o.filter_args = {"sched_switch: COMM == \"hackbench\"",
                   "sched_waking: COMM ~ \"hack*\" && CPU == 0"};
  o.output = out.path;
  o.progress = ProgressMode::off;
  const ReplayResult r = run_replay(o);
  const EventRow* sw = row(r, "sched:sched_switch");
  const EventRow* wk = row(r, "sched:sched_waking");
  REQUIRE(sw != nullptr);
  REQUIRE(wk != nullptr);
  CHECK(sw->route == FilterRoute::replay_side);
  CHECK(sw->counts.kept == 2);
  CHECK(sw->counts.discarded == 1);
  CHECK(wk->route == FilterRoute::replay_side);
  CHECK(wk->counts.kept == 1);
  CHECK(wk->counts.discarded == 1);
  const auto k = replay_test::keys_of(out.path);
  CHECK(k.records == 3);
  {  // the waking kept is pid 200's (hackbench in the trace), not pid 100's (hackbench in
     // saved_cmdlines)
    const TraceDatReader kept = TraceDatReader::open(out.path);
    std::vector<int32_t> waking_pids;
    auto recs = kept.records();
    while (auto rec = recs.next()) {
      const EventFormat* f = kept.format(*rec->event_id());
      if (f == nullptr || f->name != "sched_waking") continue;
      int32_t pid;
      std::memcpy(&pid, rec->payload.data() + 4, 4);
      waking_pids.push_back(pid);
    }
    CHECK(waking_pids == std::vector<int32_t>{200});
  }

  // A CPU test alone needs no context: the instance's own filter runs it.
  o.filter_args = {"sched_switch: CPU == 1"};
  o.output.reset();
  const ReplayResult c = run_replay(o);
  CHECK(row(c, "sched:sched_switch")->route == FilterRoute::instance);
  CHECK(row(c, "sched:sched_switch")->counts.kept == 1);
}

TEST_CASE("replay engine: soft-disabled events, unknown IDs and lost marks", "[replay][engine]") {
  TempPath in("replay_in"), out("replay_out"), cfg("replay_cfg");
  TraceDatWriter w = replay_test::make_writer(1);
  uint64_t ts = 10;
  for (int i = 0; i < 5; ++i) w.add_record(0, ts++, replay_test::kmalloc(1, i, 500));
  w.add_lost(0, 7);
  for (int i = 0; i < 3; ++i) w.add_record(0, ts++, replay_test::sched_switch(1, "a", 1, "b", 2));
  auto bad = replay_test::sched_switch(1, "a", 1, "b", 2);
  replay_test::put(bad, 0, uint16_t{999});  // no format with this ID
  w.add_record(0, ts++, bad);
  w.write(in.path);
  const ReplayResult r =
      run_replay(with_config(in, out, cfg, "[events.\"kmem:kmalloc\"]\nsoft_disable = true\n"));
  const EventRow* km = row(r, "kmem:kmalloc");
  REQUIRE(km != nullptr);
  CHECK(km->soft_disabled);
  CHECK(km->counts.discarded == 5);
  CHECK(km->path.soft_discarded == 5);
  CHECK(r.unknown == 1);
  CHECK(r.total.kept == 3);
  CHECK(r.input_lost == 7);
  // The loss mark is carried into the output, before the records after it.
  const auto rd = TraceDatReader::open(out.path);
  auto c = rd.cpu_records(0);
  size_t n = 0;
  int64_t lost = 0;
  while (auto rec = c.next()) {
    if (n == 0) lost = rec->lost_before;
    ++n;
  }
  CHECK(n == 3);
  CHECK(lost == 7);
}

TEST_CASE("replay engine: a config asking for cpu_local writers replays with any_cpu and says so",
          "[replay][engine]") {
  TempPath in("replay_in"), out("replay_out"), cfg("replay_cfg");
  TraceDatWriter w = replay_test::make_writer(2);
  w.add_record(0, 10, replay_test::kmalloc(1, 1, 100));
  w.add_record(1, 11, replay_test::kmalloc(1, 2, 200));
  w.write(in.path);
  const ReplayResult r = run_replay(with_config(in, out, cfg, "writers = \"cpu_local\"\n"));
  CHECK(r.total.kept == 2);
  bool warned = false;
  for (const std::string& m : r.warnings)
    warned = warned || m.find("cpu_local") != std::string::npos;
  CHECK(warned);
  // Each record is still on the CPU it was recorded on.
  const auto rd = TraceDatReader::open(out.path);
  for (uint32_t cpu = 0; cpu < 2; ++cpu) {
    auto c = rd.cpu_records(cpu);
    size_t n = 0;
    while (c.next()) ++n;
    CHECK(n == 1);
  }
}

TEST_CASE("replay engine: bad input is a clear error", "[replay][engine]") {
  TempPath in("replay_in");
  {
    std::ofstream f(in.path);
    f << "not a trace file";
  }
  ReplayOptions o;
  o.input = in.path;
  o.progress = ProgressMode::off;
  CHECK_THROWS_AS(run_replay(o), TraceDatError);
  o.input = "/nonexistent/trace.dat";
  CHECK_THROWS(run_replay(o));
  // A valid file with a rejected filter.
  TraceDatWriter w = replay_test::make_writer(1);
  w.add_record(0, 1, replay_test::kmalloc(1, 1, 1));
  w.write(in.path);
  o.input = in.path;
  o.filter_args = {"kmalloc: bytes_req > "};
  CHECK_THROWS_AS(run_replay(o), ReplayError);
  o.filter_args = {"kmalloc bytes_req > 1"};
  CHECK_THROWS_AS(run_replay(o), ReplayError);
}

TEST_CASE("replay engine: a file without records replays to an empty result and output",
          "[replay][engine]") {
  TempPath in("replay_in"), out("replay_out");
  replay_test::make_writer(2).write(in.path);
  ReplayOptions o;
  o.input = in.path;
  o.filter_args = {"sched_switch: prev_pid == 0"};
  o.output = out.path;
  o.progress = ProgressMode::off;
  const ReplayResult r = run_replay(o);
  CHECK(r.total.replayed == 0);
  CHECK(r.events.empty());
  CHECK(r.output_records == 0);
  CHECK(replay_test::keys_of(out.path).records == 0);
  CHECK(format_result(r, true).find("0 records read from 2 CPU buffer(s)") != std::string::npos);
}

TEST_CASE("replay engine: -o keeps a loss mark that follows a batch's last kept record",
          "[replay][engine]") {
  // One batch is kBatchRecords records: the first batch ends with rejected
  // records after a loss mark, so the mark has no kept record in its batch
  // and must land before the next batch's first kept record (the writer
  // drains each batch from the ring right after feeding it).
  TempPath in("replay_in"), out("replay_out");
  TraceDatWriter w = replay_test::make_writer(1);
  uint64_t ts = 1000;
  const uint32_t kept_first = static_cast<uint32_t>(kBatchRecords) - 6;
  for (uint32_t i = 0; i < kept_first; ++i) w.add_record(0, ts++, replay_test::kmalloc(1, i, 500));
  w.add_lost(0, 9);
  for (uint32_t i = 0; i < 6; ++i)
    w.add_record(0, ts++, replay_test::kmalloc(1, 100000 + i, 1));  // rejected
  for (uint32_t i = 0; i < 100; ++i)
    w.add_record(0, ts++, replay_test::kmalloc(1, 200000 + i, 500));
  w.write(in.path);
  ReplayOptions o;
  o.input = in.path;
  o.output = out.path;
  o.filter_args = {"kmalloc: bytes_req > 100"};
  o.threads = 1;
  o.progress = ProgressMode::off;
  const ReplayResult r = run_replay(o);
  CHECK(r.total.kept == kept_first + 100);
  CHECK(r.output_records == kept_first + 100);
  const auto rd = TraceDatReader::open(out.path);
  auto c = rd.cpu_records(0);
  uint64_t n = 0, marked_at = 0;
  int64_t lost = 0;
  while (auto rec = c.next()) {
    if (rec->lost_before != 0) {
      lost = rec->lost_before;
      marked_at = n;
    }
    ++n;
  }
  // The input's own mark (its writer may not have had room for the count
  // on a full page: then "unknown", -1) is what the output carries.
  int64_t in_lost = 0;
  {
    const auto ird = TraceDatReader::open(in.path);
    auto ic = ird.cpu_records(0);
    while (auto rec = ic.next())
      if (rec->lost_before != 0) in_lost = rec->lost_before;
  }
  CHECK(in_lost != 0);
  CHECK(n == kept_first + 100);
  CHECK(lost == in_lost);
  CHECK(marked_at == kept_first);  // right before the first record after the loss
}
