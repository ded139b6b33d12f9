#pragma once
// Hist expressions and variables: `name=expr` assignments, `$name`
// references, constants and + - * / (Documentation/trace/histogram.rst,
// section 2.2.1). Internal to core/triggers.
//
// ══ Shape ════════════════════════════════════════════════════════════════════
//
//   "wakeup_lat=common_timestamp.usecs-$ts0"
//        nodes[2] = minus(a=0, b=1)      root of the variable wakeup_lat
//        nodes[0] = value common_timestamp (.usecs)
//        nodes[1] = ref 0                 refs[0] = ts0 on sched:sched_waking (read once)
//
// The tree is a flat array (HistSpec::nodes) evaluated by eval() with the
// values of the references already read (one per HistSpec::refs entry).
// Parsing follows the kernel's parse_expr(): the root operator is the
// rightmost '+' or '-', else the rightmost '*' or '/', so that `a-b-c` is
// `(a-b)-c`; unary minus needs parentheses and stands only at the top; at
// most 3 subexpressions. Both operands constant: folded into a constant.
//
// Division (the kernel's hist_field_div and its constant-divisor
// variants): a divisor that is 0 at run time gives -1 (all ones); a
// constant 0 divisor is refused at parse time ("Division by zero"); a
// constant power of two shifts; another constant up to 2^20 multiplies and
// shifts for dividends below 2^20 (the kernel's div_by_mult_and_shift,
// which may round up by one), else divides.
//
// Mirrors kernel/trace/trace_events_hist.c: parse_expr, parse_unary,
// parse_atom, contains_operator, expr_str, hist_field_div and friends.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tracepipe/core/triggers/hist.h"

namespace tracepipe::triggers {

/// kstrtoull with base 0 (0x.., 0.., decimal) over the whole string: the
/// numbers of hist specs and expressions (defined in hist.cc).
std::optional<uint64_t> parse_ull(std::string_view s);

/// Evaluates node `n` of `spec` on the record. `refv[i]` is the value of
/// spec.refs[i] (read by the caller). Write path: no allocation.
uint64_t eval_expr(const HistSpec& spec, int n, std::span<const std::byte> rec, uint32_t cpu,
                   uint64_t ts, const uint64_t* refv) noexcept;

/// Parses `str` (an expression as written in the command) into spec.nodes;
/// returns the root node, or -1 with the error set. `var_name` is the name
/// being assigned (empty for keys and vals); `n_subexprs` counts the
/// operators seen so far (at most 3).
int parse_hist_expr(HistParser& p, std::string_view str, int& n_subexprs);

/// The index of this hist's variable `name`, or -1.
int find_own_var(const HistSpec& spec, std::string_view name);
/// Adds (or finds) the reference to variable `name`: this hist's own when
/// `own_ok`, else the onmatch event's, else the one hist that defines it.
/// Returns its index in spec.refs, or -1 with the error set.
int resolve_var_ref(HistParser& p, std::string_view system, std::string_view event,
                    std::string_view name, bool own_ok);

/// expr_str(): the text of an expression node as the trigger info prints
/// it ("common_timestamp.usecs-$ts0").
std::string expr_text(const HistSpec& spec, int n);

}  // namespace tracepipe::triggers
