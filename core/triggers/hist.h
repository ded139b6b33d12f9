#pragma once
// Hist triggers: the spec (keys, vals, sort, size), the map the write path
// updates, and the hist file's text. Internal to core/triggers.
//
// ══ The map (kernel/trace/tracing_map.c, in our own words) ════════════════════
//
//   buckets[2 * max_entries]: { hash (0 = free), entry + 1 (0 = being set),
//                               key0 = the key's first 8 bytes }
//   entries[max_entries]:     { key bytes, hitcount, vals[0..2] }   preallocated
//
//   insert(key):  h = hash(key) | 1; i = h & mask
//     (M1) bucket i holds h and an entry whose key equals key   -> that entry
//          (key0 first: a one-word key is compared in the bucket alone)
//     (M2) bucket i holds h, entry not published yet            -> look again
//          (bounded: after `buckets` looks the key counts as Dropped)
//     (M3) bucket i free: CAS hash 0 -> h; on success take the next entry
//          (fetch_add; none left: bucket freed, Dropped), copy the key and
//          key0, publish entry + 1 (release)                    -> that entry
//     else i = (i + 1) & mask (at most `buckets` probes, then Dropped)
//   update: hitcount and each val added to the entry's counters of the
//     writer's CPU: one non-locked add in an rseq section
//     (buffers/rseq.h: add_local_percpu), as the kernel's per-CPU counters
//     are this_cpu_add(). A locked add costs more than the rest of the update
//     together. A thread without an rseq area, or a map whose per-CPU copies
//     would pass kPerCpuBytesMax, adds to the shared row with a relaxed
//     fetch_add (as tracing_map_update_sum's atomic64_add).
//   sums_[slot * max_entries + entry], slot 0..ncpu-1 per CPU, slot ncpu
//     shared; a reader adds the slots up.
//
// No lock, no allocation, no system call. Hits is the sum of hitcounts (the
// kernel counts the same inserts in a shared counter; the sum needs no write).
// A reader sees an entry once published; `clear` (control plane) zeroes the
// map after a grace period.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/buffers/rseq.h"
#include "tracepipe/core/events/event.h"
#include "tracepipe/core/triggers/hist_errors.h"
#include "tracepipe/core/triggers/triggers.h"

