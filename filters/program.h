#pragma once
// The compiled filter: a flat array of predicates with "when to branch"
// targets, evaluated front to back with no recursion and no allocation.
//
// Mirrors kernel/trace/trace_events_filter.c: struct prog_entry,
// filter_match_preds() and the three passes of predicate_parse().
//
// Design
// ------
// Entry i evaluates its predicate to r (0/1). If r == branch_if the walk
// continues at entry `target`, otherwise at i + 1. Reaching index N (one past
// the last entry) means TRUE, N + 1 means FALSE. Targets always move forward,
// so the walk ends after at most N predicate evaluations.
//
// Two ways to run it, same verdict:
//   - the walk above (every program; explain() always walks);
//   - for programs of at most 8 predicates that are all integer compares at a
//     fixed offset, match() evaluates them all without branches and reads the
//     verdict from a truth table derived from the walk at compile time
//     (Program::table_): the short-circuit saves ~1 cycle per predicate
//     there, a mispredicted branch costs ~15.
//
// Invariants (checked by compile(), relied on by match()):
//   - for every i: i < target <= N + 1;
//   - fields of fixed position (integers, char[N], __data_loc words) lie
//     inside [0, min_record_size()); match() checks the record length once and
//     takes a bounds-checked path for shorter records, where a predicate whose
//     field is cut off evaluates to false;
//   - strings are read only inside the record: bytes past the end of the
//     record, or past the end of a char[N] field, read as NUL;
//   - after construction nothing is mutated: one Program may be evaluated by
//     any number of threads at once.
//
// Worked example (tests/filters/program_test.cc compiles it on sched_switch
// and compares dump() with this listing, so it cannot rot):
//
//   prev_pid == 1 && !(!(next_pid == 2) || (prev_prio == 3 && next_prio == 4))
//       || prev_state == 5 || prev_comm == "a" && !(next_comm ~ "b*")
//
//   0: prev_pid == 1                if !r goto 4
//   1: next_pid == 2                if !r goto 4
//   2: prev_prio == 3               if !r goto T
//   3: next_prio == 4               if !r goto T
//   4: prev_state == 5              if r goto T
//   5: prev_comm == "a"             if !r goto F
//   6: next_comm ~ "b*"             if r goto F
//   T: return true
//   F: return false
//
// (the kernel's own comment shows the same program for
// "a && !(!b || (c && g)) || d || e && !f").
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tracepipe::filters {

/// Resolves a pointer stored in a `char *` field to its string. Called during
/// match() for string_ptr predicates; must not allocate, lock or block if the
/// caller needs those guarantees. Return an empty optional-like view with
/// found = false when the address is unknown: the predicate is then false
/// (as the kernel does when it cannot read the string).
struct ResolvedString {
  std::string_view text;
  bool found = false;
};
using StringResolverFn = ResolvedString (*)(uint64_t address, bool user_space,
                                            const void* user) noexcept;

/// Per-evaluation context, for the generic fields the kernel reads from the
/// running task rather than the record. Mirrors kernel/trace/trace_events_filter.c:
/// filter_pred_cpu (raw_smp_processor_id) and filter_pred_comm (current->comm).
struct EvalContext {
  uint32_t cpu = 0;       ///< CPU/cpu/common_cpu: the CPU the event is recorded on
  std::string_view comm;  ///< COMM/comm when the event has no field of that name (<= 15 bytes used)
  StringResolverFn resolve = nullptr;  ///< for `char *` fields; null = never found
  const void* resolve_user = nullptr;
};

namespace detail {

template <typename T>
inline T load(const std::byte* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// What one program entry computes. Numeric codes come first: they are the
/// inline fast path of match().
// Codes grouped a width a line, as the table reads.
// clang-format off
enum class Code : uint8_t {
  eq8, eq16, eq32, eq64,                 // r = (field == val) ^ negate, width in bits
  lt_s8, le_s8, gt_s8, ge_s8, and_s8,    // signed/unsigned ordered compares and '&'
  lt_u8, le_u8, gt_u8, ge_u8, and_u8,
  lt_s16, le_s16, gt_s16, ge_s16, and_s16,
  lt_u16, le_u16, gt_u16, ge_u16, and_u16,
  lt_s32, le_s32, gt_s32, ge_s32, and_s32,
  lt_u32, le_u32, gt_u32, ge_u32, and_u32,
  lt_s64, le_s64, gt_s64, ge_s64, and_s64,
  lt_u64, le_u64, gt_u64, ge_u64, and_u64,
  last_fixed_numeric = and_u64,
  always_false,        // the kernel's FILTER_PRED_FN_NOP (e.g. a field of size 48, stacktrace)
  cpu_cmp,             // CPU vs int: sub = op
  cpu_in_mask,         // CPU & CPUS{a,b}: test bit
  scalar_in_mask,      // integer field & / == / != CPUS{a,b} (val2 = width bytes, sub = op, aux = mask)
  cpumask_vs_mask,     // __data_loc cpumask field vs CPUS{...} (sub = op, aux = mask index)
  cpumask_vs_cpu,      // __data_loc cpumask field vs CPUS{n} (sub = op, val = n)
  function_range,      // FIELD.function == SYM: start <= field < end (val, val2); negate for !=
  str_static,          // char[N]            (aux = string matcher index, val = N)
  str_data_loc,        // __data_loc char[]
  str_rel_loc,         // __rel_loc char[]
  str_ptr,             // char *             (val = 1 for .ustring, val2 = pointer width)
  str_comm,            // COMM / comm from EvalContext
};
// clang-format on

/// Operator ids, the kernel's order (enum filter_op_ids) + the RE2 extension.
enum class Op : uint8_t { glob, ne, eq, le, lt, ge, gt, band, re_match, re_nomatch };

/// One program entry (32 bytes). Mirrors kernel: struct prog_entry + filter_pred.
struct Pred {
  Code code = Code::always_false;
  uint8_t branch_if = 0;  ///< continue at target when r == branch_if
  uint8_t negate = 0;     ///< the kernel's pred->not (applied inside the predicate)
  Op sub = Op::eq;        ///< operator, for the codes that need it
  uint32_t target = 0;    ///< entry index; N = TRUE, N + 1 = FALSE
  uint32_t offset = 0;    ///< field offset in the record, bytes
  uint32_t aux = 0;       ///< code-specific (field size, side-table index)
  uint64_t val = 0;       ///< literal, already truncated to the field width
  uint64_t val2 = 0;
};
static_assert(sizeof(Pred) == 32);

/// A fixed-position integer predicate in branch-free form, for the truth-table
/// path of match(). One load of exactly the field's width at its offset,
/// zero-extended. Exactly the width, never a wider load that would also
/// cover a neighbour: the record was usually built just before, by one
/// store per field, and a load that spans two stores cannot be forwarded
/// from the store buffer (a stall on every event of the staged path).
/// XOR with `bias` flips the field's sign bit for signed fields, so signed
/// order becomes unsigned order; masking with `and_mask` keeps only the
/// field's bits. Then r = ((y - lo) <= span) != invert. Every kernel compare
/// maps onto it: == is [v, v], != its inverse, < v is [0, v - 1] (biased),
/// & v masks with v and tests "not zero", an impossible compare is "not
/// anything".
struct Lane {
  uint32_t pos = 0;   ///< the field's offset in the record, bytes
  uint8_t width = 8;  ///< the field's width: 1, 2, 4 or 8 bytes
  uint8_t invert = 0;
  /// Program::single_ only: 1, 2, 4 or 8 for a compare of a field of that
  /// many bytes done in arithmetic of its width, (field - lo) mod 2^(8 *
  /// width) <= span, bias and invert folded into lo and span (eval_single);
  /// 0 for the lane's general form.
  uint8_t compare_width = 0;
  uint64_t bias = 0;
  uint64_t and_mask = ~uint64_t{0};
  uint64_t lo = 0;
  uint64_t span = 0;
};

/// The lane's range test, before `invert` (compile() folds the inverts of a
/// table-mode program into its truth table).
/// Zero-extended load of a 1, 2, 4 or 8-byte field. Each call site sees one
/// width per program, so the tests predict perfectly; their order is the
/// layout: a 4-byte field (int, pid_t, the commonest in kernel events) falls
/// straight through, an 8-byte one takes one branch (a switch lays out 8
/// straight and 4 behind two jumps, which every staged reject of a u32
/// field would pay; the emit bench's u32 and u64 cases show it).
[[gnu::always_inline]] inline uint64_t load_width(const std::byte* p, uint32_t width) noexcept {
  if (width == 4) [[likely]]
    return load<uint32_t>(p);
  if (width == 8) return load<uint64_t>(p);
  if (width == 2) return load<uint16_t>(p);
  return load<uint8_t>(p);
}

[[gnu::always_inline]] inline bool eval_lane_raw(const Lane& l, const std::byte* rec) noexcept {
  const uint64_t y = (load_width(rec + l.pos, l.width) ^ l.bias) & l.and_mask;
  return (y - l.lo) <= l.span;
}

[[gnu::always_inline]] inline bool eval_lane(const Lane& l, const std::byte* rec) noexcept {
  return eval_lane_raw(l, rec) != static_cast<bool>(l.invert);
}

/// (field - lo) mod 2^(8 * sizeof(T)) <= span: a compare in T's width.
template <class T>
[[gnu::always_inline]] inline bool compare_value(const Lane& l, T field) noexcept {
  return static_cast<T>(field - static_cast<T>(l.lo)) <= static_cast<T>(l.span);
}
template <class T>
[[gnu::always_inline]] inline bool compare_in(const Lane& l, const std::byte* rec) noexcept {
  return compare_value<T>(l, load<T>(rec + l.pos));
}

/// The verdict of Program::single_: a compare in the field's own width,
/// without the bias and mask steps (the commonest filter: an int, u32 or
/// u64 field against a number), else the lane's range test, both with the
/// inversion folded in (codegen). 4 bytes first: int and pid_t are the
/// commonest kernel fields.
[[gnu::always_inline]] inline bool eval_single(const Lane& l, const std::byte* rec) noexcept {
  const uint32_t w = l.compare_width;
  if (w == 4) [[likely]]
    return compare_in<uint32_t>(l, rec);
  if (w == 8) return compare_in<uint64_t>(l, rec);
  if (w == 2) return compare_in<uint16_t>(l, rec);
  if (w == 1) return compare_in<uint8_t>(l, rec);
  return eval_lane_raw(l, rec);
}

/// The N lanes' raw results as bits 0..N-1 (unrolled: the lanes are independent).
template <uint32_t N>
[[gnu::always_inline]] inline uint32_t eval_lanes(const Lane* l, const std::byte* rec) noexcept {
  uint32_t bits = 0;
#pragma GCC unroll 8
  for (uint32_t k = 0; k < N; ++k) bits |= static_cast<uint32_t>(eval_lane_raw(l[k], rec)) << k;
  return bits;
}

}  // namespace detail

class StringMatcher;  // filters/string_match.h

/// An immutable compiled filter. Create with compile() (filters/compile.h).
class Program {
 public:
  /// True if the record passes the filter. record: the raw event bytes,
  /// common_type at offset 0. No allocation (except inside RE2 for the =~
  /// extension), no recursion, no lock, no syscall; safe from many threads.
  /// Mirrors kernel/trace/trace_events_filter.c: filter_match_preds.
  [[gnu::always_inline]] inline bool match(std::span<const std::byte> record,
                                           const EvalContext& ctx = {}) const noexcept;
  /// The same, with the context made by `make_ctx()` (returns an
  /// EvalContext) only when a predicate may read it: a program of
  /// fixed-position integer compares (truth-table mode) never calls it, so
  /// the write path does not build a context it would not read.
  template <class MakeCtx>
  [[gnu::always_inline]] inline bool match_lazy(std::span<const std::byte> record,
                                                const MakeCtx& make_ctx) const noexcept;

  /// The inline part of match_lazy(): the verdict (1 pass, 0 reject) of a
  /// one-compare or truth-table program on a record long enough for it, -1
  /// otherwise (then call match() or match_lazy(), which give the same
  /// verdict). Lets a caller keep the general evaluator's call off its path.
  [[gnu::always_inline]] inline int match_inline(std::span<const std::byte> record) const noexcept;

  /// The commonest filter in value form, for a writer that holds the field
  /// values before any record exists (EventDecl::trace's reject-first
  /// step, core/instance/event_decl.h): if this program is one compare of a
  /// 4-byte integer field in the field's own width (the single32 path of
  /// match_inline) and a record of `record_size` bytes is long enough for
  /// it, the field's byte offset; UINT32_MAX otherwise. Then, on every such
  /// record, match() == match_u32(the field's 4 bytes as a uint32_t): the
  /// same compare, done on the value instead of on a load from the record.
  [[gnu::always_inline]] uint32_t single32_pos(size_t record_size) const noexcept {
    return record_size >= single32_min_size_ ? single_.pos : UINT32_MAX;
  }
  /// The verdict of the single32 compare on a field value (valid only when
  /// single32_pos() named the field).
  [[gnu::always_inline]] bool match_u32(uint32_t value) const noexcept {
    return detail::compare_value<uint32_t>(single_, value);
  }
  /// The same for a one-predicate string program on a char[N] field (the
  /// single-string path of match_inline: "==", "!=" or a "~" prefix that
  /// needs at most 16 of the field's bytes): the field's offset if a record
  /// of `record_size` bytes is long enough, else UINT32_MAX. Then match()
  /// == match_words(w), where w[0] and w[1] are the record's 16 bytes at
  /// that offset as two native-endian words; bytes past the field's end
  /// are masked out, so any value may stand there.
  [[gnu::always_inline]] uint32_t single_string_pos(size_t record_size) const noexcept {
    return record_size >= single_str_min_size_ ? single_str_.pos : UINT32_MAX;
  }
  [[gnu::always_inline]] bool match_words(const uint64_t (&w)[2]) const noexcept {
    return eval_string_words(w[0], w[1]);
  }

  /// The program as a listing (see the worked example above). Allocates.
  std::string dump() const;
  /// Number of predicates (entries); 0 for the "0" filter (matches all).
  size_t predicate_count() const noexcept { return preds_.size(); }
  /// Records shorter than this take the bounds-checked path of match().
  uint32_t min_record_size() const noexcept { return min_size_; }
  /// True if a predicate reads EvalContext::cpu (CPU, cpu, common_cpu), so
  /// a caller may skip finding out the CPU otherwise.
  bool needs_cpu() const noexcept { return needs_cpu_; }
  /// Which 8-byte chunks of the record any evaluation may read: bit b for
  /// bytes [8b, 8b + 8), bit 63 for byte 504 onwards; every bit when a
  /// predicate follows a __data_loc / __rel_loc word (it may read anywhere).
  /// A writer may build only the fields that overlap these chunks before
  /// calling match() (EventDecl::trace's stack staging, core/instance/fast_path.h):
  /// bytes outside them never change the verdict. The single-string fast
  /// path's 8- or 16-byte loads are included, so every byte loaded for the
  /// verdict lies in a chunk (masked-out bytes included). 0 for "0".
  uint64_t read_chunks() const noexcept { return read_chunks_; }

  /// For tests and tools: the verdict plus the indices of the predicates that
  /// were evaluated, in order (shows short-circuiting). Allocates.
  struct Explained {
    bool matched = false;
    std::vector<uint32_t> visited;
  };
  Explained explain(std::span<const std::byte> record, const EvalContext& ctx = {}) const;

  /// Evaluates entry i alone (bounds-checked), without following branches:
  /// the leaf evaluator of reference_match() and tests.
  bool eval_entry(size_t i, std::span<const std::byte> record,
                  const EvalContext& ctx = {}) const noexcept;

  /// The entries, for tests and tools.
  std::span<const detail::Pred> entries() const noexcept { return preds_; }
  /// Source text of entry i (as written in the expression).
  const std::string& entry_text(size_t i) const { return pred_text_[i]; }

  Program();
  ~Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

 private:
  friend class ProgramBuilder;

  bool run(const std::byte* rec, size_t size, const EvalContext& ctx) const noexcept;
  [[gnu::always_inline]] bool table_lookup(uint32_t bits) const noexcept {
    return (table_[bits >> 6] >> (bits & 63)) & 1;
  }
  [[gnu::noinline]] bool eval_other(const detail::Pred& p, const std::byte* rec, size_t size,
                                    const EvalContext& ctx) const noexcept;
  [[gnu::noinline, gnu::cold]] bool run_checked(const std::byte* rec, size_t size,
                                                const EvalContext& ctx) const noexcept;

  /// One-predicate truth-table programs (the commonest filter) keep their
  /// lane and verdict inline, first in the object: one load of the program
  /// pointer, then the lane's constants from the same line, with no load of
  /// lanes_' storage or of the table (the staged reject is a few dozen
  /// instructions, so each counts). single_min_size_ is SIZE_MAX otherwise,
  /// so one compare both picks this path and checks the record's size (a
  /// size_t: no record is that long, while one of UINT32_MAX bytes can be).
  size_t single_min_size_ = SIZE_MAX;
  /// single_min_size_ when single_ is a compare of a 4-byte field
  /// (compare_width 4: int, u32, pid_t), else SIZE_MAX: the commonest filter
  /// then costs one size compare, without a test of the width.
  size_t single32_min_size_ = SIZE_MAX;
  uint64_t read_chunks_ = 0;  ///< read_chunks(): beside the fast path's fields, loaded with them
  detail::Lane
      single_{};  ///< inversions folded into its range: the verdict is eval_single(single_)
  /// One-predicate programs on a char[N] field whose match (an "==" / "!="
  /// of the whole string, or a "~" prefix "abc*") needs at most 16 of its
  /// bytes: those bytes compared under a mask with one or two 8-byte loads,
  /// inline, as an integer compare is (regex_match_full / regex_match_front
  /// give the same answer: the pattern has no NUL, so it equals the field's
  /// first bytes, plus the terminator for a whole string shorter than N).
  /// single_str_min_size_ is SIZE_MAX otherwise, or the bytes the loads need.
  struct SingleString {
    uint32_t pos = 0;
    bool two_words = false;
    bool verdict_if_match = false, verdict_if_no_match = false;
    uint64_t want[2] = {0, 0}, mask[2] = {0, 0};
  };
  size_t single_str_min_size_ = SIZE_MAX;
  SingleString single_str_{};
  [[gnu::always_inline]] bool eval_single_string(const std::byte* rec) const noexcept {
    uint64_t a, b = 0;
    std::memcpy(&a, rec + single_str_.pos, 8);
    uint64_t diff = (a ^ single_str_.want[0]) & single_str_.mask[0];
    if (single_str_.two_words) {
      std::memcpy(&b, rec + single_str_.pos + 8, 8);
      diff |= (b ^ single_str_.want[1]) & single_str_.mask[1];
    }
    return diff == 0 ? single_str_.verdict_if_match : single_str_.verdict_if_no_match;
  }
  /// eval_single_string on words already loaded (b read only if two_words).
  [[gnu::always_inline]] bool eval_string_words(uint64_t a, uint64_t b) const noexcept {
    uint64_t diff = (a ^ single_str_.want[0]) & single_str_.mask[0];
    if (single_str_.two_words) diff |= (b ^ single_str_.want[1]) & single_str_.mask[1];
    return diff == 0 ? single_str_.verdict_if_match : single_str_.verdict_if_no_match;
  }

  /// One-predicate programs on the CPU (`CPU >= 1`, `cpu == 3`: the
  /// kernel's filter_pred_cpu, an int compare): the compare as a range of
  /// the CPU number with its sign bit flipped (so that signed order is
  /// unsigned order), inline, instead of the walk's call into eval_other()
  /// on every event of the staged path. A range on the circle of
  /// 2^32 values also covers `!=` (everything but one value); an empty one
  /// (`CPU < INT_MIN`) has both verdicts equal. `on` is false otherwise.
  struct SingleCpu {
    bool on = false;
    bool verdict_in = false, verdict_out = false;
    uint32_t lo = 0, span = 0;
  };
  SingleCpu single_cpu_{};

  std::vector<detail::Pred> preds_;
  std::vector<std::shared_ptr<const StringMatcher>> strings_;
  std::vector<uint64_t> masks_;         ///< CPU bitmaps, words_per_mask_ words each
  std::vector<std::string> pred_text_;  ///< source of each predicate, for dump()
  /// Truth-table mode: for programs of at most kTableMax predicates that are
  /// all fixed-position integer compares (each costs a load and a compare),
  /// match() evaluates every predicate without a branch and looks the verdict
  /// up: bit b of table_ is the program's verdict when lane k's raw range
  /// test gives bit k of b (the lanes' inverts are folded into the table). Computed from the flat
  /// program itself, so the verdict is the same; it only trades the short-circuit (worth little
  /// here) for no mispredicted branches.
  static constexpr uint32_t kTableMax = 8;
  uint64_t table_[4] = {0, 0, 0, 0};  ///< 2^kTableMax verdict bits
  std::vector<detail::Lane> lanes_;   ///< one per predicate in table mode
  uint32_t table_min_size_ = 0;       ///< the lanes' loads need this many bytes (== min_size_)
  bool needs_cpu_ = false;            ///< some predicate reads EvalContext::cpu
  uint32_t lane_count_ = 0;           ///< lanes_.size(); 0 = not in truth-table mode
  uint32_t words_per_mask_ = 0;
  uint32_t nr_cpu_ids_ = 0;
  uint32_t min_size_ = 0;
};

// ---- inline fast path -------------------------------------------------------

namespace detail {

template <typename T>
[[gnu::always_inline]] inline T lit(const Pred& p) noexcept {
  return static_cast<T>(p.val);
}

/// Integer predicates of fixed position: f points at the field.
/// Mirrors kernel/trace/trace_events_filter.c: filter_pred_##type (LT/LE/GT/GE/BAND),
/// filter_pred_##size (equality).
[[gnu::always_inline]] inline bool eval_fixed_numeric(const Pred& p, const std::byte* f) noexcept {
  switch (p.code) {
    case Code::eq8:
      return (load<uint8_t>(f) == lit<uint8_t>(p)) != static_cast<bool>(p.negate);
    case Code::eq16:
      return (load<uint16_t>(f) == lit<uint16_t>(p)) != static_cast<bool>(p.negate);
    case Code::eq32:
      return (load<uint32_t>(f) == lit<uint32_t>(p)) != static_cast<bool>(p.negate);
    case Code::eq64:
      return (load<uint64_t>(f) == p.val) != static_cast<bool>(p.negate);
    case Code::lt_s8:
      return load<int8_t>(f) < lit<int8_t>(p);
    case Code::le_s8:
      return load<int8_t>(f) <= lit<int8_t>(p);
    case Code::gt_s8:
      return load<int8_t>(f) > lit<int8_t>(p);
    case Code::ge_s8:
      return load<int8_t>(f) >= lit<int8_t>(p);
    case Code::and_s8:
      return (load<int8_t>(f) & lit<int8_t>(p)) != 0;
    case Code::lt_u8:
      return load<uint8_t>(f) < lit<uint8_t>(p);
    case Code::le_u8:
      return load<uint8_t>(f) <= lit<uint8_t>(p);
    case Code::gt_u8:
      return load<uint8_t>(f) > lit<uint8_t>(p);
    case Code::ge_u8:
      return load<uint8_t>(f) >= lit<uint8_t>(p);
    case Code::and_u8:
      return (load<uint8_t>(f) & lit<uint8_t>(p)) != 0;
    case Code::lt_s16:
      return load<int16_t>(f) < lit<int16_t>(p);
    case Code::le_s16:
      return load<int16_t>(f) <= lit<int16_t>(p);
    case Code::gt_s16:
      return load<int16_t>(f) > lit<int16_t>(p);
    case Code::ge_s16:
      return load<int16_t>(f) >= lit<int16_t>(p);
    case Code::and_s16:
      return (load<int16_t>(f) & lit<int16_t>(p)) != 0;
    case Code::lt_u16:
      return load<uint16_t>(f) < lit<uint16_t>(p);
    case Code::le_u16:
      return load<uint16_t>(f) <= lit<uint16_t>(p);
    case Code::gt_u16:
      return load<uint16_t>(f) > lit<uint16_t>(p);
    case Code::ge_u16:
      return load<uint16_t>(f) >= lit<uint16_t>(p);
    case Code::and_u16:
      return (load<uint16_t>(f) & lit<uint16_t>(p)) != 0;
    case Code::lt_s32:
      return load<int32_t>(f) < lit<int32_t>(p);
    case Code::le_s32:
      return load<int32_t>(f) <= lit<int32_t>(p);
    case Code::gt_s32:
      return load<int32_t>(f) > lit<int32_t>(p);
    case Code::ge_s32:
      return load<int32_t>(f) >= lit<int32_t>(p);
    case Code::and_s32:
      return (load<int32_t>(f) & lit<int32_t>(p)) != 0;
    case Code::lt_u32:
      return load<uint32_t>(f) < lit<uint32_t>(p);
    case Code::le_u32:
      return load<uint32_t>(f) <= lit<uint32_t>(p);
    case Code::gt_u32:
      return load<uint32_t>(f) > lit<uint32_t>(p);
    case Code::ge_u32:
      return load<uint32_t>(f) >= lit<uint32_t>(p);
    case Code::and_u32:
      return (load<uint32_t>(f) & lit<uint32_t>(p)) != 0;
    case Code::lt_s64:
      return load<int64_t>(f) < lit<int64_t>(p);
    case Code::le_s64:
      return load<int64_t>(f) <= lit<int64_t>(p);
    case Code::gt_s64:
      return load<int64_t>(f) > lit<int64_t>(p);
    case Code::ge_s64:
      return load<int64_t>(f) >= lit<int64_t>(p);
    case Code::and_s64:
      return (load<int64_t>(f) & lit<int64_t>(p)) != 0;
    case Code::lt_u64:
      return load<uint64_t>(f) < lit<uint64_t>(p);
    case Code::le_u64:
      return load<uint64_t>(f) <= lit<uint64_t>(p);
    case Code::gt_u64:
      return load<uint64_t>(f) > lit<uint64_t>(p);
    case Code::ge_u64:
      return load<uint64_t>(f) >= lit<uint64_t>(p);
    case Code::and_u64:
      return (load<uint64_t>(f) & lit<uint64_t>(p)) != 0;
    default:
      return false;
  }
}

}  // namespace detail

inline bool Program::run(const std::byte* rec, size_t size, const EvalContext& ctx) const noexcept {
  const detail::Pred* p = preds_.data();
  const uint32_t n = static_cast<uint32_t>(preds_.size());
  uint32_t i = 0;
  while (i < n) {
    const detail::Pred& e = p[i];
    bool r;
    if (e.code <= detail::Code::last_fixed_numeric) [[likely]] {
      r = detail::eval_fixed_numeric(e, rec + e.offset);
    } else {
      r = eval_other(e, rec, size, ctx);
    }
    // Branch-free select: target when r == branch_if, else the next entry.
    const uint32_t take = 0u - static_cast<uint32_t>(r == static_cast<bool>(e.branch_if));
    i = (i + 1) + ((e.target - (i + 1)) & take);
  }
  return i == n;
}

inline bool Program::match(std::span<const std::byte> record,
                           const EvalContext& ctx) const noexcept {
  return match_lazy(record, [&ctx]() -> const EvalContext& { return ctx; });
}

inline int Program::match_inline(std::span<const std::byte> record) const noexcept {
  // match_lazy()'s first steps: match_lazy() calls this.
  if (record.size() >= single32_min_size_) [[likely]]
    return detail::compare_in<uint32_t>(single_, record.data());
  if (record.size() >= single_min_size_) [[likely]]
    return detail::eval_single(single_, record.data());
  if (record.size() >= single_str_min_size_) [[likely]]
    return eval_single_string(record.data());
  if (lane_count_ && record.size() >= table_min_size_) [[likely]] {
    const detail::Lane* l = lanes_.data();
    const std::byte* rec = record.data();
    switch (lane_count_) {
      case 1:
        return table_lookup(detail::eval_lanes<1>(l, rec));
      case 2:
        return table_lookup(detail::eval_lanes<2>(l, rec));
      case 3:
        return table_lookup(detail::eval_lanes<3>(l, rec));
      case 4:
        return table_lookup(detail::eval_lanes<4>(l, rec));
      case 5:
        return table_lookup(detail::eval_lanes<5>(l, rec));
      case 6:
        return table_lookup(detail::eval_lanes<6>(l, rec));
      case 7:
        return table_lookup(detail::eval_lanes<7>(l, rec));
      default:
        return table_lookup(detail::eval_lanes<8>(l, rec));
    }
  }
  return -1;
}

template <class MakeCtx>
inline bool Program::match_lazy(std::span<const std::byte> record,
                                const MakeCtx& make_ctx) const noexcept {
  // The paths that need no context, inline: one predicate (the commonest
  // filter, see single_), a char[N] compare, or the truth table.
  if (const int v = match_inline(record); v >= 0) [[likely]]
    return v != 0;
  if (single_cpu_.on && record.size() >= min_size_) [[likely]] {
    const uint32_t x = make_ctx().cpu ^ 0x80000000u;
    return x - single_cpu_.lo <= single_cpu_.span ? single_cpu_.verdict_in
                                                  : single_cpu_.verdict_out;
  }
  if (record.size() < min_size_) [[unlikely]]
    return run_checked(record.data(), record.size(), make_ctx());
  return run(record.data(), record.size(), make_ctx());
}

}  // namespace tracepipe::filters
