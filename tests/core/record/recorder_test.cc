// The recorder: a growing trace.dat of an instance, read back by our reader
// and by trace-cmd report; losses counted and marked where they happened;
// faults (output removed, disk full) reported once without stopping the
// application.
#include "tracepipe/core/record/recorder.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include "../instance/test_events.h"
#include "../tracedat/tracedat_test_util.h"
#include "record_test_util.h"
#include "syscall_jail.h"
#include "test_support.h"
#include "tracepipe/core/instance/testing/emit_hooks.h"
#include "tracepipe/core/record/page_batch.h"
#include "tracepipe/core/record/testing/hooks.h"
#include "tracepipe/core/sideband/sideband.h"
#include "tracepipe/core/tracedat/kernel_page.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_core_test;
using tp_tracedat_test::have_trace_cmd;
using tp_tracedat_test::run;
using tp_tracedat_test::TempPath;

namespace {

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0);
}

// Emits seq = from..to-1 from a thread pinned to CPU 0; returns how many were kept.
uint64_t emit_range(Instance& inst, uint32_t from, uint32_t to) {
  uint64_t kept = 0;
  std::thread t([&] {
    pin_to(0);
    for (uint32_t i = from; i < to; ++i)
      kept += emit_sample(inst, 7, i, "recorded") == EmitResult::kept;
  });
  t.join();
  return kept;
}

using tp_record_test::sample_seqs;

// Records the ring refused on CPU 0 (what the recorder counts as dropped).
uint64_t ring_lost(const Instance& inst) {
  const buffers::CpuStats s = inst.cpu_stats(0);
  return s.lost_full + s.lost_busy + s.lost_too_big + s.commit_overrun + s.lost_set_aside;
}

using tp_record_test::Stall;

}  // namespace

TEST_CASE("page batch: records encode as the kernel's pages, losses flag the next page",
          "[record]") {
  record::PageBatch b(4096, 4);
  std::vector<std::byte> p(64, std::byte{1});
  b.record(1000, p);
  b.record(1100, p);
  b.mark_lost(5);
  b.record(1200, p);
  b.close_open();
  REQUIRE(b.finished_pages() == 2);
  auto pages = b.finished();
  kpage::PageLayout layout{4096, 8};
  auto first = kpage::parse_page_untrusted(pages.subspan(0, 4096), layout).page;
  auto second = kpage::parse_page_untrusted(pages.subspan(4096, 4096), layout).page;
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  CHECK(first->timestamp == 1000);
  CHECK(!first->missed_events);
  CHECK(second->missed_events);
  REQUIRE(second->lost_events.has_value());
  CHECK(*second->lost_events == 5);
  CHECK(second->timestamp == 1200);
}

TEST_CASE("recorder: tai stamps (past 2^59 ns) reach trace-cmd whole", "[record]") {
  TempPath out("rec_tai.dat");
  InstanceOptions o = small_options(Staging::per_thread);
  o.clock = ClockId::tai;
  Instance inst(o);
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.output = out.path;
  record::Recorder rec(inst, ro);
  timespec t0{};
  REQUIRE(clock_gettime(CLOCK_TAI, &t0) == 0);
  const uint64_t start = uint64_t(t0.tv_sec) * 1000000000 + uint64_t(t0.tv_nsec);
  REQUIRE(start > (uint64_t{1} << 59));
  const uint32_t n = 3000;  // a few pages
  REQUIRE(emit_range(inst, 0, n) == n);
  const record::RecorderStats s = rec.stop();
  REQUIRE(s.records == n);
  std::vector<uint64_t> ours;
  {
    const auto r = TraceDatReader::open(out.path);
    auto m = r.records();
    while (auto rec2 = m.next()) ours.push_back(rec2->ts);
  }
  REQUIRE(ours.size() == n);
  CHECK(ours.front() >= start);
  CHECK(ours.front() - start < uint64_t{60} * 1000000000);
  CHECK(std::is_sorted(ours.begin(), ours.end()));
  if (have_trace_cmd()) {
    const std::string rep =
        run(fmt::format("trace-cmd report -t -i {} 2>/dev/null | grep 'sample:' | sed -E 's/.* "
                        "([0-9]+)\\.([0-9]{{9}}): "
                        "sample:.*/\\1\\2/'",
                        out.path.string()));
    std::istringstream in(rep);
    std::vector<uint64_t> theirs;
    for (uint64_t v; in >> v;) theirs.push_back(v);
    CHECK(theirs == ours);
  }
}

