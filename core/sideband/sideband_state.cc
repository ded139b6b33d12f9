// Replaying sideband records (see core/sideband/sideband_state.h).
#include "tracepipe/core/sideband/sideband_state.h"

#include <algorithm>
#include <cstring>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tracepipe {

namespace {

constexpr std::string_view kNames[kSidebandKinds] = {"task_comm",    "task_newtask", "task_exit",
                                                     "process_exec", "mmap",         "synth_done"};

SidebandState::FieldRef ref_of(const EventFormat& f, std::string_view name) {
  SidebandState::FieldRef r;
  const FormatField* fld = f.find_field(name);
  if (fld == nullptr) return r;
  r.present = true;
  r.offset = fld->offset;
  r.size = fld->size;
  r.dynamic = fld->is_dynamic();
  r.rel_loc = fld->is_rel_loc();
  r.is_signed = fld->is_signed;
  return r;
}

// Bounds were checked against the format's fixed size (offset + size of
// every fixed field <= record size) before any of these runs.
int64_t get_int(std::span<const std::byte> rec, const SidebandState::FieldRef& f) {
  if (!f.present || f.dynamic || static_cast<uint64_t>(f.offset) + f.size > rec.size()) return 0;
  const std::byte* p = rec.data() + f.offset;
  switch (f.size) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return f.is_signed ? static_cast<int8_t>(v) : v;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return f.is_signed ? static_cast<int16_t>(v) : v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return f.is_signed ? static_cast<int32_t>(v) : static_cast<int64_t>(v);
    }
    case 8: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    default:
      return 0;
  }
}

uint64_t get_u(std::span<const std::byte> rec, const SidebandState::FieldRef& f) {
  return static_cast<uint64_t>(get_int(rec, f));
}

Comm get_chars(std::span<const std::byte> rec, const SidebandState::FieldRef& f) {
  if (!f.present || f.dynamic || static_cast<uint64_t>(f.offset) + f.size > rec.size()) return {};
  const char* p = reinterpret_cast<const char*>(rec.data() + f.offset);
  return Comm::from({p, strnlen(p, f.size)});
}

// A __data_loc / __rel_loc string; nullopt if the word points outside the record.
std::optional<std::string_view> get_str(std::span<const std::byte> rec,
                                        const SidebandState::FieldRef& f) {
  if (!f.present) return std::string_view{};
  if (!f.dynamic || f.size != 4 || static_cast<uint64_t>(f.offset) + 4 > rec.size())
    return std::nullopt;
  uint32_t w;
  std::memcpy(&w, rec.data() + f.offset, 4);
  uint64_t off = w & 0xffffu;
  const uint64_t len = w >> 16;
  if (f.rel_loc) off += static_cast<uint64_t>(f.offset) + 4;
  if (off + len > rec.size()) return std::nullopt;
  const char* p = reinterpret_cast<const char*>(rec.data() + off);
  return std::string_view(p, strnlen(p, len));
}

}  // namespace

SidebandState::SidebandState(const Registry& registry) {
  std::vector<const EventFormat*> fs;
  for (std::string_view n : kNames)
    if (const EventDesc* d = registry.find(sideband::kSystem, n)) fs.push_back(&d->format());
  init(fs);
}

SidebandState::SidebandState(std::span<const EventFormat> formats) {
  std::vector<const EventFormat*> fs;
  for (const EventFormat& f : formats) fs.push_back(&f);
  init(fs);
}

void SidebandState::init(std::span<const EventFormat* const> formats) {
  for (const EventFormat* f : formats) {
    if (f->system != sideband::kSystem || f->id == 0 || f->id > 0xffff) continue;
    const auto it = std::find(std::begin(kNames), std::end(kNames), f->name);
    if (it == std::end(kNames)) continue;
    Layout& l = layouts_[static_cast<size_t>(it - std::begin(kNames))];
    l.present = true;
    l.id = static_cast<uint16_t>(f->id);
    l.fixed_size = f->fixed_size();
    l.pid = ref_of(*f, "pid");
    l.tid = ref_of(*f, "tid");
    l.synth = ref_of(*f, "synth");
    l.comm = ref_of(*f, "comm");
    l.filename = ref_of(*f, "filename");
    l.addr = ref_of(*f, "addr");
    l.len = ref_of(*f, "len");
    l.pgoff = ref_of(*f, "pgoff");
    l.ino = ref_of(*f, "ino");
    l.prot = ref_of(*f, "prot");
    l.flags = ref_of(*f, "flags");
    l.maj = ref_of(*f, "maj");
    l.min = ref_of(*f, "min");
    l.threads = ref_of(*f, "threads");
    l.mappings = ref_of(*f, "mappings");
    l.lost = ref_of(*f, "lost");
    l.records = ref_of(*f, "records");
  }
}

void SidebandState::set_comm(int32_t pid, int32_t tid, const Comm& c, bool exited) {
  Task& t = tasks_[tid];
  t.pid = pid;
  t.tid = tid;
  t.comm = c;
  t.exited = exited;
}

void SidebandState::start_round(uint32_t synth) {
  if (synth == 0) return;
  Round& r = rounds_[synth];
  r.synth = synth;
  if (synth > last_round_) {
    last_round_ = synth;
    // The round restates every mapping: forget the older ones.
    maps_.clear();
  }
}

