// Program::single_ (the one-lane path of match()): every one-predicate integer program,
// in every sense (plain, !, !!, nested parentheses), agrees with an
// independent model, with reference_match (the tree evaluator) and with the
// bounds-checked walk (explain) on full records, and on every truncation of
// the record (shorter records must take the checked path: a cut-off field is
// false, so the negated program is true).
#include <sys/mman.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>

#include "test_events.h"
#include "test_support.h"
#include "tracepipe/filters/ast.h"
#include "tracepipe/filters/codegen.h"
#include "tracepipe/filters/parser.h"

using namespace tracepipe::filters;
using tp_test::Record;

namespace {

struct F {
  const char* name;
  uint32_t off, size;
  bool is_signed;
};

// Model at the field width: equality on the bits, ordered compares in the
// field's signedness, & on the bits; the literal truncated to the width.
bool model(const F& f, const std::string& op, uint64_t field_bits, uint64_t lit_raw) {
  const unsigned bits = f.size * 8;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const uint64_t fu = field_bits & mask, lu = lit_raw & mask;
  auto sx = [&](uint64_t x) {
    return bits == 64 ? static_cast<int64_t>(x)
                      : static_cast<int64_t>(x << (64 - bits)) >> (64 - bits);
  };
  if (op == "==") return fu == lu;
  if (op == "!=") return fu != lu;
  if (op == "&") return (fu & lu) != 0;
  if (f.is_signed) {
    const int64_t a = sx(fu), b = sx(lu);
    return op == "<" ? a < b : op == "<=" ? a <= b : op == ">" ? a > b : a >= b;
  }
  return op == "<" ? fu < lu : op == "<=" ? fu <= lu : op == ">" ? fu > lu : fu >= lu;
}

}  // namespace

