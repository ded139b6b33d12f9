#pragma once
// tracepipe::filters — public API of the kernel event-filter language.
//
//   compile(expr, fields) -> CompileResult { shared_ptr<const Program> | FilterError }
//   program->match(record_bytes, ctx) -> bool       (no allocation, no recursion)
//
// Mirrors kernel/trace/trace_events_filter.c: the same syntax, verdicts, error
// texts and caret positions (Documentation/trace/events.rst "Event filtering").
// Extension (not in the kernel, as libtraceevent): `=~` and `!~` RE2 regexes.
//
// This header is the stable contract; the pieces live in field.h, errors.h,
// program.h and compile.h.
#include "tracepipe/filters/compile.h"
#include "tracepipe/filters/errors.h"
#include "tracepipe/filters/field.h"
#include "tracepipe/filters/program.h"
