// Hist expressions: parsing (the kernel's parse_expr), evaluation and text.
#include "tracepipe/core/triggers/hist_expr.h"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>

namespace tracepipe::triggers {

namespace {

constexpr uint32_t kDivShift = 20;  // HIST_DIV_SHIFT

// contains_operator(): the root operator and where it is; the rightmost of
// the lowest precedence, so that a-b-c is (a-b)-c.
ExprOp root_operator(std::string_view s, size_t& at) {
  const size_t minus = s.rfind('-');
  if (minus == 0) {
    at = 0;
    return ExprOp::uminus;
  }
  const size_t plus = s.rfind('+');
  if (minus != std::string_view::npos || plus != std::string_view::npos) {
    if (plus != std::string_view::npos && (minus == std::string_view::npos || plus > minus)) {
      at = plus;
      return ExprOp::plus;
    }
    at = minus;
    return ExprOp::minus;
  }
  const size_t div = s.rfind('/'), mult = s.rfind('*');
  if (mult != std::string_view::npos && (div == std::string_view::npos || mult > div)) {
    at = mult;
    return ExprOp::mult;
  }
  if (div != std::string_view::npos) {
    at = div;
    return ExprOp::div;
  }
  return ExprOp::value;
}

int add_node(HistSpec& spec, ExprNode n) {
  spec.nodes.push_back(std::move(n));
  return static_cast<int>(spec.nodes.size() - 1);
}

// The node a reference stands for (the variable's definition), for its
// flags: constant, usecs, type.
const ExprNode& referenced(const HistSpec& spec, const ExprNode& n) {
  const VarRef& r = spec.refs[n.ref];
  const HistSpec& def = r.self ? spec : r.map->spec();
  return def.nodes[static_cast<size_t>(def.vars[r.var].expr)];
}

int parse_atom(HistParser& p, std::string_view str) {
  HistSpec& spec = p.spec;
  if (!str.empty() && std::isdigit(static_cast<unsigned char>(str[0]))) {
    const auto v = parse_ull(str);
    if (!v) return p.fail(HistErr::expect_number, str), -1;
    ExprNode n;
    n.op = ExprOp::constant;
    n.constant = *v;
    return add_node(spec, std::move(n));
  }
  std::string_view system, event, var = str;
  if (const size_t d1 = str.find('.');
      d1 != std::string_view::npos && str.find('.', d1 + 1) != std::string_view::npos) {
    system = str.substr(0, d1);
    const std::string_view rest = str.substr(d1 + 1);
    const size_t d2 = rest.find('.');
    event = rest.substr(0, d2);
    var = rest.substr(d2 + 1);
    if (var.empty()) return p.e.err = EINVAL, -1;
  }
  std::string_view field = str;
  if (var.size() >= 2 && var[0] == '$') {
    // local_field_var_ref: $x for this hist's x = a plain field.
    std::optional<std::string_view> local;
    const bool this_event =
        system.empty() || (system == p.event.system() && event == p.event.name());
    if (this_event)
      for (const auto& [name, expr] : p.var_defs)
        if (name == var.substr(1)) {
          size_t at = 0;
          if (root_operator(expr, at) == ExprOp::value && !(expr.size() >= 2 && expr[0] == '$'))
            local = expr;
          break;
        }
    if (!local) {
      const int r = resolve_var_ref(p, system, event, var.substr(1), false);
      if (r < 0) return -1;
      ExprNode n;
      n.op = ExprOp::ref;
      n.ref = static_cast<uint32_t>(r);
      const ExprNode& def = referenced(spec, n);
      n.usecs = def.usecs;
      n.type = def.type;
      n.size = def.size;
      n.is_signed = def.is_signed;
      n.is_string = def.is_string;
      return add_node(spec, std::move(n));
    }
    field = *local;
  }
  ExprNode n;
  if (!parse_hist_field(p, field, true, n.leaf)) return -1;
  n.usecs = n.leaf.source == HistSource::timestamp && (n.leaf.flags & kUsecs);
  n.is_string =
      n.leaf.source == HistSource::string_field || n.leaf.source == HistSource::dyn_string;
  n.type = n.leaf.type;
  n.size = n.leaf.size;
  n.is_signed = n.leaf.is_signed;
  return add_node(spec, std::move(n));
}

bool node_const(const HistSpec& spec, const ExprNode& n, uint64_t& v) {
  if (n.op == ExprOp::constant) return v = n.constant, true;
  if (n.op == ExprOp::ref) {
    const ExprNode& d = referenced(spec, n);
    if (d.op == ExprOp::constant) return v = d.constant, true;
  }
  return false;
}

bool node_usecs(const HistSpec& spec, const ExprNode& n) {
  return n.op == ExprOp::ref ? referenced(spec, n).usecs : n.usecs;
}

int parse_unary(HistParser& p, std::string_view str, int& n_sub) {
  if (++n_sub > static_cast<int>(kMaxSubexprs)) return p.fail(HistErr::too_many_subexpr, str), -1;
  str.remove_prefix(1);  // '-'
  if (str.find('(') == std::string_view::npos) return p.e.err = EINVAL, -1;
  str.remove_prefix(1);
  const size_t close = str.rfind(')');
  if (close == std::string_view::npos) return p.e.err = EINVAL, -1;
  if (close + 1 != str.size()) return p.fail(HistErr::unary_minus_subexpr, str), -1;
  const std::string_view inner = str.substr(0, close);
  const int a = parse_hist_expr(p, inner, n_sub);
  if (a < 0) return -1;
  if (p.spec.nodes[static_cast<size_t>(a)].is_string)
    return p.fail(HistErr::invalid_str_operand, inner), -1;
  if (p.spec.nodes[static_cast<size_t>(a)].op == ExprOp::ref)
    p.spec.refs[p.spec.nodes[static_cast<size_t>(a)].ref].read_once = true;
  ExprNode n = p.spec.nodes[static_cast<size_t>(a)];
  n.op = ExprOp::uminus;
  n.a = a;
  n.b = -1;
  n.usecs = node_usecs(p.spec, p.spec.nodes[static_cast<size_t>(a)]);
  return add_node(p.spec, std::move(n));
}

}  // namespace

int parse_hist_expr(HistParser& p, std::string_view str, int& n_sub) {
  if (n_sub > static_cast<int>(kMaxSubexprs)) return p.fail(HistErr::too_many_subexpr, str), -1;
  size_t at = 0;
  const ExprOp op = root_operator(str, at);
  if (op == ExprOp::value) return parse_atom(p, str);
  if (op == ExprOp::uminus) return parse_unary(p, str, n_sub);
  ++n_sub;
  const std::string_view s1 = str.substr(0, at), s2 = str.substr(at + 1);
  if (s1.empty() || s2.empty()) return p.e.err = EINVAL, -1;
  HistSpec& spec = p.spec;
  const int a = parse_hist_expr(p, s1, n_sub);
  if (a < 0) return -1;
  if (spec.nodes[static_cast<size_t>(a)].is_string)
    return p.fail(HistErr::invalid_str_operand, s1), -1;
  const int b = parse_hist_expr(p, s2, n_sub);
  if (b < 0) return -1;
  if (spec.nodes[static_cast<size_t>(b)].is_string)
    return p.fail(HistErr::invalid_str_operand, s2), -1;
  const ExprNode& na = spec.nodes[static_cast<size_t>(a)];
  const ExprNode& nb = spec.nodes[static_cast<size_t>(b)];
  if (node_usecs(spec, na) != node_usecs(spec, nb))
    return p.fail_pos(HistErr::timestamp_mismatch, 0), -1;
  uint64_t ca = 0, cb = 0;
  const bool const_a = node_const(spec, na, ca), const_b = node_const(spec, nb, cb);
  for (const ExprNode* x : {&na, &nb})
    if (x->op == ExprOp::ref) spec.refs[x->ref].read_once = true;
  ExprNode n;
  n.op = op;
  n.a = a;
  n.b = b;
  n.usecs = node_usecs(spec, na);
  n.type = na.type;
  n.size = na.size;
  n.is_signed = na.is_signed;
  if (op == ExprOp::div && const_b) {
    if (cb == 0) return p.fail(HistErr::division_by_zero, s2), -1;
    n.constant = cb;
    if ((cb & (cb - 1)) == 0)
      n.op = ExprOp::div_pow2;
    else if (cb > (uint64_t{1} << kDivShift))
      n.op = ExprOp::div_const;
    else
      n.op = ExprOp::div_mult_shift, n.mult = (uint64_t{1} << kDivShift) / cb;
  }
  if (const_a && const_b) {  // both constant: fold
    const uint64_t v = eval_expr(spec, add_node(spec, n), {}, 0, 0, nullptr);
    ExprNode c;
    c.op = ExprOp::constant;
    c.constant = v;
    c.usecs = n.usecs;
    return add_node(spec, std::move(c));
  }
  return add_node(spec, std::move(n));
}

uint64_t eval_expr(const HistSpec& spec, int idx, std::span<const std::byte> rec, uint32_t cpu,
                   uint64_t ts, const uint64_t* refv) noexcept {
  const ExprNode& n = spec.nodes[static_cast<size_t>(idx)];
  switch (n.op) {
    case ExprOp::value:
      return n.is_string ? 0 : read_hist_value(n.leaf, rec, cpu, ts);
    case ExprOp::constant:
      return n.constant;
    case ExprOp::ref:
      if (refv != nullptr) return refv[n.ref];
      {  // a constant variable, while parsing (folding)
        uint64_t v = 0;
        node_const(spec, n, v);
        return v;
      }
    case ExprOp::uminus:
      return static_cast<uint64_t>(-static_cast<int64_t>(eval_expr(spec, n.a, rec, cpu, ts, refv)));
    default:
      break;
  }
  const uint64_t x = eval_expr(spec, n.a, rec, cpu, ts, refv);
  switch (n.op) {
    case ExprOp::div_pow2:
      return x >> __builtin_ctzll(n.constant);
    case ExprOp::div_const:
      return x / n.constant;
    case ExprOp::div_mult_shift:
      if (x < (uint64_t{1} << kDivShift))
        return (x * n.mult + ((uint64_t{1} << kDivShift) - 1)) >> kDivShift;
      return x / n.constant;
    default:
      break;
  }
  const uint64_t y = eval_expr(spec, n.b, rec, cpu, ts, refv);
  switch (n.op) {
    case ExprOp::plus:
      return x + y;
    case ExprOp::minus:
      return x - y;
    case ExprOp::mult:
      return x * y;
    case ExprOp::div:
      if (y == 0) return UINT64_MAX;  // the kernel's -1 for the undefined case
      if ((y & (y - 1)) == 0) return x >> __builtin_ctzll(y);
      return x / y;
    default:
      return 0;
  }
}

std::string expr_text(const HistSpec& spec, int idx) {
  const ExprNode& n = spec.nodes[static_cast<size_t>(idx)];
  auto operand = [&](int i) -> std::string {
    const ExprNode& o = spec.nodes[static_cast<size_t>(i)];
    switch (o.op) {
      case ExprOp::value:
        return o.leaf.print();
      case ExprOp::constant:
        return fmt::format("{}", o.constant);
      case ExprOp::ref: {
        const VarRef& r = spec.refs[o.ref];
        return r.system.empty() ? "$" + r.name
                                : fmt::format("${}.{}.{}", r.system, r.event, r.name);
      }
      default:
        return expr_text(spec, i);
    }
  };
  switch (n.op) {
    case ExprOp::value:
    case ExprOp::constant:
    case ExprOp::ref:
      return operand(idx);
    case ExprOp::uminus:
      return "-(" + operand(n.a) + ")";
    case ExprOp::plus:
      return operand(n.a) + "+" + operand(n.b);
    case ExprOp::minus:
      return operand(n.a) + "-" + operand(n.b);
    case ExprOp::mult:
      return operand(n.a) + "*" + operand(n.b);
    default:
      return operand(n.a) + "/" + operand(n.b);
  }
}

}  // namespace tracepipe::triggers
