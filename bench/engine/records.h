#pragma once
// The four kernel events `tracepipe bench` emits, laid out byte for byte as
// the kernel's format files describe them (x86_64, Linux 6.18, captured in
// ../shared/data/kernel/formats/):
//
//   event                     ID   size  fields after the 8-byte common header
//   sched:sched_switch        372   64   prev_comm[16] prev_pid prev_prio prev_state
//                                        next_comm[16] next_pid next_prio
//   sched:sched_wakeup        374   36   comm[16] pid prio target_cpu
//   raw_syscalls:sys_enter    443   64   id args[6]
//   raw_syscalls:sys_exit     442   24   id ret
//
// The structs below are the record payloads (common_type at offset 0). The
// static_asserts pin every offset to the format file; kFormatText holds the
// format files themselves, so the engine registers the very schemas the
// kernel exports and a filter such as `prev_state & 1` compiles against the
// kernel's field types. tests/bench/engine/bench_records_test.cc parses each text
// and checks it against the captured files and against these structs.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tracepipe::bench {

/// The common fields every kernel event starts with (8 bytes).
/// Mirrors kernel/trace/trace_events.c: trace_define_common_fields.
struct CommonFields {
  uint16_t common_type = 0;          ///< event ID
  uint8_t common_flags = 0;          ///< irqs-off / need-resched bits; 0 here
  uint8_t common_preempt_count = 0;  ///< always 0 for these user-space emit points
  int32_t common_pid = 0;            ///< the emitting thread's tid
};

/// sched:sched_switch, 64 bytes. `prev_state` uses the kernel's task state
/// bits (1 = S, interruptible sleep; 0 = R, preempted).
struct SchedSwitchRecord {
  CommonFields common;
  char prev_comm[16];
  int32_t prev_pid;
  int32_t prev_prio;
  int64_t prev_state;
  char next_comm[16];
  int32_t next_pid;
  int32_t next_prio;
};

/// sched:sched_wakeup, 36 bytes.
struct SchedWakeupRecord {
  CommonFields common;
  char comm[16];
  int32_t pid;
  int32_t prio;
  int32_t target_cpu;
};

/// raw_syscalls:sys_enter, 64 bytes.
struct SysEnterRecord {
  CommonFields common;
  int64_t id;
  uint64_t args[6];
};

/// raw_syscalls:sys_exit, 24 bytes.
struct SysExitRecord {
  CommonFields common;
  int64_t id;
  int64_t ret;
};

static_assert(sizeof(CommonFields) == 8);
static_assert(offsetof(CommonFields, common_flags) == 2);
static_assert(offsetof(CommonFields, common_preempt_count) == 3);
static_assert(offsetof(CommonFields, common_pid) == 4);

static_assert(offsetof(SchedSwitchRecord, prev_comm) == 8);
static_assert(offsetof(SchedSwitchRecord, prev_pid) == 24);
static_assert(offsetof(SchedSwitchRecord, prev_prio) == 28);
static_assert(offsetof(SchedSwitchRecord, prev_state) == 32);
static_assert(offsetof(SchedSwitchRecord, next_comm) == 40);
static_assert(offsetof(SchedSwitchRecord, next_pid) == 56);
static_assert(offsetof(SchedSwitchRecord, next_prio) == 60);
static_assert(sizeof(SchedSwitchRecord) == 64);

static_assert(offsetof(SchedWakeupRecord, comm) == 8);
static_assert(offsetof(SchedWakeupRecord, pid) == 24);
static_assert(offsetof(SchedWakeupRecord, prio) == 28);
static_assert(offsetof(SchedWakeupRecord, target_cpu) == 32);
static_assert(sizeof(SchedWakeupRecord) == 36);

static_assert(offsetof(SysEnterRecord, id) == 8);
static_assert(offsetof(SysEnterRecord, args) == 16);
static_assert(sizeof(SysEnterRecord) == 64);

static_assert(offsetof(SysExitRecord, id) == 8);
static_assert(offsetof(SysExitRecord, ret) == 16);
static_assert(sizeof(SysExitRecord) == 24);

/// Which of the four events; also the index into kEventInfo.
enum class EventKind : uint8_t { sched_switch, sched_wakeup, sys_enter, sys_exit };
inline constexpr std::size_t kEventKinds = 4;

/// Kernel identity of one emitted event.
struct EventInfo {
  EventKind kind;
  std::string_view system;  ///< "sched", "raw_syscalls"
  std::string_view name;    ///< "sched_switch"
  uint16_t id;              ///< common_type, the kernel's event ID
  uint32_t size;            ///< payload bytes (sizeof the record struct)
  std::string_view format;  ///< the kernel's format file, verbatim
};

/// The four events, indexed by EventKind.
extern const std::array<EventInfo, kEventKinds> kEventInfo;

inline const EventInfo& event_info(EventKind k) { return kEventInfo[static_cast<std::size_t>(k)]; }

/// Looks an event up by "name" or "system:name"; nullptr if it is not one of
/// the four.
const EventInfo* find_event(std::string_view name);

}  // namespace tracepipe::bench
