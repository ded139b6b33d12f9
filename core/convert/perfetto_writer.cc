#include "tracepipe/core/convert/perfetto_writer.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tracepipe/core/convert/event_layout.h"
#include "tracepipe/core/convert/out_file.h"
#include "tracepipe/core/convert/proto_encoder.h"
#include "tracepipe/core/convert/trace_env.h"

namespace tracepipe::convert {
namespace {

// Field numbers of perfetto_trace.proto (the messages named in each comment).
namespace pf {
constexpr uint32_t kTracePacket = 1;                // Trace.packet
constexpr uint32_t kPacketFtraceEvents = 1;         // TracePacket.ftrace_events
constexpr uint32_t kPacketProcessTree = 2;          // TracePacket.process_tree
constexpr uint32_t kPacketTimestamp = 8;            // TracePacket.timestamp
constexpr uint32_t kPacketSequenceId = 10;          // TracePacket.trusted_packet_sequence_id
constexpr uint32_t kPacketFtraceStats = 34;         // TracePacket.ftrace_stats
constexpr uint32_t kPacketSystemInfo = 45;          // TracePacket.system_info
constexpr uint32_t kBundleCpu = 1;                  // FtraceEventBundle.cpu
constexpr uint32_t kBundleEvent = 2;                // FtraceEventBundle.event
constexpr uint32_t kBundleLostEvents = 3;           // FtraceEventBundle.lost_events
constexpr uint32_t kBundleFtraceClock = 5;          // FtraceEventBundle.ftrace_clock
constexpr uint32_t kBundleFtraceTimestamp = 6;      // FtraceEventBundle.ftrace_timestamp
constexpr uint32_t kBundleBootTimestamp = 7;        // FtraceEventBundle.boot_timestamp
constexpr uint32_t kEventTimestamp = 1;             // FtraceEvent.timestamp
constexpr uint32_t kEventPid = 2;                   // FtraceEvent.pid
constexpr uint32_t kEventCommonFlags = 5;           // FtraceEvent.common_flags
constexpr uint32_t kEventGeneric = 327;             // FtraceEvent.generic
constexpr uint32_t kGenericEventName = 1;           // GenericFtraceEvent.event_name
constexpr uint32_t kGenericField = 2;               // GenericFtraceEvent.field
constexpr uint32_t kFieldName = 1;                  // GenericFtraceEvent.Field.name
constexpr uint32_t kFieldStr = 3;                   // .str_value
constexpr uint32_t kFieldInt = 4;                   // .int_value
constexpr uint32_t kFieldUint = 5;                  // .uint_value
constexpr uint32_t kStatsPhase = 1;                 // FtraceStats.phase
constexpr uint32_t kStatsCpuStats = 2;              // FtraceStats.cpu_stats
constexpr uint32_t kCpuStatsCpu = 1;                // FtraceCpuStats.cpu
constexpr uint32_t kCpuStatsEntries = 2;            // FtraceCpuStats.entries
constexpr uint32_t kCpuStatsOverrun = 3;            // FtraceCpuStats.overrun
constexpr uint32_t kTreeThreads = 2;                // ProcessTree.threads
constexpr uint32_t kThreadTid = 1;                  // ProcessTree.Thread.tid
constexpr uint32_t kThreadName = 2;                 // ProcessTree.Thread.name
constexpr uint32_t kThreadTgid = 3;                 // ProcessTree.Thread.tgid
constexpr uint32_t kSystemInfoUtsname = 1;          // SystemInfo.utsname
constexpr uint32_t kPhaseStart = 1, kPhaseEnd = 2;  // FtraceStats.Phase
// FtraceClock
constexpr uint32_t kClockGlobal = 2, kClockLocal = 3, kClockMonoRaw = 4;
}  // namespace pf

// The typed FtraceEvent messages: for each, the kernel field names and the
// message's field numbers. 's' string, 'i' integer, 'r' repeated integer.
struct TypedField {
  std::string_view kernel;
  uint32_t number;
  char kind;
};
struct TypedEvent {
  std::string_view system, name;
  uint32_t number;  // FtraceEvent's field for the message
  std::array<TypedField, 7> fields;
};
constexpr TypedField kNone{{}, 0, 0};
// One event a line reads as the table it is.
// clang-format off
constexpr std::array kTyped = {
    TypedEvent{"sched", "sched_switch", 4,
               {{{"prev_comm", 1, 's'}, {"prev_pid", 2, 'i'}, {"prev_prio", 3, 'i'}, {"prev_state", 4, 'i'},
                 {"next_comm", 5, 's'}, {"next_pid", 6, 'i'}, {"next_prio", 7, 'i'}}}},
    TypedEvent{"sched", "sched_wakeup", 17,
               {{{"comm", 1, 's'}, {"pid", 2, 'i'}, {"prio", 3, 'i'}, {"success", 4, 'i'}, {"target_cpu", 5, 'i'},
                 kNone, kNone}}},
    TypedEvent{"sched", "sched_waking", 20,
               {{{"comm", 1, 's'}, {"pid", 2, 'i'}, {"prio", 3, 'i'}, {"success", 4, 'i'}, {"target_cpu", 5, 'i'},
                 kNone, kNone}}},
    TypedEvent{"sched", "sched_wakeup_new", 114,
               {{{"comm", 1, 's'}, {"pid", 2, 'i'}, {"prio", 3, 'i'}, {"success", 4, 'i'}, {"target_cpu", 5, 'i'},
                 kNone, kNone}}},
    TypedEvent{"sched", "sched_process_exec", 237,
               {{{"filename", 1, 's'}, {"pid", 2, 'i'}, {"old_pid", 3, 'i'}, kNone, kNone, kNone, kNone}}},
    TypedEvent{"sched", "sched_process_exit", 238,
               {{{"comm", 1, 's'}, {"pid", 2, 'i'}, {"tgid", 3, 'i'}, {"prio", 4, 'i'}, kNone, kNone, kNone}}},
    TypedEvent{"sched", "sched_process_fork", 239,
               {{{"parent_comm", 1, 's'}, {"parent_pid", 2, 'i'}, {"child_comm", 3, 's'}, {"child_pid", 4, 'i'},
                 kNone, kNone, kNone}}},
    TypedEvent{"sched", "sched_process_free", 240,
               {{{"comm", 1, 's'}, {"pid", 2, 'i'}, {"prio", 3, 'i'}, kNone, kNone, kNone, kNone}}},
    TypedEvent{"sched", "sched_process_wait", 242,
               {{{"comm", 1, 's'}, {"pid", 2, 'i'}, {"prio", 3, 'i'}, kNone, kNone, kNone, kNone}}},
    TypedEvent{"sched", "sched_migrate_task", 491,
               {{{"comm", 1, 's'}, {"pid", 2, 'i'}, {"prio", 3, 'i'}, {"orig_cpu", 4, 'i'}, {"dest_cpu", 5, 'i'},
                 {"running", 6, 'i'}, {"load", 7, 'i'}}}},
    TypedEvent{"task", "task_newtask", 235,
               {{{"pid", 1, 'i'}, {"comm", 2, 's'}, {"clone_flags", 3, 'i'}, {"oom_score_adj", 4, 'i'}, kNone, kNone,
                 kNone}}},
    TypedEvent{"task", "task_rename", 236,
               {{{"pid", 1, 'i'}, {"oldcomm", 2, 's'}, {"newcomm", 3, 's'}, {"oom_score_adj", 4, 'i'}, kNone, kNone,
                 kNone}}},
    TypedEvent{"ftrace", "print", 3, {{{"ip", 1, 'i'}, {"buf", 2, 's'}, kNone, kNone, kNone, kNone, kNone}}},
    TypedEvent{"irq", "softirq_entry", 24, {{{"vec", 1, 'i'}, kNone, kNone, kNone, kNone, kNone, kNone}}},
    TypedEvent{"irq", "softirq_exit", 25, {{{"vec", 1, 'i'}, kNone, kNone, kNone, kNone, kNone, kNone}}},
    TypedEvent{"irq", "softirq_raise", 26, {{{"vec", 1, 'i'}, kNone, kNone, kNone, kNone, kNone, kNone}}},
    TypedEvent{"irq", "irq_handler_entry", 36,
               {{{"irq", 1, 'i'}, {"name", 2, 's'}, {"handler", 3, 'i'}, kNone, kNone, kNone, kNone}}},
    TypedEvent{"irq", "irq_handler_exit", 37, {{{"irq", 1, 'i'}, {"ret", 2, 'i'}, kNone, kNone, kNone, kNone, kNone}}},
    TypedEvent{"raw_syscalls", "sys_enter", 329,
               {{{"id", 1, 'i'}, {"args", 2, 'r'}, kNone, kNone, kNone, kNone, kNone}}},
    TypedEvent{"raw_syscalls", "sys_exit", 330, {{{"id", 1, 'i'}, {"ret", 2, 'i'}, kNone, kNone, kNone, kNone, kNone}}},
    TypedEvent{"power", "cpu_frequency", 11,
               {{{"state", 1, 'i'}, {"cpu_id", 2, 'i'}, kNone, kNone, kNone, kNone, kNone}}},
    TypedEvent{"power", "cpu_idle", 13, {{{"state", 1, 'i'}, {"cpu_id", 2, 'i'}, kNone, kNone, kNone, kNone, kNone}}},
};
// clang-format on

bool kind_fits(char want, FieldKind k) {
  switch (want) {
    case 's':
      return is_text(k);
    case 'i':
      return k == FieldKind::integer;
    case 'r':
      return k == FieldKind::fixed_array || k == FieldKind::dynamic_array ||
             k == FieldKind::tail_array;
    default:
      return false;
  }
}

enum class Sideband : uint8_t { none, comm };

// How one event format is encoded.
struct Plan {
  EventLayout layout;
  int pid = -1, flags = -1;              // indexes of common_pid, common_flags in layout.fields
  uint32_t typed = 0;                    // FtraceEvent field of the typed message, 0 = generic
  std::vector<uint32_t> numbers;         // per event field: typed field number (typed plans)
  std::string name_entry;                // generic: the encoded event_name field
  std::vector<std::string> field_names;  // generic: each event field's encoded name entry
  Sideband sideband = Sideband::none;
  int sb_pid = -1, sb_tid = -1, sb_comm = -1;
};

std::string encoded_string_field(uint32_t number, std::string_view s) {
  ProtoBuffer b;
  b.field_string(number, s);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

int index_of(const EventLayout& l, std::string_view name) {
  for (size_t i = 0; i < l.fields.size(); ++i)
    if (l.fields[i].name == name) return static_cast<int>(i);
  return -1;
}

Plan make_plan(const EventFormat& f, uint32_t long_size) {
  Plan p;
  p.layout = EventLayout::build(f, long_size);
  const EventLayout& l = p.layout;
  for (uint32_t i = 0; i < l.common_count; ++i) {
    if (l.fields[i].name == "common_pid" && l.fields[i].kind == FieldKind::integer)
      p.pid = static_cast<int>(i);
    if (l.fields[i].name == "common_flags" && l.fields[i].kind == FieldKind::integer)
      p.flags = static_cast<int>(i);
  }
  for (const TypedEvent& t : kTyped) {
    if (t.system != f.system || t.name != f.name) continue;
    std::vector<uint32_t> numbers;
    bool all = true;
    for (size_t i = l.common_count; i < l.fields.size() && all; ++i) {
      const FieldLayout& fl = l.fields[i];
      bool found = false;
      for (const TypedField& tf : t.fields) {
        if (tf.number != 0 && tf.kernel == fl.name && kind_fits(tf.kind, fl.kind)) {
          numbers.push_back(tf.number);
          found = true;
          break;
        }
      }
      all = found;
    }
    if (all) {
      p.typed = t.number;
      p.numbers = std::move(numbers);
    }
    break;
  }
  if (!p.typed) {
    p.name_entry = encoded_string_field(pf::kGenericEventName, f.name);
    for (size_t i = l.common_count; i < l.fields.size(); ++i)
      p.field_names.push_back(encoded_string_field(pf::kFieldName, l.fields[i].name));
  }
  if (f.system == "tracepipe" && (f.name == "task_comm" || f.name == "task_newtask")) {
    p.sb_pid = index_of(l, "pid");
    p.sb_tid = index_of(l, "tid");
    p.sb_comm = index_of(l, "comm");
    if (p.sb_pid >= 0 && p.sb_tid >= 0 && p.sb_comm >= 0) p.sideband = Sideband::comm;
  }
  return p;
}

// "ARRAY[04, 00, ...]": how trace-cmd report -R prints an array's bytes.
void array_text(std::span<const std::byte> b, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.assign("ARRAY[");
  for (size_t i = 0; i < b.size(); ++i) {
    if (i) out += ", ";
    const auto v = static_cast<uint8_t>(b[i]);
    out += kHex[v >> 4];
    out += kHex[v & 15];
  }
  out += ']';
}

struct CpuState {
  uint32_t cpu = 0;
  ProtoBuffer events;  // encoded FtraceEventBundle.event entries of the open bundle
  uint32_t count = 0;
  bool lost = false;       // a loss precedes the open bundle
  uint64_t open_lost = 0;  // the events lost before the open bundle
  // In closed bundles (in the output buffer or the file), and of those, in
  // the file: a write that fails takes its bundles back (maybe_flush).
  uint64_t bundled_records = 0, bundled_lost = 0, written_records = 0, written_lost = 0;
};

}  // namespace

struct PerfettoWriter::Impl {
  OutFile file;
  ProtoBuffer out{1 << 20};
  const TraceDatReader* reader = nullptr;
  uint32_t long_size = 8;
  std::vector<Plan*> plans;  // by event ID (nullptr: not built yet)
  std::deque<Plan> plan_store;
  std::vector<uint8_t> built;     // by event ID: 1 once looked up
  std::unique_ptr<Plan> unknown;  // records without a format
  std::vector<CpuState> cpus;
  std::unordered_map<uint32_t, size_t> cpu_index;
  std::vector<int32_t> cpu_slot;  // by CPU number (< 4096): index in cpus, -1 none
  uint32_t clock = 0;             // FtraceClock to declare (0: boot, not declared)
  uint64_t clock_pair = 0;        // ftrace_timestamp == boot_timestamp
  bool declare_pair = false;
  uint64_t unknown_events = 0, short_records = 0;
  std::string scratch;
  bool finished = false;
  bool stream = false;                             // WriterOptions::stream
  uint64_t first_ts = 0;                           // begin()'s
  std::unordered_map<int32_t, std::string> names;  // saved cmdlines written so far

