// Compiles a print fmt (format string + C argument expressions) into a
// PrintProgram. See print_fmt_ast.h for the shapes and print_fmt.h for what
// is supported. Every failure is reported through PrintProgram::error.
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <stdexcept>

#include "tracepipe/core/tracedat/print_fmt_ast.h"

namespace tracepipe::detail {
namespace {

struct CompileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& why) { throw CompileError(why); }

// ---------------------------------------------------------------- tokens

struct Token {
  enum class Kind : uint8_t { end, number, string, ident, punct } kind = Kind::end;
  std::string text;  // decoded string contents, identifier, or punctuation
  uint64_t num = 0;
  bool num_unsigned = false;
};

int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes one backslash escape starting after the backslash; advances i.
char decode_escape(std::string_view s, size_t& i) {
  if (i >= s.size()) fail("dangling backslash");
  const char c = s[i++];
  switch (c) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case 'a':
      return '\a';
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case 'x': {
      int v = 0, n = 0;
      while (i < s.size() && n < 2 && hexval(s[i]) >= 0) v = v * 16 + hexval(s[i++]), ++n;
      if (n == 0) fail("bad \\x escape");
      return static_cast<char>(v);
    }
    default:
      if (c >= '0' && c <= '7') {
        int v = c - '0', n = 1;
        while (i < s.size() && n < 3 && s[i] >= '0' && s[i] <= '7') v = v * 8 + (s[i++] - '0'), ++n;
        return static_cast<char>(v);
      }
      return c;  // \\ \" \' and anything else: the character itself
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Token next() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    Token t;
    if (pos_ >= s_.size()) return t;
    const char c = s_[pos_];
    if (c == '"') {
      t.kind = Token::Kind::string;
      ++pos_;
      for (;;) {
        if (pos_ >= s_.size()) fail("unterminated string literal");
        const char d = s_[pos_++];
        if (d == '"') break;
        if (d == '\\')
          t.text += decode_escape(s_, pos_);
        else
          t.text += d;
      }
      return t;
    }
    if (c == '\'') {  // character literal -> number
      ++pos_;
      if (pos_ >= s_.size()) fail("unterminated character literal");
      char v = s_[pos_++];
      if (v == '\\') v = decode_escape(s_, pos_);
      if (pos_ >= s_.size() || s_[pos_] != '\'') fail("unterminated character literal");
      ++pos_;
      t.kind = Token::Kind::number;
      t.num = static_cast<unsigned char>(v);
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t e = pos_;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])))) ++e;
      std::string_view lit = s_.substr(pos_, e - pos_);
      pos_ = e;
      // Strip integer suffixes (u, l, ul, ull, ...).
      while (!lit.empty() &&
             (lit.back() == 'u' || lit.back() == 'U' || lit.back() == 'l' || lit.back() == 'L')) {
        if (lit.back() == 'u' || lit.back() == 'U') t.num_unsigned = true;
        lit.remove_suffix(1);
      }
      int base = 10;
      if (lit.size() > 2 && lit[0] == '0' && (lit[1] == 'x' || lit[1] == 'X'))
        base = 16, lit.remove_prefix(2);
      else if (lit.size() > 1 && lit[0] == '0')
        base = 8, lit.remove_prefix(1);
      const auto [p, ec] = std::from_chars(lit.data(), lit.data() + lit.size(), t.num, base);
      if (ec != std::errc{} || p != lit.data() + lit.size())
        fail(fmt::format("bad number '{}'", lit));
      if (t.num > static_cast<uint64_t>(INT64_MAX)) t.num_unsigned = true;
      t.kind = Token::Kind::number;
      return t;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos_;
      while (e < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[e])) || s_[e] == '_'))
        ++e;
      t.kind = Token::Kind::ident;
      t.text = std::string(s_.substr(pos_, e - pos_));
      pos_ = e;
      return t;
    }
    static constexpr std::array<std::string_view, 9> kTwo = {
        "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||"};
    for (auto p : kTwo) {
      if (s_.substr(pos_, 2) == p) {
        pos_ += 2;
        t.kind = Token::Kind::punct;
        t.text = std::string(p);
        return t;
      }
    }
    if (std::string_view("()[]{},?:+-*/%&|^~!<>.").find(c) == std::string_view::npos)
      fail(fmt::format("unexpected character '{}'", c));
    ++pos_;
    t.kind = Token::Kind::punct;
    t.text = std::string(1, c);
    return t;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------- types

