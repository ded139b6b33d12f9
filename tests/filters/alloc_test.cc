// Program::match() allocates nothing: malloc and operator new are counted in
// this executable (tests/support/alloc_counter.h) while compiled programs of every predicate kind
// evaluate records (fitting, short, with out-of-bounds __data_loc). The RE2
// extension is measured separately (RE2 may grow its DFA cache; see
// docs/filters.md).
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <new>

#include "alloc_counter.h"
#include "test_events.h"
#include "test_support.h"

namespace {
uint64_t allocs() noexcept { return tp_test::alloc_counter::count(); }
}  // namespace

using namespace tracepipe::filters;
using tp_test::Record;

namespace {

ResolvedString resolve(uint64_t addr, bool, const void*) noexcept {
  if (addr == 0x1000) return {"Start context switch", true};
  return {};
}

}  // namespace

TEST_CASE("alloc: match() never allocates, for every predicate kind", "[filters][alloc]") {
#if defined(TRACEPIPE_SANITIZED)
  TP_SKIP("allocation hooks are disabled under sanitizers");
#endif
  REQUIRE(tp_test::alloc_counter::probe() == 2);  // the counter is live: a 0 below means something
  const auto fields = tp_test::all_kinds_fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  opt.symbol_by_name = [](std::string_view) -> std::optional<SymbolRange> {
    return SymbolRange{0x100, 0x10};
  };
  const char* exprs[] = {
      "s8 == -1 || u8 != 2 && s16 < 3 || u16 <= 4 && s32 > 5 || u32 >= 6 && s64 & 7 || u64 == 8",
      "arr == \"abc\" || arr ~ \"ab*\" || arr ~ \"*bc*\" || arr ~ \"*c\" || arr ~ \"a?[b-c]\"",
      "dyn == \"x\" || dyn ~ \"*x\" || rel ~ \"y*\" || rel != \"z\" || dyn ~ \"!*[xy]?\"",
      "ptr == \"Start context switch\" || ptr ~ \"*switch\"",
      "COMM ~ \"bash*\" || comm == \"sh\" || CPU == 1 || cpu & CPUS{0,2} || common_cpu != CPUS{1}",
      "mask & CPUS{1} || mask == CPUS{0-1} || mask != CPUS{2} || u32 & CPUS{1-2} || u8 == CPUS{3}",
      "call_site.function == foo || stacktrace == 0 || longs == 0",
      "!(s8 == 1 && !(arr == \"q\" || !(dyn ~ \"*\")))",
  };
  std::vector<std::shared_ptr<const Program>> progs;
  for (const char* e : exprs) progs.push_back(tp_test::must_compile(e, fields, opt));

  Record full(96);
  full.chars(40, "abc").data_loc(48, "x").rel_loc(52, "yz").set<uint64_t>(56, 0x1000);
  full.set<uint32_t>(64, (8u << 16) | 4000u);  // cpumask pointing outside the record
  Record short_rec(30);
  EvalContext ctx;
  ctx.cpu = 1;
  ctx.comm = "bash";
  ctx.resolve = resolve;

  const uint64_t before = allocs();
  size_t hits = 0;
  for (int round = 0; round < 1000; ++round)
    for (const auto& p : progs) {
      hits += p->match(full.span(), ctx);
      hits += p->match(short_rec.span(), ctx);
      hits += p->match(std::span<const std::byte>(), ctx);
    }
  const uint64_t after = allocs();
  CHECK(after - before == 0);
  CHECK(hits > 0);
}

TEST_CASE("alloc: the counter sees allocations (the hooks are live)", "[filters][alloc]") {
#if defined(TRACEPIPE_SANITIZED)
  TP_SKIP("allocation hooks are disabled under sanitizers");
#endif
  CHECK(tp_test::alloc_counter::probe() == 2);  // one malloc + one operator new, not elided
  const uint64_t before = allocs();
  auto p = tp_test::must_compile("s8 == 1", tp_test::all_kinds_fields());
  CHECK(allocs() > before);
}

TEST_CASE("alloc: RE2 predicates, after the first matches, do not allocate either",
          "[filters][alloc]") {
#if defined(TRACEPIPE_SANITIZED)
  TP_SKIP("allocation hooks are disabled under sanitizers");
#endif
  const auto prog =
      tp_test::must_compile("dyn =~ \"^k(worker|softirqd)/[0-9]+\"", tp_test::all_kinds_fields());
  Record a(96), b(96);
  a.data_loc(48, "kworker/12:1");
  b.data_loc(48, "ksoftirqd/3");
  for (int i = 0; i < 100; ++i)
    (void)(prog->match(a.span()) + prog->match(b.span()));  // warm RE2's DFA
  REQUIRE(tp_test::alloc_counter::probe() == 2);
  const uint64_t before = allocs();
  size_t hits = 0;
  for (int i = 0; i < 10000; ++i) hits += prog->match(a.span()) + prog->match(b.span());
  CHECK(allocs() - before == 0);
  CHECK(hits == 20000);
}
