// Evaluation: every operator on every integer width and signedness, the
// string kinds, CPU/COMM, cpumasks, .function, and records that are short or
// malformed. Expected values are the kernel's (see each comment).
#include <algorithm>
#include <catch2/catch.hpp>
#include <climits>
#include <cstring>
#include <map>

#include "test_events.h"

using namespace tracepipe::filters;
using tp_test::must_compile;
using tp_test::must_fail;
using tp_test::Record;

namespace {

const std::vector<FieldDesc>& K() {
  static const auto f = tp_test::all_kinds_fields();
  return f;
}

constexpr size_t kFixed = 96;

bool eval(std::string_view expr, const Record& rec, const EvalContext& ctx = {},
          CompileOptions opt = {}) {
  return must_compile(expr, K(), opt)->match(rec.span(), ctx);
}

template <typename T>
Record with(uint32_t offset, T v) {
  Record r(kFixed);
  r.set<T>(offset, v);
  return r;
}

}  // namespace

TEST_CASE("eval: == and != compare the field's bits at its width", "[filters][eval]") {
  CHECK(eval("u8 == 200", with<uint8_t>(9, 200)));
  CHECK(eval("s8 == -56", with<int8_t>(8, -56)));
  CHECK(eval("s8 == 200", with<int8_t>(8, -56)));  // (u8)200 == 0xc8: equality is on bits
  CHECK(eval("u16 != 7", with<uint16_t>(12, 8)));
  CHECK_FALSE(eval("u16 != 7", with<uint16_t>(12, 7)));
  CHECK(eval("s32 == -1", with<int32_t>(16, -1)));
  CHECK(eval("u32 == 0xffffffff", with<uint32_t>(20, UINT32_MAX)));
  CHECK(eval("s64 == -9223372036854775808", with<int64_t>(24, INT64_MIN)));
  CHECK(eval("s64 == 9223372036854775807", with<int64_t>(24, INT64_MAX)));
  CHECK(eval("u64 == 18446744073709551615", with<uint64_t>(32, UINT64_MAX)));
  CHECK(eval("u64 == 0xFFFFFFFFFFFFFFFF", with<uint64_t>(32, UINT64_MAX)));
  CHECK(eval("u64 == 01777777777777777777777", with<uint64_t>(32, UINT64_MAX)));  // octal
}

TEST_CASE("eval: literals are truncated to the field width (kernel: (u##size)pred->val)",
          "[filters][eval]") {
  CHECK(eval("u8 == 256", with<uint8_t>(9, 0)));
  CHECK(eval("u32 == 0x100000000", with<uint32_t>(20, 0)));  // oracle 030
  CHECK(eval("s8 == 255", with<int8_t>(8, -1)));
  CHECK_FALSE(eval("u8 < 0x100", with<uint8_t>(9, 0)));  // oracle 033: x < 0 never
  CHECK_FALSE(eval("s8 < 128", with<int8_t>(8, -128)));  // (s8)128 == -128
  CHECK(eval("s16 > 65535", with<int16_t>(10, 0)));      // (s16)65535 == -1
  CHECK_FALSE(eval("s32 == -0x1", with<int32_t>(16, 0)));
}

TEST_CASE("eval: ordered compares use the field's signedness", "[filters][eval]") {
  // The same bits, 0xfffb, are -5 as s16 and 65531 as u16.
  CHECK(eval("s16 < 3", with<int16_t>(10, -5)));
  CHECK_FALSE(eval("u16 < 3", with<uint16_t>(12, 0xfffb)));
  CHECK(eval("s8 <= -128", with<int8_t>(8, INT8_MIN)));
  CHECK(eval("u8 >= 255", with<uint8_t>(9, 255)));
  CHECK(eval("s32 > -10", with<int32_t>(16, -9)));
  CHECK_FALSE(eval("s32 > -10", with<int32_t>(16, -10)));
  CHECK(eval("u32 > 4294967294", with<uint32_t>(20, UINT32_MAX)));
  CHECK(eval("s64 < -9223372036854775807", with<int64_t>(24, INT64_MIN)));
  CHECK_FALSE(eval("s64 < -9223372036854775808", with<int64_t>(24, INT64_MIN)));
  CHECK(eval("s64 >= 9223372036854775807", with<int64_t>(24, INT64_MAX)));
  CHECK(eval("u64 > 9223372036854775807", with<uint64_t>(32, uint64_t{1} << 63)));
  CHECK(eval("u64 <= 0", with<uint64_t>(32, 0)));
}

