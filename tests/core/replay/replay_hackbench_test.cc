// Replay of the real hackbench capture (shared/data/kernel/hackbench.dat):
// the per-event counts of its README, filters whose kept counts are computed
// independently here from the records, and the -o file read back.
#include <catch2/catch.hpp>
#include <map>

#include "replay_test_util.h"
#include "test_support.h"
#include "tracepipe/core/replay/replay.h"

using namespace tracepipe;
using namespace tracepipe::replay;

namespace {

const EventRow* hackbench_row(const ReplayResult& r, std::string_view name) {
  for (const EventRow& e : r.events)
    if (e.name == name) return &e;
  return nullptr;
}

template <typename T>
T field(const TraceRecord& r, const EventFormat& f, std::string_view name) {
  const FormatField* x = f.find_field(name);
  T v{};
  std::memcpy(&v, r.payload.data() + x->offset, sizeof v);
  return v;
}

}  // namespace

TEST_CASE("replay hackbench: per-event counts of the capture, nothing lost",
          "[replay][hackbench]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  ReplayOptions o;
  o.input = dat;
  o.progress = ProgressMode::off;
  const ReplayResult r = run_replay(o);
  // shared/data/kernel/README.md
  const std::map<std::string, uint64_t> readme = {{"raw_syscalls:sys_enter", 81040},
                                                  {"raw_syscalls:sys_exit", 81040},
                                                  {"kmem:kfree", 44757},
                                                  {"kmem:kmalloc", 42345},
                                                  {"sched:sched_switch", 3596},
                                                  {"sched:sched_waking", 2187},
                                                  {"sched:sched_wakeup", 2185},
                                                  {"signal:signal_generate", 81},
                                                  {"irq:softirq_entry", 66},
                                                  {"timer:hrtimer_start", 48},
                                                  {"sched:sched_process_exec", 1}};
  CHECK(r.events.size() == readme.size());
  for (const auto& [name, n] : readme) {
    INFO(name);
    const EventRow* e = hackbench_row(r, name);
    REQUIRE(e != nullptr);
    CHECK(e->counts.replayed == n);
    CHECK(e->counts.kept == n);  // no filter: everything kept
  }
  CHECK(r.total.replayed == 257346);
  CHECK(r.total.lost == 0);
  CHECK(r.unknown == 0);
}

TEST_CASE("replay hackbench: filters keep what the records say, through -o",
          "[replay][hackbench]") {
  const auto dat = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  // Independent count from the records.
  const auto rd = TraceDatReader::open(dat);
  uint64_t km_big = 0, sw_idle = 0, sw_hack = 0, exit_neg = 0, total = 0;
  auto c = rd.records();
  while (auto rec = c.next()) {
    ++total;
    const EventFormat* f = rd.format(*rec->event_id());
    if (f->name == "kmalloc") km_big += field<uint64_t>(*rec, *f, "bytes_req") > 100;
    if (f->name == "sched_switch") {
      sw_idle += field<int32_t>(*rec, *f, "prev_pid") == 0;
      const char* comm =
          reinterpret_cast<const char*>(rec->payload.data()) + f->find_field("prev_comm")->offset;
      sw_hack += std::string_view(comm, strnlen(comm, 16)).substr(0, 4) == "hack";
    }
    if (f->name == "sys_exit") exit_neg += field<int64_t>(*rec, *f, "ret") < 0;
  }
  REQUIRE(total == 257346);

  replay_test::TempPath out("replay_hb");
  ReplayOptions o;
  o.input = dat;
  o.filter_args = {"kmalloc: bytes_req > 100",
                   "sched:sched_switch: prev_pid == 0 || prev_comm ~ \"hack*\"",
                   "sys_exit: ret < 0"};
  o.only_filtered = true;
  o.output = out.path;
  o.progress = ProgressMode::off;
  const ReplayResult r = run_replay(o);
  CHECK(hackbench_row(r, "kmem:kmalloc")->counts.kept == km_big);
  CHECK(hackbench_row(r, "sched:sched_switch")->counts.kept == sw_idle + sw_hack);
  CHECK(hackbench_row(r, "raw_syscalls:sys_exit")->counts.kept == exit_neg);
  CHECK(exit_neg > 0);
  CHECK(hackbench_row(r, "kmem:kfree")->counts.skipped == 44757);
  CHECK(r.total.kept == km_big + sw_idle + sw_hack + exit_neg);
  // The file written holds exactly those records.
  const replay_test::FileKeys k = replay_test::keys_of(out.path);
  CHECK(k.records == r.total.kept);
  CHECK(r.output_records == r.total.kept);
}
