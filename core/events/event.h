#pragma once
// Events: the schema of a record, and the common header every record starts
// with.
//
// A record is the kernel's trace entry, byte for byte:
//
//   offset 0  u16 common_type           the event's ID (EventDesc::id())
//          2  u8  common_flags          TraceFlag bits, see below
//          3  u8  common_preempt_count  nesting depth, see below
//          4  s32 common_pid            gettid() of the writer
//          8  event fields ...          at the offsets of the format
//          N  dynamic data ...          strings pointed at by __data_loc words
//
// What the kernel's context fields mean in user space:
//   * common_pid: the writing thread's kernel task id (gettid()), cached per
//     thread; common_type: the event ID.
//   * common_preempt_count, low nibble: how many emits were already in flight
//     on this thread when this one began (0 normally; 1 for an event emitted by
//     a signal handler that interrupted another emit). The kernel stores the
//     preemption depth there; ours is the depth of writer nesting, which is
//     what decides whether an event can use the staging buffer. High nibble:
//     0 (the kernel's migrate-disable depth).
//   * common_flags: TraceFlag::hardirq ('h') when the event is emitted from a
//     signal handler (inside a SignalScope, or nested in another emit). The
//     other kernel bits (irqs-off, need-resched, softirq, NMI) have no user-
//     space meaning and stay 0, so the `trace` layout prints '.' for them.
//
// An EventDesc is immutable once registered and lives as long as its
// Registry; instances refer to it by reference.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/filters/field.h"

namespace tracepipe {

/// The kernel's common fields, in record order (8 bytes, 64-bit layout).
/// Mirrors kernel include/linux/trace_events.h: struct trace_entry.
struct CommonHeader {
  uint16_t common_type;
  uint8_t common_flags;
  uint8_t common_preempt_count;
  int32_t common_pid;
};
static_assert(sizeof(CommonHeader) == 8);
static_assert(offsetof(CommonHeader, common_pid) == 4);

/// Bits of common_flags (Linux 6.12+). Mirrors include/linux/trace_events.h:
/// enum trace_flag_type.
namespace TraceFlag {
inline constexpr uint8_t irqs_off = 0x01;
inline constexpr uint8_t need_resched_lazy = 0x02;  ///< was IRQS_NOSUPPORT before 6.12
inline constexpr uint8_t need_resched = 0x04;
inline constexpr uint8_t hardirq = 0x08;  ///< user space: emitted from a signal handler
inline constexpr uint8_t softirq = 0x10;
inline constexpr uint8_t preempt_resched = 0x20;
inline constexpr uint8_t nmi = 0x40;
inline constexpr uint8_t bh_off = 0x80;
}  // namespace TraceFlag

/// Where an event's schema came from.
enum class EventOrigin : uint8_t {
  declared,       ///< a C++ declaration (core/instance/event_decl.h)
  kernel_format,  ///< a kernel format file or a trace.dat header
};

class Registry;
namespace detail {
struct EventState;
}  // namespace detail

namespace detail {
/// Instances that have an event enabled, for tracepoint-style emission
/// (EventDecl::trace()). Published with release, read inside a WriterScope,
/// freed after synchronize(). Immutable once published.
struct Subscribers {
  uint32_t count = 0;
  detail::EventState* states[1];  // really `count` entries (allocated with the object)
};
}  // namespace detail

/// One registered event: schema, ID, dense index, filter field table.
/// Thread-safe to read from any thread.
class EventDesc {
 public:
  /// "sched", "sched_switch", "sched:sched_switch".
  std::string_view system() const noexcept { return format_.system; }
  std::string_view name() const noexcept { return format_.name; }
  const std::string& full_name() const noexcept { return full_name_; }
  /// The value of common_type in this event's records.
  uint16_t id() const noexcept { return static_cast<uint16_t>(format_.id); }
  /// Dense index in the owning registry (0, 1, 2, ... in registration order).
  uint32_t index() const noexcept { return index_; }
  EventOrigin origin() const noexcept { return origin_; }
  /// The schema, as in the kernel's format file (common fields included).
  const EventFormat& format() const noexcept { return format_; }
  /// The format file text (kernel f_show syntax).
  std::string format_text() const { return to_format_text(format_); }
  /// Every field (common fields first) as the filter compiler takes them.
  std::span<const filters::FieldDesc> filter_fields() const noexcept { return filter_fields_; }
  /// Size of the fixed part of a record in bytes (dynamic data follows it).
  uint32_t fixed_size() const noexcept { return fixed_size_; }
  /// True if some field is a __data_loc / __rel_loc word.
  bool has_dynamic_fields() const noexcept { return has_dynamic_; }
  const Registry& registry() const noexcept { return *registry_; }

  /// Instances with this event enabled (tracepoint-style emission); nullptr
  /// when none. Internal to the fast path; see Instance. The word lives in
  /// the descriptor, or, for an event registered by an EventDecl, in that
  /// declaration's class-scope word (static storage), so EventDecl::enabled()
  /// tests it with one load from a link-time address.
  std::atomic<const detail::Subscribers*>& subscribers_for_fast_path() const noexcept {
    return *subscribers_word_;
  }

  /// `subscribers_word`: where the subscriber list is published; nullptr =
  /// the descriptor's own word. Must hold nullptr and outlive the descriptor.
  EventDesc(const Registry& registry, EventFormat format, uint32_t index, EventOrigin origin,
            std::atomic<const detail::Subscribers*>* subscribers_word = nullptr);
  EventDesc(const EventDesc&) = delete;
  EventDesc& operator=(const EventDesc&) = delete;

 private:
  const Registry* registry_;
  EventFormat format_;
  std::string full_name_;
  std::vector<filters::FieldDesc> filter_fields_;
  uint32_t index_;
  uint32_t fixed_size_;
  bool has_dynamic_;
  EventOrigin origin_;
  mutable std::atomic<const detail::Subscribers*> subscribers_{nullptr};
  std::atomic<const detail::Subscribers*>*
      subscribers_word_;  // &subscribers_ or an EventDecl's word
};

/// Splits "sys:name" (the kernel's set_event syntax). A missing ':' gives an
/// empty system ("name" alone). Either side may be "*" for globs handled by
/// the caller.
struct EventName {
  std::string_view system;
  std::string_view name;
};
EventName split_event_name(std::string_view full) noexcept;

}  // namespace tracepipe