  static constexpr size_t kFlushBytes = 4 << 20;

  void set_reader(const TraceDatReader& r) {
    reader = &r;
    long_size = r.header_page().commit.size ? r.header_page().commit.size : 8;
  }

  // The saved cmdlines not written yet (new pids, or a new name), as one
  // process_tree packet at the first record's time.
  void cmdlines_packet() {
    std::vector<std::pair<int32_t, std::string_view>> sorted;
    for (const auto& [pid, comm] : reader->cmdlines()) {
      const auto it = names.find(pid);
      if (it == names.end() || it->second != comm) sorted.emplace_back(pid, comm);
    }
    if (sorted.empty()) return;
    const size_t pk = out.begin_padded(pf::kTracePacket);
    out.field_varint(pf::kPacketTimestamp, first_ts);
    out.field_varint(pf::kPacketSequenceId, 1);
    const size_t tr = out.begin_padded(pf::kPacketProcessTree);
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [pid, comm] : sorted) {
      const size_t th = out.begin(pf::kTreeThreads);
      out.field_int(pf::kThreadTid, pid);
      out.field_string(pf::kThreadName, comm);
      out.end(th);
      names[pid] = comm;
    }
    out.end_padded(tr);
    out.end_padded(pk);
  }

  // Writes the buffered packets: once they reach kFlushBytes, or `now`.
  // Streaming writes at chunk ends only (`now`), so a chunk is in the file
  // whole or not at all. A write that fails (disk full) leaves the file at
  // its last whole packet (OutFile) and its packets are given up: the
  // closing statistics count what the file holds, and the thread names
  // they carried are sent again with the next ones.
  void maybe_flush(bool now = false) {
    if ((!stream && out.size() >= kFlushBytes) || (now && out.size() != 0)) {
      try {
        file.write(out.data(), out.size());
      } catch (...) {
        out.clear();
        names.clear();
        for (CpuState& cs : cpus) {
          cs.bundled_records = cs.written_records;
          cs.bundled_lost = cs.written_lost;
        }
        throw;
      }
      out.clear();
      for (CpuState& cs : cpus) {
        cs.written_records = cs.bundled_records;
        cs.written_lost = cs.bundled_lost;
      }
    }
  }

