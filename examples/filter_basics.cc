// Filters: compile a kernel filter expression for an event, evaluate it on
// raw records, print the compiled program, and report an error the way the
// kernel's error_log does. (docs/filters.md walks through this file.)
#include <tracepipe/tracepipe.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace tracepipe::filters;

namespace {

// sched:sched_switch's format (offsets from the start of the record).
std::vector<FieldDesc> sched_switch() {
  return {make_field("unsigned short", "common_type", 0, 2, false),
          make_field("unsigned char", "common_flags", 2, 1, false),
          make_field("unsigned char", "common_preempt_count", 3, 1, false),
          make_field("int", "common_pid", 4, 4, true),
          make_field("char[16]", "prev_comm", 8, 16, false),
          make_field("pid_t", "prev_pid", 24, 4, true),
          make_field("int", "prev_prio", 28, 4, true),
          make_field("long", "prev_state", 32, 8, true),
          make_field("char[16]", "next_comm", 40, 16, false),
          make_field("pid_t", "next_pid", 56, 4, true),
          make_field("int", "next_prio", 60, 4, true)};
}

std::vector<std::byte> record(const char* prev_comm, int32_t prev_pid, const char* next_comm,
                              int32_t next_pid) {
  std::vector<std::byte> r(64);
  std::memcpy(r.data() + 8, prev_comm, std::strlen(prev_comm));
  std::memcpy(r.data() + 24, &prev_pid, 4);
  std::memcpy(r.data() + 40, next_comm, std::strlen(next_comm));
  std::memcpy(r.data() + 56, &next_pid, 4);
  return r;
}

}  // namespace

int main() {
  const auto fields = sched_switch();

  // 1. Compile: the same text you would echo into events/sched/sched_switch/filter.
  const char* expr = "prev_comm ~ \"hack*\" && (next_pid == 0 || next_comm == \"sh\")";
  CompileResult r = compile(expr, fields);
  if (!r.ok()) {
    std::fputs(r.error().render(expr).c_str(), stderr);
    return 1;
  }
  const auto& program = r.program();  // immutable, shareable across threads
  std::printf("%s\n%s", expr, program->dump().c_str());

  // 2. Evaluate on raw records (no allocation, no locks).
  const auto a = record("hackbench", 42, "swapper/1", 0);
  const auto b = record("hackbench", 42, "bash", 7);
  const auto c = record("sh", 42, "swapper/1", 0);
  const bool ka = program->match(a), kb = program->match(b), kc = program->match(c);
  std::printf("hackbench->swapper/1: %d, hackbench->bash: %d, sh->swapper/1: %d\n", ka, kb, kc);
  if (!ka || kb || kc) return 1;

  // 3. A rejected filter: the kernel's message, caret and errno.
  const char* bad = "prev_pid == \"abc\"";
  CompileResult e = compile(bad, fields);
  if (e.ok()) return 1;
  std::printf("%s(errno %d, caret at column %d)\n", e.error().render(bad).c_str(),
              e.error().errno_value(), e.error().caret());
  return e.error().message() == "Expecting numeric field" && e.error().caret() == 13 ? 0 : 1;
}
