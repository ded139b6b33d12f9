// Fuzz target: filter compilation and evaluation on untrusted (expression,
// record) pairs.
//
// Input: byte 0 = context (CPU, COMM choice, nr_cpu_ids); then the
// expression up to the first 0x00; the rest is the record. Fields are the
// synthetic all-kinds event of tests/filters/test_events.h (every integer
// width and signedness, char[8], __data_loc, __rel_loc, char *, cpumask).
//
// Properties: compile() returns a program or an error, never crashes or
// hangs; an error's caret lies within the expression (+2: "CPUS" at the very
// end makes the kernel report two past it) and its errno is
// one the kernel uses. For a program, on the record and on every prefix of
// it: match() (truth-table or flat walk), explain() (flat walk, visited
// predicates strictly increasing) and a direct walk of the AST agree.
//
// The filter sources are compiled into this file so that they carry the
// fuzzer's coverage instrumentation and ASan checks.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "../filters/test_events.h"
#include "tracepipe/filters/ast.cc"
#include "tracepipe/filters/codegen.cc"
#include "tracepipe/filters/compile.cc"
#include "tracepipe/filters/cpulist.cc"
#include "tracepipe/filters/errors.cc"
#include "tracepipe/filters/field.cc"
#include "tracepipe/filters/glob.cc"
#include "tracepipe/filters/number.cc"
#include "tracepipe/filters/parser.cc"
#include "tracepipe/filters/pred_parser.cc"
#include "tracepipe/filters/program.cc"
#include "tracepipe/filters/string_match.cc"

namespace {

using namespace tracepipe::filters;

ResolvedString fuzz_resolve(uint64_t addr, bool, const void*) noexcept {
  static const std::string_view strings[] = {"Start context switch", "End", "", "/etc/passwd"};
  if (!(addr & 1)) return {};
  return {strings[(addr >> 1) & 3], true};
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "filter_eval_fuzz: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const auto fields = tp_test::all_kinds_fields();
  const uint8_t ctl = data[0];
  const char* text = reinterpret_cast<const char*>(data + 1);
  const size_t rest = size - 1;
  const void* z = std::memchr(text, 0, rest);
  const size_t expr_len = z ? static_cast<size_t>(static_cast<const char*>(z) - text) : rest;
  const std::string_view expr(text, expr_len);
  const size_t rec_off = z ? expr_len + 1 : rest;
  const std::span<const std::byte> record(reinterpret_cast<const std::byte*>(text) + rec_off,
                                          rest - rec_off);

  CompileOptions opt;
  opt.nr_cpu_ids = 1 + (ctl >> 5);  // 1..8
  opt.extensions = (ctl & 0x10) == 0;
  opt.symbol_by_name = [](std::string_view n) -> std::optional<SymbolRange> {
    if (n.size() % 3 == 0) return std::nullopt;
    return SymbolRange{n.size() * 0x100, 0x40};
  };
  const CompileResult r = compile(expr, fields, opt);
  if (!r.ok()) {
    const FilterError& e = r.error();
    if (e.caret() < 0 || static_cast<size_t>(e.caret()) > kernel_command(expr).size() + 2)
      fail("caret out of range");
    const int er = e.errno_value();
    if (er != EINVAL && er != EPERM && er != ENOENT && er != ESRCH && er != ENOMEM)
      fail("unexpected errno");
    if (e.message().empty() || e.render(expr).empty()) fail("empty error text");
    return 0;
  }
  ParseResult parsed = parse(expr, fields, opt);
  if (!parsed.ok()) fail("parse() disagrees with compile()");
  const auto prog = build_program(parsed.ast());
  if (prog->dump() != r.program()->dump()) fail("compile is not deterministic");

  EvalContext ctx;
  ctx.cpu = ctl & 7;
  static const std::string_view comms[] = {"hackbench", "sh", "kcap_xhackbench", ""};
  ctx.comm = comms[(ctl >> 3) & 3];
  ctx.resolve = fuzz_resolve;
  for (size_t len = record.size() + 1; len-- > 0;) {
    const auto rec = record.first(len);
    const bool m = prog->match(rec, ctx);
    const auto ex = prog->explain(rec, ctx);
    const bool t = reference_match(parsed.ast(), *prog, rec, ctx);
    if (m != ex.matched || m != t) fail("match, explain and the tree disagree");
    for (size_t i = 1; i < ex.visited.size(); ++i)
      if (ex.visited[i] <= ex.visited[i - 1]) fail("the walk went backwards");
    if (len + 16 < record.size())
      len = std::min(len, size_t{96});  // long records: prefixes near the fields only
  }
  return 0;
}
