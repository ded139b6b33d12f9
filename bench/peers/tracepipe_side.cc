#include "tracepipe/bench/peers/tracepipe_side.h"

#include <fmt/core.h>

#include <stdexcept>
#include <string_view>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/instance/instance.h"

namespace tracepipe::peers {
namespace {

/// The kernel's sched_switch payload under the peers' own system name.
using PeerSwitch = EventDecl<"tracepipe_peer", "sched_switch",  //
                             Chars<"prev_comm", 16>,            //
                             Int<"prev_pid", int32_t>,          //
                             Int<"prev_prio", int32_t>,         //
                             Int<"prev_state", int64_t>,        //
                             Chars<"next_comm", 16>,            //
                             Int<"next_pid", int32_t>,          //
                             Int<"next_prio", int32_t>>;
static_assert(PeerSwitch::fixed_size == 64,
              "8-byte common header + the kernel's 56-byte sched_switch payload");

std::string_view comm_view(const char (&c)[16]) {
  size_t n = 0;
  while (n < sizeof c && c[n] != '\0') ++n;
  return {c, n};
}

/// The loops, out of line and shaped like the LTTng plugin's
/// tp_peer_lttng_emit_loop: one call per iteration, prev_pid = i & 0x7fffffff.
/// trace: TRACEPIPE_TRACE, the tracepoint-style macro (every instance that
/// enabled the event records it, each with its own filter, as
/// lttng_ust_tracepoint() serves every session; like that macro it evaluates
/// no argument while nothing listens). trace-fn: the EventDecl::trace()
/// function. emit: into one given instance.
[[gnu::noinline]] void trace_loop(const tp_peer_event& ev, uint64_t n) {
  const std::string_view prev_comm = comm_view(ev.prev_comm);
  const std::string_view next_comm = comm_view(ev.next_comm);
  for (uint64_t i = 0; i < n; ++i) {
    TRACEPIPE_TRACE(PeerSwitch, prev_comm, static_cast<int32_t>(i & 0x7fffffff), ev.prev_prio,
                    ev.prev_state, next_comm, ev.next_pid, ev.next_prio);
  }
}

[[gnu::noinline]] void trace_fn_loop(const tp_peer_event& ev, uint64_t n) {
  const std::string_view prev_comm = comm_view(ev.prev_comm);
  const std::string_view next_comm = comm_view(ev.next_comm);
  for (uint64_t i = 0; i < n; ++i) {
    PeerSwitch::trace(prev_comm, static_cast<int32_t>(i & 0x7fffffff), ev.prev_prio, ev.prev_state,
                      next_comm, ev.next_pid, ev.next_prio);
  }
}

[[gnu::noinline]] void emit_loop(Instance& inst, const tp_peer_event& ev, uint64_t n) {
  const std::string_view prev_comm = comm_view(ev.prev_comm);
  const std::string_view next_comm = comm_view(ev.next_comm);
  for (uint64_t i = 0; i < n; ++i) {
    (void)PeerSwitch::emit(inst, prev_comm, static_cast<int32_t>(i & 0x7fffffff), ev.prev_prio,
                           ev.prev_state, next_comm, ev.next_pid, ev.next_prio);
  }
}

}  // namespace

TracepipeSide::TracepipeSide(const std::string& staging, const std::string& api)
    : staging_(staging), event_(peer_event()) {
  if (api == "trace")
    api_ = Api::trace;
  else if (api == "trace-fn")
    api_ = Api::trace_fn;
  else if (api == "emit")
    api_ = Api::emit;
  else
    throw std::invalid_argument(
        fmt::format("unknown tracepipe API '{}' (trace, trace-fn, emit)", api));
  if (!staging.empty() && !parse_staging(staging))
    throw std::invalid_argument(
        fmt::format("unknown staging '{}' (off, per_cpu, per_thread, adaptive)", staging));
  (void)PeerSwitch::desc();  // register before any timing
}

TracepipeSide::~TracepipeSide() = default;

uint32_t TracepipeSide::record_size() noexcept { return PeerSwitch::fixed_size; }

std::string TracepipeSide::description() const {
  InstanceOptions o;
  const Staging s = staging_.empty() ? o.staging : *parse_staging(staging_);
  const char* call = api_ == Api::trace      ? "TRACEPIPE_TRACE (tracepoint-style, every instance)"
                     : api_ == Api::trace_fn ? "EventDecl::trace (tracepoint-style, every instance)"
                                             : "EventDecl::emit (into one instance)";
  return fmt::format("tracepipe {}, {}-byte record, staging {}, clock local", call, record_size(),
                     to_string(s));
}

void TracepipeSide::begin_case(const MicroSetup& setup) {
  setup_ = setup;
  instance_.reset();
  InstanceOptions o;
  o.name = "peers";
  if (!staging_.empty()) o.staging = *parse_staging(staging_);
  if (setup.kase == MicroCase::overwrite) {
    o.mode = BufferMode::overwrite;
    o.buffer_size_kb = setup.overwrite_kb;
  } else {
    o.mode = BufferMode::drop_newest;
    o.buffer_size_kb = setup.buffer_kb;
  }
  instance_ = std::make_unique<Instance>(o);
  const EventDesc& desc = PeerSwitch::desc();
  if (setup.kase == MicroCase::disabled) return;
  instance_->enable(desc);
  std::string filter;
  switch (setup.kase) {
    case MicroCase::reject_int:
      filter = "prev_pid < 0";
      break;
    case MicroCase::accept_int:
      filter = "prev_pid >= 0";
      break;
    case MicroCase::reject_glob:
      filter = fmt::format("prev_comm ~ \"{}\"", setup.glob);
      break;
    default:
      break;
  }
  if (!filter.empty()) {
    const FilterStatus st = instance_->set_filter(desc, filter);
    if (!st)
      throw std::runtime_error(fmt::format("tracepipe filter '{}': {}", filter, st.render()));
  }
}

void TracepipeSide::emit(uint32_t /*thread*/, uint64_t n) {
  switch (api_) {
    case Api::trace:
      trace_loop(event_, n);
      break;
    case Api::trace_fn:
      trace_fn_loop(event_, n);
      break;
    case Api::emit:
      emit_loop(*instance_, event_, n);
      break;
  }
}

void TracepipeSide::after_round() {
  if (!instance_ || setup_.kase == MicroCase::overwrite) return;
  buffers::RingBufferBase& rb = instance_->ring();
  for (uint32_t cpu = 0; cpu < rb.cpus(); ++cpu) {
    buffers::ConsumingReader reader(rb, cpu);
    while (reader.next()) {
    }
  }
}

SideCounts TracepipeSide::end_case() {
  SideCounts c;
  if (!instance_) return c;
  const EventStats st = instance_->event_stats(PeerSwitch::desc());
  c.recorded = st.kept;
  c.recorded_known = true;
  c.lost = st.lost;
  for (const buffers::CpuStats& cs : instance_->cpu_stats()) c.overrun += cs.overrun;
  instance_.reset();
  return c;
}

}  // namespace tracepipe::peers
