// Evaluation and formatting of compiled print fmts (see print_fmt.h).
#include "tracepipe/core/tracedat/print_fmt.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
#include <optional>

#include "tracepipe/core/tracedat/print_fmt_ast.h"

namespace tracepipe {
namespace {

using detail::Expr;
using detail::Helper;
using detail::Op;
using detail::Piece;
using detail::PrintProgram;

uint64_t load_le(const std::byte* p, uint32_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p, size);  // little endian host and data
  return v;
}

uint64_t sign_extend(uint64_t v, uint32_t size) {
  if (size >= 8) return v;
  const uint32_t bits = size * 8;
  const uint64_t m = uint64_t{1} << (bits - 1);
  v &= (m << 1) - 1;
  return (v ^ m) - m;
}

uint64_t truncate(uint64_t v, uint32_t size) {
  return size >= 8 ? v : v & ((uint64_t{1} << (size * 8)) - 1);
}

// Byte size of an array element from its type name ("unsigned long" -> 8).
uint32_t element_size(const FormatField& f) {
  if (const auto n = f.array_length(); n && *n > 0 && f.size % *n == 0) return f.size / *n;
  const std::string t = f.element_type();
  if (t.find('*') != std::string::npos) return 8;
  if (t.find("long") != std::string::npos || t.find("64") != std::string::npos) return 8;
  if (t.find("short") != std::string::npos || t.find("16") != std::string::npos) return 2;
  if (t.find("char") != std::string::npos || t.find("8") != std::string::npos || t == "bool")
    return 1;
  return 4;
}

struct Value {
  enum class Kind : uint8_t { integer, text, bytes } kind = Kind::integer;
  uint64_t bits = 0;
  bool is_signed = false;
  std::string_view text;
  std::span<const std::byte> bytes;
  uint32_t elem_size = 1;
  bool elem_signed = false;
  bool is_char_array = false;
  bool is_pointer_field = false;  // a pointer-sized non-array field (for "%s" -> printk)
};

Value integer(uint64_t bits, bool is_signed) {
  Value v;
  v.bits = bits;
  v.is_signed = is_signed;
  return v;
}

Value text(std::string_view s) {
  Value v;
  v.kind = Value::Kind::text;
  v.text = s;
  return v;
}

std::string_view until_nul(std::span<const std::byte> b) {
  const auto* p = reinterpret_cast<const char*>(b.data());
  const auto* end = std::find(p, p + b.size(), '\0');
  return {p, static_cast<size_t>(end - p)};
}

// Kernel trace_print_bitmask_seq layout: the mask as hex, most significant
// 32-bit word first, words separated by commas.
std::string bitmask_text(std::span<const std::byte> b) {
  std::string out;
  const size_t n = b.size();
  for (size_t i = n; i-- > 0;) {
    out += fmt::format("{:02x}", static_cast<uint8_t>(b[i]));
    if (i % 4 == 0 && i != 0) out += ',';
  }
  return out;
}

class Evaluator {
 public:
  Evaluator(const PrintProgram& prog, std::span<const std::byte> payload)
      : prog_(prog), payload_(payload) {}

  std::optional<Value> eval(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::number:
        return integer(e.num, e.is_signed);
      case Expr::Kind::string:
        return text(e.text);
      case Expr::Kind::field:
        return field(prog_.fields[static_cast<size_t>(e.field)]);
      case Expr::Kind::index: {
        const auto base = eval(*e.kids[0]);
        const auto idx = eval(*e.kids[1]);
        if (!base || !idx || base->kind != Value::Kind::bytes || idx->kind != Value::Kind::integer)
          return std::nullopt;
        const uint64_t off = idx->bits * base->elem_size;
        if (idx->bits >= base->bytes.size() || off + base->elem_size > base->bytes.size())
          return std::nullopt;
        uint64_t v = load_le(base->bytes.data() + off, base->elem_size);
        if (base->elem_signed) v = sign_extend(v, base->elem_size);
        return integer(v, base->elem_signed);
      }
      case Expr::Kind::unary: {
        const auto a = eval(*e.kids[0]);
        if (!a) return std::nullopt;
        if (e.op == Op::lnot) return integer(!truthy(*a), true);
        if (a->kind != Value::Kind::integer) return std::nullopt;
        return integer(e.op == Op::neg ? 0 - a->bits : ~a->bits, a->is_signed);
      }
      case Expr::Kind::binary:
        return binary(e);
      case Expr::Kind::ternary: {
        const auto c = eval(*e.kids[0]);
        if (!c) return std::nullopt;
        return eval(*e.kids[truthy(*c) ? 1 : 2]);
      }
      case Expr::Kind::cast: {
        auto a = eval(*e.kids[0]);
        if (!a || a->kind != Value::Kind::integer) return a;  // casting strings/arrays: unchanged
        if (e.cast.is_pointer) return integer(a->bits, false);
        const uint64_t v =
            e.cast.is_signed ? sign_extend(a->bits, e.cast.size) : truncate(a->bits, e.cast.size);
        return integer(v, e.cast.is_signed);
      }
      case Expr::Kind::helper:
        return helper(e);
      case Expr::Kind::unknown:
        return std::nullopt;
    }
    return std::nullopt;
  }