TEST_CASE("recorder: every event of a drop-newest instance reaches the file, which trace-cmd reads",
          "[record]") {
  TempPath out("rec_all.dat");
  InstanceOptions o = small_options(Staging::per_thread);
  Instance inst(o);
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.watermark_percent = 10;
  record::Recorder rec(inst, ro);
  const uint32_t n = 200000;
  uint64_t kept = 0;
  // The recorder keeps up only if it runs: the writer yields between chunks
  // until the recorder has written what it emitted (bounded by the count).
  for (uint32_t at = 0; at < n; at += 1000) kept += emit_range(inst, at, at + 1000);
  const record::RecorderStats s = rec.stop();
  REQUIRE(!rec.error());
  const uint64_t lost = ring_lost(inst);
  CHECK(s.records + s.dropped == n);
  CHECK(s.records == kept);
  CHECK(s.dropped == lost);
  const auto got = sample_seqs(out.path);
  REQUIRE(got.size() == kept);
  CHECK(std::is_sorted(got.begin(), got.end()));
  if (have_trace_cmd()) {
    const std::string rep = run(
        fmt::format("trace-cmd report -i {} 2>/dev/null | grep -c 'sample:'", out.path.string()));
    CHECK(std::stoull(rep) == kept);
  }
}

TEST_CASE("recorder: a stalled consumer's drops are counted and marked where they happened",
          "[record]") {
  TempPath out("rec_drop.dat");
  InstanceOptions o = small_options(Staging::per_thread);
  Instance inst(o);
  inst.enable(Sample::desc());
  Stall stall;
  record::RecorderOptions ro;
  ro.output = out.path;
  const tp_record_test::PassHook hook([&] { stall.pass(); });
  record::Recorder rec(inst, ro);
  for (int i = 0; i < 1000000 && !stall.entered.load(); ++i) std::this_thread::yield();
  REQUIRE(stall.entered.load());
  const uint32_t n1 = 50000;  // far more than 256 KiB holds
  const uint64_t kept1 = emit_range(inst, 0, n1);
  const uint64_t lost = ring_lost(inst);
  REQUIRE(lost > 0);
  REQUIRE(kept1 + lost == n1);
  stall.release();
  // After the stall: the recorder drains, then these are kept too.
  const uint32_t n2 = 100;
  for (int i = 0; i < 1000000 && rec.stats().records < kept1; ++i) std::this_thread::yield();
  REQUIRE(rec.stats().records == kept1);
  const uint64_t kept2 = emit_range(inst, n1, n1 + n2);
  REQUIRE(kept2 == n2);
  const record::RecorderStats s = rec.stop();
  CHECK(s.dropped == lost);
  CHECK(s.records == kept1 + kept2);
  const auto got = sample_seqs(out.path);
  REQUIRE(got.size() == kept1 + kept2);
  // Kept: 0..kept1-1, then n1..n1+n2-1; the drop lies between.
  CHECK(got[kept1 - 1] == kept1 - 1);
  CHECK(got[kept1] == n1);
  if (have_trace_cmd()) {
    const std::string rep = run(fmt::format("trace-cmd report -i {}", out.path.string()));
    const std::string mark = fmt::format("[{} EVENTS DROPPED]", lost);
    const size_t at = rep.find(mark);
    if (at == std::string::npos) {
      const size_t b = rep.find(fmt::format("seq={} ", kept1 - 1));
      UNSCOPED_INFO(rep.substr(b == std::string::npos ? 0 : b, 600));
    }
    REQUIRE(at != std::string::npos);
    const size_t before = rep.find(fmt::format("seq={} ", kept1 - 1));
    const size_t after = rep.find(fmt::format("seq={} ", n1));
    REQUIRE(before != std::string::npos);
    REQUIRE(after != std::string::npos);
    CHECK(before < at);
    CHECK(at < after);
  }
}

