#include "tracepipe/filters/pred_parser.h"

#include <array>
#include <cerrno>
#include <optional>

#include "tracepipe/filters/cpulist.h"
#include "tracepipe/filters/ctype.h"
#include "tracepipe/filters/number.h"

namespace tracepipe::filters {

namespace {

using detail::Code;
using detail::Op;

// The kernel's filter types. Mirrors kernel/trace/trace.h: enum filter_type
// (FILTER_OTHER, FILTER_STATIC_STRING, ...), as filter_assign_type() and the
// generic fields set them.
enum class FilterType : uint8_t {
  other,
  static_string,
  dyn_string,
  rdyn_string,
  ptr_string,
  cpumask,
  cpu,
  comm,
  stacktrace
};

struct Field {
  FilterType type = FilterType::other;
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
};

FilterType filter_type_of(FieldKind k) {
  switch (k) {
    case FieldKind::char_array:
      return FilterType::static_string;
    case FieldKind::data_loc_string:
      return FilterType::dyn_string;
    case FieldKind::rel_loc_string:
      return FilterType::rdyn_string;
    case FieldKind::string_ptr:
      return FilterType::ptr_string;
    case FieldKind::cpumask:
      return FilterType::cpumask;
    case FieldKind::integer:
    case FieldKind::other:
      return FilterType::other;
  }
  return FilterType::other;
}

// trace_find_event_field(): the event's own fields (common_* included, as the
// caller lists them), then the generic fields. Generic fields have size 0.
// Mirrors kernel/trace/trace_events.c: trace_define_generic_fields.
std::optional<Field> find_field(std::span<const FieldDesc> fields, std::string_view name) {
  for (const FieldDesc& f : fields)
    if (f.name == name) return Field{filter_type_of(f.kind), f.offset, f.size, f.is_signed};
  struct Generic {
    std::string_view name;
    FilterType type;
    bool is_signed;
  };
  static constexpr std::array<Generic, 7> kGeneric = {{
      {"CPU", FilterType::cpu, true},
      {"cpu", FilterType::cpu, true},
      {"common_cpu", FilterType::cpu, true},
      {"COMM", FilterType::comm, false},
      {"comm", FilterType::comm, false},
      {"stacktrace", FilterType::stacktrace, false},
      {"STACKTRACE", FilterType::stacktrace, false},
  }};
  for (const Generic& g : kGeneric)
    if (g.name == name) return Field{g.type, 0, 0, g.is_signed};
  return std::nullopt;
}

bool is_string_field(const Field& f) {
  switch (f.type) {
    case FilterType::static_string:
    case FilterType::dyn_string:
    case FilterType::rdyn_string:
    case FilterType::ptr_string:
    case FilterType::comm:
      return true;
    default:
      return false;
  }
}

struct OpText {
  std::string_view text;
  Op op;
  bool extension;
};
// Kernel order ("<=" before "<", ">=" before ">"), then the RE2 extension.
constexpr std::array<OpText, 10> kOps = {{
    {"~", Op::glob, false},
    {"!=", Op::ne, false},
    {"==", Op::eq, false},
    {"<=", Op::le, false},
    {"<", Op::lt, false},
    {">=", Op::ge, false},
    {">", Op::gt, false},
    {"&", Op::band, false},
    {"=~", Op::re_match, true},
    {"!~", Op::re_nomatch, true},
}};

constexpr size_t kMaxFilterStrVal = 256;  // MAX_FILTER_STR_VAL
constexpr size_t kNumBufSize = 24;        // num_buf[24] in parse_pred

// select_comparison_fn(): equality by width, ordered compares by width and
// signedness; any other width is the NOP predicate (always false).
Code comparison_code(Op op, uint32_t size, bool is_signed) {
  int w;
  switch (size) {
    case 1:
      w = 0;
      break;
    case 2:
      w = 1;
      break;
    case 4:
      w = 2;
      break;
    case 8:
      w = 3;
      break;
    default:
      return Code::always_false;
  }
  if (op == Op::eq || op == Op::ne) return static_cast<Code>(static_cast<int>(Code::eq8) + w);
  int k;
  switch (op) {
    case Op::lt:
      k = 0;
      break;
    case Op::le:
      k = 1;
      break;
    case Op::gt:
      k = 2;
      break;
    case Op::ge:
      k = 3;
      break;
    case Op::band:
      k = 4;
      break;
    default:
      return Code::always_false;
  }
  // Layout of Code: per width, signed block of 5 then unsigned block of 5.
  const int base = static_cast<int>(Code::lt_s8) + w * 10 + (is_signed ? 0 : 5);
  return static_cast<Code>(base + k);
}

class PredParser {
 public:
  PredParser(const ParseInput& in, size_t start)
      : in_(in), start_(start), pos_(static_cast<int>(start) + 1) {}

  PredOutcome run();

