#pragma once
// One predicate "FIELD[.ustring][.function] OP VALUE" -> PredSpec.
// Mirrors kernel/trace/trace_events_filter.c: parse_pred (with its error
// codes and positions) and kernel/trace/trace_events.c: the generic fields.
#include <cstddef>
#include <span>
#include <string_view>

#include "tracepipe/filters/ast.h"
#include "tracepipe/filters/compile.h"
#include "tracepipe/filters/errors.h"
#include "tracepipe/filters/field.h"

namespace tracepipe::filters {

/// What the parser knows while reading one expression.
struct ParseInput {
  std::string_view expr;              ///< trailing whitespace already removed
  std::span<const FieldDesc> fields;  ///< the event's fields (incl. common_*)
  const CompileOptions* options = nullptr;
  uint32_t nr_cpu_ids = 0;
};

struct PredOutcome {
  enum class Status : uint8_t {
    ok,        ///< spec is set; length bytes consumed from start
    no_field,  ///< no field name at start: the kernel returns -1 ("Error", EPERM)
    error,     ///< error is set
  };
  Status status = Status::error;
  size_t length = 0;
  PredSpec spec;
  FilterError error;
};

/// Parses the predicate beginning at expr[start] (not a space, '(' or a
/// negating '!'). Error positions are the kernel's: relative to the
/// expression, with the kernel's +1 bias (pos = start + 1 + i).
PredOutcome parse_pred(const ParseInput& in, size_t start);

}  // namespace tracepipe::filters
