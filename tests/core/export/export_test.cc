// Output: the kernel's `trace` layout, trace.dat export (read back by our
// reader and by trace-cmd), config-built instances, and replay of kernel
// records through the fast path against the kernel's own filter decisions.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "../instance/test_events.h"
#include "test_support.h"
#include "tracepipe/core/export/instance_export.h"
#include "tracepipe/core/export/text_output.h"
#include "tracepipe/core/instance/raw_emit.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;
using namespace tp_core_test;

TEST_CASE("text: latency columns decode common_flags and preempt count like the kernel",
          "[core][text]") {
  CHECK(latency_columns(0, 0) == ".....");
  CHECK(latency_columns(0x01, 0x02) == "d..2.");      // irqs off, preempt depth 2
  CHECK(latency_columns(0x01 | 0x08, 0) == "d.h..");  // hardirq
  CHECK(latency_columns(0x08, 1) == "..h1.");         // tracepipe: nested emit in a signal handler
  CHECK(latency_columns(0x81, 0) == "D....");         // irqs and BH off
  CHECK(latency_columns(0x80, 0) == "b....");
  CHECK(latency_columns(0x04 | 0x20, 0) == ".N...");
  CHECK(latency_columns(0x04, 0) == ".n...");
  CHECK(latency_columns(0x20, 0) == ".p...");
  CHECK(latency_columns(0x02, 0) == ".l...");  // lazy
  CHECK(latency_columns(0x02 | 0x20, 0) == ".L...");
  CHECK(latency_columns(0x02 | 0x04, 0) == ".b...");
  CHECK(latency_columns(0x02 | 0x04 | 0x20, 0) == ".B...");
  CHECK(latency_columns(0x10, 0) == "..s..");
  CHECK(latency_columns(0x18, 0) == "..H..");
  CHECK(latency_columns(0x40, 0) == "..z..");
  CHECK(latency_columns(0x48, 0) == "..Z..");
  CHECK(latency_columns(0, 0x1f) == "...f1");  // migrate-disable in the high nibble
}

TEST_CASE("text: the header is the kernel's, byte for byte", "[core][text]") {
  // Captured from /sys/kernel/tracing/instances/x/trace on Linux 6.18.
  CHECK(trace_header(107, 107, 2) ==
        "# tracer: nop\n"
        "#\n"
        "# entries-in-buffer/entries-written: 107/107   #P:2\n"
        "#\n"
        "#                                _-----=> irqs-off/BH-disabled\n"
        "#                               / _----=> need-resched\n"
        "#                              | / _---=> hardirq/softirq\n"
        "#                              || / _--=> preempt-depth\n"
        "#                              ||| / _-=> migrate-disable\n"
        "#                              |||| /     delay\n"
        "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
        "#              | |         |   |||||     |         |\n");
}

TEST_CASE("text: lines of an instance in the trace layout", "[core][text]") {
  std::string text;
  int32_t tid = 0;
  uint64_t ts = 0;
  uint32_t cpu = 0;
  InstanceOptions o = small_options(Staging::per_thread);
  Instance inst(o);
  inst.enable(Sample::desc());
  inst.enable(Other::desc());
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "tp-text");
    tid = static_cast<int32_t>(gettid());
    REQUIRE(Sample::emit(inst, 7, 42, "hello") == EmitResult::kept);
    REQUIRE(Other::emit(inst, -3, "a message") == EmitResult::kept);
  });
  t.join();
  {
    auto m = buffers::merged_iterator(inst.ring());
    auto r = m.next();
    REQUIRE(r);
    ts = r->ts;
    cpu = r->cpu;
  }
  text = trace_text(inst, {.consume = false, .header = false});
  std::istringstream in(text);
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  const std::string prefix =
      fmt::format("{:>16}-{:<7} [{:03}] ..... {:>5}.{:06}: ", "tp-text", tid, cpu,
                  (ts + 500) / 1000 / 1000000, (ts + 500) / 1000 % 1000000);
  CHECK(l1 == prefix + "sample: value=7 seq=42 pad=hello");
  CHECK(l2.find("other: level=-3 msg=a message") != std::string::npos);
  // The fields style is the kernel's options/fields layout.
  const std::string fields =
      trace_text(inst, {.consume = false, .header = false, .style = FieldStyle::fields});
  CHECK(fields.find("sample: value=0x7 (7) seq=0x2a (42) pad=hello") != std::string::npos);
  CHECK(fields.find("other: level=0xfffd (-3) msg=a message") != std::string::npos);
  // With the header: the counts are the buffer's.
  const std::string full = trace_text(inst);
  CHECK(full.rfind("# tracer: nop\n#\n# entries-in-buffer/entries-written: 2/2   #P:", 0) == 0);
  // Unknown pids print <...>, pid 0 prints <idle>; unknown IDs say so.
  TextFormatter f(Registry::global());
  std::vector<std::byte> rec(64);
  CommonHeader h{Sample::desc().id(), 0, 0, 0};
  std::memcpy(rec.data(), &h, sizeof h);
  CHECK(f.format(1, 1500000000, rec)
            .rfind("          <idle>-0       [001] .....     1.500000: sample: ", 0) == 0);
  h.common_pid = 999999;
  std::memcpy(rec.data(), &h, sizeof h);
  CHECK(f.format(1, 0, rec).rfind("           <...>-999999  [001] .....     0.000000: sample: ",
                                  0) == 0);
  h.common_type = 65535;
  std::memcpy(rec.data(), &h, sizeof h);
  CHECK(f.format(0, 0, rec).find("Unknown type 65535") != std::string::npos);
  CHECK(f.format(0, 0, std::span(rec).first(3)).find("<...>") !=
        std::string::npos);  // short: no overread
}