  const Plan* plan_for(std::span<const std::byte> payload) {
    if (payload.size() < 2) return nullptr;
    uint16_t id;
    std::memcpy(&id, payload.data(), 2);
    if (id < plans.size() && plans[id]) [[likely]]
      return plans[id];
    if (id < built.size() && built[id]) return nullptr;
    if (id >= built.size()) {
      built.resize(id + 1u, 0);
      plans.resize(id + 1u, nullptr);
    }
    built[id] = 1;
    if (const EventFormat* f = reader->format(id)) {
      plan_store.push_back(make_plan(*f, long_size));
      plans[id] = &plan_store.back();
    }
    return plans[id];
  }

  // One value of field `f` as field `number` (typed) or as Field.*_value (generic).
  void put_value(ProtoBuffer& b, const FieldLayout& f, FieldView v, uint32_t number, bool generic) {
    if (f.kind == FieldKind::integer) {
      const uint64_t x = load_int(v.data.data(), f.size, f.is_signed);
      b.field_varint(generic ? (f.is_signed ? pf::kFieldInt : pf::kFieldUint) : number, x);
      return;
    }
    if (is_text(f.kind)) {
      b.field_string(generic ? pf::kFieldStr : number, as_text(v));
      return;
    }
    if (!generic && is_int_array(f.kind)) {  // repeated integer, one entry per element
      const size_t n = v.data.size() / f.elem_size;
      for (size_t i = 0; i < n; ++i)
        b.field_varint(number, load_int(v.data.data() + i * f.elem_size, f.elem_size, f.is_signed));
      return;
    }
    array_text(v.data, scratch);
    b.field_string(pf::kFieldStr, scratch);
  }

