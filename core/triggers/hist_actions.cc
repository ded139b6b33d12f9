// The per-event half of a hist with variables, references or handlers (the
// kernel's event_hist_trigger and hist_trigger_actions), and what the hist
// file prints for its handlers.
//
//   (1) key of this event                   make_key
//   (2) other hists' variables at that key  lookup + read (read-once: unset);
//       one missing or unset: nothing more happens (no entry, no action)
//   (3) this hist's entry                   insert (Dropped when full)
//   (4) hitcount, vals, variables           add_counts, set_var
//   (5) this hist's own referenced variables, read after (4)
//   (6) handlers: onmatch -> trace(); onmax / onchange -> save(),
//       snapshot() or trace() when the tracked value is a new max / changed;
//       snapshot() swaps the live ring with the instance's spare
//       (save_track_data_snapshot -> tracing_snapshot_cond)
//
// No allocation, lock or system call: the key, the reference values and a
// synthetic record live on the stack; the map is tracing_map's (hist.h).
#include <fmt/format.h>

#include <cstring>

#include "tracepipe/core/instance/raw_emit.h"
#include "tracepipe/core/triggers/hist.h"
#include "tracepipe/core/triggers/hist_expr.h"
#include "tracepipe/core/triggers/synthetic.h"

namespace tracepipe::triggers {

namespace {

// A synthetic event generated inside another event's trigger may itself
// have triggers; bound the chain as the kernel's recursion protection does.
thread_local constinit uint32_t tl_synth_depth TRACEPIPE_TLS_MODEL = 0;
constexpr uint32_t kMaxSynthDepth = 4;

// A string field of the record: its bytes (up to the NUL) and length.
std::string_view record_string(const HistField& f, std::span<const std::byte> rec) noexcept {
  const std::byte* s = nullptr;
  size_t len = 0;
  if (f.source == HistSource::string_field) {
    if (f.offset + f.size <= rec.size()) s = rec.data() + f.offset, len = f.size;
  } else if (f.offset + 4 <= rec.size()) {
    uint32_t loc;
    std::memcpy(&loc, rec.data() + f.offset, 4);
    size_t start = loc & 0xffff;
    len = loc >> 16;
    if (f.is_signed) start += f.offset + 4;
    if (start + len <= rec.size())
      s = rec.data() + start;
    else
      len = 0;
  }
  if (s == nullptr) return {};
  const auto* c = reinterpret_cast<const char*>(s);
  return {c, strnlen(c, len)};
}

void store_num(std::byte* slot, uint32_t size, uint64_t v) noexcept {
  std::memset(slot, 0, 8);
  std::memcpy(slot, &v, size < 8 ? size : 8);  // little endian: the low bytes
}

// trace_event_raw_event_synth(): the record from the params, emitted on the
// triggering record's CPU with its common header.
void emit_synth(const HistAction& a, Instance& inst, std::span<const std::byte> rec, uint32_t cpu,
                uint64_t ts, const uint64_t* refv) noexcept {
  const SynthEvent& se = *a.synth;
  if (se.desc == nullptr || tl_synth_depth >= kMaxSynthDepth) return;
  alignas(8) std::byte buf[kSynthMaxRecord];
  std::memset(buf, 0, se.fixed_size);
  std::memcpy(buf, rec.data(), rec.size() < 8 ? rec.size() : 8);  // flags, preempt_count, pid
  const uint16_t id = se.desc->id();
  std::memcpy(buf, &id, 2);
  uint32_t end = se.fixed_size;
  for (size_t i = 0; i < se.fields.size() && i < a.args.size(); ++i) {
    const SynthField& f = se.fields[i];
    const ActionParam& p = a.args[i];
    std::byte* slot = buf + f.offset;
    if (f.is_string) {
      const std::string_view s = record_string(p.field, rec);
      if (!f.is_dynamic) {
        const size_t n = s.size() < kStrVarLenMax - 1 ? s.size() : kStrVarLenMax - 1;
        std::memcpy(slot, s.data(), n);
      } else {
        size_t n = s.size() + 1;  // with its NUL, as the kernel stores it
        if (end + n > kSynthMaxRecord) n = kSynthMaxRecord - end;
        if (n > 0) {
          std::memcpy(buf + end, s.data(), n - 1);
          buf[end + n - 1] = std::byte{0};
        }
        const uint32_t loc = end | static_cast<uint32_t>(n << 16);
        std::memcpy(slot, &loc, 4);
        end += static_cast<uint32_t>(n);
      }
      continue;
    }
    const uint64_t v = p.is_ref ? refv[p.ref] : read_hist_value(p.field, rec, cpu, ts);
    store_num(slot, f.size, v);
  }
  ++tl_synth_depth;
  RawEmit::emit(inst, *se.desc, std::span<const std::byte>(buf, end), cpu);
  --tl_synth_depth;
}

// save(): the fields of this record into the entry's save area.
void save_fields(const HistAction& a, HistMap& map, uint32_t ent, std::span<const std::byte> rec,
                 uint32_t cpu, uint64_t ts) noexcept {
  std::atomic<uint64_t>* area = map.save_area(ent);
  for (size_t i = 0; i < a.save.size(); ++i) {
    const HistField& f = a.save[i];
    std::atomic<uint64_t>* w = area + a.save_offset[i] / 8;
    if (f.source == HistSource::string_field || f.source == HistSource::dyn_string) {
      const std::string_view s = record_string(f, rec);
      const size_t cap =
          (i + 1 < a.save.size() ? a.save_offset[i + 1] : map.spec().save_bytes) - a.save_offset[i];
      for (size_t o = 0; o < cap; o += 8) {  // one word at a time: a reader never sees a torn word
        uint64_t word = 0;
        if (o < s.size()) std::memcpy(&word, s.data() + o, std::min<size_t>(8, s.size() - o));
        if (o + 8 >= cap) word &= ~(uint64_t{0xff} << 56);  // keep a NUL at the end
        w[o / 8].store(word, std::memory_order_relaxed);
      }
    } else {
      w->store(read_hist_value(f, rec, cpu, ts), std::memory_order_relaxed);
    }
  }
}

}  // namespace

void hist_update_full(const HistSpec& fields, HistMap& map, Instance& inst,
                      std::span<const std::byte> rec, uint32_t cpu, uint64_t ts) noexcept {
  HistKey key;
  map.make_key(fields, rec, cpu, ts, key);  // (1)
  uint64_t refv[kMaxVars * 2 + kMaxSynthFields];
  const size_t nrefs = fields.refs.size();
  for (size_t i = 0; i < nrefs; ++i) {  // (2)
    const VarRef& r = fields.refs[i];
    if (r.self) continue;
    const uint32_t e = r.map->lookup(key);
    if (e == UINT32_MAX || !r.map->read_var(e, r.var, r.read_once, refv[i])) return;
  }
  const uint32_t ent = map.insert(key);  // (3)
  if (ent == UINT32_MAX) return;
  uint64_t vals[kMaxVals];  // (4)
  for (size_t i = 0; i < fields.vals.size(); ++i) {
    const HistField& f = fields.vals[i];
    vals[i] = f.source == HistSource::expr ? eval_expr(fields, f.expr, rec, cpu, ts, refv)
                                           : read_hist_value(f, rec, cpu, ts);
  }
  map.add_counts(ent, vals);
  for (size_t v = 0; v < fields.vars.size(); ++v) {
    const ExprNode& n = fields.nodes[static_cast<size_t>(fields.vars[v].expr)];
    const uint64_t x = n.op == ExprOp::value && !n.is_string
                           ? read_hist_value(n.leaf, rec, cpu, ts)
                           : eval_expr(fields, fields.vars[v].expr, rec, cpu, ts, refv);
    map.set_var(ent, static_cast<uint32_t>(v), x);
  }
  for (size_t i = 0; i < nrefs; ++i) {  // (5)
    const VarRef& r = fields.refs[i];
    if (r.self && !map.read_var(ent, r.var, false, refv[i])) return;
  }
  for (const HistAction& a : fields.actions) {  // (6)
    if (a.handler == HistHandler::onmatch) {
      if (a.kind == HistActionKind::trace) emit_synth(a, inst, rec, cpu, ts, refv);
      continue;
    }
    const uint64_t val = refv[a.track_ref];
    uint64_t cur = 0;
    map.read_var(ent, a.track_var, false, cur);
    if (a.handler == HistHandler::onmax ? val <= cur : val == cur)
      continue;  // check_track_val_max / _changed
    map.set_var(ent, a.track_var, val);
    switch (a.kind) {
      case HistActionKind::save:
        save_fields(a, map, ent, rec, cpu, ts);
        break;
      case HistActionKind::trace:
        emit_synth(a, inst, rec, cpu, ts, refv);
        break;
      case HistActionKind::snapshot: {
        // cond_snapshot_update(): a new hist-wide max (or change) takes the
        // snapshot; the key is the entry's.
        HistMap::SnapshotInfo& s = map.snapshot_info();
        uint64_t old = s.value.load(std::memory_order_relaxed);
        bool take = false;
        while (a.handler == HistHandler::onmax ? val > old : val != old) {
          if (s.value.compare_exchange_weak(old, val, std::memory_order_relaxed)) {
            take = true;
            break;
          }
        }
        if (!take) break;
        s.entry.store(ent, std::memory_order_relaxed);
        s.updated.store(true, std::memory_order_release);
        // update_max_tr: the live ring becomes the snapshot and the spare
        // (allocated when the hist was added) takes its place; tracing goes
        // on. A swap racing another one is skipped, as the snapshot
        // trigger's.
        (void)detail::InstanceAccess::live_ring(inst).swap();
        break;
      }
    }
  }
}

std::string format_hist_actions(const HistMap& map, uint32_t ent) {
  const HistSpec& spec = map.spec();
  std::string out;
  for (const HistAction& a : spec.actions) {
    if (a.handler == HistHandler::onmatch || a.kind == HistActionKind::snapshot) continue;
    const uint64_t v = map.peek_var(ent, a.track_var);
    out += fmt::format("\n\t{}: {:>10}", a.handler == HistHandler::onmax ? "max" : "changed", v);
    if (a.kind != HistActionKind::save) continue;
    const std::atomic<uint64_t>* area = map.save_area(ent);
    for (size_t i = 0; i < a.save.size(); ++i) {
      const HistField& f = a.save[i];
      const std::atomic<uint64_t>* w = area + a.save_offset[i] / 8;
      if (f.source == HistSource::string_field || f.source == HistSource::dyn_string) {
        const size_t cap =
            (i + 1 < a.save.size() ? a.save_offset[i + 1] : spec.save_bytes) - a.save_offset[i];
        std::string s(cap, '\0');
        for (size_t o = 0; o < cap; o += 8) {
          const uint64_t word = w[o / 8].load(std::memory_order_relaxed);
          std::memcpy(s.data() + o, &word, 8);
        }
        s.resize(strnlen(s.data(), s.size()));
        out += fmt::format("  {}: {:<32}", f.name, s);
      } else {
        out += fmt::format("  {}: {:>10}", f.name, w->load(std::memory_order_relaxed));
      }
    }
  }
  return out;
}

std::string format_hist_snapshot(const HistMap& map, const HistNames& names) {
  const HistSpec& spec = map.spec();
  const HistAction* snap = nullptr;
  for (const HistAction& a : spec.actions)
    if (a.kind == HistActionKind::snapshot) snap = &a;
  const HistMap::SnapshotInfo& s = map.snapshot_info();
  if (snap == nullptr || !s.updated.load(std::memory_order_acquire)) return {};
  const uint32_t ent = s.entry.load(std::memory_order_relaxed);
  std::string out = "\nSnapshot taken (see tracing/snapshot).  Details:\n";
  out += fmt::format("\ttriggering value {{ {}({}) }}: {:>10}",
                     snap->handler == HistHandler::onmax ? "onmax" : "onchange", snap->var_str,
                     s.value.load(std::memory_order_relaxed));
  out += "\ttriggered by event with key: " + format_hist_key(spec, map.key_of(ent), names) + "\n";
  return out;
}

}  // namespace tracepipe::triggers