  static bool truthy(const Value& v) { return v.kind != Value::Kind::integer || v.bits != 0; }

  // Keeps generated text alive for the duration of the render.
  std::string_view keep(std::string s) { return scratch_.emplace_back(std::move(s)); }

 private:
  std::optional<Value> field(const FormatField& f) {
    if (f.offset > payload_.size()) return std::nullopt;
    if (f.is_array() && !f.is_dynamic()) {
      const uint64_t size = f.size ? f.size : payload_.size() - f.offset;  // "[]": the rest
      if (f.offset + size > payload_.size()) return std::nullopt;
      Value v;
      v.kind = Value::Kind::bytes;
      v.bytes = payload_.subspan(f.offset, static_cast<size_t>(size));
      v.elem_size = element_size(f);
      v.elem_signed = f.is_signed;
      v.is_char_array = f.is_string();
      return v;
    }
    if (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8) {
      if (uint64_t{f.offset} + f.size > payload_.size()) return std::nullopt;
      uint64_t v = load_le(payload_.data() + f.offset, f.size);
      if (f.is_signed) v = sign_extend(v, f.size);
      Value out = integer(v, f.is_signed);
      out.is_pointer_field = f.size == 8 && !f.is_dynamic();
      return out;
    }
    if (uint64_t{f.offset} + f.size > payload_.size()) return std::nullopt;
    Value v;  // odd-sized scalar (a struct): its bytes
    v.kind = Value::Kind::bytes;
    v.bytes = payload_.subspan(f.offset, f.size);
    return v;
  }

  // The bytes a __data_loc / __rel_loc field points at.
  std::optional<std::span<const std::byte>> dynamic(const FormatField& f, bool rel) {
    if (uint64_t{f.offset} + 4 > payload_.size()) return std::nullopt;
    const uint32_t loc = static_cast<uint32_t>(load_le(payload_.data() + f.offset, 4));
    uint64_t off = loc & 0xffff;
    const uint64_t len = loc >> 16;
    if (rel || f.is_rel_loc()) off += f.offset + 4;
    if (off + len > payload_.size()) return std::nullopt;
    return payload_.subspan(static_cast<size_t>(off), static_cast<size_t>(len));
  }

  // A helper call of the format (__get_str, __print_flags...).
  std::optional<Value> helper(const Expr& e) {
    switch (e.helper) {
      case Helper::get_str:
      case Helper::get_rel_str: {
        const auto b =
            dynamic(prog_.fields[static_cast<size_t>(e.field)], e.helper == Helper::get_rel_str);
        if (!b) return std::nullopt;
        return text(until_nul(*b));
      }
      case Helper::dyn_array:
      case Helper::rel_dyn_array:
        return dyn_array(e);
      case Helper::dyn_array_len:
      case Helper::rel_dyn_array_len: {
        const auto b = dynamic(prog_.fields[static_cast<size_t>(e.field)],
                               e.helper == Helper::rel_dyn_array_len);
        if (!b) return std::nullopt;
        return integer(b->size(), false);
      }
      case Helper::bitmask:
      case Helper::rel_bitmask: {
        const auto b =
            dynamic(prog_.fields[static_cast<size_t>(e.field)], e.helper == Helper::rel_bitmask);
        if (!b) return std::nullopt;
        return text(keep(bitmask_text(*b)));
      }
      case Helper::print_flags:
        return print_flags(e);
      case Helper::print_symbolic:
        return print_symbolic(e);
      case Helper::print_hex:
      case Helper::print_hex_str:
        return print_hex(e);
      case Helper::print_array:
        return print_array(e);
    }
    return std::nullopt;
  }

