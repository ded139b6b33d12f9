// Instance: construction and the control plane (enable, filters, config).
// The write path is inline in core/instance/fast_path.h.
#include "tracepipe/core/instance/instance.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <new>
#include <stdexcept>

#include "tracepipe/core/instance/adaptive_average.h"
#include "tracepipe/core/flight/flight_file.h"
#include "tracepipe/filters/parser.h"

namespace tracepipe {

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
  const size_t bytes = sizeof(detail::Subscribers) + (list.size() - 1) * sizeof(detail::EventState*);
  auto* s = static_cast<detail::Subscribers*>(::operator new(bytes));
  s->count = static_cast<uint32_t>(list.size());
  std::copy(list.begin(), list.end(), s->states);
  return s;
}

void free_subscribers(const detail::Subscribers* s) { ::operator delete(const_cast<detail::Subscribers*>(s)); }

// "0" clears a filter (filters::clears_filter: the kernel's whitespace and
// its cut at a NUL). A blank string is not a clear: the kernel rejects it
// (EINVAL, "Error" at position 0), and so does filters::compile, so a config
// value that went missing cannot remove filtering silently.
using filters::clears_filter;

// What filter() shows: the text the kernel keeps and shows in its filter file.
std::string shown(std::string_view expr) { return std::string(filters::kernel_command(expr)); }

// The kernel's error in the filter file of an event a system filter could not
// be set on (process_system_preds): the event's own error is in
// SystemFilterResult::rejected.
filters::FilterError subsystem_error() { return {filters::FilterErr::bad_subsys_filter, 0, EINVAL, {}}; }

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

namespace {
std::atomic<detail::ConfigTriggersFn>& config_triggers_hook() {
  static std::atomic<detail::ConfigTriggersFn> fn{nullptr};
  return fn;
}
}  // namespace

void detail::set_config_triggers_hook(ConfigTriggersFn fn) noexcept {
  config_triggers_hook().store(fn, std::memory_order_release);
}

// Objects unpublished under the instance mutex, freed together after one
// grace period (so that a batch of changes costs one synchronize()).
struct Instance::Retired {
  std::vector<std::shared_ptr<const filters::Program>> programs;
  std::vector<const detail::Subscribers*> subscribers;
  std::vector<std::shared_ptr<detail::TriggerHook>> triggers;
  bool empty() const { return programs.empty() && subscribers.empty() && triggers.empty(); }
};

