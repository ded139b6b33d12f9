#include "tracepipe/filters/codegen.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "tracepipe/filters/string_match.h"

namespace tracepipe::filters {

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

}  // namespace

// A predicate's two destinations, resolved to program indexes.
struct Jumps {
  uint32_t on_true, on_false;
};

namespace {

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
  l.pos = p.offset;
  l.width = static_cast<uint8_t>(sh.width);
  const unsigned bits = 8 * sh.width;
  const uint64_t fmask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const uint64_t sign = uint64_t{1} << (bits - 1);
  // Work with w-bit values biased so that [0, fmask] is in signed or unsigned
  // order; the literal is truncated to the width first, as the kernel does.
  const uint64_t v = p.val & fmask;
  const uint64_t vb = sh.is_signed ? v ^ sign : v;
  uint64_t lo = 0, hi = fmask;
  bool never = false;
  switch (sh.op) {
    case Op::eq:
      lo = hi = vb;
      l.invert = p.negate;
      break;
    case Op::lt:
      if (vb == 0)
        never = true;
      else
        hi = vb - 1;
      break;
    case Op::le:
      hi = vb;
      break;
    case Op::gt:
      if (vb == fmask)
        never = true;
      else
        lo = vb + 1;
      break;
    case Op::ge:
      lo = vb;
      break;
    case Op::band:  // (field & v) != 0 on the raw bits
      l.and_mask = v;
      l.lo = 0;
      l.span = 0;
      l.invert = 1;
      return l;
    default:
      never = true;
      break;
  }
  if (never) {
    l.and_mask = 0;
    l.lo = 0;
    l.span = ~uint64_t{0};
    l.invert = 1;
    return l;
  }
  l.bias = sh.is_signed ? sign : 0;
  l.and_mask = fmask;
  l.lo = lo;
  l.span = hi - lo;
  return l;
}

// Program::read_chunks_ of one predicate that reads bytes [begin, end) at
// fixed positions (end <= begin: none, e.g. CPU or comm from the context);
// a predicate that follows a __data_loc or __rel_loc word may read anywhere.
uint64_t read_chunks_of(detail::Code code, uint32_t begin, uint32_t end) {
  using detail::Code;
  if (code == Code::str_data_loc || code == Code::str_rel_loc || code == Code::cpumask_vs_mask ||
      code == Code::cpumask_vs_cpu)
    return ~uint64_t{0};
  uint64_t m = 0;
  for (uint32_t b = begin / 8; end > begin && b <= (end - 1) / 8; ++b) {
    if (b >= 63) return m | (uint64_t{1} << 63);
    m |= uint64_t{1} << b;
  }
  return m;
}

// Each predicate's destinations when true and when false, as program
// indexes (n: accept, n + 1: reject). A pre-order walk, children left to
// right, so predicates come out in source order: a && b jumps to the
// reject on a false a and falls through to b; a || b the other way round;
// !a swaps its child's two destinations.
std::vector<Jumps> jump_targets(const Ast& ast) {
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
  std::vector<Jumps> jumps(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (out[i].pred != i) throw std::logic_error("filters: predicates out of source order");
    jumps[i] = {resolve(out[i].on_true), resolve(out[i].on_false)};
  }
  return jumps;
}

}  // namespace

class ProgramBuilder {
 public:
  static std::shared_ptr<const Program> build(const Ast& ast);

 private:
  static void lay_out_preds(Program& prog, const Ast& ast, const std::vector<Jumps>& jumps);
  static void build_table(Program& prog);
  static void single_lane(Program& prog);
  static void single_string(Program& prog);
  static void single_cpu(Program& prog);
};

std::shared_ptr<const Program> ProgramBuilder::build(const Ast& ast) {
  auto prog = std::make_shared<Program>();
  prog->nr_cpu_ids_ = ast.nr_cpu_ids;
  prog->words_per_mask_ = (ast.nr_cpu_ids + 63) / 64;
  if (ast.empty()) return prog;
  lay_out_preds(*prog, ast, jump_targets(ast));
  const auto n = static_cast<uint32_t>(prog->preds_.size());
  // Truth table for small all-integer programs (see Program::table_).
  bool numeric = n <= Program::kTableMax;
  for (const detail::Pred& p : prog->preds_)
    numeric = numeric && p.code <= detail::Code::last_fixed_numeric;
  if (numeric) {
    build_table(*prog);
    single_lane(*prog);
  }
  if (n == 1 && prog->preds_[0].code == detail::Code::str_static) single_string(*prog);
  if (n == 1 && prog->preds_[0].code == detail::Code::cpu_cmp) single_cpu(*prog);
  return prog;
}

