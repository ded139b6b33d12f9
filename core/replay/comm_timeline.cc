#include "tracepipe/core/replay/comm_timeline.h"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace tracepipe::replay {
namespace {

// TASK_COMM_LEN - 1: the longest name a task has.
constexpr size_t kCommMax = 15;

struct StrField {
  uint32_t offset = 0, size = 0;
  bool dynamic = false, rel = false;
  bool valid() const noexcept { return size != 0; }
};
struct PidField {
  uint32_t offset = 0;
  bool valid = false;
};

enum class Kind : uint8_t { none, state, rename, exec };

// What one event's records say about task names: up to two (pid, name) pairs.
struct Spec {
  Kind kind = Kind::none;
  PidField pid[2];
  StrField name[2];  // state: the names; rename: [0] oldcomm, [1] newcomm; exec: [0] filename
};

StrField string_field(const EventFormat& f, std::string_view name) {
  const FormatField* x = f.find_field(name);
  if (x == nullptr || !x->is_string()) return {};
  return {x->offset, x->size, x->is_dynamic(), x->is_rel_loc()};
}

PidField pid_field(const EventFormat& f, std::string_view name) {
  const FormatField* x = f.find_field(name);
  if (x == nullptr || x->size != 4 || x->is_string() || x->is_dynamic()) return {};
  return {x->offset, true};
}

Spec spec_of(const EventFormat& f) {
  Spec s;
  if (f.name == "sched_switch") {
    s.pid[0] = pid_field(f, "prev_pid");
    s.name[0] = string_field(f, "prev_comm");
    s.pid[1] = pid_field(f, "next_pid");
    s.name[1] = string_field(f, "next_comm");
    s.kind = Kind::state;
  } else if (f.name == "sched_process_fork") {
    s.pid[0] = pid_field(f, "parent_pid");
    s.name[0] = string_field(f, "parent_comm");
    s.pid[1] = pid_field(f, "child_pid");
    s.name[1] = string_field(f, "child_comm");
    s.kind = Kind::state;
  } else if (f.name == "task_rename") {
    s.pid[0] = pid_field(f, "pid");
    if (!s.pid[0].valid) s.pid[0] = pid_field(f, "common_pid");  // a build without the pid field
    s.name[0] = string_field(f, "oldcomm");
    s.name[1] = string_field(f, "newcomm");
    s.kind = s.pid[0].valid && s.name[0].valid() && s.name[1].valid() ? Kind::rename : Kind::none;
  } else if (f.name == "sched_process_exec") {
    s.pid[0] = pid_field(f, "pid");
    s.name[0] = string_field(f, "filename");
    s.kind = s.pid[0].valid && s.name[0].valid() ? Kind::exec : Kind::none;
  } else {
    s.pid[0] = pid_field(f, "pid");
    s.name[0] = string_field(f, "comm");
    s.kind = Kind::state;
  }
  if (s.kind == Kind::state) {
    for (int i = 0; i < 2; ++i)
      if (!s.pid[i].valid || !s.name[i].valid()) s.pid[i] = {}, s.name[i] = {};
    if (!s.pid[0].valid && !s.pid[1].valid) s.kind = Kind::none;
  }
  return s;
}

// The string of a field in the record, cut at its NUL, its length and the
// record's end.
std::string_view read_string(std::span<const std::byte> rec, const StrField& f) {
  size_t at = f.offset, n = f.size;
  if (f.dynamic) {
    if (f.offset + 4 > rec.size()) return {};
    uint32_t word;
    std::memcpy(&word, rec.data() + f.offset, 4);
    at = (word & 0xffff) + (f.rel ? f.offset + 4 : 0);
    n = word >> 16;
  }
  if (at >= rec.size()) return {};
  n = std::min(n, rec.size() - at);
  const char* p = reinterpret_cast<const char*>(rec.data()) + at;
  return {p, strnlen(p, n)};
}

int32_t read_pid(std::span<const std::byte> rec, const PidField& f) {
  int32_t v = 0;
  if (f.offset + 4 <= rec.size()) std::memcpy(&v, rec.data() + f.offset, 4);
  return v;
}

// The events whose records name tasks, by event ID (Kind::none: the others).
std::vector<Spec> specs_by_id(const TraceDatReader& reader) {
  std::vector<Spec> specs;
  for (const EventFormat& f : reader.formats()) {
    if (f.id >= 65536) continue;
    Spec s = spec_of(f);
    if (s.kind == Kind::none) continue;
    if (specs.size() <= f.id) specs.resize(f.id + 1);
    specs[f.id] = s;
  }
  return specs;
}

}  // namespace

struct CommTimeline::Build {
  static Name name_of(std::string_view s) {
    Name n;
    n.len = static_cast<uint8_t>(std::min(s.size(), kCommMax));
    std::memcpy(n.s, s.data(), n.len);
    return n;
  }

