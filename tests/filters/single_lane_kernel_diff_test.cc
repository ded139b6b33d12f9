// Differential test of Program::single_ (the one-predicate integer program,
// filters/codegen.cc + eval_single in filters/program.h): for every integer
// width (1, 2, 4, 8) and signedness, at aligned and unaligned offsets, every
// operator (== != < <= > >= &) in plain and negated forms, literals at and
// around the edges of every width (decimal, hex, octal; out of the field's
// range; the sign bit), the verdict of match(), match_lazy() and
// compile()'s program agrees with the kernel's semantics
// (kernel/trace/trace_events_filter.c: literal parsed by kstrtoll for signed
// fields, kstrtoull for unsigned ones, truncated to the field's type; compare
// in the field's C type) and with reference_match(), on records holding edge
// values with random bytes around the field. 1-byte fields: exhaustive
// (every literal in [-300, 300] and every field value).
#include <catch2/catch.hpp>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tracepipe/filters/ast.h"
#include "tracepipe/filters/codegen.h"
#include "tracepipe/filters/compile.h"
#include "tracepipe/filters/parser.h"

using namespace tracepipe::filters;

namespace {

struct FieldSpec {
  const char* type;
  const char* name;
  uint32_t off, size;
  bool is_signed;
};

constexpr uint32_t kRecSize = 96;

const std::vector<FieldSpec>& fields_spec() {
  static const std::vector<FieldSpec> fs = {
      {"unsigned short", "common_type", 0, 2, false},
      {"unsigned char", "common_flags", 2, 1, false},
      {"unsigned char", "common_preempt_count", 3, 1, false},
      {"int", "common_pid", 4, 4, true},
      // packed, unaligned
      {"s8", "a_s8", 8, 1, true},
      {"u8", "a_u8", 9, 1, false},
      {"s16", "a_s16", 11, 2, true},
      {"u16", "a_u16", 13, 2, false},
      {"s32", "a_s32", 15, 4, true},
      {"u32", "a_u32", 19, 4, false},
      {"s64", "a_s64", 23, 8, true},
      {"u64", "a_u64", 31, 8, false},
      // aligned, kernel type names
      {"char", "b_char", 39, 1, true},
      {"bool", "b_bool", 40, 1, false},
      {"short", "b_s16", 42, 2, true},
      {"unsigned short", "b_u16", 44, 2, false},
      {"pid_t", "b_pid", 48, 4, true},
      {"unsigned int", "b_u32", 52, 4, false},
      {"long", "b_long", 56, 8, true},
      {"unsigned long", "b_ulong", 64, 8, false},
      {"gfp_t", "b_gfp", 72, 4, false},
      {"long long", "b_s64", 80, 8, true},
      {"u64", "b_u64", 88, 8, false},
  };
  return fs;
}

std::vector<FieldDesc> make_fields() {
  std::vector<FieldDesc> v;
  for (const FieldSpec& f : fields_spec())
    v.push_back(make_field(f.type, f.name, f.off, f.size, f.is_signed));
  return v;
}

uint64_t mask_of(unsigned bytes) {
  return bytes == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * bytes)) - 1;
}
int64_t sx(uint64_t x, unsigned bits) {
  return bits == 64 ? static_cast<int64_t>(x)
                    : static_cast<int64_t>(x << (64 - bits)) >> (64 - bits);
}

// The kernel's literal: kstrtoll (signed field) or kstrtoull (unsigned), base 0.
// kstrto* refuse a leading '-' for unsigned, overflow, and trailing junk.
bool kernel_literal(const FieldSpec& f, const std::string& s, uint64_t& out) {
  errno = 0;
  char* end = nullptr;
  if (f.is_signed) {
    const long long v = std::strtoll(s.c_str(), &end, 0);
    if (errno != 0 || *end != 0) return false;
    out = static_cast<uint64_t>(v);
  } else {
    if (!s.empty() && s[0] == '-') return false;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno != 0 || *end != 0) return false;
    out = v;
  }
  return true;
}

bool kernel_model(const FieldSpec& f, const std::string& op, uint64_t field_bits,
                  uint64_t lit_raw) {
  const unsigned bits = f.size * 8;
  const uint64_t m = mask_of(f.size);
  const uint64_t fu = field_bits & m, lu = lit_raw & m;
  if (op == "==") return fu == lu;
  if (op == "!=") return fu != lu;
  if (op == "&") return (fu & lu) != 0;
  if (f.is_signed) {
    const int64_t a = sx(fu, bits), b = sx(lu, bits);
    return op == "<" ? a < b : op == "<=" ? a <= b : op == ">" ? a > b : a >= b;
  }
  return op == "<" ? fu < lu : op == "<=" ? fu <= lu : op == ">" ? fu > lu : fu >= lu;
}

std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}
std::string oct(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof b, "0%" PRIo64, v);
  return b;
}