 private:
  unsigned char at(size_t i) const noexcept {
    const size_t k = start_ + i;
    return k < in_.expr.size() ? static_cast<unsigned char>(in_.expr[k]) : 0;
  }
  std::string_view from(size_t i) const noexcept {
    const size_t k = start_ + i;
    return k < in_.expr.size() ? in_.expr.substr(k) : std::string_view();
  }
  std::string_view slice(size_t a, size_t b) const noexcept {
    return in_.expr.substr(start_ + a, b - a);
  }
  PredOutcome fail(FilterErr code, size_t i, int err = EINVAL) const {
    PredOutcome o;
    o.status = PredOutcome::Status::error;
    o.error.code = code;
    o.error.pos = pos_ + static_cast<int>(i);
    o.error.err = err;
    return o;
  }
  PredOutcome done(size_t i) {
    out_.status = PredOutcome::Status::ok;
    out_.length = i;
    std::string_view text = slice(name_start_, i);
    while (!text.empty() && kctype::is_space(static_cast<unsigned char>(text.back())))
      text.remove_suffix(1);
    out_.spec.text.assign(text);
    return std::move(out_);
  }

  PredOutcome function_value(size_t i, size_t s);
  PredOutcome cpus_value(size_t i);
  PredOutcome string_value(size_t i, size_t s);
  PredOutcome number_value(size_t i, size_t s);

