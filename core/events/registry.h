#pragma once
// The event registry: every event an instance can record, named SYSTEM:EVENT
// as in the kernel, with a stable ID (the record's common_type) and a dense
// index (the instance's per-event table slot).
//
//   Registry ── by name "sys:name" ──▶ EventDesc  (owned, address stable)
//            ── by ID (u16) ─────────▶    "        (two-level table, lock-free read)
//            ── by index (dense) ────▶    "        (fixed table, lock-free read)
//
// IDs: events loaded from kernel format files keep the kernel's ID, so
// recorded payloads replay unchanged. Events declared in C++ get IDs from
// kFirstDeclaredId (16384) up to kLastDeclaredId (32767): above the IDs a
// kernel hands out (its static events, then kprobes and other dynamic events
// counting up from there: a few thousand), so the two do not collide in one
// trace.dat, and inside the signed 16-bit range every reader handles
// (KernelShark keeps an event ID in an int16_t: an ID of 32768 or more shows
// as an unknown event with empty columns).
//
// Invariants: an ID and a name map to at most one EventDesc; an EventDesc is
// never removed or changed while the registry lives. Re-registering an
// identical schema returns the existing descriptor; a different schema under
// an existing name or ID is an error.
//
// Thread-safety: add*() take a mutex; find*() by ID and index are lock-free
// (atomic loads), by name take the mutex. All are cold-path calls.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/events/event.h"
#include "tracepipe/core/events/event_format.h"

namespace tracepipe {

/// A registration conflict or unreadable schema. what() names the event.
class RegistryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What Registry::add_format_dir loaded.
struct FormatDirLoad {
  /// The added (or already present) descriptors, sorted by name, no duplicates.
  std::vector<const EventDesc*> events;
  /// One entry per format file left out because its text does not parse or
  /// its schema is unusable (e.g. common fields that are not the kernel's):
  /// "<system>/<event>: <reason>", in file order.
  std::vector<std::string> skipped;
};

class Registry {
 public:
  /// At most this many events per registry (dense indices 0 .. kMaxEvents-1).
  static constexpr uint32_t kMaxEvents = 16384;
  /// IDs given to C++-declared events: the upper half of the signed 16-bit
  /// range, as many as a registry holds events.
  static constexpr uint16_t kFirstDeclaredId = 16384;
  static constexpr uint16_t kLastDeclaredId = 32767;
  static_assert(kLastDeclaredId - kFirstDeclaredId + 1 == kMaxEvents);

  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  /// The process-wide registry that C++-declared events register in.
  static Registry& global();

  /// Registers a kernel-format schema; keeps format.id (which must be
  /// non-zero and < 65536). Returns the existing descriptor if the same
  /// schema is already registered; throws RegistryError if the name or the ID
  /// is taken by a different schema, or the registry is full.
  const EventDesc& add(EventFormat format);

  /// Parses a kernel format file's text (FormatError on bad text) and adds it.
  const EventDesc& add_format_text(std::string_view text, std::string_view system);

  /// Loads every event format under `dir`, in either layout:
  ///   * a tracefs events tree: <dir>/<system>/<event>/format
  ///   * flat files named <system>__<event>.format (the shared data layout)
  /// Files named header_page / header_event are ignored. A format whose
  /// text does not parse (FormatError) or whose schema add() refuses on its
  /// own (not the kernel's common fields, a field overlapping the header or
  /// beyond 64 KiB) is skipped and listed in FormatDirLoad::skipped; the
  /// others still load, as libtraceevent keeps the events it could parse.
  /// Throws RegistryError, naming the file, on conflicts with registered
  /// events (name or ID taken by a different schema), a full registry, an
  /// unreadable file or a missing directory.
  FormatDirLoad add_format_dir(const std::filesystem::path& dir);

  /// Registers every format (e.g. TraceDatReader::formats() for replay);
  /// returns their descriptors in the same order. Throws like add().
  std::vector<const EventDesc*> add_all(std::span<const EventFormat> formats);

  /// Registers a C++-declared schema (core/instance/event_decl.h): assigns the next
  /// free ID in [kFirstDeclaredId, kLastDeclaredId] unless format.id is set. Same-name, same-
  /// schema registration returns the existing descriptor.
  /// `subscribers_word`, if given, becomes the new descriptor's subscriber
  /// word (EventDesc::subscribers_for_fast_path()); it must hold nullptr and
  /// have static storage duration. An existing descriptor keeps its word
  /// (callers compare &subscribers_for_fast_path() to know which they got).
  const EventDesc& add_declared(
      EventFormat format, std::atomic<const detail::Subscribers*>* subscribers_word = nullptr);

  /// Lookups; nullptr if absent. find("sched:sched_switch") or
  /// find("sched", "sched_switch"). A name without ':' matches an event of
  /// that name in any system if exactly one exists.
  const EventDesc* find(std::string_view full_name) const;
  const EventDesc* find(std::string_view system, std::string_view name) const;
  const EventDesc* by_id(uint16_t id) const noexcept;
  const EventDesc* by_index(uint32_t index) const noexcept;

  /// Every event, or every event of one system, sorted by "sys:name".
  std::vector<const EventDesc*> events() const;
  std::vector<const EventDesc*> system_events(std::string_view system) const;
  /// Events matching the kernel's set_event syntax: "sys:name", "sys:*",
  /// "sys:" (= "sys:*"), "*:name", "*:*" or "*"; a bare word matches an event
  /// name or a system name, as in the kernel. Extension: shell globs
  /// (fnmatch) on each side, e.g. "sched:sched_wak*".
  std::vector<const EventDesc*> match(std::string_view pattern) const;

  /// Number of registered events (== next dense index).
  uint32_t size() const noexcept { return count_.load(std::memory_order_acquire); }

 private:
  const EventDesc& insert_locked(
      EventFormat format, EventOrigin origin,
      std::atomic<const detail::Subscribers*>* subscribers_word = nullptr);

  mutable std::mutex mu_;
  std::map<std::string, const EventDesc*, std::less<>> by_name_;
  std::vector<std::unique_ptr<EventDesc>> owned_;
  std::unique_ptr<std::atomic<const EventDesc*>[]> by_index_;
  std::unique_ptr<std::atomic<std::atomic<const EventDesc*>*>[]> by_id_;  // 256 chunks of 256
  std::atomic<uint32_t> count_{0};
  uint32_t next_declared_id_ = kFirstDeclaredId;
};

}  // namespace tracepipe
