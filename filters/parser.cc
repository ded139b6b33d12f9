#include "tracepipe/filters/parser.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <string>
#include <vector>

#include "tracepipe/filters/ctype.h"
#include "tracepipe/filters/pred_parser.h"

namespace tracepipe::filters {

namespace {

FilterError make_error(FilterErr code, size_t pos, int err) {
  FilterError e;
  e.code = code;
  e.pos = static_cast<int>(pos);
  e.err = err;
  return e;
}

// --- calc_stack ---------------------------------------------------------------

struct StackSize {
  size_t parens = 1;  // deepest nesting, counting the whole expression as one "(E)"
  size_t preds = 0;   // rough predicate count (the kernel's, quirks included)
};

// One pass over the text: quotes, parenthesis balance, predicate count.
// Mirrors kernel/trace/trace_events_filter.c: calc_stack (its error
// positions and its internal return codes, which become errno).
std::variant<StackSize, FilterError> calc_stack(std::string_view s) {
  auto at = [&](size_t k) -> unsigned char {
    return k < s.size() ? static_cast<unsigned char>(s[k]) : 0;
  };
  bool is_pred = false;
  size_t nr_preds = 0, open = 1, max_open = 1, last_quote = 0;
  unsigned char quote = 0;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const unsigned char c = at(i);
    if (kctype::is_space(c)) continue;
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    switch (c) {
      case '\'':
      case '"':
        quote = c;
        last_quote = i;
        break;
      case '|':
      case '&':
        if (at(i + 1) != c) break;
        is_pred = false;
        continue;
      case '(':
        is_pred = false;
        max_open = std::max(max_open, ++open);
        continue;
      case ')':
        is_pred = false;
        if (open == 1) return make_error(FilterErr::too_many_close, i, EPERM);
        --open;
        continue;
      default:
        break;
    }
    if (!is_pred) {
      ++nr_preds;
      is_pred = true;
    }
  }
  if (quote) return make_error(FilterErr::missing_quote, last_quote, ESRCH);
  if (open != 1) {
    // Find the unmatched '(' scanning backwards (index 0 is never examined).
    size_t level = open;
    for (size_t k = i; k-- > 1;) {
      const unsigned char c = at(k);
      if (quote) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '(') {
        if (level == open) return make_error(FilterErr::too_many_open, k, ENOENT);
        --level;
      } else if (c == ')') {
        ++level;
      } else if (c == '\'' || c == '"') {
        quote = c;
      }
    }
    return make_error(FilterErr::too_many_open, 0, ENOENT);
  }
  return StackSize{max_open, nr_preds};
}

// --- tree building ------------------------------------------------------------

class TreeBuilder {
 public:
  explicit TreeBuilder(Ast& ast) : ast_(ast) { frames_.push_back(Frame{}); }

  size_t depth() const noexcept { return frames_.size() - 1; }
  void toggle_not() noexcept { pending_not_ = !pending_not_; }
  void open_group() {
    frames_.push_back(Frame{});
    frames_.back().negate = pending_not_;
    pending_not_ = false;
  }
  void add_pred(PredSpec spec) {
    ast_.preds.push_back(std::move(spec));
    uint32_t id = add_node(AstNode::Kind::pred, static_cast<uint32_t>(ast_.preds.size() - 1), 0);
    if (pending_not_) id = negate(id);
    pending_not_ = false;
    frames_.back().all.push_back(id);
    frames_.back().dangling = 0;
  }
  void and_op() { frames_.back().dangling = '&'; }
  void or_op() {
    Frame& f = frames_.back();
    f.any.push_back(combine(AstNode::Kind::all_of, f.all));
    f.all.clear();
    f.dangling = '|';
  }
  void close_group() {
    Frame f = std::move(frames_.back());
    frames_.pop_back();
    uint32_t id = finish(f);
    if (f.negate) id = negate(id);
    pending_not_ = false;
    frames_.back().all.push_back(id);
    frames_.back().dangling = 0;
  }
  /// The expression ended in "&&" or "||" (then maybe "!"s).
  bool dangling() const noexcept { return frames_.front().dangling != 0; }
  /// The dangling-operator case TrailingOperator::ignore's kernel cannot
  /// compile (see parser.h).
  bool kernel_breaks() const noexcept {
    const Frame& f = frames_.front();
    return f.dangling == '&' && !f.any.empty();
  }
  void finish_root() {
    Frame& f = frames_.front();
    ast_.root = finish(f);
  }

 private:
  struct Frame {
    bool negate = false;
    char dangling = 0;
    std::vector<uint32_t> any;  // closed "&&" chains of this level, joined by "||"
    std::vector<uint32_t> all;  // the current "&&" chain
  };

  uint32_t add_node(AstNode::Kind k, uint32_t first, uint32_t count) {
    ast_.nodes.push_back(AstNode{k, first, count});
    return static_cast<uint32_t>(ast_.nodes.size() - 1);
  }
  uint32_t negate(uint32_t child) {
    ast_.children.push_back(child);
    return add_node(AstNode::Kind::negate, static_cast<uint32_t>(ast_.children.size() - 1), 1);
  }
  uint32_t combine(AstNode::Kind k, const std::vector<uint32_t>& items) {
    if (items.size() == 1) return items.front();
    const auto first = static_cast<uint32_t>(ast_.children.size());
    ast_.children.insert(ast_.children.end(), items.begin(), items.end());
    return add_node(k, first, static_cast<uint32_t>(items.size()));
  }
  uint32_t finish(Frame& f) {
    if (!f.all.empty()) f.any.push_back(combine(AstNode::Kind::all_of, f.all));
    return combine(AstNode::Kind::any_of, f.any);
  }

  Ast& ast_;
  std::vector<Frame> frames_;
  bool pending_not_ = false;
};

