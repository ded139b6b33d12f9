// The recorder writing Perfetto and CTF as it goes (RecorderOptions::format):
// one recording of declared events from two threads into a small buffer
// that overflows while the recorder is held, made in each format, read back
// by the real readers (trace-cmd report for trace.dat, babeltrace2 for CTF,
// protoc with Perfetto's schema); every kept record with its fields is the
// same in the three, and kept + marked losses = emitted, per CPU.
#include <pthread.h>
#include <sched.h>
#include <tracepipe/core/sideband/sideband.h>
#include <tracepipe/tracepipe.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "../convert/convert_check.h"
#include "../convert/convert_test_util.h"
#include "record_test_util.h"
#include "test_support.h"

namespace fs = std::filesystem;
using namespace tracepipe;
using namespace tp_convert_test;

namespace {

using Job = EventDecl<"app", "job", Int<"seq", uint32_t>, Int<"worker", int16_t>,
                      Int<"value", int64_t>, Chars<"name", 16>, Str<"path">>;

using tp_record_test::Stall;

void emit_jobs(Instance& inst, int cpu, uint32_t from, uint32_t to) {
  std::thread t([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    static const char* const kPaths[] = {"/", "/usr/lib/x86_64-linux-gnu/libc.so.6", "",
                                         "a \"quoted\" path"};
    for (uint32_t i = from; i < to; ++i)
      Job::emit(inst, i, static_cast<int16_t>(cpu), -static_cast<int64_t>(i) << 20,
                i % 2 ? "w" : "a-longer-name-1", kPaths[i % 4]);
  });
  t.join();
}

struct Run {
  record::RecorderStats stats;
  uint64_t emitted = 0;
};

// The recording, the same in every format: the recorder is held while two
// threads (CPU 0 and 1) emit far more than 64 KiB per CPU holds, then
// released; after it drained, each thread emits 50 more (all kept).
Run record_jobs(const fs::path& out, record::OutputFormat format) {
  InstanceOptions o;
  o.buffer_size_kb = 64;
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  inst.enable(Job::desc());
  Stall hold;
  record::RecorderOptions ro;
  ro.output = out;
  ro.format = format;
  const tp_record_test::PassHook hook([&] { hold.pass(); });
  record::Recorder rec(inst, ro);
  for (int i = 0; i < 1000000 && !hold.entered.load(); ++i) std::this_thread::yield();
  REQUIRE(hold.entered.load());
  const uint32_t n1 = 6000, n2 = 50;
  const int cpu1 = std::thread::hardware_concurrency() > 1 ? 1 : 0;
  emit_jobs(inst, 0, 0, n1);
  emit_jobs(inst, cpu1, n1, 2 * n1);
  hold.release();
  const auto kept = [&] {
    uint64_t n = 0;
    for (const auto& s : inst.cpu_stats()) n += s.entries;
    return n;
  };
  for (int i = 0; i < 2000 && kept() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  emit_jobs(inst, 0, 2 * n1, 2 * n1 + n2);
  emit_jobs(inst, cpu1, 2 * n1 + n2, 2 * n1 + 2 * n2);
  Run r;
  r.stats = rec.stop();
  r.emitted = 2 * n1 + 2 * n2;
  return r;
}

// The job records of each CPU without time stamps and pids (the runs differ there).
std::vector<Rec> jobs_only(const std::vector<Rec>& in) {
  std::vector<Rec> out;
  for (Rec r : in) {
    if (r.event != "job") continue;
    r.ts = 0;
    r.pid = -1;
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Rec& a, const Rec& b) { return a.cpu < b.cpu; });
  return out;
}

uint64_t count_event(const std::vector<Rec>& v, std::string_view name) {
  return static_cast<uint64_t>(
      std::count_if(v.begin(), v.end(), [&](const Rec& r) { return r.event == name; }));
}

// The recording's accounting: written + dropped = emitted, and something was dropped.
void check_stats(const Run& r) {
  CHECK(r.stats.dropped > 0);
  CHECK(r.stats.records + r.stats.dropped == r.emitted);
  CHECK(r.stats.unwritten == 0);
  CHECK_FALSE(r.stats.failed);
}

// The reference: the recording to trace.dat, as trace-cmd report -R shows it.
struct Reference {
  Run run;
  std::vector<Rec> jobs;
};
Reference reference(const Scratch& s) {
  Reference r;
  r.run = record_jobs(s / "jobs.dat", record::OutputFormat::tracedat);
  check_stats(r.run);
  r.jobs = jobs_only(tracecmd_records(s / "jobs.dat", s.dir));
  REQUIRE(r.jobs.size() ==
          r.run.stats.records);  // every written record is a job (the losses lie before later jobs)
  return r;
}

}  // namespace