  const ParseInput& in_;
  size_t start_;
  int pos_;  // the kernel's "pos" argument: one past the predicate's first byte
  size_t name_start_ = 0;
  Field field_;
  Op op_ = Op::eq;
  bool ustring_ = false;
  PredOutcome out_;
};

PredOutcome PredParser::run() {
  size_t i = 0;
  while (kctype::is_space(at(i))) ++i;
  const size_t s = i;
  name_start_ = s;
  while (kctype::is_alnum(at(i)) || at(i) == '_') ++i;
  if (i == s) {
    PredOutcome o;
    o.status = PredOutcome::Status::no_field;
    return o;
  }
  const auto f = find_field(in_.fields, slice(s, i));
  if (!f) return fail(FilterErr::field_not_found, i);
  field_ = *f;

  bool function = false;
  if (from(i).starts_with(".ustring")) {
    ustring_ = true;
    i += 8;
  }
  if (from(i).starts_with(".function")) {
    function = true;
    i += 9;
  }
  while (kctype::is_space(at(i))) ++i;

  const OpText* op = nullptr;
  for (const OpText& o : kOps) {
    if (o.extension && !in_.options->extensions) continue;
    if (from(i).starts_with(o.text)) {
      op = &o;
      break;
    }
  }
  if (!op) return fail(FilterErr::invalid_op, i);
  op_ = op->op;
  i += op->text.size();
  while (kctype::is_space(at(i))) ++i;
  const size_t v = i;

  out_.spec.pred.offset = field_.offset;
  out_.spec.pred.sub = op_;

  if (function) return function_value(i, v);
  if (from(i).starts_with("CPUS")) return cpus_value(i);
  if (at(i) == '\'' || at(i) == '"') return string_value(i, v);
  if (kctype::is_digit(at(i)) || at(i) == '-') return number_value(i, v);
  return fail(FilterErr::invalid_value, i);
}

// FIELD.function == SYMBOL | 0xADDR: a range test against one kernel function.
PredOutcome PredParser::function_value(size_t i, size_t s) {
  if (field_.size != 8) return fail(FilterErr::illegal_field_op, i);
  if (op_ != Op::eq && op_ != Op::ne) return fail(FilterErr::invalid_op, i);
  std::optional<SymbolRange> range;
  if (kctype::is_digit(at(i))) {
    while (kctype::is_alnum(at(i))) ++i;
    if (i - s >= kNumBufSize) return fail(FilterErr::operand_too_long, i);
    const auto ip = kstrtoull(slice(s, i));
    if (!ip) return fail(FilterErr::invalid_value, i);
    if (in_.options->symbol_by_address) range = in_.options->symbol_by_address(*ip);
  } else {
    s = i;
    while (at(i) && !kctype::is_space(at(i))) ++i;
    if (in_.options->symbol_by_name) range = in_.options->symbol_by_name(slice(s, i));
  }
  if (!range) return fail(FilterErr::no_function, i);
  auto& p = out_.spec.pred;
  p.code = Code::function_range;
  p.val = range->start;
  p.val2 = range->start + range->size;
  p.negate = op_ == Op::ne;
  out_.spec.end = field_.offset + 8;
  return done(i);
}

// FIELD OP CPUS{list}: a CPU mask literal.
PredOutcome PredParser::cpus_value(size_t i) {
  switch (field_.type) {
    case FilterType::cpumask:
    case FilterType::cpu:
    case FilterType::other:
      break;
    default:
      return fail(FilterErr::illegal_field_op, i);
  }
  if (op_ != Op::eq && op_ != Op::ne && op_ != Op::band)
    return fail(FilterErr::illegal_field_op, i);
  i += 4;
  if (at(i++) != '{') return fail(FilterErr::missing_brace_open, i);
  const size_t mask_start = i;
  while (at(i) && at(i) != '}') ++i;
  if (at(i) != '}') return fail(FilterErr::missing_brace_close, i);
  if (mask_start == i) return fail(FilterErr::invalid_cpulist, i);
  const auto list = parse_cpulist(slice(mask_start, i), in_.nr_cpu_ids);
  if (!list) return fail(FilterErr::invalid_cpulist, i);
  ++i;

  auto& p = out_.spec.pred;
  const bool single = list->weight() == 1;
  if (single) {
    p.val = list->first();
  } else {
    out_.spec.mask = list->words;
  }
  switch (field_.type) {
    case FilterType::cpumask:
      p.code = single ? Code::cpumask_vs_cpu : Code::cpumask_vs_mask;
      out_.spec.end = field_.offset + 4;
      break;
    case FilterType::cpu:
      if (single) {
        p.code = Code::cpu_cmp;
        if (op_ == Op::band) p.sub = Op::eq;
      } else {
        p.code = Code::cpu_in_mask;
      }
      break;
    default:  // an integer field
      if (single) {
        if (op_ == Op::band) p.sub = Op::eq;
        p.code = comparison_code(p.sub, field_.size, false);
        p.negate = p.sub == Op::ne;
      } else if (field_.size == 1 || field_.size == 2 || field_.size == 4 || field_.size == 8) {
        p.code = Code::scalar_in_mask;
        p.val2 = field_.size;
      } else {
        p.code = Code::always_false;
      }
      if (p.code != Code::always_false) out_.spec.end = field_.offset + field_.size;
      break;
  }
  return done(i);
}

// FIELD OP "string" (or 'string').
PredOutcome PredParser::string_value(size_t i, size_t s) {
  const unsigned char q = at(i);
  auto& p = out_.spec.pred;
  switch (op_) {
    case Op::ne:
    case Op::re_nomatch:
      p.negate = 1;
      break;
    case Op::glob:
    case Op::eq:
    case Op::re_match:
      break;
    default:
      return fail(FilterErr::illegal_field_op, i);
  }
  if (!is_string_field(field_)) return fail(FilterErr::expect_digit, i);
  for (++i; at(i); ++i)
    if (at(i) == q) break;
  if (!at(i)) return fail(FilterErr::missing_quote, i);  // calc_stack() reports it first
  ++s;                                                   // skip the opening quote
  if (i - s >= kMaxFilterStrVal) return fail(FilterErr::operand_too_long, i);
  const std::string_view pattern = slice(s, i);
  if (op_ == Op::re_match || op_ == Op::re_nomatch) {
    std::string why;
    auto m = StringMatcher::regex(pattern, why);
    if (!m) {
      PredOutcome o = fail(FilterErr::invalid_regex, i);
      o.error.detail = std::move(why);
      return o;
    }
    out_.spec.matcher = std::move(m);
  } else {
    auto m = StringMatcher::kernel(pattern, op_ == Op::glob);
    if (op_ == Op::glob) p.negate = m->inverted();
    out_.spec.matcher = std::move(m);
  }
  switch (field_.type) {
    case FilterType::comm:
      p.code = Code::str_comm;
      break;
    case FilterType::static_string:
      p.code = Code::str_static;
      p.val = field_.size;
      out_.spec.end = field_.offset + field_.size;
      break;
    case FilterType::dyn_string:
      p.code = Code::str_data_loc;
      out_.spec.end = field_.offset + 4;
      break;
    case FilterType::rdyn_string:
      p.code = Code::str_rel_loc;
      out_.spec.end = field_.offset + 4;
      break;
    default:
      p.code = Code::str_ptr;
      p.val = ustring_ ? 1 : 0;
      p.val2 = field_.size == 4 ? 4 : 8;  // pointer width as recorded
      out_.spec.end = field_.offset + static_cast<uint32_t>(p.val2);
      break;
  }
  return done(i + 1);  // past the closing quote
}

// FIELD OP [-]NUMBER.
PredOutcome PredParser::number_value(size_t i, size_t s) {
  if (is_string_field(field_)) return fail(FilterErr::expect_string, i);
  if (op_ == Op::glob || op_ == Op::re_match || op_ == Op::re_nomatch)
    return fail(FilterErr::illegal_field_op, i);
  if (at(i) == '-') ++i;
  while (kctype::is_alnum(at(i))) ++i;
  if (i - s >= kNumBufSize) return fail(FilterErr::operand_too_long, i);
  const std::string_view num = slice(s, i);
  const auto val = field_.is_signed ? kstrtoll(num) : kstrtoull(num);
  if (!val) return fail(FilterErr::illegal_intval, s);
  auto& p = out_.spec.pred;
  p.val = *val;
  if (field_.type == FilterType::cpu) {
    p.code = Code::cpu_cmp;
  } else {
    p.code = comparison_code(op_, field_.size, field_.is_signed);
    p.negate = op_ == Op::ne;
    if (p.code != Code::always_false) out_.spec.end = field_.offset + field_.size;
  }
  return done(i);
}

}  // namespace

PredOutcome parse_pred(const ParseInput& in, size_t start) { return PredParser(in, start).run(); }

}  // namespace tracepipe::filters
