#include "tracepipe/core/replay/router.h"

#include <fmt/core.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstring>

#include "tracepipe/core/instance/raw_emit.h"
#include "tracepipe/filters/parser.h"

namespace tracepipe::replay {
namespace {

using filters::detail::Code;

// Does the program read something the record alone does not hold?
struct ProgramNeeds {
  bool comm = false;     // COMM/comm generic field: current->comm
  bool strings = false;  // char * fields: printk_formats
  bool masks = false;    // CPUS{...}: depends on nr_cpu_ids
};
ProgramNeeds needs_of(const filters::Program& p) {
  ProgramNeeds n;
  for (const filters::detail::Pred& e : p.entries()) {
    n.comm = n.comm || e.code == Code::str_comm;
    n.strings = n.strings || e.code == Code::str_ptr;
    n.masks = n.masks || e.code == Code::cpu_in_mask || e.code == Code::scalar_in_mask ||
              e.code == Code::cpumask_vs_mask || e.code == Code::cpumask_vs_cpu;
  }
  return n;
}

filters::ResolvedString resolve_printk(uint64_t address, bool user_space,
                                       const void* table) noexcept {
  if (user_space) return {};  // .ustring reads user memory at event time: not in the file
  const auto s = static_cast<const PrintkTable*>(table)->lookup(address);
  if (!s) return {};
  return {*s, true};
}

}  // namespace

Router::Router(const TraceDatReader& reader, Instance& inst, const std::vector<EventPlan>& plan,
               uint32_t ncpu, filters::TrailingOperator trailing)
    : reader_(reader), inst_(inst), printk_(reader.printk_text()) {
  const Registry& reg = inst.registry();
  unknown_slot_ = reg.size();
  unknown_.slot = unknown_slot_;
  kinds_.assign(reg.size(), FilterRoute::none);
  for (uint32_t c = 0; c < ncpu; ++c) swapper_.push_back(fmt::format("swapper/{}", c));

  const uint32_t machine_cpus = filters::effective_nr_cpu_ids(filters::CompileOptions{});
  filters::CompileOptions instance_compile;  // the instance's own: no kallsyms
  instance_compile.trailing_operator = trailing;
  uint32_t max_id = 0;
  for (const EventPlan& p : plan) max_id = std::max<uint32_t>(max_id, p.event->id());
  routes_.assign(max_id + 1, unknown_);
  bool need_timeline = false;
  for (const EventPlan& p : plan) {
    Route& r = routes_[p.event->id()];
    r.slot = p.event->index();
    r.desc = p.event;
    if (!p.replayed) {
      r.kind = Kind::skip;
      continue;
    }
    inst.enable(*p.event);
    if (p.soft_disabled) inst.set_soft_disabled(*p.event, true);
    r.kind = Kind::emit;
    if (!p.program) continue;
    const ProgramNeeds needs = needs_of(*p.program);
    bool in_instance = !needs.comm && !needs.strings && !(needs.masks && machine_cpus != ncpu);
    // The same text through the instance's own compile must be accepted as
    // the recording kernel accepted it (it has no kallsyms: .function fails).
    if (in_instance) in_instance = inst.set_filter(*p.event, p.filter, instance_compile).ok();
    if (in_instance) {
      kinds_[p.event->index()] = FilterRoute::instance;
    } else {
      r.kind = Kind::replay_side;
      r.prog = p.program.get();
      r.state = &detail::InstanceAccess::state(inst, *p.event);
      r.needs_comm = needs.comm;
      r.comm = comm_source(p.event->format());
      kinds_[p.event->index()] = FilterRoute::replay_side;
      need_timeline = need_timeline || (needs.comm && r.comm.field_size == 0);
    }
  }
  if (need_timeline) timeline_ = CommTimeline(reader);
}

FilterRoute Router::route(const EventDesc& event) const noexcept {
  return event.index() < kinds_.size() ? kinds_[event.index()] : FilterRoute::none;
}

void Router::feed(std::span<Rec> recs, uint32_t cpu, std::span<Counter> counters,
                  bool timing) const noexcept {
  if (counters.size() < counter_slots()) return;
  timing ? feed_impl<true>(recs, cpu, counters.data())
         : feed_impl<false>(recs, cpu, counters.data());
}

template <bool kTiming>
void Router::feed_impl(std::span<Rec> recs, uint32_t cpu, Counter* counters) const noexcept {
  for (Rec& r : recs) {
    uint16_t id = 0;
    if (r.len >= 2) [[likely]]
      std::memcpy(&id, r.p, sizeof id);
    const Route& rt = id < routes_.size() && r.len >= 2 ? routes_[id] : unknown_;
    Counter& c = counters[rt.slot];
    bool timed = false;
    uint64_t t0 = 0;
    if constexpr (kTiming) {
      timed = (c.ticks++ & (kTimingPeriod - 1)) == 0;
      if (timed) t0 = __rdtsc();
    }
    const std::span<const std::byte> rec(r.p, r.len);
    switch (rt.kind) {
      case Kind::emit:
        r.result = tracepipe::RawEmit::emit_at(inst_, rec, cpu, r.ts);
        break;
      case Kind::replay_side:
        r.result = replay_side(rt, rec, RecordPosition{r.ts, cpu, r.seq});
        break;
      case Kind::skip:
      case Kind::unknown:
        r.result = EmitResult::disabled;
        break;
    }
    if constexpr (kTiming) {
      if (timed) {
        const uint64_t d = __rdtsc() - t0;
        if (d < kPreemptedCycles) [[likely]] {
          c.cycles += d;
          ++c.samples;
        }
      }
    }
    switch (r.result) {
      case EmitResult::kept:
        ++c.replayed;
        ++c.kept;
        break;
      case EmitResult::discarded:
        ++c.replayed;
        ++c.discarded;
        break;
      case EmitResult::lost:
        ++c.replayed;
        ++c.lost;
        break;
      case EmitResult::disabled:
        ++c.skipped;
        break;
    }
  }
}

// The filter with the recorded context (COMM, printk strings), then an
// unfiltered commit of the records it keeps.
EmitResult Router::replay_side(const Route& rt, std::span<const std::byte> rec,
                               const RecordPosition& at) const noexcept {
  filters::EvalContext ctx;
  ctx.cpu = at.cpu;
  ctx.resolve = &resolve_printk;
  ctx.resolve_user = &printk_;
  if (rt.needs_comm) ctx.comm = comm_of(rt, rec, at);
  if (!rt.prog->match(rec, ctx)) {
    // The instance never sees this record: its triggers must, as the
    // kernel's run on filtered-out events too.
    detail::InstanceAccess::run_triggers_only(*rt.state, rec, at.cpu, at.ts);
    return EmitResult::discarded;
  }
  return tracepipe::RawEmit::emit_at(inst_, rec, at.cpu, at.ts);
}

// current->comm at the time of the event (filter_pred_comm): the record's
// own field where it holds it (sched_switch's prev_comm), else the name the
// trace gives common_pid at this record (CommTimeline), else saved_cmdlines.
std::string_view Router::comm_of(const Route& rt, std::span<const std::byte> rec,
                                 const RecordPosition& at) const noexcept {
  if (rt.comm.field_size != 0) {
    if (rt.comm.field_offset + rt.comm.field_size > rec.size()) return {};
    const char* s = reinterpret_cast<const char*>(rec.data()) + rt.comm.field_offset;
    return {s, strnlen(s, rt.comm.field_size)};
  }
  if (rec.size() < 8) return {};
  int32_t pid;
  std::memcpy(&pid, rec.data() + 4, sizeof pid);
  if (pid == 0)
    return at.cpu < swapper_.size() ? std::string_view(swapper_[at.cpu])
                                    : std::string_view("swapper");
  if (const auto name = timeline_.name_at(pid, at)) return *name;
  return reader_.comm(pid).value_or(std::string_view());
}

}  // namespace tracepipe::replay