std::optional<SidebandKind> SidebandState::observe(std::span<const std::byte> rec) {
  if (rec.size() < sizeof(CommonHeader)) return std::nullopt;
  uint16_t id;
  std::memcpy(&id, rec.data(), sizeof id);
  size_t k = 0;
  while (k < kSidebandKinds && !(layouts_[k].present && layouts_[k].id == id)) ++k;
  if (k == kSidebandKinds) return std::nullopt;
  const Layout& l = layouts_[k];
  if (rec.size() < l.fixed_size) {
    ++malformed_;
    return std::nullopt;
  }
  const auto kind = static_cast<SidebandKind>(k);
  const auto pid = static_cast<int32_t>(get_int(rec, l.pid));
  const auto synth = static_cast<uint32_t>(get_u(rec, l.synth));
  switch (kind) {
    case SidebandKind::task_comm:
    case SidebandKind::task_exit:
      set_comm(pid, static_cast<int32_t>(get_int(rec, l.tid)), get_chars(rec, l.comm),
               kind == SidebandKind::task_exit);
      break;
    case SidebandKind::task_newtask:
      start_round(synth);
      set_comm(pid, static_cast<int32_t>(get_int(rec, l.tid)), get_chars(rec, l.comm), false);
      break;
    case SidebandKind::process_exec: {
      const auto name = get_str(rec, l.filename);
      if (!name) {
        ++malformed_;
        return std::nullopt;
      }
      start_round(synth);
      exe_.assign(*name);
      break;
    }
    case SidebandKind::mmap: {
      const auto name = get_str(rec, l.filename);
      if (!name) {
        ++malformed_;
        return std::nullopt;
      }
      start_round(synth);
      Mapping m;
      m.addr = get_u(rec, l.addr);
      m.len = get_u(rec, l.len);
      m.pgoff = get_u(rec, l.pgoff);
      m.ino = get_u(rec, l.ino);
      m.prot = static_cast<uint32_t>(get_u(rec, l.prot));
      m.flags = static_cast<uint32_t>(get_u(rec, l.flags));
      m.maj = static_cast<uint32_t>(get_u(rec, l.maj));
      m.min = static_cast<uint32_t>(get_u(rec, l.min));
      m.pid = pid;
      m.synth = synth;
      m.filename.assign(*name);
      if (m.len == 0 || m.addr + m.len < m.addr) {
        ++malformed_;
        return std::nullopt;
      }
      // Drop every mapping the new one overlaps: [addr, addr + len).
      auto it = maps_.lower_bound(m.addr);
      if (it != maps_.begin()) {
        auto prev = std::prev(it);
        if (prev->second.addr + prev->second.len > m.addr) it = prev;
      }
      while (it != maps_.end() && it->second.addr < m.addr + m.len) it = maps_.erase(it);
      maps_.emplace(m.addr, std::move(m));
      break;
    }
    case SidebandKind::synth_done: {
      Round& r = rounds_[synth];
      r.synth = synth;
      r.done = true;
      r.threads = static_cast<uint32_t>(get_u(rec, l.threads));
      r.mappings = static_cast<uint32_t>(get_u(rec, l.mappings));
      r.lost = static_cast<uint32_t>(get_u(rec, l.lost));
      r.records = get_u(rec, l.records);
      ++observed_;
      return kind;  // not counted in `seen`
    }
  }
  if (synth != 0 && kind != SidebandKind::task_comm && kind != SidebandKind::task_exit)
    ++rounds_[synth].seen;
  ++observed_;
  return kind;
}

const SidebandState::Task* SidebandState::task(int32_t tid) const {
  const auto it = tasks_.find(tid);
  return it == tasks_.end() ? nullptr : &it->second;
}

std::optional<std::string_view> SidebandState::comm(int32_t tid) const {
  const Task* t = task(tid);
  if (t == nullptr) return std::nullopt;
  return t->comm.view();
}

std::vector<Cmdline> SidebandState::cmdlines() const {
  std::vector<Cmdline> out;
  out.reserve(tasks_.size());
  for (const auto& [tid, t] : tasks_) out.push_back({tid, std::string(t.comm.view())});
  std::sort(out.begin(), out.end(),
            [](const Cmdline& a, const Cmdline& b) { return a.pid < b.pid; });
  return out;
}

void SidebandState::apply_cmdlines(TraceDatWriter& writer) const {
  for (const Cmdline& c : cmdlines()) writer.set_cmdline(c.pid, c.comm);
}

const SidebandState::Mapping* SidebandState::mapping_at(uint64_t addr) const {
  auto it = maps_.upper_bound(addr);
  if (it == maps_.begin()) return nullptr;
  --it;
  return addr - it->second.addr < it->second.len ? &it->second : nullptr;
}

std::vector<SidebandState::Round> SidebandState::rounds() const {
  std::vector<Round> out;
  out.reserve(rounds_.size());
  for (const auto& [n, r] : rounds_) out.push_back(r);
  return out;
}

std::vector<Cmdline> sideband_cmdlines(const Instance& instance) {
  SidebandState sb(instance.registry());
  auto it = buffers::merged_iterator(instance.ring());
  while (auto r = it.next()) sb.observe(r->payload);
  std::map<int32_t, std::string> merged;
  for (Cmdline& c : instance.cmdlines()) merged[c.pid] = std::move(c.comm);
  for (Cmdline& c : sb.cmdlines()) merged[c.pid] = std::move(c.comm);
  std::vector<Cmdline> out;
  out.reserve(merged.size());
  for (auto& [pid, comm] : merged) out.push_back({pid, std::move(comm)});
  return out;
}

}  // namespace tracepipe