Instance::Instance(InstanceOptions options, Registry& registry)
    : options_(std::move(options)),
      registry_(registry),
      clock_(trace_clock(options_.clock)),
      stager_(options_.staging) {
  if (!(options_.adaptive_threshold >= 0.0 && options_.adaptive_threshold <= 1.0))
    throw std::invalid_argument("adaptive_threshold must be between 0 and 1");
  if (options_.buffer_size_kb == 0) throw std::invalid_argument("buffer_size_kb must be at least 1");
  ncpu_ = options_.cpus != 0 ? options_.cpus : possible_cpus();
  adaptive_threshold_ = static_cast<uint64_t>(options_.adaptive_threshold * 65536.0);
  buffers::RingBufferConfig rc;
  rc.cpus = ncpu_;
  rc.size_per_cpu = static_cast<size_t>(options_.buffer_size_kb) * 1024u;
  rc.subbuf_size = static_cast<size_t>(options_.subbuf_size_kb) * 1024u;
  // `local` and `perf` are read inline by the ring (no call per reserve).
  const buffers::FunctionClock clk =
      options_.external_time ? buffers::FunctionClock(&external_clock) : ring_clock(options_.clock);
  switch (options_.writers) {
    case WriterMode::automatic:
      cpu_local_ = options_.cpus == 0 && !options_.external_time && buffers::detail::rseq_usable();
      break;
    case WriterMode::any_cpu: cpu_local_ = false; break;
    case WriterMode::cpu_local:
      if (options_.cpus != 0)
        throw std::invalid_argument("writers = cpu_local needs one buffer per possible CPU (cpus = 0)");
      if (!buffers::detail::rseq_usable())
        throw std::invalid_argument("writers = cpu_local needs rseq and membarrier RSEQ, unavailable here");
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
  using buffers::FunctionClock, buffers::NoHooks, buffers::OverflowMode, buffers::RingBuffer, buffers::Writers;
  const bool ow = options_.mode == BufferMode::overwrite;
  ring_kind_ = cpu_local_ ? (ow ? RingKind::overwrite_local : RingKind::drop_newest_local)
                          : (ow ? RingKind::overwrite_any : RingKind::drop_newest_any);
  if (options_.mode == BufferMode::overwrite) {
    if (cpu_local_)
      ring_ = std::make_unique<RingBuffer<OverflowMode::overwrite, FunctionClock, NoHooks, Writers::cpu_local>>(rc, clk);
    else
      ring_ = std::make_unique<RingBuffer<OverflowMode::overwrite>>(rc, clk);
  } else {
    if (cpu_local_)
      ring_ = std::make_unique<RingBuffer<OverflowMode::drop_newest, FunctionClock, NoHooks, Writers::cpu_local>>(rc, clk);
    else
      ring_ = std::make_unique<RingBuffer<OverflowMode::drop_newest>>(rc, clk);
  }
  states_.reset(new std::atomic<detail::EventState*>[Registry::kMaxEvents]());
  if (flight_) flight_->set_live();
}

buffers::Reservation Instance::reserve_any_cpu(uint32_t cpu, uint32_t size) noexcept {
  using buffers::OverflowMode, buffers::RingBuffer;
  if (ring_kind_ == RingKind::overwrite_any) return static_cast<RingBuffer<OverflowMode::overwrite>&>(*ring_).reserve(cpu, size);
  return static_cast<RingBuffer<OverflowMode::drop_newest>&>(*ring_).reserve(cpu, size);
}

std::unique_ptr<Instance> Instance::from_config(const InstanceConfig& config, Registry& registry) {
  std::unique_ptr<Instance> inst;
  try {
    inst = std::make_unique<Instance>(config.options, registry);
  } catch (const std::invalid_argument& e) {
    // parse_config already refuses what it can see; this names the file for
    // options changed after parsing (e.g. `cpus` set by the caller), at the
    // writers key when that is the option refused.
    if (config.options.writers == WriterMode::cpu_local && config.writers_where.line != 0)
      throw ConfigError(config.file, config.writers_where.line, config.writers_where.key, e.what());
    throw ConfigError(config.file, 0, "", e.what());
  }
  inst->apply(config);
  return inst;
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
    throw std::invalid_argument("event " + event.full_name() + " belongs to another registry than instance " +
                                name());
  if (detail::EventState* st = states_[event.index()].load(std::memory_order_relaxed)) return *st;
  auto st = std::make_unique<detail::EventState>();
  st->desc = &event;
  st->type = event.id();
  st->instance = this;
  st->counters = allocate_counter_group();
  if (options_.staging == Staging::per_thread) st->flags.store(detail::EventState::kThreadStaging, std::memory_order_relaxed);
  if (options_.staging == Staging::per_cpu) st->flags.store(detail::EventState::kCpuStaging, std::memory_order_relaxed);
  if (options_.staging == Staging::adaptive)  // starts staging: the rate is unknown
    st->flags.store(detail::EventState::kThreadStaging | detail::EventState::kAdaptive, std::memory_order_relaxed);
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

// Adaptive staging, the two flips (fast_path.h calls them; the writer's own
// counter group holds its evidence, so no lock and no shared store but the
// flip itself). A flip is an atomic RMW of the flags word, so it never undoes
// a control change made meanwhile, and it keeps the release sequence that
// publishes a program with kFiltered.
namespace {
// Starts a thread's staged-check window at its current staged counts.
void restart_window(std::atomic<uint64_t>* c, uint64_t kept, uint64_t rejected) noexcept {
  c[detail::slot::adaptive_kept_mark].store(kept, std::memory_order_relaxed);
  c[detail::slot::adaptive_rejected_mark].store(rejected, std::memory_order_relaxed);
}
}  // namespace

// The stack lane's accept (fast_path.h: stage_on_stack): the staged path's
// (R7), from the caller's frame instead of a slot.
void Instance::commit_from_stack(detail::EventState& st, uint32_t flags, ThreadContext& ctx,
                                 std::span<const std::byte> rec) noexcept {
  auto& c = thread_counters(ctx, st.counters).v;
  uint32_t wcpu = 0;  // cpu_local rings read the CPU themselves
  if (!cpu_local_) {
    wcpu = current_cpu();
    if (wcpu >= ncpu_) [[unlikely]]
      wcpu %= ncpu_;
  }
  const auto size = static_cast<uint32_t>(rec.size());
  const buffers::Reservation rr = ring_reserve(wcpu, size);  // stamped here (F1)
  if (!rr) [[unlikely]] {
    counter_add(c[detail::slot::lost_staged]);
    return;
  }
  detail::copy_record(rr.payload().data(), rec.data(), size);
  ring_commit(rr);
  counter_add(c[detail::slot::kept_staged]);
  if ((flags & detail::EventState::kAdaptive) != 0 &&
      (c[detail::slot::kept_staged].load(std::memory_order_relaxed) & 31) == 0) [[unlikely]]
    adaptive_check_staged(st, c);
}

// The stack lane's filter when the program has no inline verdict: the
// context (CPU, comm) as the staged path's EvalContextMaker makes it.
void Instance::filter_from_stack(const filters::Program& prog, detail::EventState& st, uint32_t flags,
                                 ThreadContext& ctx, std::span<const std::byte> rec) noexcept {
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

// Called only for adaptive events (the lane tests kAdaptive, which is set
// when the event's state is made and never cleared).
void Instance::adaptive_check_staged(detail::EventState& st, std::atomic<uint64_t>* c) noexcept {
  const uint64_t kept = c[detail::slot::kept_staged].load(std::memory_order_relaxed);
  const uint64_t rejected = c[detail::slot::rejected_staged].load(std::memory_order_relaxed);
  const uint64_t dk = kept - c[detail::slot::adaptive_kept_mark].load(std::memory_order_relaxed);
  const uint64_t dr = rejected - c[detail::slot::adaptive_rejected_mark].load(std::memory_order_relaxed);
  // The call comes at every 32nd accept of the thread's lifetime, but the
  // window restarts when staging comes back: judge no fewer than 32 accepts
  // (else one accept after a flip back could send the event direct again).
  if (dk < 32) return;
  restart_window(c, kept, rejected);
  const uint64_t rate = (dk << 16) / (dk + dr);  // in 1/65536
  if (rate <= adaptive_threshold_) return;
  // Mostly accepted: go direct, a new period; this thread's moving average
  // starts from its window, other threads' from "all accepted".
  uint32_t f = st.flags.load(std::memory_order_relaxed);
  uint32_t nf;
  do {
    if ((f & detail::EventState::kThreadStaging) == 0) return;  // another thread flipped it
    nf = (f & ~detail::EventState::kThreadStaging) + (1u << detail::EventState::kGenShift);
  } while (!st.flags.compare_exchange_weak(f, nf, std::memory_order_relaxed));
  c[detail::slot::adaptive_score].store(detail::AdaptiveScore::pack(static_cast<int64_t>(rate),
                                                              c[detail::slot::kept_direct].load(std::memory_order_relaxed),
                                                              nf >> detail::EventState::kGenShift),
                                std::memory_order_relaxed);
}

// A reject of an adaptive event gone direct (fast_path.h, after its discard).
// The thread's average moves only here: the accepts since its word was set
// (this thread's kept_direct count minus the word's mark) are caught up
// first, in one table load and multiply (core/instance/adaptive_average.h), then the
// reject's step, so an accepted direct emit pays nothing for the policy.
// Only this thread writes the word, but a signal handler's emit of the same
// event may run anywhere in here: the word is
// read before the count (so its mark is never past it) and replaced by a
// compare-exchange, which fails if a handler's reject replaced it meanwhile,
// and then the step is made again from the handler's word. So every step
// counts, in an order the emits could have had (a handler's accept after
// the count was read counts at the next reject). A locked instruction, on
// rejects only.
void Instance::adaptive_direct_rejected(detail::EventState& st, std::atomic<uint64_t>* c) noexcept {
  std::atomic<uint64_t>& score = c[detail::slot::adaptive_score];
  uint64_t word = score.load(std::memory_order_relaxed);
  uint64_t next;
  do {
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the word before the count, as a handler sees them
    const uint64_t kept = c[detail::slot::kept_direct].load(std::memory_order_relaxed);
    const uint64_t period = st.flags.load(std::memory_order_relaxed) >> detail::EventState::kGenShift;
    next = detail::adaptive_score_after_reject(word, kept, period);
  } while (!score.compare_exchange_weak(word, next, std::memory_order_relaxed));
  if (static_cast<uint64_t>(detail::AdaptiveScore::unpack(next).s) <= adaptive_threshold_)
    adaptive_back_to_staging(st, c);
}

void Instance::adaptive_back_to_staging(detail::EventState& st, std::atomic<uint64_t>* c) noexcept {
  // A fresh window for this thread's next check.
  restart_window(c, c[detail::slot::kept_staged].load(std::memory_order_relaxed),
                 c[detail::slot::rejected_staged].load(std::memory_order_relaxed));
  st.flags.fetch_or(detail::EventState::kThreadStaging, std::memory_order_relaxed);
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

void Instance::unsubscribe_locked(detail::EventState& st, Retired& retired) { subscribe_locked(st, false, retired); }

void Instance::install_program_locked(detail::EventState& st, std::shared_ptr<const filters::Program> program,
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

void Instance::enable_locked(const EventDesc& event, bool on, Retired& retired, std::optional<bool> soft) {
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
  const bool enabled = (st.flags.load(std::memory_order_relaxed) & detail::EventState::kEnabled) != 0;
  if (get) {
    if (++st.soft_mode_refs > 1 || enabled) return;
    set_flag_locked(st, detail::EventState::kSoftDisabled, true);  // before it is armed
    set_flag_locked(st, detail::EventState::kEnabled, true);
    subscribe_locked(st, true, retired);
  } else {
    if (st.soft_mode_refs == 0 || --st.soft_mode_refs > 0) return;
    if (enabled && (st.flags.load(std::memory_order_relaxed) & detail::EventState::kSoftDisabled) != 0) {
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
  return st != nullptr && (st->flags.load(std::memory_order_acquire) & detail::EventState::kEnabled) != 0;
}

void Instance::set_soft_disabled(const EventDesc& event, bool soft) {
  std::lock_guard lk(mu_);
  set_flag_locked(state_locked(event), detail::EventState::kSoftDisabled, soft);
}

bool Instance::soft_disabled(const EventDesc& event) const noexcept {
  const detail::EventState* st = state_of(event);
  return st != nullptr && (st->flags.load(std::memory_order_acquire) & detail::EventState::kSoftDisabled) != 0;
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
  if (events.empty()) throw std::invalid_argument("no events in system '" + std::string(system) + "'");
  SystemFilterResult out;
  std::vector<filters::CompileResult> compiled;
  const bool clear = clears_filter(expr);
  if (!clear)
    for (const EventDesc* d : events) compiled.push_back(filters::compile(expr, d->filter_fields()));
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

void Instance::apply(const InstanceConfig& config) {
  // Resolve and compile everything first, so that an error leaves the
  // instance as it was.
  struct Planned {
    const EventDesc* event;
    const EventSettings* settings;
    std::optional<filters::CompileResult> program;  // nullopt: no filter key; ok() false never kept
    bool clear = false;
  };
  std::vector<Planned> plan;
  const auto filter_failure = [&](const EventSettings& s, const EventDesc& d, const filters::FilterError& e) {
    throw ConfigError(s.filter_where.file, s.filter_where.line, s.filter_where.key,
                      "filter rejected for " + d.full_name() + ": parse_error: " + std::string(e.message()) +
                          "\n" + e.render(*s.filter));
  };
  for (const EventSettings& s : config.systems) {
    const auto events = registry_.system_events(s.pattern);
    if (events.empty()) throw ConfigError(s.where.file, s.where.line, s.where.key, "no events in system '" + s.pattern + "'");
    const size_t first = plan.size();
    bool any_accepts = false;
    for (const EventDesc* d : events) {
      Planned p{d, &s, std::nullopt, false};
      if (s.filter) {
        if (clears_filter(*s.filter)) {
          p.clear = true;
          any_accepts = true;
        } else {
          p.program = filters::compile(*s.filter, d->filter_fields());
          // Kernel semantics: events without the fields stay unfiltered.
          if (!p.program->ok()) p.clear = true;
          any_accepts = any_accepts || p.program->ok();
        }
      }
      plan.push_back(std::move(p));
    }
    // The kernel takes such a write and leaves every event of the system
    // unfiltered, the error only in each event's filter file. In a config
    // file that is a typo nobody would see: refuse it, showing the first
    // event's error (as `tracepipe replay -F SYSTEM: ...` does).
    if (s.filter && !any_accepts) {
      const EventDesc& d = *plan[first].event;
      const filters::FilterError& e = plan[first].program->error();
      throw ConfigError(s.filter_where.file, s.filter_where.line, s.filter_where.key,
                        "no event of system '" + s.pattern + "' accepts the filter (first, " + d.full_name() +
                            ": parse_error: " + std::string(e.message()) + ")\n" + e.render(*s.filter));
    }
  }
  for (const EventSettings& s : config.events) {
    const auto events = registry_.match(s.pattern);
    if (events.empty()) {
      // Synthetic events are defined by the triggers library, after this pass.
      if (!config.synthetic_events.empty() && split_event_name(s.pattern).system == "synthetic") continue;
      throw ConfigError(s.where.file, s.where.line, s.where.key, "no event matches '" + s.pattern + "'");
    }
    for (const EventDesc* d : events) {
      Planned p{d, &s, std::nullopt, false};
      if (s.filter) {
        if (clears_filter(*s.filter)) {
          p.clear = true;
        } else {
          p.program = filters::compile(*s.filter, d->filter_fields());
          if (!p.program->ok()) filter_failure(s, *d, p.program->error());
        }
      }
      plan.push_back(std::move(p));
    }
  }
  std::unique_lock lk(mu_);
  Retired retired;
  for (Planned& p : plan) {
    detail::EventState& st = state_locked(*p.event);
    const EventSettings& s = *p.settings;
    if (s.filter) {
      if (p.clear && p.program && !p.program->ok()) {
        install_program_locked(st, nullptr, "", retired);
        st.filter_error = subsystem_error();
      } else if (p.clear) {
        install_program_locked(st, nullptr, "", retired);
        st.filter_error.reset();
      } else {
        install_program_locked(st, p.program->program(), shown(*s.filter), retired);
        st.filter_error.reset();
      }
    }
    if (s.enable) enable_locked(*p.event, *s.enable, retired, s.soft_disable);
    else if (s.soft_disable) set_flag_locked(st, detail::EventState::kSoftDisabled, *s.soft_disable);
  }
  reclaim(retired);
  lk.unlock();
  // Triggers and synthetic events (core/triggers) come through the hook.
  const ConfigSource* needs = config.synthetic_events.empty() ? nullptr : &config.synthetic_where;
  for (const EventSettings& s : config.events)
    if (needs == nullptr && !s.triggers.empty()) needs = &s.trigger_where;
  if (needs != nullptr) {
    const detail::ConfigTriggersFn fn = config_triggers_hook().load(std::memory_order_acquire);
    if (fn == nullptr)
      throw ConfigError(needs->file, needs->line, needs->key,
                        "triggers need the triggers library (link tracepipe::triggers)");
    fn(*this, config);
  }
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
  s.kept = v[detail::slot::kept_unfiltered] + v[detail::slot::kept_staged] + v[detail::slot::kept_direct];
  s.discarded = v[detail::slot::rejected_staged] + v[detail::slot::rejected_direct];
  s.lost = v[detail::slot::lost_unfiltered] + v[detail::slot::lost_staged] + v[detail::slot::lost_direct];
  s.soft_discarded = v[detail::slot::soft];
  s.ring_discards = v[detail::slot::rejected_direct];
  s.unfiltered = v[detail::slot::kept_unfiltered] + v[detail::slot::lost_unfiltered];
  s.staged = v[detail::slot::kept_staged] + v[detail::slot::rejected_staged] + v[detail::slot::lost_staged];
  s.direct = v[detail::slot::kept_direct] + v[detail::slot::rejected_direct] + v[detail::slot::lost_direct];
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

std::filesystem::path Instance::flight_path() const { return flight_ ? flight_->path() : std::filesystem::path(); }

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