// The other side of net_sink_test's stopped collector: a recorder busy on
// its own CPU (a pass that spins), writing to a file that takes every
// write at once, loses records because it did not keep up, and the
// summary says so rather than blaming the output.
TEST_CASE("recorder: a busy recorder's losses are its own, not the output's", "[record]") {
  TempPath out("rec_busy.dat");
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  std::atomic<bool> busy{true}, entered{false};
  record::RecorderOptions ro;
  ro.output = out.path;
  const tp_record_test::PassHook hook([&] {
    entered.store(true);
    while (busy.load(std::memory_order_relaxed)) {  // on its CPU, not waiting for anything
    }
  });
  record::Recorder rec(inst, ro);
  for (int i = 0; i < 1000000 && !entered.load(); ++i) std::this_thread::yield();
  REQUIRE(entered.load());
  const uint64_t kept = emit_range(inst, 0, 50000);  // far more than 256 KiB holds
  REQUIRE(kept < 50000);
  busy.store(false);
  const record::RecorderStats s = rec.stop();
  REQUIRE(!rec.error());
  const std::string sum = record::format_summary(s, std::nullopt, "tp: ");
  INFO(sum);
  CHECK(s.dropped == 50000 - kept);  // mostly buffer full (a writer may find one busy)
  CHECK(s.cpus[0].lost_full > 0);
  CHECK(s.records == kept);
  CHECK(s.write_ns >= s.write_wait_ns);
  CHECK(sum.find(": the recorder did not keep up; a larger buffer_size_kb holds longer bursts") !=
        std::string::npos);
  CHECK(sum.find("did not take the data fast enough") == std::string::npos);
}

TEST_CASE("recorder: the file is a valid trace.dat while it grows", "[record]") {
  TempPath out("rec_grow.dat");
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.watermark_percent = 0;
  record::Recorder rec(inst, ro);
  const uint64_t kept = emit_range(inst, 0, 20000);
  REQUIRE(kept > 0);
  rec.trigger();  // a flush: the open sub-buffers too
  for (int i = 0; i < 10000000 && rec.stats().records < kept; ++i) std::this_thread::yield();
  REQUIRE(rec.stats().records == kept);
  // Not stopped: the file on disk already holds every record written.
  CHECK(sample_seqs(out.path).size() == kept);
  if (have_trace_cmd()) {
    const std::string rep = run(
        fmt::format("trace-cmd report -i {} 2>/dev/null | grep -c 'sample:'", out.path.string()));
    CHECK(std::stoull(rep) == kept);
  }
  rec.stop();
  CHECK(sample_seqs(out.path).size() == kept);
}

TEST_CASE("recorder: an empty recording is a valid trace.dat", "[record]") {
  TempPath out("rec_empty.dat");
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  {
    record::RecorderOptions ro;
    ro.output = out.path;
    record::Recorder rec(inst, ro);
    const auto s = rec.stop();
    CHECK(s.records == 0);
  }
  CHECK(sample_seqs(out.path).empty());
  if (have_trace_cmd())
    CHECK_NOTHROW(run(fmt::format("trace-cmd report -i {}", out.path.string())));
}

