#include "tracepipe/filters/program.h"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "tracepipe/filters/string_match.h"

namespace tracepipe::filters {

using detail::Code;
using detail::load;
using detail::Op;
using detail::Pred;

Program::Program() = default;
Program::~Program() = default;

namespace {

// USTRING_BUF_SIZE: the kernel copies at most this much of a char * string.
constexpr size_t kPtrStringMax = 1024;
// TASK_COMM_LEN.
constexpr int kCommLen = 16;

// Bytes from offset to the end of the record, 0 when offset is past it.
size_t avail_from(size_t offset, size_t size) noexcept {
  return offset <= size ? size - offset : 0;
}

bool test_bit(const uint64_t* words, uint32_t nbits, uint32_t bit) noexcept {
  return bit < nbits && (words[bit / 64] >> (bit % 64) & 1) != 0;
}

// Bit of a cpumask stored in the record (unsigned long words, little endian):
// bit k is bit k % 8 of byte k / 8. Bytes outside the record read as 0.
bool record_mask_bit(const std::byte* mask, size_t avail, uint32_t bit) noexcept {
  const size_t byte = bit / 8;
  return byte < avail && (static_cast<unsigned>(mask[byte]) >> (bit % 8) & 1) != 0;
}

// do_filter_scalar_cpumask: a mask of two or more CPUs never equals one CPU.
bool scalar_vs_mask(Op op, bool in_mask) noexcept {
  switch (op) {
    case Op::eq:
      return false;
    case Op::ne:
      return true;
    case Op::band:
      return in_mask;
    default:
      return false;
  }
}

}  // namespace

// Width in bytes of the fixed-position bytes an entry reads at p.offset
// (0 = reads nothing from the record at a fixed place).
static uint32_t fixed_width(const Pred& p) noexcept {
  if (p.code <= Code::last_fixed_numeric) {
    if (p.code <= Code::eq64) return 1u << static_cast<int>(p.code);
    const int w = (static_cast<int>(p.code) - static_cast<int>(Code::lt_s8)) / 10;
    return 1u << w;
  }
  switch (p.code) {
    case Code::scalar_in_mask:
    case Code::str_ptr:
      return static_cast<uint32_t>(p.val2);
    case Code::cpumask_vs_mask:
    case Code::cpumask_vs_cpu:
    case Code::str_data_loc:
    case Code::str_rel_loc:
      return 4;
    case Code::function_range:
      return 8;
    case Code::str_static:
      return static_cast<uint32_t>(p.val);
    default:
      return 0;
  }
}

// eval_other's predicates by group, each with the kernel predicate it
// mirrors (kernel/trace/trace_events_filter.c). Called once each from the
// switch: the compiler folds them back into it.

// filter_pred_cpu: int compare with (int)val.
static bool eval_cpu_cmp(const Pred& p, uint32_t cpu_in) noexcept {
  const int cpu = static_cast<int>(cpu_in);
  const int cmp = static_cast<int>(static_cast<uint32_t>(p.val));
  switch (p.sub) {
    case Op::eq:
      return cpu == cmp;
    case Op::ne:
      return cpu != cmp;
    case Op::lt:
      return cpu < cmp;
    case Op::le:
      return cpu <= cmp;
    case Op::gt:
      return cpu > cmp;
    case Op::ge:
      return cpu >= cmp;
    default:
      return false;
  }
}

// filter_pred_##size##_cpumask: a scalar field of p.val2 bytes as a CPU
// number, against the literal mask `lit`.
static bool eval_scalar_in_mask(const Pred& p, const std::byte* rec, const uint64_t* lit,
                                uint32_t nr_cpu_ids) noexcept {
  const std::byte* f = rec + p.offset;
  uint64_t v;
  switch (p.val2) {
    case 1:
      v = load<uint8_t>(f);
      break;
    case 2:
      v = load<uint16_t>(f);
      break;
    case 4:
      v = load<uint32_t>(f);
      break;
    default:
      v = load<uint64_t>(f);
      break;
  }
  const auto cpu = static_cast<uint32_t>(v);
  if (cpu >= nr_cpu_ids) return false;
  return scalar_vs_mask(p.sub, test_bit(lit, nr_cpu_ids, cpu));
}

// The record's cpumask field (a __data_loc) at p.offset: its first byte and
// how many of its bytes the record holds.
struct RecordMask {
  const std::byte* bytes;
  size_t avail;
};
static RecordMask record_mask(const Pred& p, const std::byte* rec, size_t size) noexcept {
  const uint32_t item = load<uint32_t>(rec + p.offset);
  const size_t loc = item & 0xffff;
  return {rec + std::min(loc, size), avail_from(loc, size)};
}

// filter_pred_cpumask: do_filter_cpumask, the record's mask against the
// literal mask `lit`.
static bool eval_cpumask_vs_mask(const Pred& p, const std::byte* rec, size_t size,
                                 const uint64_t* lit, uint32_t nr_cpu_ids) noexcept {
  const RecordMask m = record_mask(p, rec, size);
  bool equal = true, intersects = false;
  for (uint32_t b = 0; b < nr_cpu_ids; ++b) {
    const bool a = record_mask_bit(m.bytes, m.avail, b), c = test_bit(lit, nr_cpu_ids, b);
    equal &= a == c;
    intersects |= a && c;
  }
  switch (p.sub) {
    case Op::eq:
      return equal;
    case Op::ne:
      return !equal;
    case Op::band:
      return intersects;
    default:
      return false;
  }
}

// filter_pred_cpumask_cpu: do_filter_cpumask_scalar, the record's mask
// against the one CPU p.val.
static bool eval_cpumask_vs_cpu(const Pred& p, const std::byte* rec, size_t size,
                                uint32_t nr_cpu_ids) noexcept {
  const RecordMask m = record_mask(p, rec, size);
  const auto cpu = static_cast<uint32_t>(p.val);
  const bool has = record_mask_bit(m.bytes, m.avail, cpu);
  uint32_t weight = 0;
  for (uint32_t b = 0; b < nr_cpu_ids && weight < 2; ++b)
    weight += record_mask_bit(m.bytes, m.avail, b);
  switch (p.sub) {
    case Op::eq:
      return has && weight == 1;
    case Op::ne:
      return !has || weight > 1;
    case Op::band:
      return has;
    default:
      return false;
  }
}

// A string field's bytes and the length the kernel's matchers are given.
struct FieldString {
  CString s;
  int len;
};

// filter_pred_strloc, filter_pred_strrelloc (offset relative to the end of
// the field). The string is the field's own bytes: at most its length, and
// at most what the record holds. Bytes after it (the next string, padding)
// are never read, whatever the operator (a length of 0 is the empty string).
static FieldString str_loc_string(const Pred& p, const std::byte* rec, size_t size) noexcept {
  const uint32_t item = load<uint32_t>(rec + p.offset);
  size_t loc = item & 0xffff;
  if (p.code == Code::str_rel_loc) loc += p.offset + 4;
  const size_t len = item >> 16;
  return {{reinterpret_cast<const unsigned char*>(rec + std::min(loc, size)),
           std::min(avail_from(loc, size), len)},
          static_cast<int>(len)};
}

// filter_pred_pchar / _user: the string a pointer field points to, through
// ctx.resolve; empty when it cannot be read (the predicate is then false).
static std::optional<FieldString> str_ptr_string(const Pred& p, const std::byte* rec,
                                                 const EvalContext& ctx) noexcept {
  const uint64_t addr =
      p.val2 == 4 ? load<uint32_t>(rec + p.offset) : load<uint64_t>(rec + p.offset);
  if (!ctx.resolve) return std::nullopt;
  const ResolvedString rs = ctx.resolve(addr, p.val != 0, ctx.resolve_user);
  if (!rs.found) return std::nullopt;
  CString s{reinterpret_cast<const unsigned char*>(rs.text.data()),
            std::min(rs.text.size(), kPtrStringMax - 1)};
  size_t len = 0;
  while (len < s.avail && s.base[len]) ++len;
  s.avail = len;
  return FieldString{s, static_cast<int>(len + 1)};
}

bool Program::eval_other(const Pred& p, const std::byte* rec, size_t size,
                         const EvalContext& ctx) const noexcept {
  auto lit = [&] { return &masks_[p.aux * words_per_mask_]; };  // the literal mask
  switch (p.code) {
    case Code::cpu_cmp:
      return eval_cpu_cmp(p, ctx.cpu);
    case Code::cpu_in_mask:  // filter_pred_cpu_cpumask
      return scalar_vs_mask(p.sub, test_bit(lit(), nr_cpu_ids_, ctx.cpu));
    case Code::scalar_in_mask:
      return eval_scalar_in_mask(p, rec, lit(), nr_cpu_ids_);
    case Code::cpumask_vs_mask:
      return eval_cpumask_vs_mask(p, rec, size, lit(), nr_cpu_ids_);
    case Code::cpumask_vs_cpu:
      return eval_cpumask_vs_cpu(p, rec, size, nr_cpu_ids_);
    case Code::function_range: {  // filter_pred_function
      const uint64_t v = load<uint64_t>(rec + p.offset);
      const bool in = v >= p.val && v < p.val2;
      return in != static_cast<bool>(p.negate);
    }
    case Code::str_static: {  // filter_pred_string: len = field size
      const CString s{reinterpret_cast<const unsigned char*>(rec + p.offset),
                      static_cast<size_t>(p.val)};
      return strings_[p.aux]->match(s, static_cast<int>(p.val)) != static_cast<bool>(p.negate);
    }
    case Code::str_data_loc:
    case Code::str_rel_loc: {
      const FieldString f = str_loc_string(p, rec, size);
      return strings_[p.aux]->match(f.s, f.len) != static_cast<bool>(p.negate);
    }
    case Code::str_ptr: {
      const std::optional<FieldString> f = str_ptr_string(p, rec, ctx);
      if (!f) return false;
      return strings_[p.aux]->match(f->s, f->len) != static_cast<bool>(p.negate);
    }
    case Code::str_comm: {  // filter_pred_comm: current->comm, TASK_COMM_LEN
      const CString s{reinterpret_cast<const unsigned char*>(ctx.comm.data()),
                      std::min<size_t>(ctx.comm.size(), kCommLen - 1)};
      return strings_[p.aux]->match(s, kCommLen) != static_cast<bool>(p.negate);
    }
    default:  // always_false and anything unknown: the kernel's NOP predicate
      return false;
  }
}

bool Program::run_checked(const std::byte* rec, size_t size,
                          const EvalContext& ctx) const noexcept {
  const Pred* p = preds_.data();
  const auto n = static_cast<uint32_t>(preds_.size());
  uint32_t i = 0;
  while (i < n) {
    const Pred& e = p[i];
    bool r;
    if (static_cast<size_t>(e.offset) + fixed_width(e) > size && fixed_width(e) != 0) {
      r = false;  // the field is cut off: defined as false
    } else if (e.code <= Code::last_fixed_numeric) {
      r = detail::eval_fixed_numeric(e, rec + e.offset);
    } else {
      r = eval_other(e, rec, size, ctx);
    }
    i = (r == static_cast<bool>(e.branch_if)) ? e.target : i + 1;
  }
  return i == n;
}

bool Program::eval_entry(size_t i, std::span<const std::byte> record,
                         const EvalContext& ctx) const noexcept {
  const Pred& e = preds_[i];
  const std::byte* rec = record.data();
  const size_t size = record.size();
  if (fixed_width(e) != 0 && static_cast<size_t>(e.offset) + fixed_width(e) > size) return false;
  if (e.code <= Code::last_fixed_numeric) return detail::eval_fixed_numeric(e, rec + e.offset);
  return eval_other(e, rec, size, ctx);
}

Program::Explained Program::explain(std::span<const std::byte> record,
                                    const EvalContext& ctx) const {
  Explained out;
  const auto n = static_cast<uint32_t>(preds_.size());
  uint32_t i = 0;
  while (i < n) {
    out.visited.push_back(i);
    const bool r = eval_entry(i, record, ctx);
    i = (r == static_cast<bool>(preds_[i].branch_if)) ? preds_[i].target : i + 1;
  }
  out.matched = i == n;
  return out;
}

std::string Program::dump() const {
  const auto n = static_cast<uint32_t>(preds_.size());
  std::string out;
  char line[64];
  for (uint32_t i = 0; i < n; ++i) {
    const Pred& p = preds_[i];
    std::string head = std::to_string(i) + ": " + pred_text_[i];
    if (head.size() < 32)
      head.resize(32, ' ');
    else
      head += ' ';
    const uint32_t t = p.target;
    const std::string dest = t == n ? "T" : t == n + 1 ? "F" : std::to_string(t);
    std::snprintf(line, sizeof line, "if %sr goto %s\n", p.branch_if ? "" : "!", dest.c_str());
    out += head;
    out += line;
  }
  out += "T: return true\n";
  if (n) out += "F: return false\n";
  return out;
}

}  // namespace tracepipe::filters