  // __get_dynamic_array / __get_rel_dynamic_array: the field's bytes, as
  // elements of its type.
  std::optional<Value> dyn_array(const Expr& e) {
    const auto& f = prog_.fields[static_cast<size_t>(e.field)];
    const auto b = dynamic(f, e.helper == Helper::rel_dyn_array);
    if (!b) return std::nullopt;
    Value v;
    v.kind = Value::Kind::bytes;
    v.bytes = *b;
    v.elem_size = element_size(f);
    v.elem_signed = f.is_signed;
    v.is_char_array = f.is_string();
    return v;
  }

  // __print_flags, as trace_print_flags_seq: each matching non-zero mask, in
  // table order, removed from the value; leftovers in hex; a zero value
  // prints the label of a zero entry if the table has one.
  std::optional<Value> print_flags(const Expr& e) {
    const auto v = eval(*e.kids[0]);
    if (!v || v->kind != Value::Kind::integer) return std::nullopt;
    uint64_t val = v->bits;
    std::string out;
    bool any = false;
    for (const auto& [ve, label] : e.table) {
      const auto fv = eval(*ve);
      if (!fv || fv->kind != Value::Kind::integer) continue;  // unresolved enum: never matches
      if (fv->bits == 0) {
        if (v->bits == 0) {
          out = label;
          any = true;
          break;
        }
        continue;
      }
      if ((val & fv->bits) != fv->bits) continue;
      if (any) out += e.delim;
      out += label;
      any = true;
      val &= ~fv->bits;
      if (val == 0) break;
    }
    if (val && v->bits) {
      if (any) out += e.delim;
      out += fmt::format("0x{:x}", val);
    }
    return text(keep(std::move(out)));
  }

  // __print_symbolic, as trace_print_symbols_seq: the label of the equal
  // value, else the value in hex.
  std::optional<Value> print_symbolic(const Expr& e) {
    const auto v = eval(*e.kids[0]);
    if (!v || v->kind != Value::Kind::integer) return std::nullopt;
    for (const auto& [ve, label] : e.table) {
      const auto fv = eval(*ve);
      if (fv && fv->kind == Value::Kind::integer && fv->bits == v->bits) return text(label);
    }
    return text(keep(fmt::format("0x{:x}", v->bits)));
  }

  // __print_hex / __print_hex_str, as trace_print_hex_seq: bytes in hex,
  // blank-separated for __print_hex.
  std::optional<Value> print_hex(const Expr& e) {
    const auto buf = eval(*e.kids[0]);
    const auto len = eval(*e.kids[1]);
    if (!buf || !len || buf->kind != Value::Kind::bytes || len->kind != Value::Kind::integer)
      return std::nullopt;
    if (len->bits > buf->bytes.size()) return std::nullopt;
    std::string out;
    for (uint64_t i = 0; i < len->bits; ++i) {
      if (i && e.helper == Helper::print_hex) out += ' ';
      out += fmt::format("{:02x}", static_cast<uint8_t>(buf->bytes[i]));
    }
    return text(keep(std::move(out)));
  }

  // __print_array, as trace_print_array_seq: "{0x..,0x..}" of elements of
  // 1, 2, 4 or 8 bytes.
  std::optional<Value> print_array(const Expr& e) {
    const auto arr = eval(*e.kids[0]);
    const auto count = eval(*e.kids[1]);
    const auto el = eval(*e.kids[2]);
    if (!arr || !count || !el || arr->kind != Value::Kind::bytes ||
        count->kind != Value::Kind::integer || el->kind != Value::Kind::integer)
      return std::nullopt;
    const uint64_t es = el->bits;
    if (es != 1 && es != 2 && es != 4 && es != 8) return std::nullopt;
    if (count->bits > arr->bytes.size() / es) return std::nullopt;
    std::string out = "{";
    for (uint64_t i = 0; i < count->bits; ++i) {
      if (i) out += ',';
      out += fmt::format("0x{:x}", load_le(arr->bytes.data() + i * es, static_cast<uint32_t>(es)));
    }
    out += '}';
    return text(keep(std::move(out)));
  }