namespace tracepipe::triggers {

inline constexpr uint32_t kMaxKeys = 3;  ///< TRACING_MAP_KEYS_MAX
inline constexpr uint32_t kMaxVals = 3;  ///< TRACING_MAP_VALS_MAX, hitcount aside
inline constexpr uint32_t kMaxSortKeys = 2;
inline constexpr uint32_t kMapBitsDefault = 11;  ///< size=2048
inline constexpr uint32_t kMapBitsMin = 7, kMapBitsMax = 17;
inline constexpr uint32_t kMaxStringKey = 256;  ///< MAX_FILTER_STR_VAL
/// Per-CPU counters only while they take at most this much (bytes, all CPUs).
inline constexpr uint64_t kPerCpuBytesMax = 64ull << 20;

/// ilog2(roundup_pow_of_two(v)); v <= 1 -> 0 (the .log2 modifier, size=N).
inline uint32_t ilog2_roundup(uint64_t v) noexcept {
  return v <= 1 ? 0 : 64u - static_cast<uint32_t>(__builtin_clzll(v - 1));
}

/// Field modifiers (get_hist_field_flags).
enum HistFlag : uint32_t {
  kHex = 1u << 0,
  kSym = 1u << 1,
  kSymOffset = 1u << 2,
  kExecname = 1u << 3,
  kSyscall = 1u << 4,
  kLog2 = 1u << 5,
  kBuckets = 1u << 6,
  kUsecs = 1u << 7,
  /// Internal: another common_timestamp of the hist has .usecs, so this one
  /// is in microseconds too (the kernel's attrs->ts_in_usecs); not printed.
  kTsInUsecs = 1u << 8,
  /// Values only: printed as a share of the column's total / as a bar
  /// scaled to the column's max (hist_trigger_print_val).
  kPercent = 1u << 9,
  kGraph = 1u << 10,
};

/// ns2usecs(): nanoseconds to microseconds, rounded to the nearest.
inline constexpr uint64_t ns2usecs(uint64_t ns) noexcept { return (ns + 500) / 1000; }

inline constexpr uint32_t kMaxVars = 16;         ///< TRACING_MAP_VARS_MAX
inline constexpr uint32_t kMaxActions = 8;       ///< HIST_ACTIONS_MAX
inline constexpr uint32_t kMaxSynthFields = 64;  ///< SYNTH_FIELDS_MAX
inline constexpr uint32_t kStrVarLenMax = 256;   ///< STR_VAR_LEN_MAX (= MAX_FILTER_STR_VAL)
inline constexpr uint32_t kMaxSubexprs = 3;

/// Where a hist field's value comes from.
/// hitcount: 1 per hit (`hitcount.percent` as a val); stacktrace: the
/// emitting thread's call chain, a key of kHistStackDepth words.
enum class HistSource : uint8_t {
  field,
  string_field,
  dyn_string,
  timestamp,
  cpu,
  expr,
  hitcount,
  stacktrace
};

inline constexpr uint32_t kHistStackDepth = 16;  ///< HIST_STACKTRACE_DEPTH

/// The CFA of the trigger's frame on this thread while a hist with a
/// stacktrace key is updated: the stack is taken above it (stack_trace.h).
extern thread_local constinit uintptr_t tl_hist_stack_cfa TRACEPIPE_TLS_MODEL;

class HistMap;
struct SynthEvent;

/// One key or val: the field it reads and how.
struct HistField {
  std::string name;  ///< as written, without modifiers ("common_pid")
  HistSource source = HistSource::field;
  uint32_t offset = 0, size = 0;  ///< in the record (field, string_field, dyn_string)
  bool is_signed = false;
  uint32_t flags = 0;                     ///< HistFlag
  uint64_t buckets = 0;                   ///< .buckets=N
  uint32_t key_offset = 0, key_size = 0;  ///< in the compound key (keys only)
  std::string type;  ///< the field's C type ("pid_t", "u64"), for synthetic params
  int expr = -1;     ///< source expr: the root in HistSpec::nodes (vals and variables)
  /// "common_pid.execname", "bytes_req.buckets=100": as the trigger info prints it.
  std::string print() const;
};

/// One node of an expression (hist_expr.h).
enum class ExprOp : uint8_t {
  value,
  constant,
  ref,
  plus,
  minus,
  mult,
  div,
  div_pow2,
  div_const,
  div_mult_shift,
  uminus
};
struct ExprNode {
  ExprOp op = ExprOp::value;
  int a = -1, b = -1;     ///< operands (indices in HistSpec::nodes)
  HistField leaf;         ///< op == value
  uint64_t constant = 0;  ///< op == constant; the divisor of div_pow2 / div_const / div_mult_shift
  uint64_t mult = 0;      ///< div_mult_shift: 2^20 / divisor
  uint32_t ref = 0;       ///< op == ref: index in HistSpec::refs
  bool usecs = false;     ///< a time stamp in microseconds (operands must agree)
  bool is_string = false;
  std::string type = "u64";  ///< the value's C type (the first operand's)
  uint32_t size = 8;
  bool is_signed = false;
};

/// `name=expr`: one variable of the hist, stored per entry of its map.
struct HistVar {
  std::string name;
  int expr = -1;     ///< root node
  std::string text;  ///< as written after '='
};

/// A `$name` reference: the variable of another hist (read by key before
/// the entry is updated) or of this one (`self`, read after).
struct VarRef {
  std::string name, system, event;  ///< system/event: "" unless qualified
  bool read_once = false;           ///< an operand of an expression: unset once read
  bool self = false;
  std::shared_ptr<HistMap> map;  ///< the defining hist's map (null when self)
  uint32_t var = 0;              ///< index of the variable in that hist
};

/// onmatch / onmax / onchange and their action (histogram.rst 2.2.3).
enum class HistHandler : uint8_t { onmatch, onmax, onchange };
enum class HistActionKind : uint8_t { trace, save, snapshot };
struct ActionParam {
  bool is_ref = false;  ///< a variable (refs[ref]) or a field of this event
  uint32_t ref = 0;
  HistField field;
  std::string type;  ///< for the synthetic field type check
  uint32_t size = 8;
  bool is_signed = false;
  bool is_string = false;
};
struct HistAction {
  HistHandler handler = HistHandler::onmatch;
  HistActionKind kind = HistActionKind::trace;
  std::string match_system, match_event;  ///< onmatch(system.event)
  std::string var_str;                    ///< onmax($x) / onchange($x): "$x" as written
  uint32_t track_ref = 0;                 ///< refs[] index of $x
  uint32_t track_var = 0;   ///< the hidden __max / __change variable (index in the map's variables)
  std::string action_name;  ///< "trace", "save", "snapshot" or the synthetic event's name
  std::string synth_name;   ///< trace(): the synthetic event
  bool use_trace_keyword = false;
  std::vector<std::string> params;  ///< as written
  std::vector<ActionParam> args;    ///< trace(): one per synthetic field
  std::shared_ptr<const SynthEvent> synth;
  /// save(): the fields of this event saved with each new max/change, and
  /// where in the entry's save area (bytes).
  std::vector<HistField> save;
  std::vector<uint32_t> save_offset;
};

/// A hist that create_field_var_hist() added on another event for a field
/// param of an onmatch action: removed with the hist that made it
/// (destroy_field_var_hists).
struct FieldVarHist {
  std::string system, event;
  std::string cmd;  ///< "keys=...:synthetic_FIELD=FIELD[ if FILTER]" as written there
};

struct HistSortKey {
  int field = 0;  ///< 0 = hitcount, 1..nvals = vals[i-1], -1-k = keys[k]
  bool descending = false;
};

/// A parsed hist command.
struct HistSpec {
  std::vector<HistField> keys, vals;
  std::vector<HistSortKey> sort;
  uint32_t map_bits = kMapBitsDefault;
  std::string name;
  bool pause = false, cont = false, clear = false;
  uint32_t key_bytes = 0;  ///< compound key size (multiple of 8)
  // Variables, expressions, references and handlers (section 2.2).
  std::vector<ExprNode> nodes;
  std::vector<HistVar> vars;
  std::vector<VarRef> refs;
  std::vector<HistAction> actions;
  std::string clock;        ///< clock= as given ("" = the instance's)
  bool timestamps = false;  ///< common_timestamp is used: the info line shows :clock=
  uint32_t save_bytes = 0;  ///< per-entry save() area
  bool nohitcount = false;  ///< `nohitcount` / `NOHC`: the raw hitcount is not shown
  /// vars[i]'s node when it is one field or time stamp (else empty): what
  /// HistMap::update_vars reads.
  std::vector<HistField> var_leaves;
  bool stack_key = false;                     ///< a key is the stack trace (common_stacktrace)
  std::vector<FieldVarHist> field_var_hists;  ///< hists this one added on other events
  /// Variables the map stores per entry: vars, then one per onmax/onchange.
  uint32_t map_vars() const noexcept;
  /// True when the plain update (keys, numeric vals) is all there is.
  bool simple() const noexcept {
    return vars.empty() && refs.empty() && actions.empty() && !has_expr_vals;
  }
  bool has_expr_vals = false;
  /// "hist:[NAME:]keys=...:vals=hitcount,...:sort=...:size=N": the trigger info
  /// line without the filter and state.
  std::string info() const;
  /// Same keys, vals and sort (the kernel's hist_trigger_match, filter aside).
  bool same_shape(const HistSpec& o) const;
};

/// What parsing a hist command may look up beyond its own event: other
/// events' variables and the synthetic events (control plane, under the
/// triggers' mutex).
struct HistEnv {
  /// The variable `name` (on system:event when given, else unique among
  /// the instance's hists, as the kernel's find_var_file), or map == null.
  /// Sets e.message/pos for VAR_NOT_UNIQUE.
  std::function<VarRef(std::string_view system, std::string_view event, std::string_view name,
                       TriggerError& e)>
      find_var;
  std::function<std::shared_ptr<const SynthEvent>(std::string_view name)> find_synth;
  std::function<const EventDesc*(std::string_view system, std::string_view event)> find_event;
  /// create_field_var_hist(): the variable `synthetic_FIELD` of a hist on
  /// system:event whose keys match `target`'s (compatible_keys), adding that
  /// hist ("keys=K:synthetic_FIELD=FIELD", the matching hist's filter) when
  /// the variable is missing; `created` then names it. map == null and `e`
  /// set (the kernel's last error_log entry) when it cannot.
  std::function<VarRef(std::string_view system, std::string_view event, std::string_view field,
                       const HistSpec& target, TriggerError& e, FieldVarHist& created)>
      field_var_hist;
  std::string clock_name = "global";  ///< the instance's trace clock
  bool remove = false;                ///< parsing a '!hist' (no duplicate-variable check)
};

/// Parser state (hist.cc, hist_expr.cc).
struct HistParser {
  HistSpec& spec;
  const EventDesc& event;
  TriggerError& e;
  const HistEnv* env;
  std::vector<std::pair<std::string, std::string>> var_defs;  ///< name, expression text
  /// What is being parsed and its whole text: a modifier that is for values
  /// only (.percent, .graph) is refused on a key or a variable as parse_field
  /// does (there the kernel passes HIST_FIELD_FL_KEY / _VAR to the atom).
  enum class Use : uint8_t { other, key, val, var } use = Use::other;
  std::string_view use_text;
  bool fail(HistErr code, std::string_view at);  ///< sets the error; returns false
  bool fail_pos(HistErr code, int pos);
  int errpos(std::string_view what) const;
};

/// Parses the text after "hist:" (filter already split off) against the
/// event's fields. On error: the kernel's errno, message and caret position
/// in `text`. `env` may be null (no variables of other events, no
/// synthetic events).
std::optional<HistSpec> parse_hist(std::string_view text, const EventDesc& event,
                                   TriggerError& error, size_t text_pos_in_command,
                                   const HistEnv* env = nullptr);

/// One field (key, val or expression operand) "name[.modifier]".
bool parse_hist_field(HistParser& p, std::string_view str, bool is_key, HistField& f);

/// Reads one numeric key or val from the record (or the time stamp, the
/// CPU), with .log2 / .buckets applied. Write path.
[[gnu::always_inline]] inline uint64_t read_hist_value(const HistField& f,
                                                       std::span<const std::byte> rec, uint32_t cpu,
                                                       uint64_t ts) noexcept {
  uint64_t v = 0;
  if (f.source == HistSource::field) [[likely]] {
    if (f.offset + f.size > rec.size()) [[unlikely]]
      return 0;
    const std::byte* p = rec.data() + f.offset;
    switch (f.size) {
      case 1: {
        int8_t x;
        std::memcpy(&x, p, 1);
        v = f.is_signed ? static_cast<uint64_t>(x) : static_cast<uint8_t>(x);
        break;
      }
      case 2: {
        int16_t x;
        std::memcpy(&x, p, 2);
        v = f.is_signed ? static_cast<uint64_t>(x) : static_cast<uint16_t>(x);
        break;
      }
      case 4: {
        int32_t x;
        std::memcpy(&x, p, 4);
        v = f.is_signed ? static_cast<uint64_t>(x) : static_cast<uint32_t>(x);
        break;
      }
      default:
        std::memcpy(&v, p, 8);
        break;
    }
  } else if (f.source == HistSource::timestamp) {
    v = (f.flags & (kUsecs | kTsInUsecs)) ? ns2usecs(ts) : ts;
  } else if (f.source == HistSource::cpu) {
    v = cpu;
  } else if (f.source == HistSource::hitcount) {
    v = 1;
  }
  if (f.flags & (kLog2 | kBuckets)) [[unlikely]]
    v = (f.flags & kLog2) ? ilog2_roundup(v) : v / f.buckets * f.buckets;
  return v;
}

/// A key built from a record: the bytes, its first word and its hash (the
/// same for every map of the same key layout, so another hist's map can be
/// looked up with it).
struct HistKey {
  alignas(8) std::byte bytes[kMaxKeys * kMaxStringKey];
  uint64_t key0;
  uint32_t hash;
};

/// The preallocated lock-free map of one hist trigger.
class HistMap {
 public:
  /// Preallocates the map: 2 * size buckets, size entries, counters per
  /// possible CPU (when `per_cpu_counters`, rseq is usable and they fit in
  /// kPerCpuBytesMax) plus the shared row, and the variables and save()
  /// area of each entry. Throws std::bad_alloc.
  explicit HistMap(const HistSpec& spec, bool per_cpu_counters = true);
  /// True when the write path adds to per-CPU counters (false: shared atomics).
  bool per_cpu_counters() const noexcept { return ncpu_ != 0; }
  HistMap(const HistMap&) = delete;
  HistMap& operator=(const HistMap&) = delete;

