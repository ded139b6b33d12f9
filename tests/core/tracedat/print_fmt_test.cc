#include "tracepipe/core/tracedat/print_fmt.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "test_support.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

using namespace tracepipe;

namespace {

// A payload builder: common header, then fields at given offsets.
struct Rec {
  std::vector<std::byte> b = std::vector<std::byte>(64);
  template <typename T>
  Rec& put(size_t off, T v) {
    if (off + sizeof(T) > b.size()) b.resize(off + sizeof(T));
    std::memcpy(&b[off], &v, sizeof(T));
    return *this;
  }
  Rec& str(size_t off, std::string_view s) {
    if (off + s.size() + 1 > b.size()) b.resize(off + s.size() + 1);
    std::memcpy(&b[off], s.data(), s.size());
    b[off + s.size()] = std::byte{0};
    return *this;
  }
};

EventFormat fmt_of(std::vector<FormatField> fields, std::string print_fmt) {
  return EventFormat{
      "test", "ev", 500, kernel_common_fields(), std::move(fields), std::move(print_fmt)};
}

std::string render(const EventFormat& f, const Rec& r, const PrintContext& ctx = {}) {
  const PrintFmt p(f);
  INFO(p.error());
  CHECK(p.ok());
  return p.render(r.b, ctx);
}

const std::vector<FormatField> kInts = {
    {"int", "i", 8, 4, true},          {"unsigned int", "u", 12, 4, false},
    {"long", "l", 16, 8, true},        {"u64", "q", 24, 8, false},
    {"short", "s", 32, 2, true},       {"unsigned char", "c", 34, 1, false},
    {"char[8]", "name", 36, 8, false}, {"unsigned long[3]", "args", 48, 24, false},
};

}  // namespace