TEST_CASE("recorder: the output removed mid-run is reported once, the application goes on",
          "[record][fault]") {
  TempPath out("rec_removed.dat");
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  std::atomic<int> reports{0};
  std::string msg;
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.watermark_percent = 0;
  ro.on_error = [&](const std::string& m) {
    msg = m;
    reports.fetch_add(1);
  };
  record::Recorder rec(inst, ro);
  uint64_t kept = emit_range(inst, 0, 5000);
  std::filesystem::remove(out.path);
  for (int round = 0; round < 2000 && reports.load() == 0; ++round) {
    kept += emit_range(inst, 0, 2000);
    std::this_thread::sleep_for(
        std::chrono::milliseconds(1));  // lets the recorder look (200 ms period)
  }
  REQUIRE(reports.load() == 1);
  CHECK(msg.find("removed") != std::string::npos);
  kept += emit_range(inst, 0, 5000);
  const auto s = rec.stop();
  CHECK(reports.load() == 1);
  CHECK(s.failed);
  CHECK(s.unwritten > 0);
  CHECK(s.records + s.unwritten == kept);
  CHECK(s.dropped == ring_lost(inst));
}

TEST_CASE("recorder: a full disk (small tmpfs) is reported once, what was written stays readable",
          "[record][fault]") {
  if (::geteuid() != 0) TP_SKIP("mounting a tmpfs needs root");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("tp_rec_tmpfs_{}", ::getpid());
  std::filesystem::create_directories(dir);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=2m") != 0) {
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
  const auto out = dir / "full.dat";
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  std::atomic<int> reports{0};
  std::string msg;
  record::RecorderOptions ro;
  ro.output = out;
  ro.watermark_percent = 0;
  ro.on_error = [&](const std::string& m) {
    msg = m;
    reports.fetch_add(1);
  };
  record::Recorder rec(inst, ro);
  // 2 MiB hold about 30000 records of 68 bytes: write far more.
  uint64_t kept = 0;
  for (int round = 0; round < 1000 && reports.load() == 0; ++round)
    kept += emit_range(inst, 0, 5000);
  REQUIRE(reports.load() == 1);
  CHECK(msg.find(std::strerror(ENOSPC)) != std::string::npos);
  kept += emit_range(inst, 0, 5000);
  const auto s = rec.stop();
  CHECK(reports.load() == 1);
  CHECK(s.unwritten > 0);
  CHECK(s.records > 0);
  CHECK(s.records + s.unwritten == kept);
  CHECK(s.dropped == ring_lost(inst));
  // Everything the recorder counted as written is in the file.
  CHECK(sample_seqs(out).size() == s.records);
  if (have_trace_cmd()) {
    const std::string rep =
        run(fmt::format("trace-cmd report -i {} 2>/dev/null | grep -c 'sample:'", out.string()));
    CHECK(std::stoull(rep) == s.records);
  }
}

TEST_CASE("recorder: flight recorder writes nothing until stop, then the newest records",
          "[record]") {
  TempPath out("rec_flight.dat");
  Instance inst(small_options(Staging::per_thread, BufferMode::overwrite));
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.mode = record::RecordMode::flight_recorder;
  record::Recorder rec(inst, ro);
  const uint32_t n = 50000;  // about 15 times what 256 KiB hold
  REQUIRE(emit_range(inst, 0, n) == n);
  CHECK(rec.stats().records == 0);
  CHECK(sample_seqs(out.path).empty());  // a valid, empty trace until then
  const auto s = rec.stop();
  const auto got = sample_seqs(out.path);
  REQUIRE(!got.empty());
  CHECK(got.size() == s.records);
  CHECK(got.back() == n - 1);  // the newest
  for (size_t i = 1; i < got.size(); ++i) REQUIRE(got[i] == got[i - 1] + 1);
  const buffers::CpuStats cs = inst.cpu_stats(0);
  CHECK(s.dropped == cs.overrun + ring_lost(inst));
  CHECK(s.records + s.dropped == n);
  if (have_trace_cmd()) {
    const std::string rep = run(fmt::format("trace-cmd report -i {}", out.path.string()));
    const size_t mark = rep.find(fmt::format("[{} EVENTS DROPPED]", cs.overrun));
    REQUIRE(mark != std::string::npos);
    CHECK(mark < rep.find(fmt::format("seq={} ", got.front())));
  }
}