  void encode(CpuState& cs, const Plan& p, const TraceRecord& rec) {
    ProtoBuffer& b = cs.events;
    const auto payload = rec.payload;
    const auto& fields = p.layout.fields;
    bool short_record = false;
    const bool generic = p.typed == 0;
    const size_t ev = generic ? b.begin2(pf::kBundleEvent) : b.begin(pf::kBundleEvent);
    b.field_varint(pf::kEventTimestamp, rec.ts);
    if (p.pid >= 0) {
      const FieldView v = field_bytes(fields[p.pid], payload);
      if (v.present)
        b.field_varint(pf::kEventPid,
                       static_cast<uint32_t>(load_int(v.data.data(), fields[p.pid].size, false)));
    }
    if (p.flags >= 0) {
      const FieldView v = field_bytes(fields[p.flags], payload);
      if (v.present) {
        const uint64_t fl = load_int(v.data.data(), fields[p.flags].size, false);
        if (fl) b.field_varint(pf::kEventCommonFlags, fl);
      }
    }
    const uint32_t first = p.layout.common_count;
    if (p.typed) {
      const size_t m = b.begin(p.typed);
      for (size_t i = first; i < fields.size(); ++i) {
        const FieldView v = field_bytes(fields[i], payload);
        if (!v.present) {
          short_record = true;
          continue;
        }
        put_value(b, fields[i], v, p.numbers[i - first], false);
      }
      b.end(m);
    } else {
      const size_t m = b.begin2(pf::kEventGeneric);
      b.raw(p.name_entry.data(), p.name_entry.size());
      for (size_t i = first; i < fields.size(); ++i) {
        const FieldView v = field_bytes(fields[i], payload);
        if (!v.present) {
          short_record = true;
          continue;
        }
        const size_t fm = b.begin(pf::kGenericField);
        const std::string& name = p.field_names[i - first];
        b.raw(name.data(), name.size());
        put_value(b, fields[i], v, 0, true);
        b.end(fm);
      }
      b.end2(m);
    }
    if (generic)
      b.end2(ev);
    else
      b.end(ev);
    if (short_record) ++short_records;
  }

