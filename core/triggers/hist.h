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
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/buffers/rseq.h"
#include "tracepipe/core/events/event.h"
#include "tracepipe/core/triggers/triggers.h"

namespace tracepipe::triggers {

inline constexpr uint32_t kMaxKeys = 3;       ///< TRACING_MAP_KEYS_MAX
inline constexpr uint32_t kMaxVals = 3;       ///< TRACING_MAP_VALS_MAX, hitcount aside
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
};

/// Where a hist field's value comes from.
enum class HistSource : uint8_t { field, string_field, dyn_string, timestamp, cpu };

/// One key or val: the field it reads and how.
struct HistField {
  std::string name;          ///< as written, without modifiers ("common_pid")
  HistSource source = HistSource::field;
  uint32_t offset = 0, size = 0;  ///< in the record (field, string_field, dyn_string)
  bool is_signed = false;
  uint32_t flags = 0;        ///< HistFlag
  uint64_t buckets = 0;      ///< .buckets=N
  uint32_t key_offset = 0, key_size = 0;  ///< in the compound key (keys only)
  /// "common_pid.execname", "bytes_req.buckets=100": as the trigger info prints it.
  std::string print() const;
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
  /// "hist:[NAME:]keys=...:vals=hitcount,...:sort=...:size=N": the trigger info
  /// line without the filter and state.
  std::string info() const;
  /// Same keys, vals and sort (the kernel's hist_trigger_match, filter aside).
  bool same_shape(const HistSpec& o) const;
};

/// Parses the text after "hist:" (filter already split off) against the
/// event's fields. On error: the kernel's errno, message and caret position
/// in `text`.
std::optional<HistSpec> parse_hist(std::string_view text, const EventDesc& event, TriggerError& error,
                                   size_t text_pos_in_command);

/// The preallocated lock-free map of one hist trigger.
class HistMap {
 public:
  /// Preallocates the map: 2 * size buckets, size entries, counters per
  /// possible CPU (when `per_cpu_counters`, rseq is usable and they fit in
  /// kPerCpuBytesMax) plus the shared row. Throws std::bad_alloc.
  explicit HistMap(const HistSpec& spec, bool per_cpu_counters = true);
  /// True when the write path adds to per-CPU counters (false: shared atomics).
  bool per_cpu_counters() const noexcept { return ncpu_ != 0; }
  HistMap(const HistMap&) = delete;
  HistMap& operator=(const HistMap&) = delete;

  /// Builds the key from the record (fields read as `fields` says: the
  /// event's own offsets; a named map is shared by events of one shape) and
  /// adds one hit and the vals. Write path; inline for one numeric key (the
  /// common `keys=field`), out of line for compound and string keys.
  [[gnu::always_inline]] void update(const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu,
                                     uint64_t ts) noexcept {
    if (!one_word_) [[unlikely]]
      return update_compound(fields, rec, cpu, ts);
    // One numeric key: no key buffer, one multiply for the hash (Fibonacci
    // hashing: the product's high half), compared in the bucket itself.
    const uint64_t v = read_value(fields.keys[0], rec, cpu, ts);
    const uint32_t hash = static_cast<uint32_t>((v * 0x9e3779b97f4a7c15ULL) >> 32) | 1u;
    const uint32_t ent = find_or_insert<true>(reinterpret_cast<const std::byte*>(&v), v, hash);
    if (ent != UINT32_MAX) [[likely]]
      add(ent, fields, rec, cpu, ts);
  }
  /// Zeroes every entry and counter. Control plane, no writer running on it
  /// (the caller unpublished it or waited a grace period).
  void clear() noexcept;
  uint64_t dropped() const noexcept { return drops_.load(std::memory_order_relaxed); }

  struct Row {
    const std::byte* key;
    uint64_t hitcount;
    uint64_t vals[kMaxVals];
  };
  /// Published entries, unsorted (reader).
  std::vector<Row> rows() const;
  const HistSpec& spec() const noexcept { return spec_; }