TEST_CASE("export: trace.dat round-trips through our reader and trace-cmd report",
          "[core][export]") {
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  inst.enable(Other::desc());
  REQUIRE(inst.set_filter(Sample::desc(), "value >= 2").ok());
  for (uint32_t i = 0; i < 50; ++i) Sample::emit(inst, i % 4, i, "x");
  REQUIRE(Other::emit(inst, 5, "with a string") == EmitResult::kept);
  const auto dir =
      std::filesystem::temp_directory_path() / ("tp-core-export-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "trace.dat";
  write_trace_dat(inst, path);

  const TraceDatReader rd = TraceDatReader::open(path);
  CHECK(rd.version() == 6);
  CHECK(rd.cpu_count() == inst.cpus());
  CHECK(rd.clock_name() == "local");
  REQUIRE(rd.find_format("tptest", "sample") != nullptr);
  CHECK(*rd.find_format("tptest", "sample") == Sample::desc().format());
  CHECK(rd.comm(static_cast<int32_t>(gettid())).has_value());
  // Same records, same stamps, same CPUs as the buffer (the export did not consume).
  std::vector<Rec> ours = drain(inst);
  std::vector<TraceRecord> theirs;
  auto cur = rd.records();
  while (auto r = cur.next()) theirs.push_back(*r);
  REQUIRE(theirs.size() == ours.size());
  REQUIRE(ours.size() == 25);  // 24 samples with value >= 2, 1 other
  for (size_t i = 0; i < ours.size(); ++i) {
    CHECK(theirs[i].ts == ours[i].ts);
    CHECK(theirs[i].cpu == ours[i].cpu);
    REQUIRE(theirs[i].payload.size() >= ours[i].bytes.size());  // the file pads to 4 bytes
    CHECK(std::memcmp(theirs[i].payload.data(), ours[i].bytes.data(), ours[i].bytes.size()) == 0);
  }

  // trace-cmd itself decodes our events through the format files we wrote.
  const std::string cmd = "trace-cmd report " + path.string() + " 2>&1";
  if (FILE* p = popen(cmd.c_str(), "r")) {
    std::string out;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    const int rc = pclose(p);
    if (rc == 0) {
      // trace-cmd pads the event name column: "sample:               value=2 ..."
      CHECK(out.find("sample: ") != std::string::npos);
      CHECK(out.find(" value=2 seq=2 pad=x\n") != std::string::npos);
      CHECK(out.find(" value=3 seq=47 pad=x\n") != std::string::npos);
      CHECK(out.find(" level=5 msg=with a string\n") != std::string::npos);
      CHECK(out.find("value=1 ") == std::string::npos);  // filtered out
    } else {
      WARN("trace-cmd report failed: " << out);
      CHECK(rc == 0);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("config: an instance built from TOML applies systems, events and filters",
          "[core][config]") {
  const Config cfg = parse_config(R"(
staging = "per_cpu"
buffer_size_kb = 128

[systems.tptest]
filter = "common_pid > 0"

[events."tptest:sample"]
enable = true
filter = "value == 3"

[events."tptest:other"]
enable = true
soft_disable = true
)",
                                  "inst.toml");
  auto inst = Instance::from_config(cfg.instances[0]);
  CHECK(inst->options().staging == Staging::per_cpu);
  CHECK(inst->enabled(Sample::desc()));
  CHECK(inst->filter(Sample::desc()) == "value == 3");     // the event's own filter wins
  CHECK(inst->filter(Other::desc()) == "common_pid > 0");  // the system's
  CHECK(inst->soft_disabled(Other::desc()));
  CHECK(Sample::emit(*inst, 3, 0, "") == EmitResult::kept);
  CHECK(Sample::emit(*inst, 4, 0, "") == EmitResult::discarded);
  CHECK(Other::emit(*inst, 1, "x") == EmitResult::discarded);

  const auto error_of = [](const std::string& text) -> std::string {
    try {
      Instance::from_config(parse_config(text, "bad.toml").instances[0]);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "no error";
  };
  CHECK(error_of("[events.\"tptest:sample\"]\nenable = true\nfilter = \"valu == 3\"\n") ==
        "bad.toml:3: events.\"tptest:sample\".filter: filter rejected for tptest:sample: "
        "parse_error: Field not "
        "found\nevent filter parse error: error: Field not found\n  Command: valu == 3\n           "
        "     ^\n");
  // A blank filter is the kernel's EINVAL "Error", not a silent clear (only
  // "0" clears).
  CHECK(error_of("[events.\"tptest:sample\"]\nenable = true\nfilter = \"  \"\n")
            .rfind("bad.toml:3: events.\"tptest:sample\".filter: filter rejected for "
                   "tptest:sample: parse_error: Error",
                   0) == 0);
  CHECK(error_of("[events.\"tptest:sample\"]\nenable = true\nfilter = \" 0 \"\n") == "no error");
  CHECK(error_of("\n[events.\"nosuch:event\"]\nenable = true\n") ==
        "bad.toml:2: events.\"nosuch:event\": no event matches 'nosuch:event'");
  CHECK(error_of("[systems.nosys]\nenable = true\n") ==
        "bad.toml:1: systems.nosys: no events in system 'nosys'");
  // A system filter no event of the system accepts: a typo, refused with
  // the first event's error (the kernel would take the write and leave
  // every event unfiltered).
  const std::string none = error_of("[systems.tptest]\nenable = true\nfilter = \"nope == 1\"\n");
  CHECK(none.rfind("bad.toml:3: systems.tptest.filter: no event of system 'tptest' accepts the "
                   "filter (first, tptest:",
                   0) == 0);
  CHECK(none.find("parse_error: Field not found)\n") != std::string::npos);
  CHECK(none.find("  Command: nope == 1\n") != std::string::npos);
  CHECK(error_of("[systems.tptest]\nfilter = \"value == \"\n").find("accepts the filter") !=
        std::string::npos);
  // One that some events accept: those get it, the others stay unfiltered
  // with the error kept for them, as in the kernel.
  auto partial = Instance::from_config(
      parse_config("[systems.tptest]\nenable = true\nfilter = \"value == 3\"\n", "part.toml")
          .instances[0]);
  CHECK(partial->filter(Sample::desc()) == "value == 3");
  CHECK(partial->filter(Other::desc()) == "none");
  CHECK(Sample::emit(*partial, 4, 0, "") == EmitResult::discarded);
  CHECK(Other::emit(*partial, 1, "x") == EmitResult::kept);
}

TEST_CASE("config: the sample file in examples/ loads", "[core][config]") {
  const Config cfg =
      load_config(std::filesystem::path(TP_SOURCE_DIR) / "examples" / "tracepipe.toml");
  REQUIRE(cfg.instances.size() >= 1);
}

namespace {

// The bytes of a kernel record that carry data: the fixed part and the
// dynamic areas its __data_loc words point at. trace.dat pads records to 4
// bytes with whatever the ring page held, so the padding may differ between
// two captures of the same event.
std::vector<std::byte> meaningful(const Registry& reg, std::span<const std::byte> payload) {
  uint16_t id = 0;
  std::memcpy(&id, payload.data(), 2);
  const EventDesc* d = reg.by_id(id);
  size_t end = payload.size();
  if (d != nullptr) {
    end = d->fixed_size();
    for (const FormatField& f : d->format().fields) {
      if (!f.is_dynamic() || f.offset + 4 > payload.size()) continue;
      uint32_t w;
      std::memcpy(&w, payload.data() + f.offset, 4);
      size_t off = w & 0xffff;
      if (f.is_rel_loc()) off += f.offset + 4;
      end = std::max(end, off + (w >> 16));
    }
    end = std::min(end, payload.size());
  }
  return {payload.begin(), payload.begin() + static_cast<ptrdiff_t>(end)};
}

std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

TEST_CASE("replay: kernel records through the fast path keep exactly the kernel's events",
          "[core][replay]") {
  const auto oracle = tp_test::shared_data_or_skip("kernel/filter-oracle");
  // A few cases across event kinds: numeric, string, dynamic string, several events.
  for (const char* id : {"001", "002", "004", "010", "020", "030", "040", "050", "060"}) {
    const auto dir = oracle / id;
    if (!std::filesystem::exists(dir / "expr.txt")) continue;
    INFO("oracle case " << id << ": " << first_line(dir / "expr.txt"));
    const std::string expr = first_line(dir / "expr.txt");
    std::vector<std::string> names;
    {
      std::ifstream in(dir / "event.txt");
      for (std::string l; std::getline(in, l);)
        if (!l.empty()) names.push_back(l);
    }
    const TraceDatReader all = TraceDatReader::open(dir / "all.dat");
    const TraceDatReader kept = TraceDatReader::open(dir / "kept.dat");
    Registry reg;
    reg.add_all(all.formats());
    for (Staging st : {Staging::per_thread, Staging::off, Staging::per_cpu}) {
      InstanceOptions o = small_options(st);
      o.buffer_size_kb = 4096;
      o.cpus = all.cpu_count();
      o.external_time = true;
      Instance inst(o, reg);
      bool compiled = true;
      for (const std::string& n : names) {
        const EventDesc* d = reg.find(n);
        REQUIRE(d != nullptr);
        inst.enable(*d);
        if (!inst.set_filter(*d, expr).ok()) compiled = false;
      }
      if (!compiled) continue;  // needs kallsyms (e.g. .function); covered by the filters tests
      auto cur = all.records();
      while (auto r = cur.next()) tracepipe::RawEmit::emit_at(inst, r->payload, r->cpu, r->ts);
      // Compare per CPU, byte for byte, as multisets: the kernel recorded
      // the two captures one instance after the other, so an interrupt could
      // order two records differently in them (and stamp them differently).
      std::map<uint32_t, std::multiset<std::vector<std::byte>>> want;
      auto kc = kept.records();
      size_t want_total = 0;
      while (auto r = kc.next()) {
        want[r->cpu].insert(meaningful(reg, r->payload));
        ++want_total;
      }
      size_t total = 0;
      for (uint32_t c = 0; c < inst.cpus(); ++c) {
        std::multiset<std::vector<std::byte>> got;
        for (const Rec& r : drain_cpu(inst, c)) got.insert(meaningful(reg, r.bytes));
        REQUIRE(got == want[c]);
        total += got.size();
      }
      CHECK(total == want_total);
      CHECK(total > 0);
    }
  }
}

TEST_CASE(
    "export: a snapshot carries the kernel's per-CPU stats, which trace-cmd report --stat reads",
    "[core][export]") {
  // Staging off: a full buffer's drops are counted on the ring (lost_full),
  // which the kernel marks on no page; only the stats can tell them.
  InstanceOptions o = small_options(Staging::off);
  o.cpus = 1;
  o.buffer_size_kb = 8;
  Instance inst(o);
  inst.enable(Sample::desc());
  for (uint32_t i = 0; i < 2000; ++i) (void)Sample::emit(inst, 1, i, "x");
  const buffers::CpuStats s = inst.cpu_stats(0);
  REQUIRE(s.lost_full > 0);
  const auto dir =
      std::filesystem::temp_directory_path() / ("tp-core-export-st-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "snap.dat";
  write_trace_dat(inst, path);
  const auto r = tp_test::run_command({"trace-cmd", "report", "--stat", "-i", path.string()}, dir);
  if (r.status < 0 || r.err.find("not found") != std::string::npos) {
    std::filesystem::remove_all(dir);
    TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  }
  INFO(r.out << r.err);
  CHECK(r.out.find("No stats in this file") == std::string::npos);
  CHECK(r.out.find("CPU: 0\nentries: " + std::to_string(s.entries) + "\noverrun: 0\n") !=
        std::string::npos);
  CHECK(r.out.find("\ndropped events: " + std::to_string(s.lost_full) + "\n") != std::string::npos);
  CHECK(r.out.find("\nbytes: " + std::to_string(s.bytes) + "\n") != std::string::npos);
  std::filesystem::remove_all(dir);
}