// Literal texts around the edges of every width.
std::vector<std::string> literal_texts() {
  std::vector<std::string> out = {"0",   "1",  "-1",  "2",    "-2",  "00",
                                  "0x0", "-0", "010", "-010", "0x10"};
  for (unsigned bytes : {1u, 2u, 4u, 8u}) {
    const unsigned bits = 8 * bytes;
    const uint64_t m = mask_of(bytes);
    const uint64_t sign = uint64_t{1} << (bits - 1);
    const int64_t smin = -static_cast<int64_t>(sign - 1) - 1;  // INTn_MIN
    const int64_t smax = static_cast<int64_t>(sign - 1);
    for (uint64_t u : {m, m - 1, sign, sign - 1, sign + 1, sign - 2}) {
      out.push_back(std::to_string(u));
      out.push_back(hex(u));
    }
    out.push_back(oct(m));
    out.push_back(oct(sign));
    if (bytes < 8) {
      out.push_back(std::to_string(m + 1));  // one past the width
      out.push_back(std::to_string(m + 2));
      out.push_back(hex(m + 1));
      out.push_back(std::to_string(smin - 1));  // one below INTn_MIN
      out.push_back(std::to_string(smax + 1));
      out.push_back(std::to_string(-static_cast<int64_t>(m)));      // -(2^n - 1)
      out.push_back(std::to_string(-static_cast<int64_t>(m) - 1));  // -2^n: truncates to 0
      out.push_back(std::to_string(-static_cast<int64_t>(m) + 1));
    }
    for (int64_t s : {smin, smin + 1, smin + 2, smax, smax - 1}) out.push_back(std::to_string(s));
  }
  out.push_back("18446744073709551616");  // 2^64: refused by kstrtoull
  out.push_back("-9223372036854775809");  // refused by kstrtoll
  out.push_back("0x10000000000000000");
  return out;
}

std::vector<uint64_t> field_values(const FieldSpec& f, uint64_t lit_raw, std::mt19937_64& rng) {
  const uint64_t m = mask_of(f.size);
  const uint64_t sign = uint64_t{1} << (8 * f.size - 1);
  std::vector<uint64_t> v = {0,
                             1,
                             2,
                             m,
                             m - 1,
                             m - 2,
                             sign,
                             sign - 1,
                             sign + 1,
                             sign - 2,
                             127,
                             128,
                             255,
                             256,
                             0x7fff,
                             0x8000,
                             0xffff,
                             0x10000,
                             0x7fffffff,
                             0x80000000,
                             0xffffffff,
                             lit_raw,
                             lit_raw + 1,
                             lit_raw - 1,
                             lit_raw + 2,
                             lit_raw - 2,
                             lit_raw ^ sign,
                             (lit_raw ^ sign) + 1,
                             (lit_raw ^ sign) - 1};
  for (int k = 0; k < 4; ++k) v.push_back(rng());
  return v;
}

struct Sense {
  const char* shape;
  bool inverts;
};
const Sense kSenses[] = {{"%", false},     {"!(%)", true},       {"!!(%)", false},   {"(%)", false},
                         {"!((%))", true}, {"!(!(!(%)))", true}, {" ! ( % ) ", true}};
const char* const kOps[] = {"==", "!=", "<", "<=", ">", ">=", "&"};

struct Tally {
  uint64_t programs = 0, checks = 0, refused = 0, mismatches = 0, parse_disagree = 0;
};

void check_program(const FieldSpec& f, const std::string& expr, const Ast* ast, const Program& prog,
                   const std::string& op, uint64_t lit_raw, bool inverts,
                   const std::vector<uint64_t>& vals, std::mt19937_64& rng, Tally& t) {
  std::vector<std::byte> rec(kRecSize);
  for (auto& b : rec) b = static_cast<std::byte>(rng());  // neighbours hold noise
  size_t k = 0;
  for (uint64_t v : vals) {
    if ((++k & 63) == 0)
      rec[rng() % kRecSize] = static_cast<std::byte>(rng());  // and change now and then
    std::memcpy(rec.data() + f.off, &v, f.size);
    const std::span<const std::byte> s(rec);
    const bool want = kernel_model(f, op, v, lit_raw) != inverts;
    const bool got = prog.match(s);
    const bool lazy = prog.match_lazy(s, [] { return EvalContext{}; });
    const bool ref = ast ? reference_match(*ast, prog, s, {}) : want;
    ++t.checks;
    if (got != want || lazy != want || ref != want) {
      if (++t.mismatches <= 20)
        UNSCOPED_INFO("MISMATCH: '" << expr << "' field " << f.name << " (" << f.type << ", "
                                    << f.size << " bytes, " << (f.is_signed ? "signed" : "unsigned")
                                    << ") bits " << hex(v & mask_of(f.size)) << ": match " << got
                                    << " lazy " << lazy << " reference " << ref << " kernel "
                                    << want);
    }
  }
}

}  // namespace