TEST_CASE("print_fmt: integer conversions, flags, width, precision, length", "[tracedat][print]") {
  Rec r;
  r.put<int32_t>(8, -42)
      .put<uint32_t>(12, 0xdeadbeef)
      .put<int64_t>(16, -5)
      .put<uint64_t>(24, 0x123456789abcull);
  r.put<int16_t>(32, -2).put<uint8_t>(34, 'A').str(36, "abc");
  r.put<uint64_t>(48, 1).put<uint64_t>(56, 0xff).put<uint64_t>(64, 3);
  CHECK(
      render(fmt_of(kInts, R"("i=%d u=%u x=%x X=%X o=%o", REC->i, REC->u, REC->u, REC->u, REC->c)"),
             r) == "i=-42 u=3735928559 x=deadbeef X=DEADBEEF o=101");
  CHECK(
      render(fmt_of(kInts, R"("[%5d|%-5d|%05d|%+d|% d]", REC->i, REC->i, REC->c, REC->c, REC->c)"),
             r) == "[  -42|-42  |00065|+65| 65]");
  CHECK(
      render(
          fmt_of(kInts,
                 R"("%ld %lld %lu %llx %lx %zu", REC->l, REC->q, REC->q, REC->q, REC->l, REC->q)"),
          r) == "-5 20015998343868 20015998343868 123456789abc fffffffffffffffb 20015998343868");
  CHECK(
      render(fmt_of(kInts,
                    R"("%hd %d %hhu %c %03d %#x", REC->s, REC->s, REC->u, REC->c, REC->c, REC->c)"),
             r) == "-2 -2 239 A 065 0x41");
  CHECK(render(fmt_of(kInts, R"("%*d|%-*d|%.*s", 4, REC->c, 4, REC->c, 2, REC->name)"), r) ==
        "  65|65  |ab");
  CHECK(render(fmt_of(kInts,
                      R"("100%% %s:%8s:%-6s:%.1s", REC->name, REC->name, REC->name, REC->name)"),
               r) == "100% abc:     abc:abc   :a");
  CHECK(render(fmt_of(kInts, R"("%lx,%lx,%lx", REC->args[0], REC->args[1], REC->args[2])"), r) ==
        "1,ff,3");
  CHECK(render(fmt_of(kInts, "\"tab\\tnl\\n\\\"q\\\" \\\\ \\x41\\101\" \"concat\""), r) ==
        "tab\tnl\n\"q\" \\ AAconcat");
}

TEST_CASE("print_fmt: expressions, casts, ternaries", "[tracedat][print]") {
  Rec r;
  r.put<int32_t>(8, -42)
      .put<uint32_t>(12, 0xdeadbeef)
      .put<int64_t>(16, -5)
      .put<uint64_t>(24, 0x100000);
  CHECK(
      render(
          fmt_of(
              kInts,
              R"("%u %u %d %d", ((unsigned int) ((REC->q) >> 20)), ((unsigned int) ((REC->q) & ((1U << 20) - 1))), -REC->i / 6 % 4, !REC->i)"),
          r) == "1 0 3 0");
  CHECK(
      render(
          fmt_of(
              kInts,
              R"("%s%s", REC->i < 0 ? "neg" : "pos", (REC->u & 0xf) == 0xf && REC->l ? "+" : "-")"),
          r) == "neg+");
  CHECK(
      render(
          fmt_of(
              kInts,
              R"("%d %u %d %llu", (char)REC->u, (u8)REC->u, (short)0x18000, (unsigned long long)REC->i)"),
          r) == "-17 239 -32768 18446744073709551574");
  CHECK(render(fmt_of(kInts, R"("%llu", (((u64)(REC)->u << 32) | (REC)->c))"), r) ==
        "16045690981097406464");
  CHECK(render(fmt_of(kInts, R"("%d %d %d", 7 - 2 * 3, (7 - 2) * 3, 1 << 4 | 1)"), r) == "1 15 17");
}

TEST_CASE("print_fmt: strings and dynamic arrays", "[tracedat][print]") {
  const EventFormat f = fmt_of(
      {{"__data_loc char[]", "name", 8, 4, false},
       {"__rel_loc char[]", "rel", 12, 4, false},
       {"__data_loc u8[]", "buf", 16, 4, false},
       {"__data_loc cpumask_t", "mask", 20, 4, false}},
      R"("%s|%s|%d|%s|%s|%s|%s", __get_str(name), __get_rel_str(rel), __get_dynamic_array_len(buf), __print_hex(__get_dynamic_array(buf), __get_dynamic_array_len(buf)), __print_hex_str(__get_dynamic_array(buf), 2), __print_array(__get_dynamic_array(buf), 3, 1), __get_cpumask(mask))");
  Rec r;
  r.put<uint32_t>(8, (6u << 16) | 32).str(32, "hello");
  r.put<uint32_t>(12, (3u << 16) | 24).str(40, "yo");  // 12 + 4 + 24 = 40
  r.put<uint32_t>(16, (3u << 16) | 44)
      .put<uint8_t>(44, 0xab)
      .put<uint8_t>(45, 0x01)
      .put<uint8_t>(46, 0xff);
  r.put<uint32_t>(20, (8u << 16) | 48).put<uint64_t>(48, 0x3);
  CHECK(render(f, r) == "hello|yo|3|ab 01 ff|ab01|{0xab,0x1,0xff}|00000000,00000003");
}

TEST_CASE("print_fmt: flags and symbolic tables like the kernel", "[tracedat][print]") {
  const EventFormat f = fmt_of(
      {{"unsigned long", "flags", 8, 8, false}, {"int", "mode", 16, 4, true}},
      R"("%s / %s / %s", __print_flags(REC->flags, "|", { 0x1, "A" }, { 0x2, "B" }, { 0x6, "BC" }, { 0, "NONE" }), __print_symbolic(REC->mode, { UNKNOWN_ENUM, "zero?" }, { 0, "ZERO" }, { 1, "ONE" }, { -1, "MINUS" }), __print_symbolic(REC->mode, { 5, "FIVE" }, { 0, ((void *)0) }))");
  Rec r;
  r.put<uint64_t>(8, 0x1 | 0x6 | 0x10).put<int32_t>(16, 0);
  CHECK(render(f, r) == "A|B|0x14 / ZERO / 0x0");  // table order decides: B before BC
  r.put<uint64_t>(8, 0).put<int32_t>(16, -1);
  CHECK(render(f, r) == "NONE / MINUS / 0xffffffffffffffff");
  r.put<uint64_t>(8, 0x2).put<int32_t>(16, 1);
  CHECK(render(f, r) == "B / ONE / 0x1");
}

TEST_CASE("print_fmt: pointers, symbols, printk strings, addresses", "[tracedat][print]") {
  const EventFormat f = fmt_of(
      {{"void *", "p", 8, 8, false},
       {"const char *", "s", 16, 8, false},
       {"unsigned char[6]", "mac", 24, 6, false},
       {"u8[4]", "ip4", 32, 4, false},
       {"u8[16]", "ip6", 36, 16, false}},
      R"("%p %pS %ps %pF %s %pM %pm %pI4 %pi4 %pI6c", REC->p, REC->p, REC->p, REC->p, REC->s, REC->mac, REC->mac, REC->ip4, REC->ip4, REC->ip6)");
  Rec r;
  r.put<uint64_t>(8, 0xffffffff81000010ull).put<uint64_t>(16, 0xffffffff82000000ull);
  const uint8_t mac[6] = {0, 0x1b, 0x21, 0xa, 0xb, 0xc};
  std::memcpy(&r.b[24], mac, 6);
  const uint8_t ip4[4] = {10, 0, 0, 1};
  std::memcpy(&r.b[32], ip4, 4);
  uint8_t ip6[16] = {0x20, 0x01, 0x0d, 0xb8};
  ip6[15] = 1;
  std::memcpy(&r.b[36], ip6, 16);
  const KallsymsTable ks("ffffffff81000000 T _stext\nffffffff81000100 t other\n");
  const PrintkTable pk("0xffffffff82000000 : \"a kernel string\"\n");
  CHECK(render(f, r, {&ks, &pk}) ==
        "0xffffffff81000010 _stext+0x10 _stext _stext+0x10 a kernel string 00:1b:21:0a:0b:0c "
        "001b210a0b0c "
        "10.0.0.1 010.000.000.001 2001:db8::1");
  CHECK(render(f, r) ==
        "0xffffffff81000010 0xffffffff81000010 0xffffffff81000010 0xffffffff81000010 "
        "ffffffff82000000 "
        "00:1b:21:0a:0b:0c 001b210a0b0c 10.0.0.1 010.000.000.001 2001:db8::1");
  r.put<uint64_t>(8, 0);
  CHECK(render(fmt_of({{"void *", "p", 8, 8, false}}, R"("%p|%pS", REC->p, REC->p)"), r) ==
        "(nil)|(nil)");
}

TEST_CASE("print_fmt: what cannot be rendered falls back to the field list", "[tracedat][print]") {
  const std::vector<FormatField> fields = {{"int", "a", 8, 4, true},
                                           {"unsigned long", "b", 16, 8, false},
                                           {"char[6]", "c", 24, 6, false},
                                           {"__data_loc char[]", "d", 32, 4, false},
                                           {"u8[2]", "e", 36, 2, false}};
  Rec r;
  r.put<int32_t>(8, -3)
      .put<uint64_t>(16, 255)
      .str(24, "xy")
      .put<uint32_t>(32, (3u << 16) | 40)
      .str(40, "zz");
  r.put<uint8_t>(36, 1).put<uint8_t>(37, 0xfe);
  const std::string fallback = "[FAILED TO PARSE] a=-3 b=0xff c=xy d=zz e=ARRAY[01, fe]";
  for (const char* bad : {R"("%d", nosuchhelper(REC->a))", R"("%d", REC->nosuchfield)",
                          R"("%d %d", REC->a)", R"("%d" REC->a)", R"("%y", REC->a)", R"(no quotes)",
                          R"("%d", (REC->a)", R"("%d", sizeof(int))"}) {
    const PrintFmt p(fmt_of(fields, bad));
    INFO(bad);
    CHECK_FALSE(p.ok());
    CHECK_FALSE(p.error().empty());
    CHECK(p.render(r.b) == fallback);
  }
  // Runtime failures: unknown identifier evaluated, division by zero, a
  // string where a number is needed, a record too short for the field.
  for (const char* bad : {R"("%d", SOME_ENUM)", R"("%d", REC->a / 0)", R"("%d", __get_str(d))",
                          R"("%d", REC->b + "x")"}) {
    const PrintFmt p(fmt_of(fields, bad));
    INFO(bad);
    CHECK(p.ok());
    CHECK(p.render(r.b) == fallback);
  }
  const PrintFmt p(fmt_of(fields, R"("%lu", REC->b)"));
  Rec shortrec;
  shortrec.b.resize(20);
  CHECK(p.render(shortrec.b).substr(0, 17) == "[FAILED TO PARSE]");
}

TEST_CASE("print_fmt: every format of the captured kernel compiles", "[tracedat][print]") {
  const auto path = tp_test::shared_data_or_skip("kernel/hackbench.dat");
  const auto r = TraceDatReader::open(path);
  for (const auto& f : r.formats()) {
    INFO(f.system << "/" << f.name << ": " << f.print_fmt);
    const PrintFmt p(f);
    CHECK(p.ok());
    CHECK(p.error().empty());
  }
}