  // The observations of one record `r` of an event described by `s`, at
  // `at` (its time stamp, CPU and index): states and renames into the
  // timeline, execs into `execs` (used only if the trace has no renames).
  static void observe(const Spec& s, const TraceRecord& r, const Entry& at, CommTimeline& tl,
                      std::vector<Entry>& execs) {
    Entry e = at;
    switch (s.kind) {
      case Kind::state:
        for (int k = 0; k < 2; ++k) {
          if (!s.pid[k].valid) continue;
          e.pid = read_pid(r.payload, s.pid[k]);
          if (e.pid <= 0) continue;  // the idle tasks share pid 0 (swapper/N)
          e.kind = static_cast<uint8_t>(Kind::state);
          e.half = 0;
          e.has_before = true;
          e.after = e.before = name_of(read_string(r.payload, s.name[k]));
          tl.entries_.push_back(e);
          ++tl.stats_.observations;
        }
        break;
      case Kind::rename:
        e.pid = read_pid(r.payload, s.pid[0]);
        if (e.pid <= 0) break;
        e.kind = static_cast<uint8_t>(Kind::rename);
        e.half = 2;
        e.has_before = true;
        e.before = name_of(read_string(r.payload, s.name[0]));
        e.after = name_of(read_string(r.payload, s.name[1]));
        tl.entries_.push_back(e);
        ++tl.stats_.observations;
        ++tl.stats_.renames;
        break;
      case Kind::exec: {
        e.pid = read_pid(r.payload, s.pid[0]);
        if (e.pid <= 0) break;
        std::string_view file = read_string(r.payload, s.name[0]);
        if (const size_t slash = file.rfind('/'); slash != std::string_view::npos)
          file.remove_prefix(slash + 1);
        e.kind = static_cast<uint8_t>(Kind::exec);
        e.half = 0;
        e.has_before = false;
        e.after = name_of(file);
        execs.push_back(e);
        ++tl.stats_.observations;
        ++tl.stats_.execs;
        break;
      }
      case Kind::none:
        break;
    }
  }

  // Every record of CPU stream `i` of the reader, observed.
  static void read_cpu(const TraceDatReader& reader, size_t i, const std::vector<Spec>& specs,
                       CommTimeline& tl, std::vector<Entry>& execs) {
    const uint32_t cpu = reader.cpu_data()[i].cpu;
    CpuRecordCursor cur = reader.cpu_records(i);
    for (uint64_t seq = 0;; ++seq) {
      const std::optional<TraceRecord> r = cur.next();
      if (!r) break;
      const std::optional<uint16_t> id = r->event_id();
      if (!id || *id >= specs.size() || specs[*id].kind == Kind::none) continue;
      Entry at{};
      at.ts = r->ts;
      at.cpu = cpu;
      at.seq = seq;
      observe(specs[*id], *r, at, tl, execs);
    }
  }

  // Sorts the entries by pid, then time, and keeps what can change an
  // answer: a pid's first observation, every rename and exec, and a state
  // that differs from the name known just before it.
  static void keep_changes(std::vector<Entry>& entries) {
    auto key = [](const Entry& x) { return std::tie(x.pid, x.ts, x.cpu, x.seq, x.half); };
    std::sort(entries.begin(), entries.end(),
              [&](const Entry& a, const Entry& b) { return key(a) < key(b); });
    size_t out = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      const bool first = out == 0 || entries[out - 1].pid != e.pid;
      if (first || e.kind != static_cast<uint8_t>(Kind::state) ||
          e.after.view() != entries[out - 1].after.view())
        entries[out++] = e;
    }
    entries.resize(out);
    entries.shrink_to_fit();
  }

  // Each pid's range of entries, by pid.
  static void index_pids(CommTimeline& tl) {
    const std::vector<Entry>& entries = tl.entries_;
    for (uint32_t i = 0; i < entries.size();) {
      uint32_t j = i;
      while (j < entries.size() && entries[j].pid == entries[i].pid) ++j;
      tl.pids_.push_back({entries[i].pid, i, j});
      i = j;
    }
  }
};

CommTimeline::CommTimeline(const TraceDatReader& reader) {
  const std::vector<Spec> specs = specs_by_id(reader);
  std::vector<Entry> execs;
  for (size_t i = 0; i < reader.cpu_data().size(); ++i)
    Build::read_cpu(reader, i, specs, *this, execs);
  stats_.execs_used = stats_.renames == 0;
  if (stats_.execs_used) entries_.insert(entries_.end(), execs.begin(), execs.end());
  Build::keep_changes(entries_);
  Build::index_pids(*this);
  stats_.kept = entries_.size();
  stats_.pids = pids_.size();
}

std::optional<std::string_view> CommTimeline::name_at(int32_t pid,
                                                      const RecordPosition& at) const noexcept {
  const auto r = std::lower_bound(pids_.begin(), pids_.end(), pid,
                                  [](const Range& x, int32_t p) { return x.pid < p; });
  if (r == pids_.end() || r->pid != pid) return std::nullopt;
  const Entry* b = entries_.data() + r->begin;
  const Entry* e = entries_.data() + r->end;
  // The last observation that takes effect at or before this record.
  const Entry* p = std::partition_point(b, e, [&](const Entry& x) {
    return std::tie(x.ts, x.cpu, x.seq, x.half) <
           std::make_tuple(at.ts, at.cpu, at.seq, uint8_t{1});
  });
  if (p == b) return b->has_before ? std::optional(b->before.view()) : std::nullopt;
  return (p - 1)->after.view();
}

}  // namespace tracepipe::replay
