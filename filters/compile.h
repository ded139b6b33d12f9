#pragma once
// compile(): filter expression + event fields -> immutable Program, or the
// kernel's error. Parse -> AST (filters/ast.h) -> flat program (filters/program.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <variant>

#include "tracepipe/filters/errors.h"
#include "tracepipe/filters/field.h"
#include "tracepipe/filters/program.h"

namespace tracepipe::filters {

/// A kernel symbol's address range [start, start + size), as kallsyms gives it.
struct SymbolRange {
  uint64_t start = 0;
  uint64_t size = 0;
};

/// What the parser does with an expression that ends in "&&" or "||"
/// (optionally followed by "!"s): the kernel changed here between two builds
/// of the same 6.18.44 release, and both are still met.
enum class TrailingOperator : uint8_t {
  /// "Meaningless filter expression" (EINVAL), caret at the end of the
  /// command: the kernel on the team's machines (6.18.44 build v1045). The
  /// default.
  reject,
  /// Dropped, as if it were not there, except "&&" after a top-level "||",
  /// which is "Error" (EINVAL; that kernel indexes before its program and
  /// WARNs): the build that decided shared/data/kernel/filter-oracle (v657).
  ignore,
};

/// Knobs for compile(). The defaults reproduce the kernel's behaviour.
struct CompileOptions {
  /// The kernel's nr_cpu_ids: CPUS{...} lists naming a CPU >= this are
  /// "Invalid cpulist", and cpumask tests ignore CPUs >= this.
  /// 0 = the number of possible CPUs of this machine (/sys/devices/system/cpu/possible).
  uint32_t nr_cpu_ids = 0;
  /// Accept the `=~` / `!~` RE2 extension. false = strict kernel syntax
  /// (then `=~` is "Invalid operator", as in the kernel).
  bool extensions = true;
  /// A dangling "&&" / "||" at the end (see TrailingOperator).
  TrailingOperator trailing_operator = TrailingOperator::reject;
  /// kallsyms for `FIELD.function == SYMBOL` (by name) and `== 0xADDR` (by
  /// address: the symbol containing it). Empty or nullopt = "Function not found".
  std::function<std::optional<SymbolRange>(std::string_view name)> symbol_by_name;
  std::function<std::optional<SymbolRange>(uint64_t address)> symbol_by_address;
};

/// Either a compiled program or the kernel's error. No exceptions for bad input.
class CompileResult {
 public:
  CompileResult(std::shared_ptr<const Program> p) : v_(std::move(p)) {}
  CompileResult(FilterError e) : v_(std::move(e)) {}

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  /// The program; precondition ok().
  const std::shared_ptr<const Program>& program() const { return std::get<0>(v_); }
  /// The error; precondition !ok().
  const FilterError& error() const { return std::get<1>(v_); }

 private:
  std::variant<std::shared_ptr<const Program>, FilterError> v_;
};

/// Compiles a filter expression for an event with the given fields (offsets
/// from the start of the record, common_type at 0). Accepts exactly what the
/// kernel accepts (Linux 6.18) and rejects the rest with the kernel's error,
/// position and errno. Also resolves the generic fields CPU/cpu/common_cpu,
/// COMM/comm and stacktrace/STACKTRACE like the kernel. "0" (after stripping
/// whitespace) yields an empty program that matches everything: the kernel
/// clears the filter.
/// Thread-safe (no shared state). Allocates; never call on the write path.
/// Mirrors kernel/trace/trace_events_filter.c: create_filter, process_preds.
CompileResult compile(std::string_view expr, std::span<const FieldDesc> fields,
                      const CompileOptions& options = {});

}  // namespace tracepipe::filters