// Integer/pointer meaning of a cast's type words, or nullopt if the words
// are not a type we know.
std::optional<CastType> cast_type(const std::vector<std::string>& words, bool pointer) {
  if (words.empty()) return std::nullopt;
  if (pointer) return CastType{8, false, true};
  bool is_unsigned = false, is_signed_kw = false;
  int longs = 0;
  std::string base;
  for (const auto& w : words) {
    if (w == "const" || w == "volatile") continue;
    if (w == "unsigned")
      is_unsigned = true;
    else if (w == "signed")
      is_signed_kw = true;
    else if (w == "long")
      ++longs;
    else if (!base.empty())
      return std::nullopt;
    else
      base = w;
  }
  auto mk = [&](uint8_t size, bool sgn) {
    return CastType{size, is_unsigned ? false : (is_signed_kw || sgn), false};
  };
  if (base.empty() || base == "int") return longs ? mk(8, true) : mk(4, true);
  if (longs) return std::nullopt;          // "long char"?
  if (base == "char") return mk(1, true);  // as libtraceevent evaluates it on x86
  if (base == "short") return mk(2, true);
  if (base == "bool" || base == "_Bool") return CastType{1, false, false};
  if (is_unsigned || is_signed_kw) return std::nullopt;
  static const struct {
    const char* name;
    uint8_t size;
    bool sgn;
  } kTypes[] = {{"u8", 1, false},         {"u16", 2, false},
                {"u32", 4, false},        {"u64", 8, false},
                {"s8", 1, true},          {"s16", 2, true},
                {"s32", 4, true},         {"s64", 8, true},
                {"__u8", 1, false},       {"__u16", 2, false},
                {"__u32", 4, false},      {"__u64", 8, false},
                {"__s8", 1, true},        {"__s16", 2, true},
                {"__s32", 4, true},       {"__s64", 8, true},
                {"uint8_t", 1, false},    {"uint16_t", 2, false},
                {"uint32_t", 4, false},   {"uint64_t", 8, false},
                {"int8_t", 1, true},      {"int16_t", 2, true},
                {"int32_t", 4, true},     {"int64_t", 8, true},
                {"size_t", 8, false},     {"ssize_t", 8, true},
                {"pid_t", 4, true},       {"gfp_t", 4, false},
                {"uid_t", 4, false},      {"gid_t", 4, false},
                {"dev_t", 4, false},      {"umode_t", 2, false},
                {"loff_t", 8, true},      {"sector_t", 8, false},
                {"ktime_t", 8, true},     {"phys_addr_t", 8, false},
                {"dma_addr_t", 8, false}, {"resource_size_t", 8, false}};
  for (const auto& t : kTypes)
    if (base == t.name) return CastType{t.size, t.sgn, false};
  if (base.size() > 2 && base.compare(base.size() - 2, 2, "_t") == 0)
    return CastType{8, false, false};
  return std::nullopt;
}

// ---------------------------------------------------------------- parser

constexpr int kMaxDepth = 256;

class Parser {
 public:
  Parser(std::string_view text, PrintProgram& prog) : lex_(text), prog_(prog) { advance(); }

  void parse() {
    if (tok_.kind != Token::Kind::string) fail("print fmt does not start with a string");
    std::string format;
    while (tok_.kind == Token::Kind::string) {
      format += tok_.text;
      advance();
    }
    split_format(format);
    while (is_punct(",")) {
      advance();
      prog_.args.push_back(expr(0));
    }
    if (tok_.kind != Token::Kind::end)
      fail(fmt::format("unexpected '{}' after the arguments", tok_.text));
    size_t needed = 0;
    for (const auto& p : prog_.pieces) {
      if (!p.is_conversion || p.conv == '%') continue;
      needed += 1 + (p.width == -2) + (p.precision == -2);
    }
    if (needed > prog_.args.size())
      fail(fmt::format("format needs {} arguments, print fmt has {}", needed, prog_.args.size()));
  }

 private:
  void advance() { tok_ = lex_.next(); }
  bool is_punct(std::string_view p) const {
    return tok_.kind == Token::Kind::punct && tok_.text == p;
  }
  void expect(std::string_view p) {
    if (!is_punct(p)) fail(fmt::format("expected '{}' but found '{}'", p, tok_.text));
    advance();
  }