  /// Builds the key from the record (fields read as `fields` says: the
  /// event's own offsets; a named map is shared by events of one shape) and
  /// adds one hit and the vals. Write path; inline for one numeric key (the
  /// common `keys=field`), out of line for compound and string keys.
  [[gnu::always_inline]] void update(const HistSpec& fields, std::span<const std::byte> rec,
                                     uint32_t cpu, uint64_t ts) noexcept {
    if (!one_word_) [[unlikely]]
      return update_compound(fields, rec, cpu, ts);
    // One numeric key: no key buffer, one multiply for the hash (Fibonacci
    // hashing: the product's high half), compared in the bucket itself.
    const uint64_t v = read_hist_value(fields.keys[0], rec, cpu, ts);
    const uint32_t hash = one_word_hash(v);
    const uint32_t ent = find_or_insert<true>(reinterpret_cast<const std::byte*>(&v), v, hash);
    if (ent != UINT32_MAX) [[likely]]
      add(ent, fields, rec, cpu, ts);
  }
  /// update() and the variables, for a one-numeric-key hist whose variables
  /// are plain fields or time stamps, with no references or handlers
  /// (vars_only()): the common "save a stamp per key" half of a recipe.
  [[gnu::always_inline]] void update_vars(const HistSpec& fields, std::span<const std::byte> rec,
                                          uint32_t cpu, uint64_t ts) noexcept {
    const uint64_t v = read_hist_value(fields.keys[0], rec, cpu, ts);
    const uint32_t ent =
        find_or_insert<true>(reinterpret_cast<const std::byte*>(&v), v, one_word_hash(v));
    if (ent == UINT32_MAX) [[unlikely]]
      return;
    add(ent, fields, rec, cpu, ts);
    // The leaves side by side (HistSpec::var_leaves): one load to each
    // field's description, not three (vars -> nodes -> leaf).
    const HistField* leaf = fields.var_leaves.data();
    const uint32_t n = static_cast<uint32_t>(fields.var_leaves.size());
    for (uint32_t i = 0; i < n; ++i) set_var(ent, i, read_hist_value(leaf[i], rec, cpu, ts));
  }
  /// True when update_vars() is all a record needs.
  bool vars_only() const noexcept {
    if (!one_word_ || !spec_.refs.empty() || !spec_.actions.empty() || spec_.has_expr_vals)
      return false;
    for (const HistVar& v : spec_.vars) {
      const ExprNode& n = spec_.nodes[static_cast<size_t>(v.expr)];
      if (n.op != ExprOp::value || n.is_string) return false;
    }
    return true;
  }
  /// Zeroes every entry and counter. Control plane, no writer running on it
  /// (the caller unpublished it or waited a grace period).
  void clear() noexcept;
  uint64_t dropped() const noexcept { return drops_.load(std::memory_order_relaxed); }