  std::optional<Value> binary(const Expr& e) {
    const auto a = eval(*e.kids[0]);
    if (!a) return std::nullopt;
    if (e.op == Op::land || e.op == Op::lor) {
      const bool l = truthy(*a);
      if (e.op == Op::land && !l) return integer(0, true);
      if (e.op == Op::lor && l) return integer(1, true);
      const auto b = eval(*e.kids[1]);
      if (!b) return std::nullopt;
      return integer(truthy(*b), true);
    }
    const auto b = eval(*e.kids[1]);
    if (!b || a->kind != Value::Kind::integer || b->kind != Value::Kind::integer)
      return std::nullopt;
    const uint64_t x = a->bits, y = b->bits;
    const bool sgn = a->is_signed && b->is_signed;
    const auto sx = static_cast<int64_t>(x), sy = static_cast<int64_t>(y);
    switch (e.op) {
      case Op::mul:
        return integer(x * y, sgn);
      case Op::div:
        if (y == 0 || (sgn && sx == INT64_MIN && sy == -1)) return std::nullopt;
        return integer(sgn ? static_cast<uint64_t>(sx / sy) : x / y, sgn);
      case Op::mod:
        if (y == 0 || (sgn && sx == INT64_MIN && sy == -1)) return std::nullopt;
        return integer(sgn ? static_cast<uint64_t>(sx % sy) : x % y, sgn);
      case Op::add:
        return integer(x + y, sgn);
      case Op::sub:
        return integer(x - y, sgn);
      case Op::shl:
        return integer(y >= 64 ? 0 : x << y, a->is_signed);
      case Op::shr:
        if (y >= 64) return integer(a->is_signed && sx < 0 ? ~uint64_t{0} : 0, a->is_signed);
        return integer(a->is_signed ? static_cast<uint64_t>(sx >> y) : x >> y, a->is_signed);
      case Op::lt:
        return integer(sgn ? sx < sy : x < y, true);
      case Op::gt:
        return integer(sgn ? sx > sy : x > y, true);
      case Op::le:
        return integer(sgn ? sx <= sy : x <= y, true);
      case Op::ge:
        return integer(sgn ? sx >= sy : x >= y, true);
      case Op::eq:
        return integer(x == y, true);
      case Op::ne:
        return integer(x != y, true);
      case Op::band:
        return integer(x & y, sgn);
      case Op::bxor:
        return integer(x ^ y, sgn);
      case Op::bor:
        return integer(x | y, sgn);
      default:
        return std::nullopt;
    }
  }

  const PrintProgram& prog_;
  std::span<const std::byte> payload_;
  std::deque<std::string> scratch_;
};

// Pads `s` to the conversion's width (left-justified with '-').
void pad_to(fmt::memory_buffer& out, std::string_view s, const Piece& p, int width) {
  const size_t w = width > 0 ? static_cast<size_t>(width) : 0;
  const bool left = p.flags.find('-') != std::string::npos;
  if (!left && s.size() < w) out.append(std::string(w - s.size(), ' '));
  out.append(s);
  if (left && s.size() < w) out.append(std::string(w - s.size(), ' '));
}

std::string pointer_text(uint64_t v) { return v ? fmt::format("0x{:x}", v) : std::string("(nil)"); }

std::string ip6_text(std::span<const std::byte> b, bool colons, bool compress) {
  uint16_t w[8];
  for (int i = 0; i < 8; ++i)
    w[i] = static_cast<uint16_t>((static_cast<uint8_t>(b[2 * i]) << 8) |
                                 static_cast<uint8_t>(b[2 * i + 1]));
  std::string out;
  if (!compress) {
    for (int i = 0; i < 8; ++i) {
      out += fmt::format("{:04x}", w[i]);
      if (colons && i < 7) out += ':';
    }
    return out;
  }
  int best = -1, best_len = 1;  // longest run of >= 2 zero words
  for (int i = 0; i < 8;) {
    int j = i;
    while (j < 8 && w[j] == 0) ++j;
    if (j - i > best_len) best = i, best_len = j - i;
    i = j == i ? i + 1 : j;
  }
  for (int i = 0; i < 8; ++i) {
    if (i == best) {
      out += i == 0 ? "::" : ":";
      i += best_len - 1;
      continue;
    }
    out += fmt::format("{:x}", w[i]);
    if (i < 7) out += ':';
  }
  return out;
}