TEST_CASE("single lane: one-predicate programs, every sense, full and short records",
          "[filters][eval]") {
  const auto fields = tp_test::all_kinds_fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  const F fs[] = {
      {"common_type", 0, 2, false}, {"common_flags", 2, 1, false}, {"common_pid", 4, 4, true},
      {"s8", 8, 1, true},           {"u8", 9, 1, false},           {"s16", 10, 2, true},
      {"u16", 12, 2, false},        {"s32", 16, 4, true},          {"u32", 20, 4, false},
      {"s64", 24, 8, true},         {"u64", 32, 8, false},         {"call_site", 88, 8, false}};
  const char* lits[] = {"0",
                        "1",
                        "2",
                        "126",
                        "127",
                        "128",
                        "129",
                        "254",
                        "255",
                        "256",
                        "-1",
                        "-2",
                        "-127",
                        "-128",
                        "-129",
                        "0x7ffe",
                        "0x7fff",
                        "0x8000",
                        "0xfffe",
                        "0xffff",
                        "0x10000",
                        "-32768",
                        "-32769",
                        "2147483646",
                        "2147483647",
                        "2147483648",
                        "-2147483648",
                        "-2147483647",
                        "4294967294",
                        "4294967295",
                        "4294967296",
                        "0x8000000000000000",
                        "0x7fffffffffffffff",
                        "9223372036854775806",
                        "-9223372036854775808",
                        "18446744073709551615",
                        "18446744073709551614"};
  const char* ops[] = {"==", "!=", "<", "<=", ">", ">=", "&"};
  // Senses: expression text around the predicate, and whether it inverts.
  const std::pair<const char*, bool> senses[] = {
      {"%", false},     {"!(%)", true},     {"!!(%)", false},    {"((%))", false},
      {"!((%))", true}, {"!(!(%))", false}, {"!(!(!(%)))", true}};
  std::mt19937_64 rng(20201362);
  int checked = 0, programs = 0, value_form = 0;
  for (const F& f : fs) {
    const unsigned bits = f.size * 8;
    const uint64_t fmask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    std::vector<uint64_t> vals = {0,
                                  1,
                                  2,
                                  fmask,
                                  fmask - 1,
                                  fmask >> 1,
                                  (fmask >> 1) + 1,
                                  (fmask >> 1) - 1,
                                  (fmask >> 1) + 2,
                                  127,
                                  128,
                                  255,
                                  256,
                                  0x7fff,
                                  0x8000,
                                  0xffff};
    for (int k = 0; k < 8; ++k) vals.push_back(rng());
    for (const char* lit : lits) {
      const std::string l = lit;
      const bool neg = l[0] == '-';
      const uint64_t raw =
          neg ? static_cast<uint64_t>(std::stoll(l, nullptr, 0)) : std::stoull(l, nullptr, 0);
      std::vector<uint64_t> vv = vals;
      vv.push_back(raw), vv.push_back(raw + 1), vv.push_back(raw - 1);  // around the literal
      for (const char* op : ops) {
        const std::string pred = std::string(f.name) + " " + op + " " + lit;
        for (const auto& [shape, inverts] : senses) {
          std::string expr = shape;
          expr.replace(expr.find('%'), 1, pred);
          ParseResult parsed = parse(expr, fields, opt);
          if (!parsed.ok()) continue;  // e.g. -1 on an unsigned field, as the kernel
          const auto prog = build_program(parsed.ast());
          REQUIRE(prog->predicate_count() == 1);
          ++programs;
          for (uint64_t v : vv) {
            Record rec(96);
            std::memcpy(rec.bytes().data() + f.off, &v, f.size);
            const bool want = model(f, op, v, raw) != inverts;
            INFO(expr << " with field bits " << (v & fmask));
            REQUIRE(prog->match(rec.span()) == want);
            REQUIRE(reference_match(parsed.ast(), *prog, rec.span(), {}) == want);
            REQUIRE(prog->explain(rec.span()).matched == want);
            // Every record too short for the field: the predicate is false.
            // (The boundaries: nothing, up to the field, one byte short of its end.)
            for (size_t len : {size_t{0}, size_t{f.off}, size_t{f.off + f.size - 1}}) {
              const auto s = rec.span().first(len);
              INFO("record of " << len << " bytes");
              REQUIRE(prog->match(s) == inverts);
              REQUIRE(prog->match(s) == reference_match(parsed.ast(), *prog, s, {}));
            }
            // Exactly long enough and longer: the fast path, same verdict.
            REQUIRE(prog->match(rec.span().first(f.off + f.size)) == want);
            // The value form (EventDecl::trace's reject-first step): it names
            // a 4-byte field only, and only for records long enough for it;
            // its verdict on the field's value is match()'s.
            const uint32_t pos = prog->single32_pos(rec.span().size());
            if (pos != UINT32_MAX) {
              REQUIRE(pos == f.off);
              REQUIRE(f.size == 4);
              uint32_t x;
              std::memcpy(&x, rec.bytes().data() + f.off, 4);
              REQUIRE(prog->match_u32(x) == want);
              REQUIRE(prog->single32_pos(f.off + f.size) == pos);
              REQUIRE(prog->single32_pos(f.off + f.size - 1) == UINT32_MAX);
              ++value_form;
            }
            ++checked;
          }
        }
      }
    }
  }
  INFO(programs << " programs");
  CHECK(checked > 400000);
  CHECK(value_form > 50000);  // every 4-byte compare but '&' takes the value form
}

TEST_CASE("single lane: records of UINT32_MAX bytes or more get the same verdict as short ones",
          "[filters][eval]") {
  // single_min_size_ was a uint32_t whose "not a one-lane program" value was
  // UINT32_MAX: a record that long took the one-lane path with a default
  // Lane ("the first 8 bytes are 0") for every other program, even "0".
  // Instance::emit_raw accepts records up to UINT32_MAX bytes. Only the
  // first page of the mapping is touched.
  if (sizeof(size_t) < 8) TP_SKIP("a 4 GiB record needs a 64-bit size_t");
  const size_t n = size_t{1} << 32;
  void* m =
      mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    TP_SKIP("no 4 GiB of address space for the record (mmap MAP_NORESERVE failed)");
  auto* p = static_cast<std::byte*>(m);
  p[0] = std::byte{1};  // common_type 1: the first 8 bytes are not 0
  p[9] = std::byte{5};  // u8 = 5
  const auto fields = tp_test::all_kinds_fields();
  for (const char* e : {"0", "u8 == 5", "!(u8 == 5)", "u8 == 5 && s8 == 0", "u8 == 5 || u16 == 1",
                        "arr == \"\"", "CPU == 0"}) {
    const auto prog = tp_test::must_compile(e, fields);
    const bool want = prog->match(std::span<const std::byte>(p, 96));
    INFO(e);
    CHECK(prog->match(std::span<const std::byte>(p, n - 1)) == want);  // UINT32_MAX bytes
    CHECK(prog->match(std::span<const std::byte>(p, n)) == want);
  }
  munmap(m, n);
}