  // ── variables (hist_actions.cc drives them) ──
  /// The key of `fields` for this record, hashed as this map hashes it.
  void make_key(const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu, uint64_t ts,
                HistKey& k) const noexcept;
  /// The entry holding `k`, or UINT32_MAX (tracing_map_lookup: no insert).
  uint32_t lookup(const HistKey& k) const noexcept;
  /// The entry holding `k`, inserted if new; UINT32_MAX when full (Dropped).
  uint32_t insert(const HistKey& k) noexcept {
    return one_word_ ? find_or_insert<true>(k.bytes, k.key0, k.hash)
                     : find_or_insert<false>(k.bytes, k.key0, k.hash);
  }
  /// Adds the hit and the numeric vals (expression vals: `vals` holds them).
  void add_counts(uint32_t ent, const uint64_t* vals) noexcept {
    const uint64_t stride = uint64_t{max_entries_} * sizeof(Sums);
    add_word(ent, 0, 1, stride);
    for (size_t i = 0; i < spec_.vals.size(); ++i)
      add_word(ent, static_cast<uint32_t>(1 + i), vals[i], stride);
  }
  /// tracing_map_set_var: the value, then its set flag (release).
  void set_var(uint32_t ent, uint32_t var, uint64_t v) noexcept {
    VarSlot& s = vars_[size_t{ent} * nvars_ + var];
    s.value.store(v, std::memory_order_relaxed);
    s.set.store(1, std::memory_order_release);
  }
  /// tracing_map_read_var / _read_var_once: false when unset; `once`
  /// unsets it (one exchange: two readers never both take it).
  bool read_var(uint32_t ent, uint32_t var, bool once, uint64_t& v) noexcept {
    VarSlot& s = vars_[size_t{ent} * nvars_ + var];
    // read-once: only a set flag costs the exchange (an unset one is not written)
    const uint64_t set = s.set.load(std::memory_order_acquire);
    if (set == 0 || (once && s.set.exchange(0, std::memory_order_acquire) == 0)) return false;
    v = s.value.load(std::memory_order_relaxed);
    return true;
  }
  /// A variable's value whether set or not (0 if never), for the hist file.
  uint64_t peek_var(uint32_t ent, uint32_t var) const noexcept {
    return vars_[size_t{ent} * nvars_ + var].value.load(std::memory_order_relaxed);
  }
  /// The save() area of an entry, in 8-byte words stored one at a time.
  std::atomic<uint64_t>* save_area(uint32_t ent) noexcept {
    return save_.get() + size_t{ent} * (spec_.save_bytes / 8);
  }
  const std::atomic<uint64_t>* save_area(uint32_t ent) const noexcept {
    return save_.get() + size_t{ent} * (spec_.save_bytes / 8);
  }
  const std::byte* key_of(uint32_t ent) const noexcept {
    return keys_.get() + size_t{ent} * spec_.key_bytes;
  }

