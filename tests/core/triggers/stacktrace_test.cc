// The stacktrace trigger records the emitting thread's call chain: three
// nested noinline functions, in a translation unit built with frame
// pointers, in one built without, and mixed; the record's frames resolve to
// those functions, innermost first, in the instance's text (the kernel's
// "<stack trace>" layout), and `trace-cmd report` names them through the
// trace.dat's kallsyms. The record's flags are the emitting context's.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "stack_frames.h"
#include "test_support.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/export/instance_export.h"
#include "tracepipe/core/export/process_symbols.h"
#include "tracepipe/core/tracedat/trace_report.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/triggers/stack_trace.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {

InstanceOptions small() {
  InstanceOptions o;
  o.buffer_size_kb = 16;
  o.cpus = 1;
  return o;
}

// The frames of every ftrace:kernel_stack record, as symbol names.
std::vector<std::vector<std::string>> stacks(const Instance& inst) {
  const EventDesc* ks = inst.registry().find("ftrace", "kernel_stack");
  REQUIRE(ks != nullptr);
  std::vector<std::vector<std::string>> out;
  for (uint32_t cpu = 0; cpu < inst.cpus(); ++cpu) {
    buffers::Iterator it(inst.ring(), cpu);
    while (auto r = it.next()) {
      uint16_t id;
      std::memcpy(&id, r->payload.data(), 2);
      if (id != ks->id()) continue;
      int32_t n;
      std::memcpy(&n, r->payload.data() + 8, 4);
      REQUIRE(r->payload.size() >= 16 + 8 * static_cast<size_t>(std::max(n, 8)));
      std::vector<std::string> names;
      for (int32_t i = 0; i < n; ++i) {
        uint64_t ip;
        std::memcpy(&ip, r->payload.data() + 16 + 8 * i, 8);
        const auto s = resolve_process_symbol(ip);
        names.push_back(s ? s->name : "?");
      }
      out.push_back(std::move(names));
    }
  }
  return out;
}

void check_chain(int (*outer)(Instance*, int), const std::vector<std::string>& expect) {
  Instance inst(small());
  inst.enable(StackEv::desc());
  REQUIRE(set_trigger(inst, StackEv::desc(), "stacktrace:2").ok());
  for (int i = 0; i < 3; ++i) CHECK(outer(&inst, i) == i + 5);
  const auto got = stacks(inst);
  REQUIRE(got.size() == 2);  // the count
  for (const auto& frames : got) {
    INFO("frames: " << [&] {
      std::string s;
      for (const auto& f : frames) s += f + " ";
      return s;
    }());
    REQUIRE(frames.size() > expect.size());
    for (size_t i = 0; i < expect.size(); ++i) CHECK(frames[i] == expect[i]);
    // Above the chain: this test's own code, down to main.
    CHECK(std::find(frames.begin(), frames.end(), "main") != frames.end());
  }
  // The kernel's trace layout: the event, then its stack with the same context columns.
  const std::string text = trace_text(inst, {.header = false});
  INFO(text);
  const std::string first = "<stack trace>\n => " + expect[0] + "+0x";
  const size_t at = text.find(first);
  REQUIRE(at != std::string::npos);
  CHECK(text.find("\n => " + expect[1] + "+0x", at) != std::string::npos);
  CHECK(text.find("\n => " + expect[2] + "+0x", at) != std::string::npos);
  CHECK(text.find("] ..... ") != std::string::npos);
  CHECK(text.find("..h") ==
        std::string::npos);  // not a hard irq: the emitting thread's own context
}

}  // namespace

TEST_CASE("stacktrace: the call chain of code built with frame pointers",
          "[triggers][stacktrace]") {
  check_chain(&tp_fp_outer, {"tp_fp_inner", "tp_fp_middle", "tp_fp_outer"});
}

TEST_CASE("stacktrace: the call chain of code built without frame pointers",
          "[triggers][stacktrace]") {
  check_chain(&tp_nofp_outer, {"tp_nofp_inner", "tp_nofp_middle", "tp_nofp_outer"});
}

TEST_CASE("stacktrace: a caller without frame pointers between two with them",
          "[triggers][stacktrace]") {
  check_chain(&tp_mixed_outer, {"tp_fp_inner", "tp_mixed_middle", "tp_mixed_outer"});
}

