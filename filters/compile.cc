#include "tracepipe/filters/compile.h"

#include "tracepipe/filters/codegen.h"
#include "tracepipe/filters/parser.h"

namespace tracepipe::filters {

CompileResult compile(std::string_view expr, std::span<const FieldDesc> fields,
                      const CompileOptions& options) {
  ParseResult parsed = parse(expr, fields, options);
  if (!parsed.ok()) return parsed.error();
  return build_program(parsed.ast());
}

}  // namespace tracepipe::filters