  void encode_unknown(CpuState& cs, const TraceRecord& rec) {
    ++unknown_events;
    ProtoBuffer& b = cs.events;
    const size_t ev = b.begin(pf::kBundleEvent);
    b.field_varint(pf::kEventTimestamp, rec.ts);
    const size_t m = b.begin(pf::kEventGeneric);
    uint16_t id = 0;
    if (rec.payload.size() >= 2) std::memcpy(&id, rec.payload.data(), 2);
    b.field_string(pf::kGenericEventName, "unknown_" + std::to_string(id));
    const size_t fm = b.begin(pf::kGenericField);
    b.field_string(pf::kFieldName, "raw");
    array_text(rec.payload, scratch);
    b.field_string(pf::kFieldStr, scratch);
    b.end(fm);
    b.end(m);
    b.end(ev);
  }

  void flush_bundle(CpuState& cs) {
    if (cs.count == 0 && !cs.lost) return;
    const size_t pk = out.begin_padded(pf::kTracePacket);
    out.field_varint(pf::kPacketSequenceId, 1);
    const size_t bu = out.begin_padded(pf::kPacketFtraceEvents);
    out.field_varint(pf::kBundleCpu, cs.cpu);
    out.raw(cs.events.data(), cs.events.size());
    if (cs.lost) out.field_bool(pf::kBundleLostEvents, true);
    if (clock) {
      out.field_varint(pf::kBundleFtraceClock, clock);
      if (declare_pair) {
        out.field_int(pf::kBundleFtraceTimestamp, static_cast<int64_t>(clock_pair));
        out.field_int(pf::kBundleBootTimestamp, static_cast<int64_t>(clock_pair));
      }
    }
    out.end_padded(bu);
    out.end_padded(pk);
    cs.bundled_records += cs.count;
    cs.bundled_lost += cs.open_lost;
    cs.events.clear();
    cs.count = 0;
    cs.lost = false;
    cs.open_lost = 0;
    maybe_flush();
  }