TEST_CASE("stacktrace: trace-cmd report names the frames through the file's kallsyms",
          "[triggers][stacktrace]") {
  Instance inst(small());
  inst.enable(StackEv::desc());
  REQUIRE(set_trigger(inst, StackEv::desc(), "stacktrace:1").ok());
  tp_nofp_outer(&inst, 1);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tp_stack_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "stack.dat";
  write_trace_dat(inst, file);
  const tp_test::CommandResult r =
      tp_test::run_command({"trace-cmd", "report", "-i", file.string()}, dir, 60);
  // `tracepipe report` (TraceReport) prints the stack as trace-cmd does.
  std::string ours;
  {
    const TraceDatReader reader = TraceDatReader::open(file);
    TraceReport rep(reader);
    char* buf = nullptr;
    size_t len = 0;
    std::FILE* mem = open_memstream(&buf, &len);
    REQUIRE(mem != nullptr);
    rep.print_all(mem);
    std::fclose(mem);
    ours.assign(buf, len);
    std::free(buf);
  }
  std::filesystem::remove_all(dir);
  if (r.status == 127) TP_SKIP("trace-cmd is not installed");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  const size_t at = r.out.find("<stack trace >\n=> tp_nofp_inner (");
  REQUIRE(at != std::string::npos);
  const size_t mid = r.out.find("\n=> tp_nofp_middle (", at);
  const size_t out = r.out.find("\n=> tp_nofp_outer (", at);
  CHECK(mid != std::string::npos);
  CHECK(out != std::string::npos);
  CHECK(mid < out);
  // The stack's lines, from "<stack trace >" on, are the same in both.
  const std::string theirs_stack = r.out.substr(r.out.find("<stack trace >"));
  REQUIRE(ours.find("<stack trace >") != std::string::npos);
  CHECK(ours.substr(ours.find("<stack trace >")) == theirs_stack);
}

TEST_CASE("stacktrace: the record's format is the running kernel's ftrace:kernel_stack",
          "[triggers][stacktrace]") {
  const std::filesystem::path f = "/sys/kernel/tracing/events/ftrace/kernel_stack/format";
  std::error_code ec;
  if (!std::filesystem::exists(f, ec)) TP_SKIP("no tracefs with events/ftrace/kernel_stack");
  Registry kernel, ours;
  const EventDesc& k = kernel.add_format_text(tp_test::read_file(f), "ftrace");
  const EventDesc* o = &triggers::kernel_stack_event(ours);
  CHECK(o->format().fields == k.format().fields);
  CHECK(o->format().common_fields == k.format().common_fields);
  CHECK(o->format().print_fmt == k.format().print_fmt);
}

TEST_CASE("stacktrace: a hist keyed by the call chain (keys=common_stacktrace)",
          "[triggers][stacktrace][hist]") {
  Instance inst(small());
  inst.enable(StackEv::desc());
  REQUIRE(set_trigger(inst, StackEv::desc(), "hist:keys=stacktrace").ok());
  for (int i = 0; i < 3; ++i) CHECK(tp_fp_outer(&inst, i) == i + 5);
  for (int i = 0; i < 2; ++i) CHECK(tp_nofp_outer(&inst, i) == i + 5);
  const std::string h = hist_file(inst, StackEv::desc());
  INFO(h);
  // The kernel names the key common_stacktrace, whichever way it was written.
  CHECK(
      h.starts_with("# event histogram\n#\n# trigger info: "
                    "hist:keys=common_stacktrace:vals=hitcount:sort=hitcount:"
                    "size=2048 [active]\n#\n\n{ common_stacktrace:\n"));
  // hist_trigger_print_key: "%pS" lines indented by 9 blanks, innermost
  // first, then "}" on its own line start, without the blank of one-line keys.
  const size_t nofp = h.find("{ common_stacktrace:\n         tp_nofp_inner+0x");
  const size_t fp = h.find("{ common_stacktrace:\n         tp_fp_inner+0x");
  REQUIRE(nofp != std::string::npos);
  REQUIRE(fp != std::string::npos);
  CHECK(nofp < fp);  // sort=hitcount: 2 before 3
  CHECK(h.find("\n         tp_nofp_middle+0x", nofp) < h.find("} hitcount:          2\n", nofp));
  CHECK(h.find("\n         tp_fp_outer+0x", fp) < h.find("} hitcount:          3\n", fp));
  // At most HIST_STACKTRACE_DEPTH (16) frames per key.
  const std::string entry = h.substr(fp, h.find("} hitcount:", fp) - fp);
  CHECK(std::count(entry.begin(), entry.end(), '\n') <= 17);
  CHECK(h.find("    Hits: 5\n    Entries: 2\n    Dropped: 0\n") != std::string::npos);
  // Not a value (__create_val_field).
  const TriggerStatus st = set_trigger(inst, StackEv::desc(), "hist:keys=x:vals=common_stacktrace");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "Invalid field modifier");
  CHECK(st.error().pos == static_cast<int>(st.error().command.find("common_stacktrace")));
}