bool is_not(std::string_view s, size_t k) {
  const unsigned char n = k + 1 < s.size() ? static_cast<unsigned char>(s[k + 1]) : 0;
  return n != '=' && n != '~';
}

// Mirrors kernel/trace/trace_events_filter.c: predicate_parse (first pass).
ParseResult predicate_parse(const ParseInput& in, StackSize size) {
  const std::string_view s = in.expr;
  auto at = [&](size_t k) -> unsigned char {
    return k < s.size() ? static_cast<unsigned char>(s[k]) : 0;
  };
  Ast ast;
  ast.nr_cpu_ids = in.nr_cpu_ids;
  TreeBuilder tree(ast);
  const size_t max_preds = size.preds + 2;  // "+2 for TRUE and FALSE"
  size_t n_preds = 0;
  size_t ptr = 0;
  while (ptr < s.size()) {  // #1
    size_t next = ptr++;
    const unsigned char c = at(next);
    if (kctype::is_space(c)) continue;
    if (c == '(') {  // #2
      if (tree.depth() > size.parens) return make_error(FilterErr::errno_error, 0, EINVAL);
      tree.open_group();
      continue;
    }
    if (c == '!' && is_not(s, next)) {  // #3
      tree.toggle_not();
      continue;
    }
    if (n_preds >= max_preds)
      return make_error(FilterErr::too_many_preds, next, n_preds == 0 ? ENOMEM : EPERM);
    PredOutcome p = parse_pred(in, next);  // #4
    if (p.status == PredOutcome::Status::no_field)
      return make_error(FilterErr::errno_error, 0, EPERM);
    if (p.status == PredOutcome::Status::error) return std::move(p.error);
    ptr = next + p.length;
    ++n_preds;
    tree.add_pred(std::move(p.spec));

    for (;;) {  // #5
      next = ptr++;
      const unsigned char d = at(next);
      if (kctype::is_space(d)) continue;
      if (d == '&' || d == '|') {
        if (at(next + 1) != d) return make_error(FilterErr::too_many_preds, next, EPERM);
        ++ptr;
        if (d == '&') {
          tree.and_op();  // #7, #8
        } else {
          tree.or_op();  // #9, #10
        }
        break;
      }
      if (d == 0 && next >= s.size()) goto out;  // #11
      if (d != ')') return make_error(FilterErr::too_many_preds, next, EPERM);
      if (tree.depth() == 0) return make_error(FilterErr::too_many_close, ptr, EPERM);
      tree.close_group();  // #12
    }
  }
out:
  if (tree.depth() != 0) return make_error(FilterErr::too_many_open, ptr, EPERM);
  if (n_preds == 0) return make_error(FilterErr::no_filter, ptr, EINVAL);
  if (tree.dangling()) {
    // ptr is the end of the (stripped) command, where the kernel's caret goes.
    if (in.options->trailing_operator == TrailingOperator::reject)
      return make_error(FilterErr::invalid_filter, ptr, EINVAL);
    if (tree.kernel_breaks()) return make_error(FilterErr::errno_error, 0, EINVAL);
  }
  tree.finish_root();
  return ast;
}

uint32_t possible_cpus() {
  // "0-1", "0-63", "0,2-3": the highest CPU number + 1.
  std::ifstream in("/sys/devices/system/cpu/possible");
  std::string text;
  if (in && std::getline(in, text)) {
    uint32_t last = 0, cur = 0;
    bool any = false, in_num = false;
    for (char c : text) {
      if (c >= '0' && c <= '9') {
        cur = cur * 10 + static_cast<uint32_t>(c - '0');
        in_num = true;
      } else {
        if (in_num) last = std::max(last, cur), any = true;
        cur = 0;
        in_num = false;
      }
    }
    if (in_num) last = std::max(last, cur), any = true;
    if (any) return last + 1;
  }
  const long n = sysconf(_SC_NPROCESSORS_CONF);
  return n > 0 ? static_cast<uint32_t>(n) : 1;
}

}  // namespace

std::string_view kernel_command(std::string_view expr) noexcept {
  if (const size_t z = expr.find('\0'); z != std::string_view::npos) expr = expr.substr(0, z);
  while (!expr.empty() && kctype::is_space(static_cast<unsigned char>(expr.back())))
    expr.remove_suffix(1);
  return expr;
}

bool clears_filter(std::string_view expr) noexcept {
  std::string_view s = kernel_command(expr);
  while (!s.empty() && kctype::is_space(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s == "0";
}

uint32_t effective_nr_cpu_ids(const CompileOptions& options) {
  if (options.nr_cpu_ids) return options.nr_cpu_ids;
  static const uint32_t n = possible_cpus();
  return n;
}

ParseResult parse(std::string_view expr, std::span<const FieldDesc> fields,
                  const CompileOptions& options) {
  // event_filter_write(): writes of PAGE_SIZE or more fail with EINVAL, unlogged.
  if (expr.size() > kMaxExpressionBytes)
    return make_error(FilterErr::expression_too_long, 0, EINVAL);
  const std::string_view cmd = kernel_command(expr);
  if (clears_filter(cmd)) {  // apply_event_filter(): "0" (after strstrip) removes the filter
    Ast empty;
    empty.nr_cpu_ids = effective_nr_cpu_ids(options);
    return empty;
  }
  auto st = calc_stack(cmd);
  if (auto* e = std::get_if<FilterError>(&st)) return std::move(*e);
  const StackSize size = std::get<StackSize>(st);
  if (size.preds == 0) return make_error(FilterErr::errno_error, 0, EINVAL);
  ParseInput in{cmd, fields, &options, effective_nr_cpu_ids(options)};
  return predicate_parse(in, size);
}

}  // namespace tracepipe::filters