// The interleaving behind "records + drops != emitted" in overwrite
// recordings: writer A reserves its record, and before it commits, writer B
// (another thread of A's CPU, as when the scheduler preempts A) wraps the
// ring past A's sub-buffer, which is set aside (ring_buffer.h, "Set aside").
// A then commits into the set-aside memory: that record is lost, and the
// ring counts it (lost_set_aside) only when the memory is reclaimed, which
// no writer does while a spare is free. The recorder must reclaim before it
// reads the counters, or the loss reaches no one.
TEST_CASE(
    "recorder: a record committed into a set-aside sub-buffer is counted and marked (overwrite, "
    "writer preempted between reserve and commit)",
    "[record]") {
  TempPath out("rec_set_aside.dat");
  // Staging off and a filter: every emit reserves in the ring and builds its
  // record there before it commits (the direct lane, where the hook runs).
  Instance inst(small_options(Staging::off, BufferMode::overwrite));
  inst.enable(Sample::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value == 7").ok());
  Stall stall;  // the recorder reads nothing meanwhile: no pin can turn the swap into lost_busy
  const tp_record_test::PassHook hook([&] { stall.pass(); });
  record::RecorderOptions ro;
  ro.output = out.path;
  record::Recorder rec(inst, ro);
  struct Unstall {  // before the recorder stops, also when a REQUIRE fails
    Stall& s;
    ~Unstall() { s.release(); }
  } unstall{stall};
  for (int i = 0; i < 1000000 && !stall.entered.load(); ++i) std::this_thread::yield();
  REQUIRE(stall.entered.load());
  const uint32_t n = 10000;  // about 3 laps of 256 KiB
  uint64_t kept_b = 0;
  struct PreemptedAfterReserve {  // B's whole run between A's reserve and A's commit
    Instance* inst;
    uint64_t* kept;
    uint32_t n;
    void operator()(tracepipe::testing::EmitStep s) const {
      if (s == tracepipe::testing::EmitStep::built_direct) *kept = emit_range(*inst, 1, n + 1);
    }
  };
  EmitResult a = EmitResult::lost;
  std::thread writer_a([&] {
    pin_to(0);
    auto fill = [](std::span<std::byte> r) noexcept {
      Sample::write_fields(r.data(), 7, 0, "preempted");
    };
    a = tracepipe::testing::emit_fill(inst, Sample::desc(), Sample::fixed_size, fill,
                                      PreemptedAfterReserve{&inst, &kept_b, n});
  });
  writer_a.join();
  REQUIRE(a == EmitResult::kept);  // its writer cannot know
  REQUIRE(kept_b == n);
  REQUIRE(inst.ring().cpu_buffer(0).set_aside.load() == 1);
  stall.release();
  const record::RecorderStats s = rec.stop();
  REQUIRE(s.cpus.size() >= 1);
  const record::RecorderCpuStats& c = s.cpus[0];
  // Every event emitted is in the file or counted by its cause.
  CHECK(c.lost_set_aside == 1);
  CHECK(c.records + c.dropped == n + 1);
  CHECK(c.dropped == c.overrun + c.lost_set_aside);
  CHECK(s.records + s.dropped == n + 1);
  const auto got = sample_seqs(out.path);
  CHECK(got.size() == s.records);
  CHECK(std::find(got.begin(), got.end(), 0u) == got.end());  // A's record: lost
  // The ring's own accounting agrees (stats() reclaims as well).
  const buffers::CpuStats cs = inst.cpu_stats(0);
  CHECK(cs.lost_set_aside == 1);
  CHECK(cs.accounted() == n + 1);
  if (have_trace_cmd()) {
    // The marks trace-cmd prints count every loss.
    const std::string rep =
        run(fmt::format("trace-cmd report -i {} 2>/dev/null", out.path.string()));
    const std::regex mark("\\[(\\d+) EVENTS DROPPED\\]");
    uint64_t marked = 0;
    for (auto it = std::sregex_iterator(rep.begin(), rep.end(), mark); it != std::sregex_iterator();
         ++it)
      marked += std::stoull((*it)[1]);
    CHECK(marked == s.dropped);
  }
}

TEST_CASE("recorder: a flight recorder needs an overwrite buffer", "[record]") {
  TempPath out("rec_flight_bad.dat");
  Instance inst(small_options(Staging::per_thread, BufferMode::drop_newest));
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.mode = record::RecordMode::flight_recorder;
  CHECK_THROWS_AS(record::Recorder(inst, ro), std::invalid_argument);
}

TEST_CASE("recorder: a cpu this thread may not run on is refused, naming it", "[record]") {
  TempPath out("rec_bad_cpu.dat");
  Instance inst(small_options(Staging::per_thread));
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  int last = -1, outside = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &allowed))
      last = c;
    else if (outside < 0)
      outside = c;
  }
  REQUIRE(last >= 0);
  REQUIRE(outside >= 0);
  for (const int cpu : {outside, CPU_SETSIZE, 99999}) {
    record::RecorderOptions ro;
    ro.output = out.path;
    ro.cpu = cpu;
    CHECK_THROWS_WITH(record::Recorder(inst, ro),
                      Catch::Contains(fmt::format("recorder: cpu {}: not a CPU", cpu)));
  }
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.cpu = last;
  record::Recorder rec(inst, ro);
  CHECK(!rec.stop().failed);
  CHECK(rec.error() == std::nullopt);
}

