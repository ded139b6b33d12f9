#pragma once
// Hist triggers: the spec (keys, vals, sort, size), the map the write path
// updates, and the hist file's text. Internal to core/triggers.
//
// ══ The map (kernel/trace/tracing_map.c, in our own words) ════════════════════
//
//   buckets[2 * max_entries]: { hash (0 = free), entry + 1 (0 = being set) }
//   entries[max_entries]:     { key bytes, hitcount, vals[0..2] }   preallocated
//
//   insert(key):  h = hash(key) | 1; i = h & mask
//     (M1) bucket i holds h and an entry whose key equals key   -> that entry
//     (M2) bucket i holds h, entry not published yet            -> look again
//          (bounded: after `buckets` looks the key counts as Dropped)
//     (M3) bucket i free: CAS hash 0 -> h; on success take the next entry
//          (fetch_add; none left: bucket freed, Dropped), copy the key,
//          publish entry + 1 (release)                           -> that entry
//     else i = (i + 1) & mask (at most `buckets` probes, then Dropped)
//   update: hitcount and each val by one relaxed fetch_add.
//
// No lock, no allocation, no system call. Hits is the sum of hitcounts (the
// kernel counts the same inserts in a shared counter; the sum needs no write).
// A reader sees an entry once published; `clear` (control plane) zeroes the
// map after a grace period.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/events/event.h"
#include "tracepipe/core/triggers/triggers.h"

namespace tracepipe::triggers {

inline constexpr uint32_t kMaxKeys = 3;       ///< TRACING_MAP_KEYS_MAX
inline constexpr uint32_t kMaxVals = 3;       ///< TRACING_MAP_VALS_MAX, hitcount aside
inline constexpr uint32_t kMaxSortKeys = 2;
inline constexpr uint32_t kMapBitsDefault = 11;  ///< size=2048
inline constexpr uint32_t kMapBitsMin = 7, kMapBitsMax = 17;
inline constexpr uint32_t kMaxStringKey = 256;  ///< MAX_FILTER_STR_VAL

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
  explicit HistMap(const HistSpec& spec);
  HistMap(const HistMap&) = delete;
  HistMap& operator=(const HistMap&) = delete;

  /// Builds the key from the record (fields read as `fields` says: the
  /// event's own offsets; a named map is shared by events of one shape) and
  /// adds one hit and the vals. Write path.
  void update(const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu, uint64_t ts) noexcept;
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
  };
  struct Sums {
    std::atomic<uint64_t> v[1 + kMaxVals];  ///< hitcount, vals
  };
  std::byte* key_at(uint32_t i) noexcept { return keys_.get() + size_t{i} * spec_.key_bytes; }
  static uint64_t read_value(const HistField& f, std::span<const std::byte> rec, uint32_t cpu, uint64_t ts) noexcept;
  /// Entry index or UINT32_MAX (Dropped). kOneWord: the key is one u64
  /// (compared by one load, not memcmp).
  template <bool kOneWord>
  uint32_t find_or_insert(const std::byte* key, uint32_t hash) noexcept;
  void add(uint32_t ent, const HistSpec& fields, std::span<const std::byte> rec, uint32_t cpu, uint64_t ts) noexcept;

  HistSpec spec_;
  uint32_t max_entries_, nbuckets_;
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