  /// snapshot(): the hist-wide max or change that last took a snapshot,
  /// and its key (the kernel's cond_snapshot track_data).
  struct SnapshotInfo {
    std::atomic<uint64_t> value{0};
    std::atomic<bool> updated{false};
    std::atomic<uint32_t> entry{UINT32_MAX};
  };
  SnapshotInfo& snapshot_info() noexcept { return snap_; }
  const SnapshotInfo& snapshot_info() const noexcept { return snap_; }

  struct Row {
    const std::byte* key;
    uint64_t hitcount;
    uint64_t vals[kMaxVals];
    uint32_t entry;
  };
  /// Published entries, unsorted (reader).
  std::vector<Row> rows() const;
  const HistSpec& spec() const noexcept { return spec_; }

 private:
  struct Bucket {
    std::atomic<uint32_t> hash{0};
    std::atomic<uint32_t> entry{0};  ///< index + 1; 0 while being set
    std::atomic<uint64_t> key0{0};  ///< the key's first 8 bytes, stored before `entry` is published
  };
  struct Sums {
    std::atomic<uint64_t> v[1 + kMaxVals];  ///< hitcount, vals
  };
  std::byte* key_at(uint32_t i) noexcept { return keys_.get() + size_t{i} * spec_.key_bytes; }
  const std::byte* key_at(uint32_t i) const noexcept {
    return keys_.get() + size_t{i} * spec_.key_bytes;
  }
  static uint32_t one_word_hash(uint64_t v) noexcept {
    return static_cast<uint32_t>((v * 0x9e3779b97f4a7c15ULL) >> 32) | 1u;
  }