TEST_CASE("recorder: sideband names flow into the recording", "[record][sideband]") {
  TempPath out("rec_sideband.dat");
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  (void)enable_sideband(inst, false);
  record::RecorderOptions ro;
  ro.output = out.path;
  record::Recorder rec(inst, ro);
  int32_t tid = 0;
  std::thread t([&] {
    pin_to(0);
    tid = static_cast<int32_t>(gettid());
    REQUIRE(!set_thread_name("tp-rec-first"));
    REQUIRE(emit_sample(inst, 1, 1, "a") == EmitResult::kept);
    REQUIRE(!set_thread_name("tp-rec-renamed"));
    REQUIRE(emit_sample(inst, 1, 2, "b") == EmitResult::kept);
  });
  t.join();
  rec.stop();
  const auto r = TraceDatReader::open(out.path);
  bool comm_records = false;
  for (const EventFormat& f : r.formats()) comm_records |= f.name == "task_comm";
  CHECK(comm_records);
  bool named = false;
  for (const auto& [pid, comm] : r.cmdlines()) named |= pid == tid && comm == "tp-rec-renamed";
  CHECK(named);
  if (have_trace_cmd()) {
    const std::string rep = run(fmt::format("trace-cmd report -i {}", out.path.string()));
    CHECK(rep.find(fmt::format("tp-rec-renamed-{}", tid)) != std::string::npos);
    CHECK(rep.find("task_comm:") != std::string::npos);
  }
}

