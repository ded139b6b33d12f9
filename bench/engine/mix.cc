#include "tracepipe/bench/engine/mix.h"

#include <fmt/core.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <system_error>

#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tracepipe::bench {
namespace {

template <class Record>
MixRecord make_record(EventKind kind, const Record& r) {
  static_assert(sizeof(Record) <= sizeof(MixRecord::bytes));
  MixRecord m;
  m.kind = kind;
  m.size = static_cast<uint16_t>(sizeof(Record));
  std::memcpy(m.bytes.data(), &r, sizeof(Record));
  return m;
}

void set_comm(char (&dst)[16], const std::string& s) {
  std::memset(dst, 0, sizeof dst);
  std::memcpy(dst, s.data(), std::min(s.size(), sizeof dst - 1));
}

}  // namespace

EventMix load_mix(const std::filesystem::path& path, std::size_t lanes) {
  if (lanes == 0) throw std::invalid_argument("load_mix: no lanes");
  TraceDatReader reader = TraceDatReader::open(path);
  // The kernel's IDs of the four events in this file.
  std::vector<int> kind_of;  // id -> EventKind, or -1
  for (const EventInfo& e : kEventInfo) {
    const EventFormat* f = reader.find_format(e.system, e.name);
    if (!f) continue;
    if (kind_of.size() <= f->id) kind_of.resize(f->id + 1, -1);
    kind_of[f->id] = static_cast<int>(e.kind);
  }
  EventMix mix;
  mix.source = path.lexically_normal().string();
  const size_t cpus = reader.cpu_data().size();
  mix.file_cpus = static_cast<uint32_t>(cpus);
  std::vector<std::vector<MixRecord>> per_cpu(cpus);
  for (size_t i = 0; i < cpus; ++i) {
    CpuRecordCursor cur = reader.cpu_records(i);
    while (auto r = cur.next()) {
      ++mix.file_records;
      const auto id = r->event_id();
      if (!id || *id >= kind_of.size() || kind_of[*id] < 0) continue;
      const auto kind = static_cast<EventKind>(kind_of[*id]);
      const EventInfo& info = event_info(kind);
      MixRecord m;
      m.kind = kind;
      m.size = static_cast<uint16_t>(info.size);
      std::memcpy(m.bytes.data(), r->payload.data(),
                  std::min<size_t>({r->payload.size(), info.size, m.bytes.size()}));
      per_cpu[i].push_back(m);
      ++mix.per_kind[static_cast<size_t>(kind)];
    }
  }
  if (mix.records() == 0)
    throw std::runtime_error(
        fmt::format("{}: no sched_switch, sched_wakeup, sys_enter or sys_exit record to replay",
                    path.string()));
  mix.lanes.resize(lanes);
  if (cpus >= lanes) {
    for (size_t c = 0; c < cpus; ++c) {
      auto& lane = mix.lanes[c % lanes];
      lane.insert(lane.end(), per_cpu[c].begin(), per_cpu[c].end());
    }
  } else {
    for (size_t l = 0; l < lanes; ++l) mix.lanes[l] = per_cpu[l % cpus];
  }
  // A CPU that recorded none of the four leaves its lane empty: borrow the
  // fullest lane so that every thread replays the same number of events.
  const auto fullest =
      std::max_element(mix.lanes.begin(), mix.lanes.end(),
                       [](const auto& a, const auto& b) { return a.size() < b.size(); });
  for (auto& lane : mix.lanes)
    if (lane.empty()) lane = *fullest;
  return mix;
}

EventMix embedded_mix(std::size_t lanes, uint32_t messages) {
  if (lanes == 0) throw std::invalid_argument("embedded_mix: no lanes");
  EventMix mix;
  mix.source = "embedded";
  mix.lanes.resize(lanes);
  for (size_t l = 0; l < lanes; ++l) {
    auto& lane = mix.lanes[l];
    lane.reserve(size_t{6} * messages);
    const int32_t sender = 1000 + int32_t(2 * l), receiver = sender + 1;
    for (uint32_t m = 0; m < messages; ++m) {
      const int fd = 3 + int(m % 40);
      SysEnterRecord we{};
      we.common.common_type = event_info(EventKind::sys_enter).id;
      we.id = SYS_write;
      we.args[0] = uint64_t(fd);
      we.args[1] = 0x7ffd0000u + l * 0x100;
      we.args[2] = 100;
      SchedWakeupRecord wk{};
      wk.common.common_type = event_info(EventKind::sched_wakeup).id;
      set_comm(wk.comm, fmt::format("hackbench"));
      wk.pid = receiver;
      wk.prio = 120;
      wk.target_cpu = int32_t(l);
      SysExitRecord wx{};
      wx.common.common_type = event_info(EventKind::sys_exit).id;
      wx.id = SYS_write;
      wx.ret = 100;
      SysEnterRecord re = we;
      re.id = SYS_read;
      SchedSwitchRecord sw{};
      sw.common.common_type = event_info(EventKind::sched_switch).id;
      set_comm(sw.prev_comm, "hackbench");
      sw.prev_pid = receiver;
      sw.prev_prio = 120;
      sw.prev_state = 1;
      set_comm(sw.next_comm, "hackbench");
      sw.next_pid = sender;
      sw.next_prio = 120;
      SysExitRecord rx = wx;
      rx.id = SYS_read;
      lane.push_back(make_record(EventKind::sys_enter, we));
      lane.push_back(make_record(EventKind::sched_wakeup, wk));
      lane.push_back(make_record(EventKind::sys_exit, wx));
      lane.push_back(make_record(EventKind::sys_enter, re));
      lane.push_back(make_record(EventKind::sched_switch, sw));
      lane.push_back(make_record(EventKind::sys_exit, rx));
    }
    for (const MixRecord& r : lane) ++mix.per_kind[static_cast<size_t>(r.kind)];
  }
  return mix;
}

std::optional<std::filesystem::path> default_mix_path() {
#ifdef TP_DEFAULT_MIX_FILE
  return std::filesystem::path(TP_DEFAULT_MIX_FILE);
#else
  return std::nullopt;
#endif
}

EventMix find_mix(const std::string& requested, std::size_t lanes) {
  if (requested == "embedded") return embedded_mix(lanes);
  if (!requested.empty()) return load_mix(requested, lanes);
  const auto path = default_mix_path();
  std::string why;
  if (!path) {
    why = "this build knows no kernel capture";
  } else {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(*path, ec)) {
      why = fmt::format("{} not found", path->string());
    } else {
      try {
        return load_mix(*path, lanes);
      } catch (const std::exception& e) {
        why = fmt::format("{} unreadable: {}", path->string(), e.what());
      }
    }
  }
  EventMix mix = embedded_mix(lanes);
  mix.fallback_reason = why;
  return mix;
}

std::vector<BlockSlot> interleave_order(uint32_t cells, uint32_t rounds, uint64_t seed) {
  std::vector<BlockSlot> out;
  if (cells < 2) return out;
  out.reserve(size_t{2} * (cells - 1) * rounds);
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> order(cells - 1);
  for (uint32_t round = 0; round < rounds; ++round) {
    for (uint32_t i = 0; i < cells - 1; ++i) order[i] = i + 1;
    std::shuffle(order.begin(), order.end(), rng);
    for (uint32_t cell : order) {
      const bool base_first = (rng() & 1) != 0;
      out.push_back({round, cell, base_first});
      out.push_back({round, cell, !base_first});
    }
  }
  return out;
}

}  // namespace tracepipe::bench