  /// Entry index or UINT32_MAX (Dropped). kOneWord: the key is one u64,
  /// compared with the bucket's key0 (no load of the key array).
  template <bool kOneWord>
  [[gnu::always_inline]] uint32_t find_or_insert(const std::byte* key, uint64_t key0,
                                                 uint32_t hash) noexcept {
    const uint32_t mask = nbuckets_ - 1;
    uint32_t i = hash & mask;
    uint32_t looks = 0;
    for (uint32_t probes = 0; probes < nbuckets_;) {
      Bucket& b = buckets_[i];
      uint32_t h = b.hash.load(std::memory_order_acquire);
      if (h == hash) {
        const uint32_t ent = b.entry.load(std::memory_order_acquire);
        if (ent == 0) [[unlikely]] {  // (M2) another writer is setting this bucket: look again
          if (++looks > nbuckets_) break;
          continue;
        }
        const bool same = b.key0.load(std::memory_order_relaxed) == key0 &&
                          (kOneWord || std::memcmp(key_at(ent - 1), key, spec_.key_bytes) == 0);
        if (same) [[likely]]
          return ent - 1;   // (M1)
      } else if (h == 0) {  // (M3)
        const uint32_t n = insert(b, key, key0, hash);
        if (n == kLost) continue;  // look at the bucket again: it may now hold our key
        if (n == kFull) break;
        return n;
      }
      i = (i + 1) & mask;
      ++probes;
    }
    drops_.fetch_add(1, std::memory_order_relaxed);
    return UINT32_MAX;
  }
  static constexpr uint32_t kLost = UINT32_MAX - 1, kFull = UINT32_MAX;
  /// (M3) on a free bucket: the new entry, kLost when another writer took
  /// the bucket first, kFull when no entry is left (the bucket is freed).
  [[gnu::noinline, gnu::cold]] uint32_t insert(Bucket& b, const std::byte* key, uint64_t key0,
                                               uint32_t hash) noexcept;

