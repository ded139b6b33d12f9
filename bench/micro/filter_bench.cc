// Filter evaluation and compile cost (filters/program.h, filters/compile.h).
//
// BM_FilterMatch/<kind>/<preds>: ns per record for a program of 1, 4 or 16
// predicates, numeric or string, over 4096 sched_switch-like records whose
// values vary (so branches are not trivially predicted). The loop touches
// every record once per iteration; items_per_second = records/s.
// Targets: one numeric predicate <= 1 ns/record, four <= 3 ns.
//
// BM_FilterCompile/<preds>: compile() of the same expressions.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tracepipe/filters/compile.h"

namespace {

using namespace tracepipe::filters;

std::vector<FieldDesc> fields() {
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

constexpr size_t kRecSize = 64;
constexpr size_t kRecords = 4096;

std::vector<std::byte> make_records() {
  std::vector<std::byte> buf(kRecSize * kRecords);
  std::mt19937 rng(42);
  const char* comms[] = {"hackbench", "swapper/0", "kworker/1:2", "bash",
                         "sh",        "systemd",   "rcu_sched"};
  for (size_t i = 0; i < kRecords; ++i) {
    std::byte* r = buf.data() + i * kRecSize;
    auto put = [&](size_t off, auto v) { std::memcpy(r + off, &v, sizeof v); };
    put(0, uint16_t{372});
    put(4, static_cast<int32_t>(rng() % 5000));
    const char* pc = comms[rng() % 7];
    const char* nc = comms[rng() % 7];
    std::memcpy(r + 8, pc, std::strlen(pc));
    std::memcpy(r + 40, nc, std::strlen(nc));
    put(24, static_cast<int32_t>(rng() % 5000));
    put(28, static_cast<int32_t>(100 + rng() % 40));
    put(32, static_cast<int64_t>(rng() % 4));
    put(56, static_cast<int32_t>(rng() % 5000));
    put(60, static_cast<int32_t>(100 + rng() % 40));
  }
  return buf;
}

// n numeric predicates that each pass about half the time, joined so that
// all of them are usually evaluated: p1 || p2 || ... (each false ~50%).
std::string numeric_expr(int n) {
  const char* preds[] = {"prev_pid > 2500",  "next_pid < 2500", "prev_prio >= 120",
                         "next_prio <= 119", "prev_state & 1",  "common_pid > 2500",
                         "prev_pid != 1",    "next_pid == 7"};
  std::string e;
  for (int i = 0; i < n; ++i) {
    if (i) e += i % 2 ? " && " : " || ";
    e += preds[i % 8];
  }
  return e;
}

std::string string_expr(int n) {
  const char* preds[] = {"prev_comm == \"hackbench\"", "next_comm ~ \"kworker*\"",
                         "prev_comm ~ \"*bench*\"",    "next_comm != \"sh\"",
                         "prev_comm ~ \"s?stemd\"",    "next_comm ~ \"*_sched\"",
                         "prev_comm ~ \"[bs]*\"",      "next_comm == \"bash\""};
  std::string e;
  for (int i = 0; i < n; ++i) {
    if (i) e += i % 2 ? " && " : " || ";
    e += preds[i % 8];
  }
  return e;
}

void run_match(benchmark::State& state, const std::string& expr) {
  const auto f = fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  auto r = compile(expr, f, opt);
  if (!r.ok()) {
    state.SkipWithError(r.error().render(expr).c_str());
    return;
  }
  const auto prog = r.program();
  const auto recs = make_records();
  const EvalContext ctx{};
  size_t kept = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kRecords; ++i)
      kept += prog->match(std::span<const std::byte>(recs.data() + i * kRecSize, kRecSize), ctx);
    benchmark::DoNotOptimize(kept);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kRecords));
  state.counters["ns_per_record"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kRecords),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["kept_fraction"] =
      static_cast<double>(kept) / static_cast<double>(state.iterations() * kRecords);
}

// The same work written by hand, for scale on a loaded machine: one field
// compare per record (what BM_FilterMatchNumeric/1 evaluates), four.
void BM_FilterHandwritten(benchmark::State& state) {
  const auto recs = make_records();
  const bool four = state.range(0) == 4;
  size_t kept = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < kRecords; ++i) {
      const std::byte* r = recs.data() + i * kRecSize;
      int32_t prev_pid, next_pid, prev_prio, next_prio;
      std::memcpy(&prev_pid, r + 24, 4);
      if (!four) {
        kept += prev_pid > 2500;
        continue;
      }
      std::memcpy(&next_pid, r + 56, 4);
      std::memcpy(&prev_prio, r + 28, 4);
      std::memcpy(&next_prio, r + 60, 4);
      kept += (prev_pid > 2500 && next_pid < 2500) || (prev_prio >= 120 && next_prio <= 119);
    }
    benchmark::DoNotOptimize(kept);
  }
  state.counters["ns_per_record"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kRecords),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_FilterMatchNumeric(benchmark::State& state) {
  run_match(state, numeric_expr(static_cast<int>(state.range(0))));
}
void BM_FilterMatchString(benchmark::State& state) {
  run_match(state, string_expr(static_cast<int>(state.range(0))));
}

void BM_FilterCompile(benchmark::State& state) {
  const auto f = fields();
  const std::string expr = state.range(1) ? string_expr(static_cast<int>(state.range(0)))
                                          : numeric_expr(static_cast<int>(state.range(0)));
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  for (auto _ : state) {
    auto r = compile(expr, f, opt);
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(state.range(1) ? "string" : "numeric");
}

}  // namespace

BENCHMARK(BM_FilterHandwritten)->Arg(1)->Arg(4);
BENCHMARK(BM_FilterMatchNumeric)->Arg(1)->Arg(4)->Arg(16);
BENCHMARK(BM_FilterMatchString)->Arg(1)->Arg(4)->Arg(16);
BENCHMARK(BM_FilterCompile)
    ->Args({1, 0})
    ->Args({4, 0})
    ->Args({16, 0})
    ->Args({1, 1})
    ->Args({4, 1})
    ->Args({16, 1});