// Formats one conversion. Returns false when the argument does not suit it.
bool convert(const Piece& p, const Value& v, int width, int precision, Evaluator& ev,
             const PrintContext& ctx, fmt::memory_buffer& out) {
  std::string spec = "%" + p.flags;
  if (width >= 0) spec += std::to_string(width);
  if (precision >= 0) spec += "." + std::to_string(precision);
  char buf[512];
  switch (p.conv) {
    case 'd':
    case 'i': {
      if (v.kind != Value::Kind::integer) return false;
      const uint32_t size = p.length <= -2 ? 1 : p.length == -1 ? 2 : p.length == 0 ? 4 : 8;
      const auto n = static_cast<long long>(sign_extend(v.bits, size));
      std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), n);
      out.append(std::string_view(buf));
      return true;
    }
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      if (v.kind != Value::Kind::integer) return false;
      const uint32_t size = p.length <= -2 ? 1 : p.length == -1 ? 2 : p.length == 0 ? 4 : 8;
      const auto n = static_cast<unsigned long long>(truncate(v.bits, size));
      std::snprintf(buf, sizeof buf, (spec + "ll" + p.conv).c_str(), n);
      out.append(std::string_view(buf));
      return true;
    }
    case 'c': {
      if (v.kind != Value::Kind::integer) return false;
      const char c = static_cast<char>(v.bits);
      pad_to(out, std::string_view(&c, 1), p, width);
      return true;
    }
    case 's': {
      std::string_view s;
      if (v.kind == Value::Kind::text) {
        s = v.text;
      } else if (v.kind == Value::Kind::bytes) {
        s = until_nul(v.bytes);
      } else if (ctx.printk && ctx.printk->lookup(v.bits)) {
        s = *ctx.printk->lookup(v.bits);
      } else {
        s = ev.keep(fmt::format("{:x}", v.bits));  // libtraceevent prints an unknown pointer in hex
      }
      if (precision >= 0 && s.size() > static_cast<size_t>(precision))
        s = s.substr(0, static_cast<size_t>(precision));
      pad_to(out, s, p, width);
      return true;
    }
    case 'p': {
      const char x = p.pext.empty() ? 0 : p.pext[0];
      if (x == 'M' || x == 'm') {
        if (v.kind != Value::Kind::bytes || v.bytes.size() != 6) {
          out.append(std::string_view("INVALIDMAC"));
          return true;
        }
        std::string m;
        for (size_t i = 0; i < 6; ++i) {
          if (x == 'M' && i) m += ':';
          m += fmt::format("{:02x}", static_cast<uint8_t>(v.bytes[i]));
        }
        out.append(m);
        return true;
      }
      if (x == 'I' || x == 'i') {
        if (v.kind != Value::Kind::bytes) return false;
        if (p.pext[1] == '4') {
          if (v.bytes.size() != 4) return out.append(std::string_view("INVALIDIPv4")), true;
          const auto b = [&](int i) {
            return static_cast<uint8_t>(v.bytes[static_cast<size_t>(i)]);
          };
          out.append(x == 'i' ? fmt::format("{:03}.{:03}.{:03}.{:03}", b(0), b(1), b(2), b(3))
                              : fmt::format("{}.{}.{}.{}", b(0), b(1), b(2), b(3)));
          return true;
        }
        if (p.pext[1] == '6') {
          if (v.bytes.size() != 16) return out.append(std::string_view("INVALIDIPv6")), true;
          out.append(
              ip6_text(v.bytes, x == 'I', x == 'I' && p.pext.find('c') != std::string::npos));
          return true;
        }
        return false;  // %pIS (sockaddr): not supported
      }
      if (v.kind != Value::Kind::integer) return false;
      std::string s;
      if (x == 'S' || x == 's' || x == 'F' || x == 'f' || x == 'B') {
        if (ctx.kallsyms) {
          if (const auto hit = ctx.kallsyms->lookup(v.bits)) {
            s = std::string(hit->name);
            if (x == 'F' || x == 'S' || x == 'B') s += fmt::format("+0x{:x}", hit->offset);
          }
        }
      }
      if (s.empty()) s = pointer_text(v.bits);
      pad_to(out, s, p, width);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

namespace detail {
// Renders the program; false if any argument failed to evaluate or suit its
// conversion (the caller then prints the fallback).
bool render_program(const PrintProgram& prog, std::span<const std::byte> payload,
                    const PrintContext& ctx, fmt::memory_buffer& out) {
  Evaluator ev(prog, payload);
  size_t arg = 0;
  auto next_int = [&](int& into) {
    const auto v = ev.eval(*prog.args[arg++]);
    if (!v || v->kind != Value::Kind::integer) return false;
    into = static_cast<int>(static_cast<int64_t>(v->bits));
    return true;
  };
  for (const Piece& p : prog.pieces) {
    if (!p.is_conversion) {
      out.append(p.literal);
      continue;
    }
    int width = p.width, precision = p.precision;
    if (width == -2 && !next_int(width)) return false;
    if (precision == -2 && !next_int(precision)) return false;
    if (width < -1) width = -1;
    if (width > 4096) width = 4096;
    if (precision > 4096) precision = 4096;
    const auto v = ev.eval(*prog.args[arg++]);
    if (!v || !convert(p, *v, width, precision, ev, ctx, out)) return false;
  }
  return true;
}
}  // namespace detail

PrintFmt::PrintFmt(const EventFormat& format) : prog_(detail::compile_print_fmt(format)) {}

bool PrintFmt::ok() const noexcept { return prog_->error.empty(); }

const std::string& PrintFmt::error() const noexcept { return prog_->error; }

void PrintFmt::render(std::span<const std::byte> payload, fmt::memory_buffer& out,
                      const PrintContext& ctx) const {
  if (ok()) {
    const size_t mark = out.size();
    if (detail::render_program(*prog_, payload, ctx, out)) return;
    out.resize(mark);
  }
  out.append(std::string_view("[FAILED TO PARSE]"));
  render_field_list(prog_->format, payload, out);
}

std::string PrintFmt::render(std::span<const std::byte> payload, const PrintContext& ctx) const {
  fmt::memory_buffer b;
  render(payload, b, ctx);
  return fmt::to_string(b);
}

void render_field_list(const EventFormat& format, std::span<const std::byte> payload,
                       fmt::memory_buffer& out) {
  auto it = std::back_inserter(out);
  for (const FormatField& f : format.fields) {
    fmt::format_to(it, " {}=", f.name);
    if (f.is_array() || f.is_dynamic()) {
      uint64_t off = f.offset, len = f.size;
      if (f.is_dynamic()) {
        if (uint64_t{f.offset} + 4 > payload.size()) {
          out.append(std::string_view("<truncated>"));
          continue;
        }
        const uint32_t loc = static_cast<uint32_t>(load_le(payload.data() + f.offset, 4));
        off = loc & 0xffff;
        len = loc >> 16;
        if (f.is_rel_loc()) off += f.offset + 4;
      } else if (len == 0 && off <= payload.size()) {
        len = payload.size() - off;
      }
      if (off + len > payload.size()) {
        out.append(std::string_view("<truncated>"));
        continue;
      }
      const auto b = payload.subspan(static_cast<size_t>(off), static_cast<size_t>(len));
      const std::string_view s = until_nul(b);
      const bool printable = std::all_of(s.begin(), s.end(), [](char c) {
        return std::isprint(static_cast<unsigned char>(c)) ||
               std::isspace(static_cast<unsigned char>(c));
      });
      if (f.is_string() && printable) {
        out.append(s);
      } else {
        out.append(std::string_view("ARRAY["));
        for (size_t i = 0; i < b.size(); ++i)
          fmt::format_to(it, "{}{:02x}", i ? ", " : "", static_cast<uint8_t>(b[i]));
        out.push_back(']');
      }
      continue;
    }
    if ((f.size != 1 && f.size != 2 && f.size != 4 && f.size != 8) ||
        uint64_t{f.offset} + f.size > payload.size()) {
      out.append(std::string_view("<truncated>"));
      continue;
    }
    const uint64_t v = load_le(payload.data() + f.offset, f.size);
    const bool is_long = f.type == "long" || f.type == "unsigned long";
    if (f.type.find('*') != std::string::npos) {
      fmt::format_to(it, "0x{:x}", v);
    } else if (f.is_signed) {
      if (f.size == 4 && is_long)
        fmt::format_to(it, "0x{:x}", static_cast<uint32_t>(v));
      else
        fmt::format_to(it, "{}", static_cast<int64_t>(sign_extend(v, f.size)));
    } else if (is_long) {
      fmt::format_to(it, "0x{:x}", v);
    } else {
      fmt::format_to(it, "{}", v);
    }
  }
}

}  // namespace tracepipe