TEST_CASE("eval: every width x signedness x operator against a model", "[filters][eval]") {
  struct F {
    const char* name;
    uint32_t off, size;
    bool is_signed;
  };
  const F fs[] = {{"s8", 8, 1, true},    {"u8", 9, 1, false},  {"s16", 10, 2, true},
                  {"u16", 12, 2, false}, {"s32", 16, 4, true}, {"u32", 20, 4, false},
                  {"s64", 24, 8, true},  {"u64", 32, 8, false}};
  const int64_t values[] = {0,     1,      -1,    2,         127,       128,       -128,     255,
                            32767, -32768, 65535, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
  const char* lits[] = {"0",
                        "1",
                        "2",
                        "127",
                        "128",
                        "255",
                        "-1",
                        "-128",
                        "0x7fff",
                        "0xffff",
                        "-2147483648",
                        "4294967295",
                        "0x8000000000000000",
                        "9223372036854775807"};
  const char* ops[] = {"==", "!=", "<", "<=", ">", ">=", "&"};
  int checked = 0;
  for (const F& f : fs) {
    for (const char* lit : lits) {
      // Parse as the kernel: kstrtoll for signed fields, kstrtoull otherwise.
      const std::string l = lit;
      const bool neg = l[0] == '-';
      if (neg && !f.is_signed) continue;
      const uint64_t raw =
          neg ? static_cast<uint64_t>(std::stoll(l, nullptr, 0)) : std::stoull(l, nullptr, 0);
      if (f.is_signed && !neg && raw > INT64_MAX) continue;
      for (const char* op : ops) {
        const std::string expr = std::string(f.name) + " " + op + " " + lit;
        const auto prog = must_compile(expr, K());
        const auto neg_prog = must_compile("!(" + expr + ")", K());
        for (int64_t v : values) {
          Record rec(kFixed);
          std::memcpy(rec.bytes().data() + f.off, &v, f.size);  // little endian truncation
          // Model: sign- or zero-extend both sides at the field width.
          const unsigned bits = f.size * 8;
          const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
          const uint64_t fu = static_cast<uint64_t>(v) & mask, lu = raw & mask;
          auto sx = [&](uint64_t x) {
            return bits == 64 ? static_cast<int64_t>(x)
                              : static_cast<int64_t>(x << (64 - bits)) >> (64 - bits);
          };
          bool want;
          const std::string o = op;
          if (o == "==")
            want = fu == lu;
          else if (o == "!=")
            want = fu != lu;
          else if (o == "&")
            want = (fu & lu) != 0;
          else if (f.is_signed) {
            const int64_t a = sx(fu), b = sx(lu);
            want = o == "<" ? a < b : o == "<=" ? a <= b : o == ">" ? a > b : a >= b;
          } else {
            want = o == "<" ? fu < lu : o == "<=" ? fu <= lu : o == ">" ? fu > lu : fu >= lu;
          }
          INFO(expr << " with value " << v);
          CHECK(prog->match(rec.span()) == want);
          // The negation folds the verdict's inversion into the one-lane path
          // (Program::single_): both senses must hold.
          CHECK(neg_prog->match(rec.span()) == !want);
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 5000);
}

TEST_CASE("eval: literals the kernel rejects", "[filters][eval]") {
  CHECK(must_fail("u32 == -1", K()).message() == "Illegal integer value");  // -1 on unsigned
  CHECK(must_fail("u64 == 18446744073709551616", K()).message() == "Illegal integer value");
  CHECK(must_fail("s64 == 9223372036854775808", K()).message() == "Illegal integer value");
  CHECK(must_fail("s64 == -9223372036854775809", K()).message() == "Illegal integer value");
  CHECK(must_fail("s8 == 08", K()).message() == "Illegal integer value");  // not octal
  CHECK(must_fail("s8 == 0x", K()).message() == "Illegal integer value");
  CHECK(must_fail("u8 ~ 1", K()).message() == "Illegal operation for field type");
  CHECK(must_fail("u8 == +1", K()).message() == "Invalid value (did you forget quotes)?");
  CHECK(must_fail("u8 == 1000000000000000000000000", K()).message() == "Operand too long");
}

TEST_CASE("eval: char[N] strings, including the kernel's length quirks", "[filters][eval]") {
  Record r(kFixed);
  r.chars(40, "abc");  // arr = "abc\0\0\0\0\0"
  CHECK(eval("arr == \"abc\"", r));
  CHECK(eval("arr == 'abc'", r));
  CHECK_FALSE(eval("arr == \"ab\"", r));
  CHECK(eval("arr != \"abd\"", r));
  CHECK(eval("arr ~ \"ab*\"", r));
  CHECK(eval("arr ~ \"*b*\"", r));
  CHECK(eval("arr ~ \"a?c\"", r));
  CHECK(eval("arr ~ \"[a-c]bc\"", r));
  CHECK_FALSE(eval("arr ~ \"abc?\"", r));
  CHECK(eval("arr ~ \"!x*\"", r));          // leading '!' inverts (oracle 013)
  CHECK_FALSE(eval("arr == \"abc*\"", r));  // == never globs (oracle 014)
  // "*suffix" compares the bytes [N-1-len, N-1): only N-1 character strings match (oracle 009).
  CHECK_FALSE(eval("arr ~ \"*abc\"", r));
  Record full7(kFixed);
  full7.chars(40, "abcdefg");
  CHECK(eval("arr ~ \"*efg\"", full7));
  CHECK(eval("arr ~ \"*\"", full7));
  // No NUL in the array: the string is the N bytes.
  Record full8(kFixed);
  full8.chars(40, "abcdefgh");
  CHECK(eval("arr == \"abcdefgh\"", full8));
  CHECK(eval("arr == \"abcdefghXYZ\"", full8));  // strncmp(str, pattern, N): only N bytes compared
  CHECK_FALSE(eval("arr ~ \"*fgh\"", full8));    // compares [4,7) = "efg"
  CHECK(eval("arr ~ \"*efg\"", full8));
  CHECK(eval("arr ~ \"abc*h\"", full8));  // the glob stops at the array's end
  CHECK_FALSE(eval("arr ~ \"abc*h?\"", full8));
  CHECK(eval("arr ~ \"*gh*\"", full8));
  // Empty strings.
  Record empty(kFixed);
  CHECK(eval("arr == \"\"", empty));
  CHECK_FALSE(eval("arr == \"\"", r));
  CHECK(eval("arr ~ \"*\"", empty));
  // MATCH_INDEX: a pattern starting with a digit is compared whole, '*' included.
  Record digits(kFixed);
  digits.chars(40, "1*");
  CHECK(eval("arr ~ \"1*\"", digits));
  CHECK_FALSE(eval("arr ~ \"1*\"", with<char>(40, '1')));
  // The kernel's glob reads past the terminator: "[!a]" matches the NUL.
  Record x(kFixed);
  x.chars(40, "x");
  CHECK(eval("arr ~ \"x[!a]\"", x));
  // A malformed class is literal text (oracle 016).
  Record bracket(kFixed);
  bracket.chars(40, "[a");
  CHECK(eval("arr ~ \"[a\"", bracket));
  CHECK_FALSE(eval("arr ~ \"[a\"", r));
}

TEST_CASE("eval: __data_loc and __rel_loc strings", "[filters][eval]") {
  Record r(kFixed);
  r.data_loc(48, "/usr/bin/env").rel_loc(52, "world");
  CHECK(eval("dyn == \"/usr/bin/env\"", r));
  CHECK(eval("dyn ~ \"*env\"", r));  // a real suffix match on __data_loc (oracle 043)
  CHECK(eval("dyn ~ \"/usr/bin/*\"", r));
  CHECK(eval("dyn ~ \"*bin*\"", r));
  CHECK(eval("dyn ~ \"/usr/bin/[a-e]*\"", r));
  CHECK_FALSE(eval("dyn == \"/usr/bin\"", r));
  CHECK(eval("rel == \"world\"", r));
  CHECK(eval("rel ~ \"*rld\"", r));
  CHECK(eval("rel != \"word\"", r));
  // Empty string ("" + NUL, len 1).
  Record e(kFixed);
  e.data_loc(48, "");
  CHECK(eval("dyn == \"\"", e));
  CHECK_FALSE(eval("dyn ~ \"*\"",
                   Record(kFixed).data_loc(48, "", false)));  // len 0: end match needs len >= 1
  CHECK(eval("dyn == \"\"",
             Record(kFixed).data_loc(48, "", false)));  // len 0: strcmp on the bytes there
}

TEST_CASE("eval: a __data_loc pointing outside the record reads as an empty string",
          "[filters][eval]") {
  Record r(kFixed);
  r.set<uint32_t>(48, (5u << 16) | 4000u);  // offset 4000, len 5: beyond the 96-byte record
  CHECK(eval("dyn == \"\"", r));
  CHECK_FALSE(eval("dyn == \"x\"", r));
  CHECK(eval("dyn != \"x\"", r));
  CHECK_FALSE(eval("dyn ~ \"*x*\"", r));
  CHECK_FALSE(eval("dyn ~ \"*x\"", r));
  CHECK(eval("dyn ~ \"*\"", r));  // the kernel: len - 1 >= 0 and an empty suffix
  // Length running past the end: only the bytes inside the record are read.
  Record cut(kFixed);
  cut.set<uint32_t>(48, (200u << 16) | 92u).chars(92, "abcd");
  CHECK(eval("dyn ~ \"ab*\"", cut));
  CHECK(eval("dyn ~ \"*bcd*\"", cut));
  CHECK_FALSE(eval("dyn ~ \"*bcde*\"", cut));
  CHECK_FALSE(eval("dyn ~ \"*abcd\"", cut));  // the suffix window lies outside the record
}

TEST_CASE("eval: char * strings go through the resolver, unknown is false even for !=",
          "[filters][eval]") {
  static const std::map<uint64_t, std::string> strings = {{0x1000, "Start context switch"},
                                                          {0x2000, "End"}};
  auto resolve = [](uint64_t a, bool, const void*) noexcept -> ResolvedString {
    auto it = strings.find(a);
    return it == strings.end() ? ResolvedString{} : ResolvedString{it->second, true};
  };
  EvalContext ctx;
  ctx.resolve = resolve;
  CHECK(eval("ptr == \"Start context switch\"", with<uint64_t>(56, 0x1000), ctx));
  CHECK(eval("ptr ~ \"End*\"", with<uint64_t>(56, 0x2000), ctx));
  CHECK(eval("ptr ~ \"*switch\"", with<uint64_t>(56, 0x1000), ctx));
  CHECK_FALSE(eval("ptr != \"x\"", with<uint64_t>(56, 0x3000), ctx));  // unreadable: false
  CHECK_FALSE(eval("ptr != \"x\"", with<uint64_t>(56, 0x1000), {}));   // no resolver: false
  CHECK(eval("!(ptr == \"x\")", with<uint64_t>(56, 0x3000), ctx));
  bool user = false;
  auto spy = [](uint64_t, bool u, const void* p) noexcept -> ResolvedString {
    *static_cast<bool*>(const_cast<void*>(p)) = u;
    return {"x", true};
  };
  EvalContext c2;
  c2.resolve = spy;
  c2.resolve_user = &user;
  CHECK(eval("ptr.ustring == \"x\"", with<uint64_t>(56, 1), c2));
  CHECK(user);
}

TEST_CASE("eval: COMM/comm come from the context with TASK_COMM_LEN semantics", "[filters][eval]") {
  EvalContext ctx;
  ctx.comm = "hackbench";
  Record r(kFixed);
  CHECK(eval("COMM == \"hackbench\"", r, ctx));
  CHECK(eval("comm ~ \"hack*\"", r, ctx));
  CHECK(eval("comm != \"sh\"", r, ctx));
  CHECK_FALSE(eval("comm ~ \"*bench\"", r, ctx));  // suffix only for 15-character comms
  ctx.comm = "kcap_xhackbench";                    // 15 characters (oracle 009)
  CHECK(eval("comm ~ \"*bench\"", r, ctx));
  ctx.comm = "a_very_long_name_beyond_16";  // the kernel's comm has at most 15 bytes
  CHECK(eval("comm == \"a_very_long_nam\"", r, ctx));
  CHECK(must_fail("COMM == 1", K()).message() == "Expecting string field");
  CHECK(must_fail("COMM < \"a\"", K()).message() == "Illegal operation for field type");
}

TEST_CASE("eval: CPU, cpu and common_cpu are the context's CPU", "[filters][eval]") {
  Record r(kFixed);
  EvalContext ctx;
  ctx.cpu = 1;
  CHECK(eval("CPU == 1", r, ctx));
  CHECK(eval("cpu != 0", r, ctx));
  CHECK(eval("common_cpu >= 1 && common_cpu < 2", r, ctx));
  CHECK(eval("CPU > -1", r, ctx));
  CHECK_FALSE(eval("CPU & 1", r, ctx));       // accepted by the kernel, never true
  CHECK(eval("CPU == 0x100000001", r, ctx));  // compared as int
  CHECK(eval("CPU & CPUS{1}", r, ctx));       // one CPU: == (oracle 026)
  CHECK_FALSE(eval("CPU & CPUS{0}", r, ctx));
  CHECK(eval("CPU & CPUS{0-1}", r, ctx));
  CHECK_FALSE(eval("CPU & CPUS{0,2}", r, ctx));
  CHECK_FALSE(eval("CPU == CPUS{0-1}", r, ctx));  // a scalar never equals 2+ CPUs
  CHECK(eval("CPU != CPUS{0-1}", r, ctx));
  CHECK(eval("CPU != CPUS{0}", r, ctx));
  CHECK(must_fail("CPU < CPUS{1}", K()).message() == "Illegal operation for field type");
  CHECK(must_fail("CPU == \"1\"", K()).message() == "Expecting numeric field");
}

TEST_CASE("eval: integer fields against CPUS{...}", "[filters][eval]") {
  CHECK(eval("u32 & CPUS{1}", with<uint32_t>(20, 1)));  // weight one: u32 == 1 (oracle 037)
  CHECK_FALSE(eval("u32 & CPUS{1}", with<uint32_t>(20, 3)));
  CHECK(eval("u32 != CPUS{1}", with<uint32_t>(20, 3)));
  CHECK(eval("u32 & CPUS{1-2}", with<uint32_t>(20, 2)));
  CHECK_FALSE(eval("u32 & CPUS{1-2}", with<uint32_t>(20, 0)));
  CHECK_FALSE(eval("u32 & CPUS{1-2}", with<uint32_t>(20, 9)));   // >= nr_cpu_ids (4): false
  CHECK_FALSE(eval("u32 != CPUS{1-2}", with<uint32_t>(20, 9)));  // ... for every operator
  CHECK(eval("u32 != CPUS{1-2}", with<uint32_t>(20, 3)));
  CHECK_FALSE(eval("u32 == CPUS{1-2}", with<uint32_t>(20, 1)));
  CHECK(eval("u64 & CPUS{0,3}", with<uint64_t>(32, 3)));
  CHECK_FALSE(
      eval("u64 & CPUS{0,3}", with<uint64_t>(32, (uint64_t{1} << 32) | 7)));  // truncated to 7
  CHECK(eval("u8 & CPUS{2-3}", with<uint8_t>(9, 2)));
  CHECK(eval("u16 == CPUS{2}", with<uint16_t>(12, 2)));
  CHECK(must_fail("arr & CPUS{1}", K()).message() == "Illegal operation for field type");
  CHECK(must_fail("u8 & CPUS{4}", K()).message() == "Invalid cpulist");  // nr_cpu_ids = 4
}

TEST_CASE("eval: __data_loc cpumask fields", "[filters][eval]") {
  auto mask_rec = [](uint64_t bits) {
    Record r(kFixed);
    std::byte b[8];
    std::memcpy(b, &bits, 8);
    r.set<uint32_t>(64, (8u << 16) | static_cast<uint32_t>(kFixed));
    r.raw_append(b);
    return r;
  };
  CHECK(eval("mask & CPUS{1}", mask_rec(0b0110)));
  CHECK_FALSE(eval("mask & CPUS{0}", mask_rec(0b0110)));
  CHECK(eval("mask == CPUS{1}", mask_rec(0b0010)));
  CHECK_FALSE(eval("mask == CPUS{1}", mask_rec(0b0110)));  // more than that one CPU
  CHECK(eval("mask != CPUS{1}", mask_rec(0b0110)));
  CHECK(eval("mask == CPUS{1-2}", mask_rec(0b0110)));
  CHECK_FALSE(eval("mask == CPUS{1-2}", mask_rec(0b0111)));
  CHECK(eval("mask & CPUS{0,3}", mask_rec(0b1000)));
  CHECK_FALSE(eval("mask & CPUS{0,3}", mask_rec(0b0110)));
  CHECK(eval("mask == CPUS{0-1}", mask_rec(0b10011)));  // bits >= nr_cpu_ids (4) are ignored
  // Numbers compare the 4-byte __data_loc word itself (the kernel does this).
  CHECK(eval("mask == 0x80060", mask_rec(0)));
  CHECK(must_fail("mask ~ \"a\"", K()).message() == "Expecting numeric field");
}

TEST_CASE("eval: FIELD.function is a range test on the symbol", "[filters][eval]") {
  CompileOptions opt;
  opt.symbol_by_name = [](std::string_view n) -> std::optional<SymbolRange> {
    if (n == "__alloc_skb") return SymbolRange{0xffffffff81e3d520ull, 0x1a0};
    return std::nullopt;
  };
  opt.symbol_by_address = [](uint64_t a) -> std::optional<SymbolRange> {
    if (a >= 0xffffffff81e3d520ull && a < 0xffffffff81e3d6c0ull)
      return SymbolRange{0xffffffff81e3d520ull, 0x1a0};
    return std::nullopt;
  };
  CHECK(eval("call_site.function == __alloc_skb", with<uint64_t>(88, 0xffffffff81e3d520ull), {},
             opt));
  CHECK(eval("call_site.function == __alloc_skb", with<uint64_t>(88, 0xffffffff81e3d6bfull), {},
             opt));
  CHECK_FALSE(eval("call_site.function == __alloc_skb", with<uint64_t>(88, 0xffffffff81e3d6c0ull),
                   {}, opt));
  CHECK(eval("call_site.function != __alloc_skb", with<uint64_t>(88, 1), {}, opt));
  CHECK(eval("call_site.function == 0xffffffff81e3d600", with<uint64_t>(88, 0xffffffff81e3d530ull),
             {}, opt));
  CHECK(must_fail("call_site.function == kfree", K(), opt).message() == "Function not found");
  CHECK(must_fail("call_site.function > __alloc_skb", K(), opt).message() == "Invalid operator");
  CHECK(must_fail("u32.function == __alloc_skb", K(), opt).message() ==
        "Illegal operation for field type");
}

TEST_CASE("eval: predicates the kernel accepts but never makes true", "[filters][eval]") {
  Record r(kFixed);
  CHECK_FALSE(eval("stacktrace == 0", r));  // oracle 035
  CHECK_FALSE(eval("stacktrace != 0", r));
  CHECK_FALSE(eval("STACKTRACE > 0", r));
  CHECK_FALSE(eval("longs == 0", r));  // an array of integers (oracle 047)
  CHECK_FALSE(eval("longs != 0", r));
  CHECK(eval("!(longs == 0)", r));
}

TEST_CASE("eval: regular expressions (tracepipe extension =~ and !~)", "[filters][eval]") {
  Record r(kFixed);
  r.data_loc(48, "kworker/1:2").chars(40, "sh");
  CHECK(eval("dyn =~ \"^kworker/[0-9]+:[0-9]+$\"", r));
  CHECK_FALSE(eval("dyn =~ \"^worker\"", r));
  CHECK(eval("dyn !~ \"^worker\"", r));
  CHECK(eval("arr =~ \"^s.$\"", r));
  EvalContext ctx;
  ctx.comm = "bash";
  CHECK(eval("comm =~ \"(ba|z)sh\"", r, ctx));
  const FilterError e = must_fail("dyn =~ \"(unclosed\"", K());
  CHECK(e.code == FilterErr::invalid_regex);
  CHECK(e.render("dyn =~ \"(unclosed\"").find("extension") != std::string::npos);
  CHECK(must_fail("u32 =~ \"1\"", K()).message() == "Expecting numeric field");
  CompileOptions strict;
  strict.extensions = false;
  CHECK(must_fail("dyn =~ \"x\"", K(), strict).message() == "Invalid operator");
}

TEST_CASE("eval: records shorter than the program's fields", "[filters][eval]") {
  const auto prog = must_compile("u64 == 0 || s8 == 0", K());
  CHECK(prog->min_record_size() == 40);
  Record shorter(16);                  // s8 (offset 8) present, u64 (offset 32) cut off
  CHECK(prog->match(shorter.span()));  // u64 == 0 is false, s8 == 0 true
  shorter.set<int8_t>(8, 5);
  CHECK_FALSE(prog->match(shorter.span()));
  CHECK(must_compile("!(u64 == 0)", K())->match(shorter.span()));
  CHECK_FALSE(must_compile("u64 != 0", K())->match(shorter.span()));
  CHECK_FALSE(must_compile("arr == \"\"", K())->match(Record(44).span()));  // char[8] cut off
  CHECK_FALSE(
      must_compile("dyn == \"\"", K())->match(Record(50).span()));  // __data_loc word cut off
  CHECK_FALSE(prog->match(std::span<const std::byte>()));
}

// The inline path of one char[N] predicate (Program::eval_single_string:
// masked 8-byte compares) against the walk (explain() always walks), over
// field sizes, offsets, record lengths (short ones take the walk), patterns
// of 0..20 bytes in every mode, and field contents with and without a NUL.
TEST_CASE("eval: one char[N] predicate inline agrees with the walk", "[filters][eval]") {
  uint64_t seed = 42;
  auto rnd = [&] {
    return seed = seed * 6364136223846793005ull + 1442695040888963407ull, seed >> 33;
  };
  const std::string alphabet = "ab";
  int checked = 0, inline_paths = 0, value_form = 0;
  for (uint32_t n : {1u, 3u, 7u, 8u, 9u, 15u, 16u, 17u, 24u}) {
    for (uint32_t off : {8u, 13u}) {
      const std::vector<FieldDesc> fields = {
          make_field("char[" + std::to_string(n) + "]", "s", off, n, false)};
      for (int k = 0; k < 60; ++k) {
        std::string pat;
        const size_t plen = rnd() % 21;
        for (size_t i = 0; i < plen; ++i) pat += alphabet[rnd() % 2];
        for (const std::string& expr :
             {"s == \"" + pat + "\"", "s != \"" + pat + "\"", "s ~ \"" + pat + "*\"",
              "s ~ \"!" + pat + "*\"", "s ~ \"" + pat + "\""}) {
          const CompileResult c = compile(expr, fields);
          REQUIRE(c.ok());
          for (int r = 0; r < 12; ++r) {
            std::vector<std::byte> rec(off + n + 16, std::byte{0});
            const size_t fill = rnd() % (n + 1);  // then NULs: with and without a terminator
            for (size_t i = 0; i < fill; ++i)
              rec[off + i] = static_cast<std::byte>(alphabet[rnd() % 2]);
            if (r % 3 == 0 && fill > 0)
              rec[off + rnd() % fill] = static_cast<std::byte>('a' + (r % 5 == 0));
            for (size_t i = off + n; i < rec.size(); ++i)
              rec[i] = static_cast<std::byte>('a');  // after the field
            for (size_t len : {rec.size(), size_t{off + n}, size_t{off + n} + 7, size_t{off + 1}}) {
              const std::span<const std::byte> view(rec.data(), std::min(len, rec.size()));
              INFO(expr << " n=" << n << " off=" << off << " len=" << view.size());
              CHECK(c.program()->match(view, {}) == c.program()->explain(view).matched);
              ++checked;
              inline_paths += view.size() >= off + 16;
              // The value form (EventDecl::trace's reject-first step): the
              // field's 16 bytes as two words, whatever follows the field
              // (here 'a's, in the record; zeros, as Chars::put builds them).
              const uint32_t pos = c.program()->single_string_pos(view.size());
              if (pos != UINT32_MAX) {
                REQUIRE(pos == off);
                uint64_t w[2], z[2] = {0, 0};
                std::memcpy(w, rec.data() + off, 16);
                std::memcpy(z, rec.data() + off, std::min<size_t>(n, 16));
                const bool want = c.program()->explain(view).matched;
                CHECK(c.program()->match_words(w) == want);
                CHECK(c.program()->match_words(z) == want);
                ++value_form;
              }
            }
          }
        }
      }
    }
  }
  CHECK(checked > 10000);
  CHECK(inline_paths > 1000);
  CHECK(value_form > 1000);
}

// The inline path of one CPU compare (Program::single_cpu_: a range of the
// CPU with its sign bit flipped) against the walk (explain() always walks),
// for every operator, literals at and around the int limits, negation, and
// context CPUs across the whole uint32 range (replay gives the recorded one).
TEST_CASE("eval: one CPU compare inline agrees with the walk", "[filters][eval]") {
  const Record rec(kFixed);
  const char* ops[] = {"==", "!=", "<", "<=", ">", ">="};
  const char* lits[] = {"-2147483648", "-2147483647", "-2",          "-1",
                        "0",           "1",           "2",           "3",
                        "2147483646",  "2147483647",  "0x100000001", "0xffffffff"};
  const uint32_t cpus[] = {0,          1,          2,          3,          4,         0x7ffffffe,
                           0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff};
  int checked = 0, trues = 0;
  for (const char* op : ops) {
    for (const char* lit : lits) {
      for (const bool neg : {false, true}) {
        const std::string inner = std::string("CPU ") + op + " " + lit;
        const std::string expr = neg ? "!(" + inner + ")" : inner;
        const CompileResult c = compile(expr, K());
        REQUIRE(c.ok());
        for (const uint32_t cpu : cpus) {
          EvalContext ctx;
          ctx.cpu = cpu;
          INFO(expr << " cpu=" << cpu);
          const bool m = c.program()->match(rec.span(), ctx);
          CHECK(m == c.program()->explain(rec.span(), ctx).matched);
          ++checked;
          trues += m;
        }
      }
    }
  }
  CHECK(checked == 6 * 12 * 2 * 11);
  CHECK(trues > checked / 4);  // both verdicts are exercised
  CHECK(trues < 3 * checked / 4);
  // Spot values the kernel gives: int compare of the CPU with (int)val.
  EvalContext one;
  one.cpu = 1;
  CHECK(must_compile("CPU >= 1", K())->match(rec.span(), one));
  CHECK_FALSE(must_compile("CPU < 1", K())->match(rec.span(), one));
  CHECK(must_compile("CPU > -1", K())->match(rec.span(), one));
  CHECK(must_compile("CPU == 0x100000001", K())->match(rec.span(), one));
  CHECK_FALSE(must_compile("!(cpu != 1)", K())->match(rec.span(), EvalContext{}));
}