 private:
  struct Bucket {
    std::atomic<uint32_t> hash{0};
    std::atomic<uint32_t> entry{0};  ///< index + 1; 0 while being set
    std::atomic<uint64_t> key0{0};   ///< the key's first 8 bytes, stored before `entry` is published
  };
  struct Sums {
    std::atomic<uint64_t> v[1 + kMaxVals];  ///< hitcount, vals
  };
  std::byte* key_at(uint32_t i) noexcept { return keys_.get() + size_t{i} * spec_.key_bytes; }

  [[gnu::always_inline]] static uint64_t read_value(const HistField& f, std::span<const std::byte> rec, uint32_t cpu,
                                                    uint64_t ts) noexcept {
    uint64_t v = 0;
    if (f.source == HistSource::field) [[likely]] {
      if (f.offset + f.size > rec.size()) [[unlikely]]
        return 0;
      const std::byte* p = rec.data() + f.offset;
      switch (f.size) {
        case 1: { int8_t x; std::memcpy(&x, p, 1); v = f.is_signed ? static_cast<uint64_t>(x) : static_cast<uint8_t>(x); break; }
        case 2: { int16_t x; std::memcpy(&x, p, 2); v = f.is_signed ? static_cast<uint64_t>(x) : static_cast<uint16_t>(x); break; }
        case 4: { int32_t x; std::memcpy(&x, p, 4); v = f.is_signed ? static_cast<uint64_t>(x) : static_cast<uint32_t>(x); break; }
        default: std::memcpy(&v, p, 8); break;
      }
    } else if (f.source == HistSource::timestamp) {
      v = (f.flags & kUsecs) ? ts / 1000 : ts;
    } else if (f.source == HistSource::cpu) {
      v = cpu;
    }
    if (f.flags & (kLog2 | kBuckets)) [[unlikely]]
      v = (f.flags & kLog2) ? ilog2_roundup(v) : v / f.buckets * f.buckets;
    return v;
  }

  /// Entry index or UINT32_MAX (Dropped). kOneWord: the key is one u64,
  /// compared with the bucket's key0 (no load of the key array).
  template <bool kOneWord>
  [[gnu::always_inline]] uint32_t find_or_insert(const std::byte* key, uint64_t key0, uint32_t hash) noexcept {
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
          return ent - 1;  // (M1)
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
  [[gnu::noinline, gnu::cold]] uint32_t insert(Bucket& b, const std::byte* key, uint64_t key0, uint32_t hash) noexcept;

  [[gnu::always_inline]] void add(uint32_t ent, const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu,
                                  uint64_t ts) noexcept {
    const uint64_t stride = uint64_t{max_entries_} * sizeof(Sums);
    add_word(ent, 0, 1, stride);
    for (size_t i = 0; i < fields.vals.size(); ++i)
      add_word(ent, static_cast<uint32_t>(1 + i), read_value(fields.vals[i], rec, cpu, ts), stride);
  }
  [[gnu::always_inline]] void add_word(uint32_t ent, uint32_t w, uint64_t v, uint64_t stride) noexcept {
    if (buffers::detail::add_local_percpu(&sums_[ent].v[w], stride, ncpu_, v)) [[likely]]
      return;
    sums_[size_t{ncpu_} * max_entries_ + ent].v[w].fetch_add(v, std::memory_order_relaxed);
  }
  void update_compound(const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu, uint64_t ts) noexcept;

  uint64_t sum(uint32_t ent, uint32_t word) const noexcept;

  HistSpec spec_;
  uint32_t max_entries_, nbuckets_;
  uint32_t ncpu_ = 0;  ///< per-CPU slots (0: shared row only)
  std::unique_ptr<Bucket[]> buckets_;
  std::unique_ptr<std::byte[]> keys_;
  std::unique_ptr<Sums[]> sums_;
  bool one_word_ = false;  ///< one numeric key: the fast path of update()
  std::atomic<uint32_t> next_entry_{0};
  std::atomic<uint64_t> drops_{0};
};

/// The text of one hist (header, entries, Totals) as the kernel's hist file
/// prints it; `info` is the trigger info line (spec, filter, state).
std::string format_hist(const HistMap& map, const std::string& info, const HistNames& names);

}  // namespace tracepipe::triggers