TEST_CASE(
    "record --format ctf: written as the recording goes, holds what trace.dat holds, losses "
    "discarded",
    "[record][format]") {
  babeltrace_or_skip();
  Scratch s("record-format-ctf");
  const Reference ref = reference(s);
  const Run& rd = ref.run;
  const auto& want = ref.jobs;
  {
    const Run rc = record_jobs(s / "jobs.ctf", record::OutputFormat::ctf);
    check_stats(rc);
    CHECK(rc.stats.records == rd.stats.records);  // the same records kept (drop-newest while held)
    CHECK(tp_test::read_file(s / "jobs.ctf" / "metadata").starts_with("/* CTF 1.8"));
    std::vector<std::pair<uint32_t, uint64_t>> lost;
    const auto got = babeltrace_records(s / "jobs.ctf", s.dir, &lost);
    CHECK(count_event(got, "job") == rc.stats.records);
    // babeltrace2 2.0 may show an empty string as an earlier event's value
    // (its bug; convert_check.h): those fields are counted, not compared.
    uint64_t stale = 0, empty = 0;
    CHECK(compare(want, jobs_only(got), &stale) == "");
    for (const auto& r : want)
      for (const auto& f : r.fields) empty += f.second.empty();
    CHECK(stale <= empty);
    std::map<uint32_t, uint64_t> by_cpu;
    for (const auto& [cpu, n] : lost) by_cpu[cpu] += n;
    for (uint32_t cpu = 0; cpu < rc.stats.cpus.size(); ++cpu) {
      INFO("cpu " << cpu);
      CHECK(by_cpu[cpu] ==
            rc.stats.cpus[cpu].dropped);  // events_discarded, where trace.dat marks them
    }
  }
}

TEST_CASE(
    "record --format perfetto: written as the recording goes, holds what trace.dat holds, losses "
    "in bundles",
    "[record][format]") {
  perfetto_proto_or_skip();
  Scratch s("record-format-pf");
  const Reference ref = reference(s);
  const Run& rd = ref.run;
  const auto& want = ref.jobs;
  {
    const Run rp = record_jobs(s / "jobs.pftrace", record::OutputFormat::perfetto);
    check_stats(rp);
    CHECK(rp.stats.records == rd.stats.records);
    PerfettoExtras ex;
    const auto got = protoc_records(s / "jobs.pftrace", s.dir, &ex);
    CHECK(count_event(got, "job") == rp.stats.records);
    CHECK(compare(want, jobs_only(got)) == "");
    std::map<uint32_t, uint64_t> overrun;  // END_OF_TRACE's
    for (const auto& [cpu, n] : ex.overrun) overrun[cpu] = std::max(overrun[cpu], n);
    for (uint32_t cpu = 0; cpu < rp.stats.cpus.size(); ++cpu) {
      INFO("cpu " << cpu);
      CHECK(overrun[cpu] == rp.stats.cpus[cpu].dropped);
      const bool marked = std::count(ex.lost_bundles.begin(), ex.lost_bundles.end(), cpu) > 0;
      CHECK(marked ==
            (rp.stats.cpus[cpu].dropped != 0));  // a bundle's lost_events where the loss lies
    }
  }
}