// The predicates in source order, each with one conditional jump forward
// (branch_if, target) and its operand tables (strings, CPU masks).
void ProgramBuilder::lay_out_preds(Program& prog, const Ast& ast, const std::vector<Jumps>& jumps) {
  const auto n = static_cast<uint32_t>(jumps.size());
  prog.preds_.reserve(n);
  prog.pred_text_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const PredSpec& spec = ast.preds[i];
    detail::Pred p = spec.pred;
    const uint32_t t = jumps[i].on_true, f = jumps[i].on_false;
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
      p.aux = static_cast<uint32_t>(prog.strings_.size());
      prog.strings_.push_back(spec.matcher);
    }
    if (!spec.mask.empty()) {
      p.aux =
          static_cast<uint32_t>(prog.masks_.size() / std::max<uint32_t>(prog.words_per_mask_, 1));
      std::vector<uint64_t> m = spec.mask;
      m.resize(prog.words_per_mask_, 0);
      prog.masks_.insert(prog.masks_.end(), m.begin(), m.end());
    }
    prog.min_size_ = std::max(prog.min_size_, spec.end);
    prog.read_chunks_ |= read_chunks_of(p.code, p.offset, spec.end);
    prog.needs_cpu_ |= p.code == detail::Code::cpu_cmp || p.code == detail::Code::cpu_in_mask;
    prog.preds_.push_back(p);
    prog.pred_text_.push_back(spec.text);
  }
}

// The truth table of an all-integer program: one lane per predicate, and
// the walk's verdict for every combination of the lanes' raw results.
void ProgramBuilder::build_table(Program& prog) {
  const auto n = static_cast<uint32_t>(prog.preds_.size());
  prog.table_min_size_ = prog.min_size_;
  uint32_t inverts = 0;
  for (uint32_t k = 0; k < n; ++k) {
    prog.lanes_.push_back(make_lane(prog.preds_[k]));
    inverts |= uint32_t{prog.lanes_.back().invert} << k;
  }
  // raw lane bits b -> predicate results b ^ inverts -> the walk's verdict.
  for (uint32_t raw = 0; raw < (1u << n); ++raw) {
    const uint32_t bits = raw ^ inverts;
    uint32_t i = 0;
    while (i < n) {
      const bool r = (bits >> i & 1) != 0;
      i = r == static_cast<bool>(prog.preds_[i].branch_if) ? prog.preds_[i].target : i + 1;
    }
    if (i == n) prog.table_[raw >> 6] |= uint64_t{1} << (raw & 63);
  }
  prog.lane_count_ = n;
}

// One lane whose verdict is its raw result or the inverse (table 0b10 or
// 0b01; a program that ignores its only predicate keeps the table). The
// inverse of a range is the rest of the circle of 64-bit values, a range
// too: (y - lo) > span iff (y - (lo + span + 1)) <= 2^64 - 2 - span (mod
// 2^64), so the lane needs no invert step. Only the inverse of "anything"
// (span 2^64 - 1) is no range: that program keeps the table.
void ProgramBuilder::single_lane(Program& prog) {
  const bool inverse = prog.table_[0] == 0b01;
  if (prog.lane_count_ != 1 || !(prog.table_[0] == 0b10 || inverse) ||
      (inverse && prog.lanes_[0].span == ~uint64_t{0}))
    return;
  detail::Lane l = prog.lanes_[0];
  const uint64_t fmask = l.width == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * l.width)) - 1;
  if (l.and_mask == fmask && l.span < fmask) {
    // A compare (not '&', not impossible), done in the field's own width:
    // there the sign bias is an addition of half the circle, so it folds
    // into lo, and the inverse is again the rest of the circle.
    const uint64_t lo = (l.lo ^ l.bias) & fmask;
    l.lo = inverse ? (lo + l.span + 1) & fmask : lo;
    l.span = inverse ? fmask - l.span - 1 : l.span;
    l.bias = 0;
    l.compare_width = l.width;
  } else if (inverse) {
    l.lo = l.lo + l.span + 1;
    l.span = ~uint64_t{0} - l.span - 1;
  }
  l.invert = 0;
  prog.single_ = l;
  prog.single_min_size_ = prog.table_min_size_;
  if (l.compare_width == 4) prog.single32_min_size_ = prog.table_min_size_;
}