TEST_CASE("single lane diff: every width, signedness, operator, sense and edge literal",
          "[filters][eval][single_lane]") {
  const auto fields = make_fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  const auto lits = literal_texts();
  std::mt19937_64 rng(0x5eed);
  Tally t;
  for (const FieldSpec& f : fields_spec()) {
    for (const std::string& lit : lits) {
      uint64_t lit_raw = 0;
      const bool kernel_ok = kernel_literal(f, lit, lit_raw);
      for (const char* op : kOps) {
        const std::string pred = std::string(f.name) + " " + op + " " + lit;
        for (const Sense& sn : kSenses) {
          std::string expr = sn.shape;
          expr.replace(expr.find('%'), 1, pred);
          ParseResult parsed = parse(expr, fields, opt);
          CompileResult compiled = compile(expr, fields, opt);
          if (parsed.ok() != compiled.ok()) {
            ++t.parse_disagree;
            UNSCOPED_INFO("parse/compile disagree on '" << expr << "'");
          }
          if (parsed.ok() != kernel_ok) {
            // Not the change under review, but worth knowing.
            if (++t.parse_disagree <= 20)
              UNSCOPED_INFO("kernel literal rule differs on '" << expr << "' (" << f.type
                                                               << "): ours " << parsed.ok());
          }
          if (!parsed.ok() || !kernel_ok) {
            ++t.refused;
            continue;
          }
          const auto prog = build_program(parsed.ast());
          REQUIRE(prog->predicate_count() == 1);
          ++t.programs;
          const auto vals = field_values(f, lit_raw, rng);
          check_program(f, expr, &parsed.ast(), *prog, op, lit_raw, sn.inverts, vals, rng, t);
          if (compiled.ok())
            check_program(f, expr, nullptr, *compiled.program(), op, lit_raw, sn.inverts, vals, rng,
                          t);
        }
      }
    }
  }
  INFO(t.programs << " programs, " << t.checks << " checks, " << t.refused << " refused");
  CHECK(t.mismatches == 0);
  CHECK(t.parse_disagree == 0);
  CHECK(t.programs > 10000);
}

// Every operator, plain and negated, of `f` against the literal `ls`, on
// every value in `all`.
static void check_every_operator(const FieldSpec& f, const std::vector<FieldDesc>& fields,
                                 const CompileOptions& opt, const std::string& ls, uint64_t lit_raw,
                                 const std::vector<uint64_t>& all, std::mt19937_64& rng, Tally& t) {
  for (const char* op : kOps)
    for (bool neg : {false, true}) {
      const std::string expr = neg ? "!(" + std::string(f.name) + " " + op + " " + ls + ")"
                                   : std::string(f.name) + " " + op + " " + ls;
      CompileResult c = compile(expr, fields, opt);
      if (!c.ok()) {
        ++t.refused;
        continue;
      }
      ++t.programs;
      check_program(f, expr, nullptr, *c.program(), op, lit_raw, neg, all, rng, t);
    }
}

TEST_CASE("single lane diff: 1-byte fields, every literal in [-300, 300] x every value",
          "[filters][eval][single_lane]") {
  const auto fields = make_fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  std::mt19937_64 rng(1);
  Tally t;
  std::vector<uint64_t> all(256);
  for (uint64_t i = 0; i < 256; ++i) all[i] = i;
  for (const FieldSpec& f : fields_spec()) {
    if (f.size != 1 || f.off < 8) continue;
    for (int lit = -300; lit <= 300; ++lit) {
      const std::string ls = std::to_string(lit);
      uint64_t lit_raw = 0;
      if (!kernel_literal(f, ls, lit_raw)) continue;
      check_every_operator(f, fields, opt, ls, lit_raw, all, rng, t);
    }
  }
  CHECK(t.mismatches == 0);
}

TEST_CASE("single lane diff: 2-byte fields, every value for edge literals",
          "[filters][eval][single_lane]") {
  const auto fields = make_fields();
  CompileOptions opt;
  opt.nr_cpu_ids = 4;
  std::mt19937_64 rng(2);
  Tally t;
  std::vector<uint64_t> all(65536);
  for (uint64_t i = 0; i < 65536; ++i) all[i] = i;
  const char* lits[] = {"0",      "1",     "-1",    "32767",  "32768", "-32768",
                        "-32769", "65535", "65536", "0x7ffe", "-32767"};
  for (const FieldSpec& f : fields_spec()) {
    if (f.size != 2 || (f.name != std::string("a_s16") && f.name != std::string("a_u16"))) continue;
    for (const char* ls : lits) {
      uint64_t lit_raw = 0;
      if (!kernel_literal(f, ls, lit_raw)) continue;
      check_every_operator(f, fields, opt, ls, lit_raw, all, rng, t);
    }
  }
  CHECK(t.mismatches == 0);
}
