// The compiled program: the worked example of filters/program.h, jump
// targets, and short-circuiting (which predicates run, not only the verdict).
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>

#include "test_events.h"
#include "test_support.h"
#include "tracepipe/filters/codegen.h"
#include "tracepipe/filters/parser.h"

using namespace tracepipe::filters;
using tp_test::Record;

namespace {

// The listing in filters/program.h, between the expression and "(the kernel's".
std::string listing_from_header() {
  const std::string h =
      tp_test::read_file(std::filesystem::path(TP_SOURCE_DIR) / "filters/program.h");
  const size_t a = h.find("//   0: ");
  const size_t b = h.find("//   F: return false");
  REQUIRE(a != std::string::npos);
  REQUIRE(b != std::string::npos);
  std::string out;
  size_t pos = a;
  const size_t end = h.find('\n', b);
  while (pos < end) {
    const size_t nl = h.find('\n', pos);
    out += h.substr(pos + 5, nl - pos - 5) + "\n";  // drop "//   "
    pos = nl + 1;
  }
  return out;
}

constexpr const char* kWorkedExample =
    "prev_pid == 1 && !(!(next_pid == 2) || (prev_prio == 3 && next_prio == 4))"
    " || prev_state == 5 || prev_comm == \"a\" && !(next_comm ~ \"b*\")";

}  // namespace

TEST_CASE("program: the worked example in program.h is what dump() prints", "[filters][program]") {
  const auto fields = tp_test::sched_switch_fields();
  const auto prog = tp_test::must_compile(kWorkedExample, fields);
  CHECK(prog->dump() == listing_from_header());
  CHECK(prog->predicate_count() == 7);
}

TEST_CASE("program: the worked example has the kernel's branch structure", "[filters][program]") {
  // Kernel comment: n1: if (!a) goto n5; n2: if (!b) goto n5; n3: if (!c) goto T;
  // n4: if (!g) goto T; n5: if (d) goto T; n6: if (!e) goto F; n7: if (f) goto F.
  const auto prog = tp_test::must_compile(kWorkedExample, tp_test::sched_switch_fields());
  struct Want {
    uint8_t branch_if;
    uint32_t target;
  };
  const Want want[] = {{0, 4}, {0, 4}, {0, 7}, {0, 7}, {1, 7}, {0, 8}, {1, 8}};
  const auto e = prog->entries();
  REQUIRE(e.size() == 7);
  for (size_t i = 0; i < 7; ++i) {
    INFO("entry " << i);
    CHECK(e[i].branch_if == want[i].branch_if);
    CHECK(e[i].target == want[i].target);
  }
}

TEST_CASE("program: targets always move forward and stay in [i+1, N+1]", "[filters][program]") {
  const auto fields = tp_test::sched_switch_fields();
  for (const char* expr :
       {"prev_pid == 1", "!(prev_pid == 1)", "prev_pid == 1 || next_pid == 2 && prev_prio == 3",
        "!(!(!(prev_pid == 1 && (next_pid == 2 || !(prev_prio == 3)))))",
        "((prev_pid == 1 || next_pid == 2) && (prev_prio == 3 || next_prio == 4)) || prev_state == "
        "5"}) {
    INFO(expr);
    const auto prog = tp_test::must_compile(expr, fields);
    const auto e = prog->entries();
    for (uint32_t i = 0; i < e.size(); ++i) {
      CHECK(e[i].target > i);
      CHECK(e[i].target <= e.size() + 1);
    }
  }
}

// Table-driven short-circuit check: verdict and the exact predicates visited.
TEST_CASE("program: short-circuit visits only the predicates it must", "[filters][program]") {
  const auto fields = tp_test::sched_switch_fields();
  struct Row {
    const char* expr;
    int prev_pid, next_pid, prev_prio;
    bool verdict;
    std::vector<uint32_t> visited;
  };
  const Row rows[] = {
      {"prev_pid == 1 && next_pid == 2", 0, 2, 0, false, {0}},
      {"prev_pid == 1 && next_pid == 2", 1, 2, 0, true, {0, 1}},
      {"prev_pid == 1 || next_pid == 2", 1, 0, 0, true, {0}},
      {"prev_pid == 1 || next_pid == 2", 0, 0, 0, false, {0, 1}},
      {"prev_pid == 1 || next_pid == 2 && prev_prio == 3", 0, 0, 3, false, {0, 1}},
      {"prev_pid == 1 || next_pid == 2 && prev_prio == 3", 0, 2, 3, true, {0, 1, 2}},
      {"(prev_pid == 1 || next_pid == 2) && prev_prio == 3", 1, 0, 0, false, {0, 2}},
      {"!(prev_pid == 1 || next_pid == 2) && prev_prio == 3", 1, 0, 3, false, {0}},
      {"!(prev_pid == 1 && next_pid == 2) || prev_prio == 3", 0, 0, 0, true, {0}},
      {"!!(prev_pid == 1)", 1, 0, 0, true, {0}},
  };
  for (const Row& r : rows) {
    INFO(r.expr << " prev_pid=" << r.prev_pid << " next_pid=" << r.next_pid
                << " prev_prio=" << r.prev_prio);
    const auto prog = tp_test::must_compile(r.expr, fields);
    Record rec(64);
    rec.set<int32_t>(24, r.prev_pid).set<int32_t>(56, r.next_pid).set<int32_t>(28, r.prev_prio);
    const auto ex = prog->explain(rec.span());
    CHECK(ex.matched == r.verdict);
    CHECK(ex.visited == r.visited);
    CHECK(prog->match(rec.span()) == r.verdict);
  }
}