  void stats_packet(uint32_t phase) {
    const size_t pk = out.begin_padded(pf::kTracePacket);
    out.field_varint(pf::kPacketSequenceId, 1);
    const size_t st = out.begin_padded(pf::kPacketFtraceStats);
    out.field_varint(pf::kStatsPhase, phase);
    for (const CpuState& cs : cpus) {
      const size_t c = out.begin(pf::kStatsCpuStats);
      out.field_varint(pf::kCpuStatsCpu, cs.cpu);
      out.field_varint(pf::kCpuStatsEntries, phase == pf::kPhaseEnd ? cs.bundled_records : 0);
      out.field_varint(pf::kCpuStatsOverrun, phase == pf::kPhaseEnd ? cs.bundled_lost : 0);
      out.end(c);
    }
    out.end_padded(st);
    out.end_padded(pk);
  }

  void thread_packet(uint64_t ts, int32_t tid, std::optional<int32_t> tgid, std::string_view name) {
    const size_t pk = out.begin_padded(pf::kTracePacket);
    out.field_varint(pf::kPacketTimestamp, ts);
    out.field_varint(pf::kPacketSequenceId, 1);
    const size_t tr = out.begin_padded(pf::kPacketProcessTree);
    const size_t th = out.begin(pf::kTreeThreads);
    out.field_int(pf::kThreadTid, tid);
    out.field_string(pf::kThreadName, name);
    if (tgid) out.field_int(pf::kThreadTgid, *tgid);
    out.end(th);
    out.end_padded(tr);
    out.end_padded(pk);
  }

