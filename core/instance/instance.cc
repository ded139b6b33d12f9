// Instance: construction and the control plane (enable, filters, config).
// The write path is inline in core/instance/fast_path.h.
#include "tracepipe/core/instance/instance.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <new>
#include <stdexcept>

#include "tracepipe/core/config/ring_memory.h"
#include "tracepipe/core/flight/flight_file.h"
#include "tracepipe/core/instance/adaptive_average.h"
#include "tracepipe/core/instance/instance_private.h"
#include "tracepipe/filters/parser.h"

namespace tracepipe {

using namespace instance_impl;

namespace detail {
thread_local constinit uint64_t tl_external_ts = 0;
}  // namespace detail

namespace {

uint64_t external_clock() noexcept { return detail::tl_external_ts; }

// Subscriber lists live on the (shared) EventDesc, so changes to them are
// serialised across instances.
std::mutex& subscribers_mutex() {
  static std::mutex mu;
  return mu;
}

detail::Subscribers* make_subscribers(const std::vector<detail::EventState*>& list) {
  if (list.empty()) return nullptr;
  const size_t bytes =
      sizeof(detail::Subscribers) + (list.size() - 1) * sizeof(detail::EventState*);
  auto* s = static_cast<detail::Subscribers*>(::operator new(bytes));
  s->count = static_cast<uint32_t>(list.size());
  std::copy(list.begin(), list.end(), s->states);
  return s;
}

void free_subscribers(const detail::Subscribers* s) {
  ::operator delete(const_cast<detail::Subscribers*>(s));
}

}  // namespace

// Never destroyed: made at the first event state, usually inside main(), a
// static would be destroyed before objects made earlier (a tracer singleton,
// a leaked Instance), whose destructors or writers could still load it. The
// shared_ptr itself is kept (not only its pointer) so that LeakSanitizer sees
// the program reachable.
const filters::Program& detail::accept_all_program() {
  static const auto* const program =
      new std::shared_ptr<const filters::Program>(filters::compile("0", {}).program());
  return **program;
}

Instance::Instance(InstanceOptions options, Registry& registry)
    : options_(std::move(options)),
      registry_(registry),
      clock_(trace_clock(options_.clock)),
      stager_(options_.staging) {
  if (!(options_.adaptive_threshold >= 0.0 && options_.adaptive_threshold <= 1.0))
    throw std::invalid_argument("adaptive_threshold must be between 0 and 1");
  if (options_.buffer_size_kb == 0)
    throw std::invalid_argument("buffer_size_kb must be at least 1");
  // Before any allocation: the rings are zeroed up front, so rings larger
  // than the machine would take tens of seconds to fail (core/config/ring_memory.h).
  if (const std::string why = detail::ring_memory_refusal(options_); !why.empty())
    throw std::invalid_argument("instance " + options_.name + ": " + why);
  ncpu_ = options_.cpus != 0 ? options_.cpus : possible_cpus();
  adaptive_threshold_ = static_cast<uint64_t>(options_.adaptive_threshold * 65536.0);
  buffers::RingBufferConfig rc;
  rc.cpus = ncpu_;
  rc.size_per_cpu = static_cast<size_t>(options_.buffer_size_kb) * 1024u;
  rc.subbuf_size = static_cast<size_t>(options_.subbuf_size_kb) * 1024u;
  // `local` and `perf` are read inline by the ring (no call per reserve).
  const buffers::FunctionClock clk = options_.external_time
                                         ? buffers::FunctionClock(&external_clock)
                                         : detail::ring_clock(options_.clock);
  switch (options_.writers) {
    case WriterMode::automatic:
      cpu_local_ = options_.cpus == 0 && !options_.external_time && buffers::detail::rseq_usable();
      break;
    case WriterMode::any_cpu:
      cpu_local_ = false;
      break;
    case WriterMode::cpu_local:
      if (options_.cpus != 0)
        throw std::invalid_argument(
            "writers = cpu_local needs one buffer per possible CPU (cpus = 0)");
      if (!buffers::detail::rseq_usable())
        throw std::invalid_argument(
            "writers = cpu_local needs rseq and membarrier RSEQ, unavailable here");
      cpu_local_ = true;
      break;
  }
  if (options_.flight_recorder) {
    // The ring lives in a shared file mapping (core/flight): same ring, same
    // write path, but the records survive the process.
    flight::FlightFileConfig fc;
    fc.dir = options_.flight_dir;
    fc.instance = options_.name;
    fc.ring = rc;
    fc.mode = options_.mode;
    fc.cpu_local = cpu_local_;
    fc.clock = std::string(trace_clock_name(options_.clock));
    fc.clock_in_ns = clock_.in_nanoseconds;
    flight_ = flight::FlightFile::create(fc);
    rc.memory = flight_->ring_memory();
    rc.memory_size = flight_->ring_size();
  }
  using buffers::FunctionClock, buffers::NoHooks, buffers::OverflowMode, buffers::RingBuffer,
      buffers::Writers;
  const bool ow = options_.mode == BufferMode::overwrite;
  ring_kind_ = cpu_local_ ? (ow ? RingKind::overwrite_local : RingKind::drop_newest_local)
                          : (ow ? RingKind::overwrite_any : RingKind::drop_newest_any);
  if (options_.mode == BufferMode::overwrite) {
    if (cpu_local_)
      ring_ = std::make_unique<
          RingBuffer<OverflowMode::overwrite, FunctionClock, NoHooks, Writers::cpu_local>>(rc, clk);
    else
      ring_ = std::make_unique<RingBuffer<OverflowMode::overwrite>>(rc, clk);
  } else {
    if (cpu_local_)
      ring_ = std::make_unique<
          RingBuffer<OverflowMode::drop_newest, FunctionClock, NoHooks, Writers::cpu_local>>(rc,
                                                                                             clk);
    else
      ring_ = std::make_unique<RingBuffer<OverflowMode::drop_newest>>(rc, clk);
  }
  states_.reset(new std::atomic<detail::EventState*>[Registry::kMaxEvents]());
  if (flight_) flight_->set_live();
}

buffers::Reservation Instance::reserve_any_cpu(uint32_t cpu, uint32_t size) noexcept {
  using buffers::OverflowMode, buffers::RingBuffer;
  if (ring_kind_ == RingKind::overwrite_any)
    return static_cast<RingBuffer<OverflowMode::overwrite>&>(*ring_).reserve(cpu, size);
  return static_cast<RingBuffer<OverflowMode::drop_newest>&>(*ring_).reserve(cpu, size);
}

Instance::~Instance() {
  std::lock_guard lk(mu_);
  Retired retired;
  for (auto& st : owned_states_) {
    st->flags.store(0, std::memory_order_release);
    states_[st->desc->index()].store(nullptr, std::memory_order_release);
    unsubscribe_locked(*st, retired);
    if (st->program_owner) retired.programs.push_back(std::move(st->program_owner));
  }
  // Wait for emits still running on our states, then free everything.
  synchronize();
  for (const auto* s : retired.subscribers) free_subscribers(s);
  for (auto& st : owned_states_) free_counter_group(st->counters);
}

// ── per-event state ─────────────────────────────────────────────────────────────

detail::EventState& Instance::state_locked(const EventDesc& event) {
  if (&event.registry() != &registry_)
    throw std::invalid_argument("event " + event.full_name() +
                                " belongs to another registry than instance " + name());
  if (detail::EventState* st = states_[event.index()].load(std::memory_order_relaxed)) return *st;
  auto st = std::make_unique<detail::EventState>();
  st->desc = &event;
  st->type = event.id();
  st->instance = this;
  st->counters = allocate_counter_group();
  if (options_.staging == Staging::per_thread)
    st->flags.store(detail::EventState::kThreadStaging, std::memory_order_relaxed);
  if (options_.staging == Staging::per_cpu)
    st->flags.store(detail::EventState::kCpuStaging, std::memory_order_relaxed);
  if (options_.staging == Staging::adaptive)  // starts staging: the rate is unknown
    st->flags.store(detail::EventState::kThreadStaging | detail::EventState::kAdaptive,
                    std::memory_order_relaxed);
  detail::EventState* raw = st.get();
  owned_states_.push_back(std::move(st));
  states_[event.index()].store(raw, std::memory_order_release);
  return *raw;
}

const detail::EventState* Instance::state_of(const EventDesc& event) const noexcept {
  if (&event.registry() != &registry_) return nullptr;
  return states_[event.index()].load(std::memory_order_acquire);
}

void Instance::set_flag_locked(detail::EventState& st, uint32_t flag, bool on) {
  if (on)
    st.flags.fetch_or(flag, std::memory_order_release);
  else
    st.flags.fetch_and(~flag, std::memory_order_release);
}

// The stack lane's accept (fast_path.h: stage_on_stack): the staged path's
// (E9), from the caller's frame instead of a slot: the decided accept with
// a copy for its build.
void Instance::commit_from_stack(detail::EventState& st, uint32_t flags, ThreadContext& ctx,
                                 std::span<const std::byte> rec) noexcept {
  const auto size = static_cast<uint32_t>(rec.size());
  commit_decided(st, flags, ctx, size,
                 [&](std::byte* dst) { detail::copy_record(dst, rec.data(), size); });
}

// The stack lane's filter when the program has no inline verdict: the
// context (CPU, comm) as the staged path's EvalContextMaker makes it.
void Instance::filter_from_stack(const filters::Program& prog, detail::EventState& st,
                                 uint32_t flags, ThreadContext& ctx,
                                 std::span<const std::byte> rec) noexcept {
  const bool accept = prog.match_lazy(rec, [&]() {
    filters::EvalContext e;  // member by member: see EvalContextMaker (fast_path.h)
    e.cpu = current_cpu();
    if (!cpu_local_ && e.cpu >= ncpu_) e.cpu %= ncpu_;
    e.comm = ctx.comm_view();
    return e;
  });
  if (accept)
    commit_from_stack(st, flags, ctx, rec);
  else
    counter_add(thread_counters(ctx, st.counters).v[detail::slot::rejected_staged]);
}

void Instance::subscribe_locked(detail::EventState& st, bool on, Retired& retired) {
  std::lock_guard lk(subscribers_mutex());
  auto& atom = st.desc->subscribers_for_fast_path();
  const detail::Subscribers* old = atom.load(std::memory_order_acquire);
  std::vector<detail::EventState*> list;
  if (old != nullptr) list.assign(old->states, old->states + old->count);
  const bool present = std::find(list.begin(), list.end(), &st) != list.end();
  if (present == on) return;
  if (on)
    list.push_back(&st);
  else
    list.erase(std::find(list.begin(), list.end(), &st));
  atom.store(make_subscribers(list), std::memory_order_release);
  if (old != nullptr) retired.subscribers.push_back(old);
}

void Instance::unsubscribe_locked(detail::EventState& st, Retired& retired) {
  subscribe_locked(st, false, retired);
}

void Instance::install_program_locked(detail::EventState& st,
                                      std::shared_ptr<const filters::Program> program,
                                      std::string text, Retired& retired) {
  if (program) {
    // Publish the program before the flag: a writer that sees kFiltered
    // (acquire) then loads a non-null program.
    st.program.store(program.get(), std::memory_order_release);
    set_flag_locked(st, detail::EventState::kFiltered, true);
  } else {
    // Clear the flag first: a writer that still saw it may load the
    // accept-all program (as it would with no filter at all).
    set_flag_locked(st, detail::EventState::kFiltered, false);
    st.program.store(&detail::accept_all_program(), std::memory_order_release);
  }
  if (st.program_owner) retired.programs.push_back(std::move(st.program_owner));
  st.program_owner = std::move(program);
  st.filter_text = std::move(text);
}

void Instance::reclaim(Retired& retired) {
  if (retired.empty()) return;
  synchronize();  // (F5) no writer still runs an old program or list
  for (const auto* s : retired.subscribers) free_subscribers(s);
  retired.subscribers.clear();
  retired.programs.clear();
  retired.triggers.clear();
}

// ── control ─────────────────────────────────────────────────────────────────────

void Instance::enable(const EventDesc& event, bool on) {
  std::lock_guard lk(mu_);
  Retired retired;
  enable_locked(event, on, retired);
  reclaim(retired);
}

void Instance::enable_locked(const EventDesc& event, bool on, Retired& retired,
                             std::optional<bool> soft) {
  detail::EventState& st = state_locked(event);
  if (on && flight_) {  // what recovery needs to decode the event, before its first record
    (void)flight_->add_format(event.format());
    for (const Cmdline& c : tracepipe::cmdlines()) (void)flight_->add_cmdline(c.pid, c.comm);
  }
  // __ftrace_event_enable_disable(file, on, soft_disable = 0): enabling
  // clears the soft-disable; disabling an event in soft mode only
  // soft-disables it (its triggers still run).
  // `soft` (a config's soft_disable key) is set before the event is armed.
  if (!on && st.soft_mode_refs > 0) {
    set_flag_locked(st, detail::EventState::kSoftDisabled, true);
    return;
  }
  set_flag_locked(st, detail::EventState::kSoftDisabled, on && soft.value_or(false));
  set_flag_locked(st, detail::EventState::kEnabled, on);
  subscribe_locked(st, on, retired);
}

void Instance::soft_mode(const EventDesc& event, bool get) {
  std::lock_guard lk(mu_);
  Retired retired;
  detail::EventState& st = state_locked(event);
  const bool enabled =
      (st.flags.load(std::memory_order_relaxed) & detail::EventState::kEnabled) != 0;
  if (get) {
    if (++st.soft_mode_refs > 1 || enabled) return;
    set_flag_locked(st, detail::EventState::kSoftDisabled, true);  // before it is armed
    set_flag_locked(st, detail::EventState::kEnabled, true);
    subscribe_locked(st, true, retired);
  } else {
    if (st.soft_mode_refs == 0 || --st.soft_mode_refs > 0) return;
    if (enabled &&
        (st.flags.load(std::memory_order_relaxed) & detail::EventState::kSoftDisabled) != 0) {
      set_flag_locked(st, detail::EventState::kEnabled, false);
      subscribe_locked(st, false, retired);
    }
    set_flag_locked(st, detail::EventState::kSoftDisabled, false);
  }
  reclaim(retired);
}

bool Instance::in_soft_mode(const EventDesc& event) const {
  std::lock_guard lk(mu_);
  const detail::EventState* st = state_of(event);
  return st != nullptr && st->soft_mode_refs > 0;
}

size_t Instance::enable(std::string_view pattern, bool on) {
  const auto events = registry_.match(pattern);
  std::lock_guard lk(mu_);
  Retired retired;
  for (const EventDesc* d : events) enable_locked(*d, on, retired);
  reclaim(retired);
  return events.size();
}

bool Instance::enabled(const EventDesc& event) const noexcept {
  const detail::EventState* st = state_of(event);
  return st != nullptr &&
         (st->flags.load(std::memory_order_acquire) & detail::EventState::kEnabled) != 0;
}

void Instance::set_soft_disabled(const EventDesc& event, bool soft) {
  std::lock_guard lk(mu_);
  set_flag_locked(state_locked(event), detail::EventState::kSoftDisabled, soft);
}

bool Instance::soft_disabled(const EventDesc& event) const noexcept {
  const detail::EventState* st = state_of(event);
  return st != nullptr &&
         (st->flags.load(std::memory_order_acquire) & detail::EventState::kSoftDisabled) != 0;
}

void Instance::set_triggers(const EventDesc& event, std::shared_ptr<detail::TriggerHook> hook) {
  std::lock_guard lk(mu_);
  Retired retired;
  detail::EventState& st = state_locked(event);
  if (hook) {
    // Publish the list before the flag, as a program before kFiltered.
    st.triggers.store(hook.get(), std::memory_order_release);
    set_flag_locked(st, detail::EventState::kTriggered, true);
  } else {
    set_flag_locked(st, detail::EventState::kTriggered, false);
    st.triggers.store(nullptr, std::memory_order_release);
  }
  if (st.triggers_owner) retired.triggers.push_back(std::move(st.triggers_owner));
  st.triggers_owner = std::move(hook);
  reclaim(retired);
}

std::shared_ptr<detail::TriggerHook> Instance::triggers(const EventDesc& event) const {
  std::lock_guard lk(mu_);
  const detail::EventState* st = state_of(event);
  return st == nullptr ? nullptr : st->triggers_owner;
}

FilterStatus Instance::set_filter(const EventDesc& event, std::string_view expr,
                                  const filters::CompileOptions& options) {
  if (clears_filter(expr)) {
    clear_filter(event);
    return {};
  }
  // Compile outside the lock: it allocates and may take a while.
  filters::CompileResult res = filters::compile(expr, event.filter_fields(), options);
  if (!res.ok()) return FilterStatus(res.error(), std::string(expr));
  std::lock_guard lk(mu_);
  Retired retired;
  detail::EventState& st = state_locked(event);
  install_program_locked(st, res.program(), shown(expr), retired);
  st.filter_error.reset();
  reclaim(retired);
  return {};
}

void Instance::clear_filter(const EventDesc& event) {
  std::lock_guard lk(mu_);
  Retired retired;
  detail::EventState& st = state_locked(event);
  install_program_locked(st, nullptr, "", retired);
  st.filter_error.reset();
  reclaim(retired);
}

std::string Instance::filter(const EventDesc& event) const {
  std::lock_guard lk(mu_);
  const detail::EventState* st = state_of(event);
  return st == nullptr || st->filter_text.empty() ? std::string("none") : st->filter_text;
}

std::optional<filters::FilterError> Instance::filter_error(const EventDesc& event) const {
  std::lock_guard lk(mu_);
  const detail::EventState* st = state_of(event);
  return st == nullptr ? std::nullopt : st->filter_error;
}

SystemFilterResult Instance::set_system_filter(std::string_view system, std::string_view expr) {
  const auto events = registry_.system_events(system);
  if (events.empty())
    throw std::invalid_argument("no events in system '" + std::string(system) + "'");
  SystemFilterResult out;
  std::vector<filters::CompileResult> compiled;
  const bool clear = clears_filter(expr);
  if (!clear)
    for (const EventDesc* d : events)
      compiled.push_back(filters::compile(expr, d->filter_fields()));
  std::lock_guard lk(mu_);
  Retired retired;
  for (size_t i = 0; i < events.size(); ++i) {
    detail::EventState& st = state_locked(*events[i]);
    if (clear) {
      install_program_locked(st, nullptr, "", retired);
      st.filter_error.reset();
      out.applied.push_back(events[i]);
    } else if (compiled[i].ok()) {
      install_program_locked(st, compiled[i].program(), shown(expr), retired);
      st.filter_error.reset();
      out.applied.push_back(events[i]);
    } else {
      // The kernel leaves an event without the fields unfiltered and shows
      // the subsystem error in its filter file.
      install_program_locked(st, nullptr, "", retired);
      st.filter_error = subsystem_error();
      out.rejected.emplace_back(events[i], compiled[i].error());
    }
  }
  reclaim(retired);
  return out;
}

// ── statistics ──────────────────────────────────────────────────────────────────

std::vector<buffers::CpuStats> Instance::cpu_stats() const {
  std::vector<buffers::CpuStats> out;
  out.reserve(ncpu_);
  for (uint32_t c = 0; c < ncpu_; ++c) out.push_back(ring_->stats(c));
  return out;
}

EventStats Instance::event_stats(const EventDesc& event) const {
  const detail::EventState* st = state_of(event);
  if (st == nullptr) return {};
  const auto v = counter_sums(st->counters);
  EventStats s;
  s.kept = v[detail::slot::kept_unfiltered] + v[detail::slot::kept_staged] +
           v[detail::slot::kept_direct];
  s.discarded = v[detail::slot::rejected_staged] + v[detail::slot::rejected_direct];
  s.lost = v[detail::slot::lost_unfiltered] + v[detail::slot::lost_staged] +
           v[detail::slot::lost_direct];
  s.soft_discarded = v[detail::slot::soft];
  s.ring_discards = v[detail::slot::rejected_direct];
  s.unfiltered = v[detail::slot::kept_unfiltered] + v[detail::slot::lost_unfiltered];
  s.staged = v[detail::slot::kept_staged] + v[detail::slot::rejected_staged] +
             v[detail::slot::lost_staged];
  s.direct = v[detail::slot::kept_direct] + v[detail::slot::rejected_direct] +
             v[detail::slot::lost_direct];
  s.nested = v[detail::slot::nested];
  s.contended = v[detail::slot::contended];
  s.too_big = v[detail::slot::too_big];
  // Every direct emit of an adaptive instance was chosen by the acceptance
  // average or found its slot busy or too small (fast_path.h), so the
  // chosen ones need no counter of their own. Clamped: while writers run,
  // a nested count may be summed before its outcome.
  if (options_.staging == Staging::adaptive) {
    const uint64_t failed = s.nested + s.contended + s.too_big;
    s.adaptive_direct = s.direct > failed ? s.direct - failed : 0;
  }
  return s;
}

uint64_t Instance::ring_attempts() const {
  std::vector<const EventDesc*> events;
  {
    std::lock_guard lk(mu_);
    for (const auto& st : owned_states_) events.push_back(st->desc);
  }
  uint64_t n = 0;
  for (const EventDesc* d : events) n += event_stats(*d).ring_attempts();
  return n;
}

std::vector<Cmdline> Instance::cmdlines() const {
  std::map<int32_t, std::string> merged;
  for (const Cmdline& c : tracepipe::cmdlines()) merged[c.pid] = c.comm;
  {
    std::lock_guard lk(mu_);
    for (const Cmdline& c : extra_cmdlines_) merged[c.pid] = c.comm;
  }
  std::vector<Cmdline> out;
  out.reserve(merged.size());
  for (auto& [pid, comm] : merged) out.push_back({pid, comm});
  return out;
}

std::filesystem::path Instance::flight_path() const {
  return flight_ ? flight_->path() : std::filesystem::path();
}

void Instance::add_cmdline(int32_t pid, std::string_view comm) {
  std::lock_guard lk(mu_);
  if (flight_) (void)flight_->add_cmdline(pid, comm);
  for (Cmdline& c : extra_cmdlines_)
    if (c.pid == pid) {
      c.comm = std::string(comm);
      return;
    }
  extra_cmdlines_.push_back({pid, std::string(comm)});
}

}  // namespace tracepipe