TEST_CASE(
    "record --format: losses after the last record, names from the sideband, the output while it "
    "grows",
    "[record][format]") {
  babeltrace_or_skip();
  perfetto_proto_or_skip();
  Scratch s("record-format-end");
  for (const auto format : {record::OutputFormat::ctf, record::OutputFormat::perfetto}) {
    const bool ctf = format == record::OutputFormat::ctf;
    INFO(record::output_format_name(format));
    const fs::path out = s / (ctf ? "end.ctf" : "end.pftrace");
    InstanceOptions o;
    o.buffer_size_kb = 64;
    o.mode = BufferMode::drop_newest;
    Instance inst(o);
    enable_sideband(inst);
    inst.enable(Job::desc());
    Stall hold;
    record::RecorderOptions ro;
    ro.output = out;
    ro.format = format;
    ro.flush_interval = std::chrono::milliseconds(20);
    {
      const tp_record_test::PassHook hook([&] { hold.pass(); });
      record::Recorder rec(inst, ro);
      for (int i = 0; i < 1000000 && !hold.entered.load(); ++i) std::this_thread::yield();
      REQUIRE(hold.entered.load());
      // Held to the end: the losses follow the last record kept, marked on
      // a tracepipe:lost_at_end record (as in trace.dat).
      emit_jobs(inst, 0, 0, 6000);
      hold.release();
      // While it runs the output is readable (CTF: metadata and closed packets).
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (ctf) {
        const auto mid = babeltrace_records(out, s.dir);
        CHECK(count_event(mid, "job") > 0);
      } else {
        const auto mid = protoc_records(out, s.dir);
        CHECK(count_event(mid, "job") > 0);
      }
      const record::RecorderStats st = rec.stop();
      REQUIRE(st.cpus[0].dropped > 0);
      CHECK(st.records + st.dropped == inst.ring_attempts());  // jobs and sideband records
      if (ctf) {
        std::vector<std::pair<uint32_t, uint64_t>> lost;
        const auto got = babeltrace_records(out, s.dir, &lost);
        const uint64_t jobs = count_event(got, "job");
        CHECK(count_event(got, "lost_at_end") == 1);
        uint64_t marked = 0;
        for (const auto& [cpu, n] : lost) marked += cpu == 0 ? n : 0;
        CHECK(marked == st.cpus[0].dropped);
        CHECK(jobs <= 6000);
        CHECK(jobs + marked >= 6000);  // the thread's task_exit is among the losses too
      } else {
        PerfettoExtras ex;
        const auto got = protoc_records(out, s.dir, &ex);
        const uint64_t jobs = count_event(got, "job");
        CHECK(count_event(got, "lost_at_end") == 1);
        std::map<uint32_t, uint64_t> overrun;
        for (const auto& [cpu, n] : ex.overrun) overrun[cpu] = std::max(overrun[cpu], n);
        CHECK(overrun[0] == st.cpus[0].dropped);
        CHECK(jobs + overrun[0] >= 6000);
        // The sideband names this process's threads, as convert does.
        bool named = false;
        for (size_t i = 0; i < ex.threads.size(); ++i) named |= ex.thread_tgids[i] == getpid();
        CHECK(named);
      }
    }
  }
}

TEST_CASE("record --format: refused with a collector, rotation or version 7", "[record][format]") {
  Instance inst;
  record::RecorderOptions ro;
  ro.format = record::OutputFormat::perfetto;
  ro.collector = "localhost:12345";
  CHECK_THROWS_WITH(record::Recorder(inst, ro), Catch::Contains("takes trace.dat only"));
  ro.collector.clear();
  ro.output = "x.pftrace";
  ro.max_file_bytes = 1 << 20;
  CHECK_THROWS_WITH(record::Recorder(inst, ro), Catch::Contains("rotation"));
  ro.max_file_bytes = 0;
  ro.file_version = 7;
  CHECK_THROWS_WITH(record::Recorder(inst, ro), Catch::Contains("file_version"));
  CHECK(record::parse_output_format("ctf") == record::OutputFormat::ctf);
  CHECK_FALSE(record::parse_output_format("pftrace"));
}