  void sideband(const Plan& p, const TraceRecord& rec) {
    const auto& fs = p.layout.fields;
    const FieldView pid = field_bytes(fs[p.sb_pid], rec.payload);
    const FieldView tid = field_bytes(fs[p.sb_tid], rec.payload);
    const FieldView comm = field_bytes(fs[p.sb_comm], rec.payload);
    if (!pid.present || !tid.present || !comm.present || fs[p.sb_pid].kind != FieldKind::integer ||
        fs[p.sb_tid].kind != FieldKind::integer || !is_text(fs[p.sb_comm].kind))
      return;
    thread_packet(rec.ts, static_cast<int32_t>(load_int(tid.data.data(), fs[p.sb_tid].size, true)),
                  static_cast<int32_t>(load_int(pid.data.data(), fs[p.sb_pid].size, true)),
                  as_text(comm));
  }
};

PerfettoWriter::PerfettoWriter(const std::filesystem::path& out, WriterOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->file = OutFile(out);
  impl_->stream = options.stream;
}

PerfettoWriter::~PerfettoWriter() = default;

void PerfettoWriter::begin(const TraceDatReader& reader, size_t buffer, uint64_t first_ts,
                           const std::vector<uint32_t>& cpus) {
  Impl& m = *impl_;
  m.set_reader(reader);
  m.first_ts = first_ts;
  for (uint32_t c : cpus) {
    if (c < 4096) {
      if (m.cpu_slot.size() <= c) m.cpu_slot.resize(c + 1u, -1);
      m.cpu_slot[c] = static_cast<int32_t>(m.cpus.size());
    }
    m.cpu_index.emplace(c, m.cpus.size());
    m.cpus.emplace_back().cpu = c;
  }
  const TraceEnv env = TraceEnv::of(reader, buffer);
  if (env.clock == "boot") {
    m.clock = 0;
  } else if (env.clock == "mono_raw") {
    m.clock = pf::kClockMonoRaw;
  } else {
    m.clock = env.clock == "local" ? pf::kClockLocal : pf::kClockGlobal;
    m.declare_pair = true;
    m.clock_pair = first_ts;
  }
  m.stats_packet(pf::kPhaseStart);
  if (!env.sysname.empty()) {
    const size_t pk = m.out.begin_padded(pf::kTracePacket);
    m.out.field_varint(pf::kPacketSequenceId, 1);
    const size_t si = m.out.begin(pf::kPacketSystemInfo);
    const size_t un = m.out.begin(pf::kSystemInfoUtsname);
    m.out.field_string(1, env.sysname);
    m.out.field_string(2, env.version);
    m.out.field_string(3, env.release);
    m.out.field_string(4, env.machine);
    m.out.end(un);
    m.out.end(si);
    m.out.end_padded(pk);
  }
  // saved_cmdlines: the names of the threads, known from the start.
  m.cmdlines_packet();
  m.maybe_flush(m.stream);
}

void PerfettoWriter::reload(const TraceDatReader& reader) {
  Impl& m = *impl_;
  m.set_reader(reader);
  for (size_t id = 0; id < m.built.size(); ++id)
    if (m.plans[id] == nullptr) m.built[id] = 0;  // no format until now: look again
  m.cmdlines_packet();
}

void PerfettoWriter::record(const TraceRecord& rec) {
  Impl& m = *impl_;
  CpuState* cs;
  if (rec.cpu < m.cpu_slot.size() && m.cpu_slot[rec.cpu] >= 0) [[likely]] {
    cs = &m.cpus[static_cast<size_t>(m.cpu_slot[rec.cpu])];
  } else if (const auto it = m.cpu_index.find(rec.cpu); it != m.cpu_index.end()) {
    cs = &m.cpus[it->second];
  } else {
    m.cpu_index.emplace(rec.cpu, m.cpus.size());
    if (rec.cpu < 4096) {
      if (m.cpu_slot.size() <= rec.cpu) m.cpu_slot.resize(rec.cpu + 1u, -1);
      m.cpu_slot[rec.cpu] = static_cast<int32_t>(m.cpus.size());
    }
    cs = &m.cpus.emplace_back();
    cs->cpu = rec.cpu;
  }
  if (rec.lost_before != 0) [[unlikely]] {
    m.flush_bundle(*cs);
    cs->lost = true;
    cs->open_lost += rec.lost_before > 0 ? static_cast<uint64_t>(rec.lost_before) : 1;
  }
  if (const Plan* p = m.plan_for(rec.payload)) [[likely]] {
    m.encode(*cs, *p, rec);
    if (p->sideband != Sideband::none) [[unlikely]]
      m.sideband(*p, rec);
  } else {
    m.encode_unknown(*cs, rec);
  }
  ++cs->count;
}

void PerfettoWriter::end_chunk(uint32_t cpu) {
  Impl& m = *impl_;
  const auto it = m.cpu_index.find(cpu);
  if (it != m.cpu_index.end()) m.flush_bundle(m.cpus[it->second]);
  if (m.stream) m.maybe_flush(true);
}

void PerfettoWriter::finish(ConvertStats& stats) {
  Impl& m = *impl_;
  if (m.finished) return;
  m.finished = true;
  for (CpuState& cs : m.cpus) m.flush_bundle(cs);
  m.stats_packet(pf::kPhaseEnd);
  m.maybe_flush(true);
  m.file.close();
  stats.bytes_out = m.file.size();
  stats.unknown_events = m.unknown_events;
  stats.short_records = m.short_records;
}

}  // namespace tracepipe::convert
