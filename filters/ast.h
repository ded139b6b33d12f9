#pragma once
// The parsed filter: a boolean tree over predicates, before it is flattened.
//
// Nodes live in one vector and refer to each other by index (children are
// built before parents), so neither building nor destroying the tree recurses.
// Predicates are numbered in source order; compile() emits them in the same
// order, so AST predicate k is program entry k.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tracepipe/filters/program.h"
#include "tracepipe/filters/string_match.h"

namespace tracepipe::filters {

/// One parsed and resolved predicate (field, operator, literal).
/// Mirrors kernel/trace/trace_events_filter.c: struct filter_pred after parse_pred().
struct PredSpec {
  detail::Pred pred;                             ///< code, offset, literal (targets unset)
  std::string text;                              ///< source text, for dump()
  std::shared_ptr<const StringMatcher> matcher;  ///< string predicates
  std::vector<uint64_t> mask;                    ///< CPUS{...} with two or more CPUs
  uint32_t end = 0;                              ///< offset + size of the fixed-position bytes read
};

struct AstNode {
  enum class Kind : uint8_t { pred, negate, all_of, any_of };
  Kind kind = Kind::pred;
  uint32_t first = 0;  ///< pred: PredSpec index; others: index into Ast::children
  uint32_t count = 0;  ///< number of children (negate: 1)
};

struct Ast {
  std::vector<AstNode> nodes;
  std::vector<uint32_t> children;
  std::vector<PredSpec> preds;
  uint32_t root = 0;
  uint32_t nr_cpu_ids = 0;
  bool empty() const noexcept { return preds.empty(); }
  std::span<const uint32_t> kids(const AstNode& n) const noexcept {
    return std::span<const uint32_t>(children).subspan(n.first, n.count);
  }
};

/// The tree as text with explicit parentheses, e.g. "(p0 && !(p1 || p2))"
/// (predicates by their source text). For tests and debugging.
std::string to_string(const Ast& ast);

/// Evaluates the tree directly (no flattening, no short-circuit tricks), using
/// the program's predicate evaluator for the leaves. The differential tests
/// and the fuzzer compare it with Program::match. Recursion depth is bounded
/// by the nesting of the expression (< 2048 for the kernel's 4 KiB limit).
bool reference_match(const Ast& ast, const Program& program, std::span<const std::byte> record,
                     const EvalContext& ctx);

}  // namespace tracepipe::filters