  // Format string -> literal and conversion pieces.
  void split_format(const std::string& f) {
    std::string lit;
    size_t i = 0;
    auto flush = [&] {
      if (lit.empty()) return;
      Piece p;
      p.literal = std::move(lit);
      prog_.pieces.push_back(std::move(p));
      lit.clear();
    };
    while (i < f.size()) {
      if (f[i] != '%') {
        lit += f[i++];
        continue;
      }
      ++i;
      Piece p;
      p.is_conversion = true;
      while (i < f.size() && std::string_view("-+ #0").find(f[i]) != std::string_view::npos)
        p.flags += f[i++];
      if (i < f.size() && f[i] == '*')
        p.width = -2, ++i;
      else if (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) {
        p.width = 0;
        while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])) && p.width < 10000)
          p.width = p.width * 10 + (f[i++] - '0');
      }
      if (i < f.size() && f[i] == '.') {
        ++i;
        p.precision = 0;
        if (i < f.size() && f[i] == '*')
          p.precision = -2, ++i;
        else
          while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i])) &&
                 p.precision < 10000)
            p.precision = p.precision * 10 + (f[i++] - '0');
      }
      while (i < f.size() && std::string_view("hlLqjzZt").find(f[i]) != std::string_view::npos) {
        const char m = f[i++];
        if (m == 'h')
          p.length = static_cast<int8_t>(p.length > 0 ? p.length : p.length - 1);
        else if (m == 'l')
          p.length = static_cast<int8_t>(p.length < 0 ? 1 : p.length + 1);
        else
          p.length = 2;
      }
      if (p.length > 2) p.length = 2;
      if (p.length < -2) p.length = -2;
      if (i >= f.size()) fail("format string ends inside a conversion");
      p.conv = f[i++];
      if (std::string_view("diuxXocsp%").find(p.conv) == std::string_view::npos)
        fail(fmt::format("unsupported conversion '%{}'", p.conv));
      if (p.conv == 'p' && i < f.size() && std::isalnum(static_cast<unsigned char>(f[i]))) {
        p.pext += f[i++];
        // %pI4 %pi6 %pI6c %pISpc: version and modifiers belong to the conversion.
        if ((p.pext == "I" || p.pext == "i") && i < f.size() &&
            (f[i] == '4' || f[i] == '6' || f[i] == 'S')) {
          p.pext += f[i++];
          while (i < f.size() && (f[i] == 'c' || f[i] == 'p')) p.pext += f[i++];
        }
      }
      if (p.conv == '%') {
        lit += '%';
        continue;
      }
      flush();
      prog_.pieces.push_back(std::move(p));
    }
    flush();
  }

  int field_index(const std::string& name) {
    for (size_t i = 0; i < prog_.fields.size(); ++i)
      if (prog_.fields[i].name == name) return static_cast<int>(i);
    fail(fmt::format("no field named '{}'", name));
  }

  static std::unique_ptr<Expr> make(Expr::Kind k) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    return e;
  }

  // Precedence climbing. Levels: 0 ?:, 1 ||, 2 &&, 3 |, 4 ^, 5 &, 6 == !=,
  // 7 < > <= >=, 8 << >>, 9 + -, 10 * / %.
  static int binary_level(const Token& t, Op& op) {
    if (t.kind != Token::Kind::punct) return -1;
    static const struct {
      const char* p;
      Op op;
      int level;
    } kOps[] = {{"||", Op::lor, 1}, {"&&", Op::land, 2}, {"|", Op::bor, 3}, {"^", Op::bxor, 4},
                {"&", Op::band, 5}, {"==", Op::eq, 6},   {"!=", Op::ne, 6}, {"<", Op::lt, 7},
                {">", Op::gt, 7},   {"<=", Op::le, 7},   {">=", Op::ge, 7}, {"<<", Op::shl, 8},
                {">>", Op::shr, 8}, {"+", Op::add, 9},   {"-", Op::sub, 9}, {"*", Op::mul, 10},
                {"/", Op::div, 10}, {"%", Op::mod, 10}};
    for (const auto& o : kOps)
      if (t.text == o.p) {
        op = o.op;
        return o.level;
      }
    return -1;
  }

  std::unique_ptr<Expr> expr(int depth) {
    if (depth > kMaxDepth) fail("expression nests too deeply");
    auto cond = binary(1, depth + 1);
    if (!is_punct("?")) return cond;
    advance();
    auto e = make(Expr::Kind::ternary);
    e->kids.push_back(std::move(cond));
    e->kids.push_back(expr(depth + 1));
    expect(":");
    e->kids.push_back(expr(depth + 1));
    return e;
  }

  std::unique_ptr<Expr> binary(int min_level, int depth) {
    if (depth > kMaxDepth) fail("expression nests too deeply");
    auto lhs = unary(depth + 1);
    for (;;) {
      Op op = Op::add;
      const int level = binary_level(tok_, op);
      if (level < min_level) return lhs;
      advance();
      auto rhs = binary(level + 1, depth + 1);
      auto e = make(Expr::Kind::binary);
      e->op = op;
      e->kids.push_back(std::move(lhs));
      e->kids.push_back(std::move(rhs));
      lhs = std::move(e);
    }
  }

  std::unique_ptr<Expr> unary(int depth) {
    if (depth > kMaxDepth) fail("expression nests too deeply");
    if (is_punct("-") || is_punct("!") || is_punct("~") || is_punct("+")) {
      const std::string p = tok_.text;
      advance();
      auto operand = unary(depth + 1);
      if (p == "+") return operand;
      auto e = make(Expr::Kind::unary);
      e->op = p == "-" ? Op::neg : p == "!" ? Op::lnot : Op::bnot;
      e->kids.push_back(std::move(operand));
      return e;
    }
    if (is_punct("(")) {
      // A cast "(type words [*...])" or a parenthesised expression.
      Lexer save_lex = lex_;
      Token save_tok = tok_;
      advance();
      std::vector<std::string> words;
      bool pointer = false, after_struct = false;
      while (tok_.kind == Token::Kind::ident || is_punct("*")) {
        if (is_punct("*"))
          pointer = true;
        else if (pointer)
          break;  // "(a * b)": not a type
        else {
          words.push_back(tok_.text);
          after_struct = tok_.text == "struct" || tok_.text == "union" || tok_.text == "enum";
        }
        advance();
      }
      (void)after_struct;
      std::optional<CastType> ct;
      if (is_punct(")") && !words.empty()) {
        if (words[0] == "struct" || words[0] == "union" || words[0] == "enum") {
          if (pointer) ct = CastType{8, false, true};
        } else {
          ct = cast_type(words, pointer);
        }
      }
      if (ct) {
        advance();  // ')'
        auto e = make(Expr::Kind::cast);
        e->cast = *ct;
        e->kids.push_back(unary(depth + 1));
        return e;
      }
      lex_ = save_lex;
      tok_ = save_tok;
    }
    return postfix(depth + 1);
  }

  std::unique_ptr<Expr> postfix(int depth) {
    auto e = primary(depth + 1);
    for (;;) {
      if (is_punct("->")) {
        advance();
        if (!(e->kind == Expr::Kind::unknown && e->text == "REC"))
          fail("'->' on something other than REC");
        if (tok_.kind != Token::Kind::ident) fail("expected a field name after '->'");
        auto f = make(Expr::Kind::field);
        f->field = field_index(tok_.text);
        advance();
        e = std::move(f);
      } else if (is_punct("[")) {
        advance();
        auto idx = make(Expr::Kind::index);
        idx->kids.push_back(std::move(e));
        idx->kids.push_back(expr(depth + 1));
        expect("]");
        e = std::move(idx);
      } else {
        return e;
      }
    }
  }

  std::string field_arg() {
    if (tok_.kind == Token::Kind::ident && tok_.text == "REC") {  // tolerate __get_str(REC->x)
      advance();
      expect("->");
    }
    if (tok_.kind != Token::Kind::ident) fail("expected a field name");
    std::string n = tok_.text;
    advance();
    return n;
  }

  void table(Expr& e, int depth) {
    while (is_punct(",")) {
      advance();
      expect("{");
      auto v = expr(depth + 1);
      expect(",");
      if (tok_.kind != Token::Kind::string) {
        // "{ 0, ((void *)0) }" or "{ -1, NULL }": the kernel's table
        // terminator; it labels nothing.
        (void)expr(depth + 1);
        expect("}");
        continue;
      }
      std::string label;
      while (tok_.kind == Token::Kind::string) label += tok_.text, advance();
      expect("}");
      e.table.emplace_back(std::move(v), std::move(label));
    }
  }

  std::unique_ptr<Expr> call(const std::string& name, int depth) {
    static const struct {
      const char* name;
      Helper h;
    } kField[] = {{"__get_str", Helper::get_str},
                  {"__get_rel_str", Helper::get_rel_str},
                  {"__get_dynamic_array", Helper::dyn_array},
                  {"__get_rel_dynamic_array", Helper::rel_dyn_array},
                  {"__get_dynamic_array_len", Helper::dyn_array_len},
                  {"__get_rel_dynamic_array_len", Helper::rel_dyn_array_len},
                  {"__get_bitmask", Helper::bitmask},
                  {"__get_cpumask", Helper::bitmask},
                  {"__get_rel_bitmask", Helper::rel_bitmask},
                  {"__get_rel_cpumask", Helper::rel_bitmask}};
    auto e = make(Expr::Kind::helper);
    for (const auto& k : kField) {
      if (name != k.name) continue;
      e->helper = k.h;
      e->field = field_index(field_arg());
      expect(")");
      return e;
    }
    if (name == "__print_flags" || name == "__print_flags_u64") {
      e->helper = Helper::print_flags;
      e->kids.push_back(expr(depth + 1));
      expect(",");
      if (tok_.kind != Token::Kind::string) fail("__print_flags needs a delimiter string");
      e->delim = tok_.text;
      advance();
      table(*e, depth);
      expect(")");
      return e;
    }
    if (name == "__print_symbolic" || name == "__print_symbolic_u64") {
      e->helper = Helper::print_symbolic;
      e->kids.push_back(expr(depth + 1));
      table(*e, depth);
      expect(")");
      return e;
    }
    int nargs = 0;
    if (name == "__print_hex")
      e->helper = Helper::print_hex, nargs = 2;
    else if (name == "__print_hex_str")
      e->helper = Helper::print_hex_str, nargs = 2;
    else if (name == "__print_array")
      e->helper = Helper::print_array, nargs = 3;
    else
      fail(fmt::format("unknown helper '{}'", name));
    for (int i = 0; i < nargs; ++i) {
      if (i) expect(",");
      e->kids.push_back(expr(depth + 1));
    }
    expect(")");
    return e;
  }

  std::unique_ptr<Expr> primary(int depth) {
    if (depth > kMaxDepth) fail("expression nests too deeply");
    switch (tok_.kind) {
      case Token::Kind::number: {
        auto e = make(Expr::Kind::number);
        e->num = tok_.num;
        e->is_signed = !tok_.num_unsigned;
        advance();
        return e;
      }
      case Token::Kind::string: {
        auto e = make(Expr::Kind::string);
        while (tok_.kind == Token::Kind::string) e->text += tok_.text, advance();
        return e;
      }
      case Token::Kind::ident: {
        std::string name = tok_.text;
        advance();
        if (is_punct("(")) {
          advance();
          return call(name, depth);
        }
        auto e = make(Expr::Kind::unknown);  // REC, or an enum constant
        e->text = std::move(name);
        return e;
      }
      case Token::Kind::punct:
        if (is_punct("(")) {
          advance();
          auto e = expr(depth + 1);
          expect(")");
          return e;
        }
        fail(fmt::format("unexpected '{}'", tok_.text));
      case Token::Kind::end:
        fail("print fmt ends inside an expression");
    }
    fail("unreachable");
  }

  Lexer lex_;
  Token tok_;
  PrintProgram& prog_;
};

}  // namespace

std::shared_ptr<PrintProgram> compile_print_fmt(const EventFormat& format) {
  auto prog = std::make_shared<PrintProgram>();
  prog->format = format;
  prog->fields = format.common_fields;
  prog->fields.insert(prog->fields.end(), format.fields.begin(), format.fields.end());
  try {
    Parser(format.print_fmt, *prog).parse();
  } catch (const CompileError& e) {
    prog->error = e.what();
    prog->pieces.clear();
    prog->args.clear();
  }
  return prog;
}

}  // namespace tracepipe::detail
