// Where do the bytes come from? A hist keyed by the call chain that emitted
// the event (keys=common_stacktrace), its values as shares of the total
// (.percent) and as bars (.graph), and a second hist per size without the
// raw hitcount (nohitcount). See docs/triggers.md, "Hist triggers".
//
//   hist:keys=common_stacktrace:vals=bytes.percent,bytes.graph:sort=bytes.descending
//   hist:keys=size.log2:vals=bytes.percent:sort=size:nohitcount
#include <tracepipe/core/triggers/triggers.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <cstdlib>

using namespace tracepipe;

using Alloc = EventDecl<"app", "alloc", Int<"size", uint32_t>, Int<"bytes", uint64_t>>;

namespace {

Instance* g_inst = nullptr;

[[gnu::noinline]] void parse_request(uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) Alloc::emit(*g_inst, 64, 64);
  asm volatile("" ::: "memory");  // keeps this frame (no tail call)
}

[[gnu::noinline]] void load_file(uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) Alloc::emit(*g_inst, 4096, 4096);
  asm volatile("" ::: "memory");
}

}  // namespace

int main() {
  Instance inst;
  g_inst = &inst;
  auto check = [](const TriggerStatus& st) {
    if (!st) {
      std::fputs(st.render().c_str(), stderr);
      std::exit(1);
    }
  };
  check(set_trigger(
      inst, Alloc::desc(),
      "hist:keys=common_stacktrace:vals=bytes.percent,bytes.graph:sort=bytes.descending"));
  check(set_trigger(inst, Alloc::desc(),
                    "hist:keys=size.log2:vals=bytes.percent:sort=size:nohitcount"));
  parse_request(100);  // 6400 bytes
  load_file(3);        // 12288 bytes
  const std::string hist = hist_file(inst, Alloc::desc());
  std::fputs(hist.c_str(), stdout);
  // load_file's chain first (the larger sum), its share 65.75 %.
  const size_t load = hist.find("load_file");
  const size_t parse = hist.find("parse_request");
  const bool ok = load != std::string::npos && parse != std::string::npos && load < parse &&
                  hist.find("bytes (%):  65.75") != std::string::npos &&
                  hist.find("{ size: ~ 2^12 }  bytes (%):  65.75\n") != std::string::npos;
  return ok ? 0 : 1;
}
