#include "tracepipe/filters/ast.h"

namespace tracepipe::filters {

namespace {

void append(const Ast& ast, uint32_t id, std::string& out) {
  const AstNode& n = ast.nodes[id];
  switch (n.kind) {
    case AstNode::Kind::pred:
      out += ast.preds[n.first].text;
      return;
    case AstNode::Kind::negate:
      out += "!(";
      append(ast, ast.kids(n)[0], out);
      out += ')';
      return;
    case AstNode::Kind::all_of:
    case AstNode::Kind::any_of: {
      const char* sep = n.kind == AstNode::Kind::all_of ? " && " : " || ";
      out += '(';
      bool first = true;
      for (uint32_t k : ast.kids(n)) {
        if (!first) out += sep;
        first = false;
        append(ast, k, out);
      }
      out += ')';
      return;
    }
  }
}

bool eval(const Ast& ast, uint32_t id, const Program& prog, std::span<const std::byte> rec,
          const EvalContext& ctx) {
  const AstNode& n = ast.nodes[id];
  switch (n.kind) {
    case AstNode::Kind::pred:
      return prog.eval_entry(n.first, rec, ctx);
    case AstNode::Kind::negate:
      return !eval(ast, ast.kids(n)[0], prog, rec, ctx);
    case AstNode::Kind::all_of:
      for (uint32_t k : ast.kids(n))
        if (!eval(ast, k, prog, rec, ctx)) return false;
      return true;
    case AstNode::Kind::any_of:
      for (uint32_t k : ast.kids(n))
        if (eval(ast, k, prog, rec, ctx)) return true;
      return false;
  }
  return false;
}

}  // namespace

std::string to_string(const Ast& ast) {
  if (ast.empty()) return "<match all>";
  std::string out;
  append(ast, ast.root, out);
  return out;
}

bool reference_match(const Ast& ast, const Program& program, std::span<const std::byte> record,
                     const EvalContext& ctx) {
  if (ast.empty()) return true;
  return eval(ast, ast.root, program, record, ctx);
}

}  // namespace tracepipe::filters