// Program::single_cpu_: eval_other's int compare of the CPU with (int)val as
// a range of cpu ^ 2^31, where signed order is unsigned order.
void ProgramBuilder::single_cpu(Program& prog) {
  const detail::Pred& p = prog.preds_[0];
  const int32_t v = static_cast<int32_t>(static_cast<uint32_t>(p.val));
  const uint32_t b = static_cast<uint32_t>(v) ^ 0x80000000u;  // v's place in unsigned order
  bool empty = false;
  Program::SingleCpu sc;
  switch (p.sub) {
    case detail::Op::eq:
      sc.lo = b, sc.span = 0;
      break;
    case detail::Op::ne:
      sc.lo = b + 1, sc.span = 0xfffffffeu;
      break;  // all but b, round the circle
    case detail::Op::lt:
      empty = b == 0, sc.lo = 0, sc.span = b - 1;
      break;
    case detail::Op::le:
      sc.lo = 0, sc.span = b;
      break;
    case detail::Op::gt:
      empty = b == 0xffffffffu, sc.lo = b + 1, sc.span = 0xffffffffu - (b + 1);
      break;
    case detail::Op::ge:
      sc.lo = b, sc.span = 0xffffffffu - b;
      break;
    default:
      return;  // eval_other says false: the walk keeps it
  }
  // The verdict of the one-entry program for the predicate's result r.
  auto verdict = [&](bool r) { return (r == static_cast<bool>(p.branch_if) ? p.target : 1) == 1; };
  sc.verdict_in = verdict(!empty);
  sc.verdict_out = verdict(false);
  sc.on = true;
  prog.single_cpu_ = sc;
}

// Program::single_str_: the bytes of the field that decide a whole-string
// or prefix match, when there are at most 16 (see program.h).
void ProgramBuilder::single_string(Program& prog) {
  const detail::Pred& p = prog.preds_[0];
  const StringMatcher& m = *prog.strings_[p.aux];
  const std::string& pat = m.pattern();
  const size_t n = static_cast<size_t>(p.val);  // the field's size: the kernel's len
  size_t bytes;                                 // compared: the pattern, then its NUL if it counts
  bool with_nul = false;
  if (m.mode() == MatchMode::front) {
    if (n < pat.size()) return;  // never matches: the general path says so
    bytes = pat.size();
  } else if (m.mode() == MatchMode::full) {
    bytes = std::min(n, pat.size());
    with_nul = n > pat.size();
  } else {
    return;
  }
  const size_t total = bytes + (with_nul ? 1 : 0);
  if (total == 0 || total > 16) return;
  Program::SingleString ss;
  ss.pos = p.offset;
  ss.two_words = total > 8;
  unsigned char want[16] = {}, mask[16] = {};
  for (size_t i = 0; i < bytes; ++i) want[i] = static_cast<unsigned char>(pat[i]), mask[i] = 0xff;
  if (with_nul) mask[bytes] = 0xff;  // want[bytes] is already 0
  std::memcpy(ss.want, want, 16);
  std::memcpy(ss.mask, mask, 16);
  // The predicate's result is match != negate; the verdict of the one-entry
  // program for each result follows its branch.
  auto verdict = [&](bool r) {
    const uint32_t i = r == static_cast<bool>(p.branch_if) ? p.target : 1;
    return i == 1;
  };
  ss.verdict_if_match = verdict(!static_cast<bool>(p.negate));
  ss.verdict_if_no_match = verdict(static_cast<bool>(p.negate));
  prog.single_str_ = ss;
  prog.read_chunks_ |=
      read_chunks_of(detail::Code::str_static, ss.pos, ss.pos + (ss.two_words ? 16 : 8));
  prog.single_str_min_size_ =
      std::max<size_t>(prog.min_size_, size_t{ss.pos} + (ss.two_words ? 16 : 8));
}

std::shared_ptr<const Program> build_program(const Ast& ast) { return ProgramBuilder::build(ast); }

}  // namespace tracepipe::filters
