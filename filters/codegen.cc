#include "filters/codegen.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tracepipe::filters {

class ProgramBuilder {
 public:
  static std::shared_ptr<const Program> build(const Ast& ast);
};

namespace {

// A jump destination: the end labels, or "the first entry of node n".
struct Label {
  static constexpr int64_t kTrue = -1;
  static constexpr int64_t kFalse = -2;
  int64_t v;
};

struct Work {
  uint32_t node;
  Label on_true, on_false;
};

struct Emitted {
  uint32_t pred;
  Label on_true, on_false;
};

// Width (bytes), signedness and operator of a fixed integer code.
struct NumericShape {
  uint32_t width;
  bool is_signed;
  detail::Op op;
};

NumericShape shape_of(detail::Code c) {
  using detail::Code;
  using detail::Op;
  if (c <= Code::eq64) return {1u << static_cast<int>(c), false, Op::eq};
  const int k = static_cast<int>(c) - static_cast<int>(Code::lt_s8);
  const Op ops[] = {Op::lt, Op::le, Op::gt, Op::ge, Op::band};
  return {1u << (k / 10), (k % 10) < 5, ops[k % 5]};
}

// The branch-free form of one integer predicate; see detail::Lane.
detail::Lane make_lane(const detail::Pred& p) {
  using detail::Op;
  const NumericShape sh = shape_of(p.code);
  detail::Lane l;
  l.offset = p.offset;
  const uint32_t bits = 8 * sh.width;
  const int w = bits == 8 ? 0 : bits == 16 ? 1 : bits == 32 ? 2 : 3;
  l.kind = static_cast<detail::Lane::Kind>(2 * w + (sh.is_signed ? 1 : 0));
  l.bias = sh.is_signed ? uint64_t{1} << 63 : 0;
  // The literal as the kernel compares it: truncated to the width, then
  // sign-extended for signed fields, in the same biased space as the field.
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  uint64_t v = p.val & mask;
  if (sh.is_signed && bits < 64 && (v >> (bits - 1) & 1)) v |= ~mask;
  v ^= l.bias;
  const uint64_t min = sh.is_signed ? ~(mask >> 1) ^ l.bias : 0;
  const uint64_t max = sh.is_signed ? (mask >> 1) ^ l.bias : mask;
  auto range = [&](uint64_t lo, uint64_t hi) {
    l.lo = lo;
    l.span = hi - lo;
  };
  auto never = [&] {
    range(0, ~uint64_t{0});
    l.invert = 1;
  };
  switch (sh.op) {
    case Op::eq:
      range(v, v);
      l.invert = p.negate;
      break;
    case Op::lt:
      if (v == min) never();
      else range(min, v - 1);
      break;
    case Op::le: range(min, v); break;
    case Op::gt:
      if (v == max) never();
      else range(v + 1, max);
      break;
    case Op::ge: range(v, max); break;
    case Op::band:  // (x & v) != 0, on the unbiased bits
      l.bias = 0;
      l.and_mask = p.val & mask;  // only the field's own bits, never the sign extension
      range(0, 0);
      l.invert = 1;
      break;
    default: never(); break;
  }
  return l;
}

}  // namespace

std::shared_ptr<const Program> ProgramBuilder::build(const Ast& ast) {
  auto prog = std::make_shared<Program>();
  prog->nr_cpu_ids_ = ast.nr_cpu_ids;
  prog->words_per_mask_ = (ast.nr_cpu_ids + 63) / 64;
  if (ast.empty()) return prog;

  // Pre-order walk, children left to right: predicates come out in source order.
  std::vector<uint32_t> node_start(ast.nodes.size(), 0);
  std::vector<Emitted> out;
  out.reserve(ast.preds.size());
  std::vector<Work> stack;
  stack.push_back(Work{ast.root, {Label::kTrue}, {Label::kFalse}});
  while (!stack.empty()) {
    const Work w = stack.back();
    stack.pop_back();
    node_start[w.node] = static_cast<uint32_t>(out.size());
    const AstNode& n = ast.nodes[w.node];
    const auto kids = ast.kids(n);
    switch (n.kind) {
      case AstNode::Kind::pred:
        out.push_back(Emitted{n.first, w.on_true, w.on_false});
        break;
      case AstNode::Kind::negate:
        stack.push_back(Work{kids[0], w.on_false, w.on_true});
        break;
      case AstNode::Kind::all_of:
        for (size_t j = kids.size(); j-- > 0;) {
          const Label t = j + 1 < kids.size() ? Label{kids[j + 1]} : w.on_true;
          stack.push_back(Work{kids[j], t, w.on_false});
        }
        break;
      case AstNode::Kind::any_of:
        for (size_t j = kids.size(); j-- > 0;) {
          const Label f = j + 1 < kids.size() ? Label{kids[j + 1]} : w.on_false;
          stack.push_back(Work{kids[j], w.on_true, f});
        }
        break;
    }
  }

  const auto n = static_cast<uint32_t>(out.size());
  auto resolve = [&](Label l) -> uint32_t {
    if (l.v == Label::kTrue) return n;
    if (l.v == Label::kFalse) return n + 1;
    return node_start[static_cast<size_t>(l.v)];
  };

  prog->preds_.reserve(n);
  prog->pred_text_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const Emitted& e = out[i];
    if (e.pred != i) throw std::logic_error("filters: predicates out of source order");
    const PredSpec& spec = ast.preds[e.pred];
    detail::Pred p = spec.pred;
    const uint32_t t = resolve(e.on_true), f = resolve(e.on_false);
    if (f == i + 1) {
      p.branch_if = 1;
      p.target = t;
    } else if (t == i + 1) {
      p.branch_if = 0;
      p.target = f;
    } else {
      throw std::logic_error("filters: no fall-through destination");
    }
    if (p.target <= i) throw std::logic_error("filters: backward jump");
    if (spec.matcher) {
      p.aux = static_cast<uint32_t>(prog->strings_.size());
      prog->strings_.push_back(spec.matcher);
    }
    if (!spec.mask.empty()) {
      p.aux = static_cast<uint32_t>(prog->masks_.size() / std::max<uint32_t>(prog->words_per_mask_, 1));
      std::vector<uint64_t> m = spec.mask;
      m.resize(prog->words_per_mask_, 0);
      prog->masks_.insert(prog->masks_.end(), m.begin(), m.end());
    }
    prog->min_size_ = std::max(prog->min_size_, spec.end);
    prog->preds_.push_back(p);
    prog->pred_text_.push_back(spec.text);
  }

  // Truth table for small all-integer programs (see Program::table_).
  bool numeric = n <= Program::kTableMax;
  for (const detail::Pred& p : prog->preds_) numeric = numeric && p.code <= detail::Code::last_fixed_numeric;
  if (numeric) {
    for (uint32_t bits = 0; bits < (1u << n); ++bits) {
      uint32_t i = 0;
      while (i < n) {
        const bool r = (bits >> i & 1) != 0;
        i = r == static_cast<bool>(prog->preds_[i].branch_if) ? prog->preds_[i].target : i + 1;
      }
      if (i == n) prog->table_[bits >> 6] |= uint64_t{1} << (bits & 63);
    }
    for (const detail::Pred& p : prog->preds_) prog->lanes_.push_back(make_lane(p));
  }
  return prog;
}

std::shared_ptr<const Program> build_program(const Ast& ast) { return ProgramBuilder::build(ast); }

}  // namespace tracepipe::filters
