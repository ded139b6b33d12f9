// The kernel format files of the four bench events, embedded verbatim (data
// captured from Linux 6.18, ../shared/data/kernel/formats/), and lookup.
#include "tracepipe/bench/engine/records.h"

namespace tracepipe::bench {
namespace {

constexpr std::string_view kSchedSwitchFormat = R"FMT(name: sched_switch
ID: 372
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char prev_comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t prev_pid;	offset:24;	size:4;	signed:1;
	field:int prev_prio;	offset:28;	size:4;	signed:1;
	field:long prev_state;	offset:32;	size:8;	signed:1;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;
	field:pid_t next_pid;	offset:56;	size:4;	signed:1;
	field:int next_prio;	offset:60;	size:4;	signed:1;

print fmt: "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio
)FMT";

constexpr std::string_view kSchedWakeupFormat = R"FMT(name: sched_wakeup
ID: 374
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:char comm[16];	offset:8;	size:16;	signed:0;
	field:pid_t pid;	offset:24;	size:4;	signed:1;
	field:int prio;	offset:28;	size:4;	signed:1;
	field:int target_cpu;	offset:32;	size:4;	signed:1;

print fmt: "comm=%s pid=%d prio=%d target_cpu=%03d", REC->comm, REC->pid, REC->prio, REC->target_cpu
)FMT";

constexpr std::string_view kSysEnterFormat = R"FMT(name: sys_enter
ID: 443
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:long id;	offset:8;	size:8;	signed:1;
	field:unsigned long args[6];	offset:16;	size:48;	signed:0;

print fmt: "NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)", REC->id, REC->args[0], REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]
)FMT";

constexpr std::string_view kSysExitFormat = R"FMT(name: sys_exit
ID: 442
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:long id;	offset:8;	size:8;	signed:1;
	field:long ret;	offset:16;	size:8;	signed:1;

print fmt: "NR %ld = %ld", REC->id, REC->ret
)FMT";

}  // namespace

const std::array<EventInfo, kEventKinds> kEventInfo{{
    {EventKind::sched_switch, "sched", "sched_switch", 372, sizeof(SchedSwitchRecord),
     kSchedSwitchFormat},
    {EventKind::sched_wakeup, "sched", "sched_wakeup", 374, sizeof(SchedWakeupRecord),
     kSchedWakeupFormat},
    {EventKind::sys_enter, "raw_syscalls", "sys_enter", 443, sizeof(SysEnterRecord),
     kSysEnterFormat},
    {EventKind::sys_exit, "raw_syscalls", "sys_exit", 442, sizeof(SysExitRecord), kSysExitFormat},
}};

const EventInfo* find_event(std::string_view name) {
  for (const EventInfo& e : kEventInfo) {
    if (name == e.name) return &e;
    if (name.size() == e.system.size() + 1 + e.name.size() && name.starts_with(e.system) &&
        name[e.system.size()] == ':' && name.ends_with(e.name))
      return &e;
  }
  return nullptr;
}

}  // namespace tracepipe::bench