TEST_CASE("recorder: rotation keeps the newest records in at most M complete files",
          "[record][rotation]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("tp_rec_rot_{}", ::getpid());
  std::filesystem::create_directories(dir);
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.output = dir / "run.dat";
  ro.watermark_percent = 0;
  ro.batch_pages = 4;
  ro.max_file_bytes = 64 * 1024;  // 16 pages of about 60 records
  ro.max_files = 3;
  record::Recorder rec(inst, ro);
  uint64_t kept = 0;
  for (uint32_t at = 0; at < 20000; at += 1000) {
    kept += emit_range(inst, at, at + 1000);
    rec.trigger();
    for (int i = 0; i < 10000000 && rec.stats().records + rec.stats().dropped < kept; ++i)
      std::this_thread::yield();
  }
  const auto s = rec.stop();
  REQUIRE(s.files > 3);
  CHECK(s.files_removed == s.files - 3);
  REQUIRE(s.kept_files.size() == 3);
  std::vector<uint32_t> all;
  for (const auto& f : s.kept_files) {
    CAPTURE(f);
    REQUIRE(std::filesystem::exists(f));
    CHECK(std::filesystem::file_size(f) <= 64 * 1024 + 256 * 1024);  // data + header reserve
    const auto v = sample_seqs(f);
    REQUIRE(!v.empty());
    all.insert(all.end(), v.begin(), v.end());
    if (have_trace_cmd()) {
      const std::string n =
          run(fmt::format("trace-cmd report -i {} 2>/dev/null | grep -c 'sample:'", f.string()));
      CHECK(std::stoull(n) == v.size());
    }
  }
  // Oldest first across the files, no gap: the newest records of the run.
  for (size_t i = 1; i < all.size(); ++i) REQUIRE(all[i] == all[i - 1] + 1);
  CHECK(all.back() == 19999);
  CHECK(all.size() < kept);
  CHECK(static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                          std::filesystem::directory_iterator{})) == 3);
  CHECK(s.kept_files.front().filename() == fmt::format("run.{}.dat", s.files - 2));
}

TEST_CASE("recorder: the write path makes no system call while the recorder fails",
          "[record][fault]") {
  // A forked child: the recorder writes to a file that is then removed; the
  // writer thread is jailed (any system call but read/write/exit kills the
  // process) and emits far more than the buffer holds.
#ifdef TRACEPIPE_SANITIZED
  // The sanitizer runtime makes system calls of its own (shadow memory,
  // reports), so the jail would kill the child for them: proven in the plain build.
  TP_SKIP("the syscall jail is off under sanitizers");
#endif
  TempPath out("rec_jail.dat");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    Instance inst(small_options(Staging::per_thread));
    inst.enable(Sample::desc());
    record::RecorderOptions ro;
    ro.output = out.path;
    ro.watermark_percent = 0;
    ro.on_error = [](const std::string&) {};
    record::Recorder rec(inst, ro);
    pin_to(0);
    if (emit_sample(inst, 7, 0, "first") != EmitResult::kept) ::_exit(2);  // registers the thread
    std::filesystem::remove(out.path);
    if (!tp_test::enter_syscall_jail()) ::_exit(3);
    uint64_t kept = 0;
    for (uint32_t i = 1; i < 200000; ++i)
      kept += emit_sample(inst, 7, i, "jailed") == EmitResult::kept;
    ::_exit(kept > 0 ? 0 : 4);  // exit_group: allowed
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("status " << status);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("recorder: realtime_priority runs the thread SCHED_FIFO and records the same",
          "[record]") {
  TempPath out("rec_rt.dat");
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.output = out.path;
  ro.realtime_priority = 1;
  record::Recorder rec(inst, ro);
  const uint64_t kept = emit_range(inst, 0, 20000);
  // The gap and pass figures are taken between two looks: wait (bounded)
  // for a second pass, or a stop() that came first measured none (seen once
  // on a loaded machine: both 0).
  for (int i = 0; i < 5000 && rec.stats().passes < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(rec.stats().passes >= 2);
  const auto s = rec.stop();
  REQUIRE(!rec.error());
  // Granted to root (CAP_SYS_NICE); refused elsewhere, which is not a fault.
  if (::geteuid() == 0) CHECK(s.realtime);
  CHECK(s.records + s.dropped == 20000);
  CHECK(s.records == kept);
  CHECK(sample_seqs(out.path).size() == kept);
  CHECK(s.longest_gap_ns > 0);
  CHECK(s.longest_pass_ns > 0);  // the split of a gap into the pass's work and the wake-up's delay
  CHECK(s.peak_unread <= inst.ring().nr_subbufs());
}
