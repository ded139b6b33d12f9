#pragma once
// Internal to print_fmt: the compiled form of a print fmt.
//
//   "vec=%u [action=%s]", REC->vec, __print_symbolic(REC->vec, { 0, "HI" }, ...)
//      │                     │           │
//      ▼                     ▼           ▼
//   pieces: "vec=" %u " [action=" %s "]"   args: [Field vec] [Call symbolic(Field vec; table)]
//
// Expressions are trees of Expr nodes; fields are resolved to the event's
// FormatField (by index into PrintProgram::format) at compile time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tracepipe/core/events/event_format.h"

namespace tracepipe::detail {

enum class Helper : uint8_t {
  get_str,
  get_rel_str,
  dyn_array,
  rel_dyn_array,
  dyn_array_len,
  rel_dyn_array_len,
  bitmask,
  rel_bitmask,
  print_flags,
  print_symbolic,
  print_hex,
  print_hex_str,
  print_array,
};

enum class Op : uint8_t {
  neg,
  lnot,
  bnot,  // unary
  mul,
  div,
  mod,
  add,
  sub,
  shl,
  shr,  // binary arithmetic
  lt,
  gt,
  le,
  ge,
  eq,
  ne,
  band,
  bxor,
  bor,
  land,
  lor,
};

/// A C cast target: integer width/signedness, or a pointer.
struct CastType {
  uint8_t size = 8;  ///< bytes
  bool is_signed = false;
  bool is_pointer = false;
};

struct Expr {
  enum class Kind : uint8_t {
    number,   ///< num (is_signed says whether it is an int or unsigned literal)
    string,   ///< text
    field,    ///< REC->name: field index
    index,    ///< kids[0][kids[1]]
    unary,    ///< op kids[0]
    binary,   ///< kids[0] op kids[1]
    ternary,  ///< kids[0] ? kids[1] : kids[2]
    cast,     ///< (cast) kids[0]
    helper,   ///< helper(kids...), field for the __get_* family
    unknown,  ///< an identifier we cannot evaluate (enum constant...): text
  };
  Kind kind = Kind::number;
  Op op = Op::neg;
  Helper helper = Helper::get_str;
  CastType cast;
  bool is_signed = true;
  uint64_t num = 0;
  std::string text;
  int32_t field = -1;  ///< index into PrintProgram::fields
  std::vector<std::unique_ptr<Expr>> kids;
  /// __print_flags / __print_symbolic tables: value expression, label.
  std::vector<std::pair<std::unique_ptr<Expr>, std::string>> table;
  std::string delim;  ///< __print_flags delimiter
};

/// One piece of the format string: literal text, or a conversion.
struct Piece {
  std::string literal;  ///< text to copy (escapes already decoded); empty for a conversion
  bool is_conversion = false;
  std::string flags;   ///< subset of "-+ #0"
  int width = -1;      ///< -1: none; -2: '*' (taken from the argument list)
  int precision = -1;  ///< -1: none; -2: '*'
  int8_t length = 0;   ///< -2 hh, -1 h, 0 none, 1 l, 2 ll/L/q/j/z/t (64-bit)
  char conv = 0;       ///< d i u x X o c s p %
  std::string pext;    ///< letters after %p: "S", "s", "F", "M", "I4", "I6c"...
};

struct PrintProgram {
  EventFormat format;
  std::vector<FormatField> fields;  ///< common + event fields, resolved by index
  std::vector<Piece> pieces;
  std::vector<std::unique_ptr<Expr>> args;
  std::string error;  ///< non-empty: compilation failed
};

/// Parses `format.print_fmt` into a program; sets `error` on failure.
/// Never throws for bad input (std::bad_alloc aside).
std::shared_ptr<PrintProgram> compile_print_fmt(const EventFormat& format);

}  // namespace tracepipe::detail