  [[gnu::always_inline]] void add(uint32_t ent, const HistSpec& fields,
                                  std::span<const std::byte> rec, uint32_t cpu,
                                  uint64_t ts) noexcept {
    const uint64_t stride = uint64_t{max_entries_} * sizeof(Sums);
    add_word(ent, 0, 1, stride);
    for (size_t i = 0; i < fields.vals.size(); ++i)
      add_word(ent, static_cast<uint32_t>(1 + i), read_hist_value(fields.vals[i], rec, cpu, ts),
               stride);
  }
  [[gnu::always_inline]] void add_word(uint32_t ent, uint32_t w, uint64_t v,
                                       uint64_t stride) noexcept {
    if (buffers::detail::add_local_percpu(&sums_[ent].v[w], stride, ncpu_, v)) [[likely]]
      return;
    sums_[size_t{ncpu_} * max_entries_ + ent].v[w].fetch_add(v, std::memory_order_relaxed);
  }
  void update_compound(const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu,
                       uint64_t ts) noexcept;

  uint64_t sum(uint32_t ent, uint32_t word) const noexcept;

  HistSpec spec_;
  uint32_t max_entries_, nbuckets_;
  uint32_t ncpu_ = 0;  ///< per-CPU slots (0: shared row only)
  uint32_t nvars_ = 0;
  std::unique_ptr<Bucket[]> buckets_;
  std::unique_ptr<std::byte[]> keys_;
  std::unique_ptr<Sums[]> sums_;
  /// A variable of an entry: its value and whether it is set, side by side.
  struct VarSlot {
    std::atomic<uint64_t> value{0};
    std::atomic<uint64_t> set{0};
  };
  std::unique_ptr<VarSlot[]> vars_;                ///< [entry * nvars_ + var]
  std::unique_ptr<std::atomic<uint64_t>[]> save_;  ///< [entry * save_bytes/8 + word]
  SnapshotInfo snap_;
  bool one_word_ = false;  ///< one numeric key: the fast path of update()
  std::atomic<uint32_t> next_entry_{0};
  std::atomic<uint64_t> drops_{0};
};

/// The per-event part of a hist with variables, references or handlers
/// (hist_actions.cc): the kernel's event_hist_trigger. `inst` receives the
/// synthetic events of trace() and the snapshot of snapshot().
/// Write path: no allocation, lock or system call.
void hist_update_full(const HistSpec& fields, HistMap& map, Instance& inst,
                      std::span<const std::byte> rec, uint32_t cpu, uint64_t ts) noexcept;

/// The lines print_actions() adds to an entry (max:/changed: and saved fields).
std::string format_hist_actions(const HistMap& map, uint32_t entry);
/// The "Snapshot taken" block, or "".
std::string format_hist_snapshot(const HistMap& map, const HistNames& names);
/// One value as hist_trigger_print_val prints it, with its leading blank:
/// " name: N", " name: hex" (.hex), " name (%): PP.pp" (.percent of
/// `total`), " name: ####      " (.graph: 20 columns scaled to `max`).
std::string format_hist_val(std::string_view name, uint32_t flags, uint64_t val, uint64_t total,
                            uint64_t max);
/// One key as hist_trigger_print_key prints it ("{ next_pid:       2103 }").
std::string format_hist_key(const HistSpec& spec, const std::byte* key, const HistNames& names);

/// The text of one hist (header, entries, Totals) as the kernel's hist file
/// prints it; `info` is the trigger info line (spec, filter, state).
std::string format_hist(const HistMap& map, const std::string& info, const HistNames& names);

}  // namespace tracepipe::triggers