TEST_CASE("program: flat program equals the tree on every assignment of 5 predicates",
          "[filters][program]") {
  // Each predicate pN is "prev_state & (1 << N)"; the record's prev_state
  // enumerates all 32 truth assignments.
  const auto fields = tp_test::sched_switch_fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  const char* exprs[] = {
      "prev_state & 1 && prev_state & 2 || prev_state & 4 && !(prev_state & 8 || prev_state & 16)",
      "!(prev_state & 1 || !(prev_state & 2 && !(prev_state & 4))) || prev_state & 8 && prev_state "
      "& 16",
      "((prev_state & 1)) && (prev_state & 2 || prev_state & 4) && !(!(prev_state & 8)) || "
      "!prev_state & 16",
      "prev_state & 1 || prev_state & 2 || prev_state & 4 || prev_state & 8 || prev_state & 16",
      "!(prev_state & 1 && prev_state & 2 && prev_state & 4 && prev_state & 8 && prev_state & 16)",
  };
  for (const char* expr : exprs) {
    INFO(expr);
    ParseResult parsed = parse(expr, fields, opt);
    REQUIRE(parsed.ok());
    const auto prog = build_program(parsed.ast());
    for (int64_t v = 0; v < 32; ++v) {
      Record rec(64);
      rec.set<int64_t>(32, v);
      CHECK(prog->match(rec.span()) == reference_match(parsed.ast(), *prog, rec.span(), {}));
    }
  }
}

TEST_CASE("program: \"0\" clears the filter: no predicates, every record matches",
          "[filters][program]") {
  const auto fields = tp_test::sched_switch_fields();
  for (const char* expr : {"0", " 0 ", "0\n", "\t0"}) {
    const auto prog = tp_test::must_compile(expr, fields);
    CHECK(prog->predicate_count() == 0);
    CHECK(prog->match(std::span<const std::byte>()));
    CHECK(prog->dump() == "T: return true\n");
  }
}

TEST_CASE("program: AST text shows the kernel's precedence", "[filters][program]") {
  const auto fields = tp_test::sched_switch_fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  auto text = [&](const char* e) {
    ParseResult p = parse(e, fields, opt);
    REQUIRE(p.ok());
    return to_string(p.ast());
  };
  CHECK(text("prev_pid == 0 || next_pid == 0 && prev_prio == 120") ==
        "(prev_pid == 0 || (next_pid == 0 && prev_prio == 120))");
  CHECK(text("!next_pid == 0") == "!(next_pid == 0)");
  CHECK(text("!(prev_pid == 0 || next_pid == 0)") == "!((prev_pid == 0 || next_pid == 0))");
  opt.trailing_operator = TrailingOperator::ignore;  // the oracle's kernel build
  CHECK(text("prev_pid == 0 &&") == "prev_pid == 0");
  CHECK(text("prev_pid == 0 || next_pid == 0 ||") == "(prev_pid == 0 || next_pid == 0)");
  CHECK(text("prev_pid == 0 && !") == "prev_pid == 0");
  opt.trailing_operator = TrailingOperator::reject;
  CHECK(text("((((prev_pid == 0))))") == "prev_pid == 0");
}

TEST_CASE("program: many threads evaluate one program at once", "[filters][program][concurrency]") {
  // Programs are published to writers on every CPU at once: evaluation must be
  // read-only (TSan runs this test in CI).
  const auto fields = tp_test::all_kinds_fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  const auto prog = tp_test::must_compile(
      "(u32 > 10 && arr ~ \"ab*\") || dyn =~ \"^k.*[0-9]$\" || (mask & CPUS{1,3} && CPU != 2)",
      fields, opt);
  Record a(96), b(96);
  a.set<uint32_t>(20, 11).chars(40, "abc").data_loc(48, "zz");
  b.set<uint32_t>(20, 1).chars(40, "abc").data_loc(48, "kworker/1");
  std::atomic<size_t> total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      EvalContext ctx;
      ctx.cpu = static_cast<uint32_t>(t);
      size_t n = 0;
      for (int i = 0; i < 2000; ++i) n += prog->match(a.span(), ctx) + prog->match(b.span(), ctx);
      total += n;
    });
  for (auto& th : threads) th.join();
  CHECK(total == 4 * 2000 * 2);
}
