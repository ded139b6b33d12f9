// Sideband: live task_comm / task_exit records, renames through the API, and
// on-demand state synthesis. The picture and the invariants (S1..S4) are at
// the top of core/sideband/sideband.h; the labels below name the steps.
#include "tracepipe/core/sideband/sideband.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include "tracepipe/core/instance/grace_period.h"
#include "tracepipe/core/sideband/sideband_hooks.h"
#include "tracepipe/core/sideband/testing/hooks.h"

namespace tracepipe {

namespace {

// ── The sideband lock (S2) ─────────────────────────────────────────────────────
// Never destroyed: threads may exit (H2) after static destructors ran.
std::mutex& sb_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
// True while this thread holds sb_mutex: a sideband call made with the lock
// already held by the same thread (the registration hook firing inside
// synthesis or a rename) does not take it again.
thread_local constinit bool tl_holding = false;

class SidebandLock {
 public:
  SidebandLock() : owned_(!tl_holding) {
    if (owned_) {
      sb_mutex().lock();
      tl_holding = true;
    }
  }
  ~SidebandLock() {
    if (owned_) {
      tl_holding = false;
      sb_mutex().unlock();
    }
  }
  SidebandLock(const SidebandLock&) = delete;
  SidebandLock& operator=(const SidebandLock&) = delete;

 private:
  bool owned_;
};

// Blocks every signal of the calling thread for the scope (S1).
class BlockSignals {
 public:
  BlockSignals() noexcept {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old_);
  }
  ~BlockSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  BlockSignals(const BlockSignals&) = delete;
  BlockSignals& operator=(const BlockSignals&) = delete;

 private:
  sigset_t old_{};
};

std::atomic<uint32_t> g_round{0};
std::atomic<uint64_t> g_hook_calls{0};
std::atomic<bool> g_known_used{false};

// tid -> the name tracepipe last wrote for it (CommSource::tracepipe).
// Under sb_mutex; never destroyed (see sb_mutex).
std::unordered_map<int32_t, Comm>& known() {
  static auto* m = new std::unordered_map<int32_t, Comm>;
  return *m;
}
void remember(int32_t tid, const Comm& c) {
  known()[tid] = c;
  g_known_used.store(true, std::memory_order_relaxed);
}

#ifdef TRACEPIPE_TEST_HOOKS
std::mutex g_rename_hook_mu;
std::function<void(RenameStep, int32_t)> g_rename_hook;

std::function<void(RenameStep, int32_t)> rename_hook() {
  std::lock_guard lk(g_rename_hook_mu);
  return g_rename_hook;
}
#else
// Without test hooks: an empty function, which the calls below test and skip.
std::function<void(RenameStep, int32_t)> rename_hook() { return {}; }
#endif

int32_t self_tid() noexcept { return static_cast<int32_t>(gettid()); }
int32_t self_pid() noexcept { return static_cast<int32_t>(getpid()); }

std::string_view kernel_comm_of_self(char (&buf)[17]) noexcept {
  std::memset(buf, 0, sizeof buf);
  if (prctl(PR_GET_NAME, buf, 0, 0, 0) != 0) buf[0] = '\0';
  return {buf, strnlen(buf, 15)};
}

// Emits Decl into every instance that has `d` enabled, each through its own
// filter (the fan-out of EventDecl::trace, for descriptors registered with
// kernel-like print fmts).
template <class Decl, class... A>
void fan_out(const EventDesc& d, A... a) noexcept {
  if (d.subscribers_for_fast_path().load(std::memory_order_relaxed) == nullptr) return;  // S4
  ThreadContext* ctx = thread_context();
  if (ctx == nullptr) {
    count_unregistered_drop();
    return;
  }
  WriterScope scope(*ctx);  // keeps the list alive; the nesting level of every emit below
  const detail::Subscribers* subs = d.subscribers_for_fast_path().load(std::memory_order_acquire);
  if (subs == nullptr) return;
  const uint32_t size = Decl::record_size(a...);
  auto fill = [&](std::span<std::byte> rec) noexcept { Decl::write_fields(rec.data(), a...); };
  for (uint32_t i = 0; i < subs->count; ++i)
    detail::InstanceAccess::emit_to_state_in_scope(*subs->states[i], *ctx, scope.depth(), size,
                                                   fill);
}

// Emits Decl into one instance.
template <class Decl, class... A>
EmitResult emit_one(Instance& inst, const EventDesc& d, A... a) noexcept {
  auto fill = [&](std::span<std::byte> rec) noexcept { Decl::write_fields(rec.data(), a...); };
  return inst.emit_fill(d, Decl::record_size(a...), fill);
}

SidebandEvents events_for(const Instance& inst) {
  if (&inst.registry() == &Registry::global()) return SidebandEvents::global();
  return SidebandEvents::register_in(inst.registry());
}

// clone(2) flags a thread that is not its group's leader must have been
// created with (CLONE_THREAD requires CLONE_SIGHAND, which requires CLONE_VM).
constexpr uint64_t kThreadCloneFlags =
    0x00000100 /*CLONE_VM*/ | 0x00000800 /*CLONE_SIGHAND*/ | 0x00010000 /*CLONE_THREAD*/;

}  // namespace

// ── Thread observer (sideband_hooks.h) ──────────────────────────────────────────────

void sideband_thread_registered(ThreadContext& ctx) noexcept {
  g_hook_calls.fetch_add(1, std::memory_order_relaxed);
  const EventDesc& d = SidebandEvents::global().task_comm();
  if (d.subscribers_for_fast_path().load(std::memory_order_relaxed) == nullptr) return;  // S4
  try {
    SidebandLock lk;        // (H1.a) ordered against renames and synthesis (S2)
    refresh_thread_comm();  // (H1.b) the name now, under the lock
    const Comm c = Comm::from(ctx.comm_view());
    remember(ctx.tid, c);
    fan_out<sideband::TaskComm>(d, self_pid(), ctx.tid, c.view(), std::string_view{},
                                static_cast<uint8_t>(CommReason::first_write));  // (H1.c)
  } catch (...) {
    // Out of memory while refreshing the name table: the record is dropped,
    // registration goes on.
  }
}

void sideband_thread_exiting(ThreadContext& ctx) noexcept {
  g_hook_calls.fetch_add(1, std::memory_order_relaxed);
  const EventDesc& d = SidebandEvents::global().task_exit();
  const bool listening = d.subscribers_for_fast_path().load(std::memory_order_relaxed) != nullptr;
  if (!listening && !g_known_used.load(std::memory_order_relaxed)) return;  // S4
  try {
    SidebandLock lk;
    known().erase(ctx.tid);
    if (listening) fan_out<sideband::TaskExit>(d, self_pid(), ctx.tid, ctx.comm_view());
  } catch (...) {
  }
}

void install_sideband_thread_observer() noexcept {
  static constexpr detail::ThreadObserver kObserver{&sideband_thread_registered,
                                                    &sideband_thread_exiting};
  detail::set_thread_observer(&kObserver);
}

uint64_t sideband_hook_calls_for_testing() noexcept {
  return g_hook_calls.load(std::memory_order_relaxed);
}

#ifdef TRACEPIPE_TEST_HOOKS
void set_rename_hook_for_testing(std::function<void(RenameStep, int32_t)> hook) {
  std::lock_guard lk(g_rename_hook_mu);
  g_rename_hook = std::move(hook);
}
#endif

// ── Renames (S1) ────────────────────────────────────────────────────────────────

std::error_code set_thread_name(std::string_view name) {
  const auto hook = rename_hook();
  const int32_t tid = self_tid();
  if (hook) hook(RenameStep::entered, tid);
  prepare_thread();  // a first_write record (old name) precedes the rename record
  const Comm want = Comm::from(name);
  BlockSignals blocked;  // (R-a) no event of this thread between (R-c) and (R-e)
  SidebandLock lk;       // (R-b) against synthesis (S2)
  if (hook) hook(RenameStep::locked, tid);
  char oldbuf[17];
  const Comm old = Comm::from(kernel_comm_of_self(oldbuf));
  if (prctl(PR_SET_NAME, want.bytes.data(), 0, 0, 0) != 0)  // (R-c) the kernel's name
    return {errno, std::generic_category()};
  refresh_thread_comm();  // (R-d) tracepipe's cached name: COMM filter, saved_cmdlines
  if (hook) hook(RenameStep::renamed, tid);
  remember(tid, want);
  fan_out<sideband::TaskComm>(SidebandEvents::global().task_comm(), self_pid(), tid, want.view(),
                              old.view(),
                              static_cast<uint8_t>(CommReason::rename));  // (R-e)
  if (hook) hook(RenameStep::written, tid);
  return {};
}

std::error_code set_thread_name(int32_t tid, std::string_view name) {
  if (tid <= 0) return std::make_error_code(std::errc::invalid_argument);
  if (tid == self_tid()) return set_thread_name(name);
  const auto hook = rename_hook();
  if (hook) hook(RenameStep::entered, tid);
  prepare_thread();
  const Comm want = Comm::from(name);
  SidebandLock lk;
  if (hook) hook(RenameStep::locked, tid);
  const std::optional<Comm> old = read_thread_comm(tid);
  if (!old) return std::make_error_code(std::errc::no_such_process);
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/comm", static_cast<int>(tid));
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? std::make_error_code(std::errc::no_such_process)
                           : std::error_code(errno, std::generic_category());
  const std::string_view v = want.view();
  const ssize_t n = ::write(fd, v.data(), v.size());
  const int err = errno;
  ::close(fd);
  if (n < 0 || static_cast<size_t>(n) != v.size())
    return n < 0 ? std::error_code(err, std::generic_category())
                 : std::make_error_code(std::errc::io_error);
  if (hook) hook(RenameStep::renamed, tid);
  remember(tid, want);
  fan_out<sideband::TaskComm>(SidebandEvents::global().task_comm(), self_pid(), tid, want.view(),
                              old->view(), static_cast<uint8_t>(CommReason::rename));
  if (hook) hook(RenameStep::written, tid);
  return {};
}

void announce_thread() {
  prepare_thread();
  SidebandLock lk;
  refresh_thread_comm();
  ThreadContext* ctx = thread_context();
  if (ctx == nullptr) return;
  const Comm c = Comm::from(ctx->comm_view());
  remember(ctx->tid, c);
  fan_out<sideband::TaskComm>(SidebandEvents::global().task_comm(), self_pid(), ctx->tid, c.view(),
                              std::string_view{}, static_cast<uint8_t>(CommReason::announce));
}

void note_mapping(const ProcMapping& m) {
  prepare_thread();
  SidebandLock lk;
  fan_out<sideband::Mmap>(SidebandEvents::global().mmap(), self_pid(), self_tid(), 0u, m.prot,
                          m.flags, m.maj, m.min, std::string_view(m.path), m.start, m.len(),
                          m.pgoff, m.ino);
}

// ── Enabling ────────────────────────────────────────────────────────────────────

SynthesisReport enable_sideband(Instance& instance, bool synthesize,
                                const SynthesisOptions& options) {
  const SidebandEvents ev = events_for(instance);
  for (const EventDesc* d : ev.by_kind) instance.enable(*d, true);
  if (!synthesize) return {};
  return synthesize_sideband(instance, options);
}

void disable_sideband(Instance& instance) {
  const SidebandEvents ev = events_for(instance);
  for (const EventDesc* d : ev.by_kind) instance.enable(*d, false);
}

// ── State synthesis (S2, S3) ───────────────────────────────────────────────────

namespace {

// Records overwritten so far on one CPU. RingBufferBase::stats() walks the
// whole buffer (O(buffer)); an O(1) counter read would do (asked of buffers/).
uint64_t overrun_of(const Instance& inst, uint32_t cpu) { return inst.cpu_stats(cpu).overrun; }

// Counts each attempt's outcome into the report (S3), and notes the overrun
// count of each CPU the first time synthesis writes there (overwrite mode).
struct Tally {
  SynthesisReport& rep;
  Instance& inst;
  std::vector<std::optional<uint64_t>>& overrun_before;  // per CPU; set once touched
  bool overwrite;

  template <class Decl, class... A>
  EmitResult emit(uint64_t& lost_kind, const EventDesc& d, A... a) {
    if (overwrite) {
      auto& before = overrun_before[current_cpu() % overrun_before.size()];
      if (!before)
        before = overrun_of(inst, static_cast<uint32_t>(&before - overrun_before.data()));
    }
    const EmitResult r = emit_one<Decl>(inst, d, a...);
    ++rep.attempted;
    switch (r) {
      case EmitResult::kept:
        ++rep.kept;
        break;
      case EmitResult::discarded:
        ++rep.discarded;
        break;
      case EmitResult::lost:
        ++rep.lost;
        ++lost_kind;
        break;
      case EmitResult::disabled:
        ++rep.disabled;
        break;
    }
    return r;
  }
};

}  // namespace

SynthesisReport synthesize_sideband(Instance& inst, const SynthesisOptions& o) {
  using namespace sideband;
  SynthesisReport rep;
  prepare_thread();  // our own first_write record is written before the lock
  const SidebandEvents ev = events_for(inst);
  std::vector<std::optional<uint64_t>> overrun_before(inst.cpus());
  auto hook = [&](SynthesisStep s, int32_t tid) {
    if (o.hook) o.hook(s, tid);
  };
  const int32_t pid = self_pid();

  SidebandLock lk;  // (Y1) S2: renames, first writes and exits wait until synth_done
  const auto t0 = std::chrono::steady_clock::now();
  rep.synth = g_round.fetch_add(1, std::memory_order_relaxed) + 1;
  hook(SynthesisStep::locked, 0);
  Tally t{rep, inst, overrun_before, inst.options().mode == BufferMode::overwrite};

  if (o.process) {  // (Y2) the process image
    const std::string exe = read_exe_path();
    if (exe.empty() && rep.error.empty()) rep.error = "cannot read /proc/self/exe";
    t.emit<ProcessExec>(rep.lost_other, ev.process_exec(), std::string_view(exe), pid, pid,
                        rep.synth);
  }

  if (o.threads) {  // (Y3) one task_newtask per live thread, name read under the lock
    ThreadList tl = list_threads();
    if (tl.error) {
      if (rep.error.empty()) rep.error = "cannot list /proc/self/task: " + tl.error.message();
      // No /proc (a chroot, a sandbox): state what tracepipe knows, the
      // threads it named itself (report stays incomplete through `error`).
      for (const auto& [tid, c] : known()) tl.tids.push_back(tid);
      std::sort(tl.tids.begin(), tl.tids.end());
    }
    const int dirfd = ::open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (const int32_t tid : tl.tids) {
      std::optional<Comm> c;
      if (o.comm_source == CommSource::tracepipe || tl.error) {
        if (auto it = known().find(tid); it != known().end()) c = it->second;
      }
      if (!c) c = read_thread_comm(tid, dirfd);
      if (!c) {
        ++rep.threads_gone;  // exited between the listing and the read
        continue;
      }
      hook(SynthesisStep::comm_read, tid);
      ++rep.threads;
      t.emit<TaskNewtask>(rep.lost_threads, ev.task_newtask(), pid, tid, int32_t{0}, rep.synth,
                          c->view(), tid == pid ? uint64_t{0} : kThreadCloneFlags);
      remember(tid, *c);
      hook(SynthesisStep::thread_written, tid);
    }
    if (dirfd >= 0) ::close(dirfd);
    // Forget threads that are gone (their tid may be reused by a thread whose
    // name tracepipe never wrote): keeps `known` as small as the process.
    if (!tl.error)
      std::erase_if(known(), [&](const auto& kv) {
        return !std::binary_search(tl.tids.begin(), tl.tids.end(), kv.first);
      });
  }

  if (o.mappings) {  // (Y4) one mmap per /proc/self/maps line
    const ProcRead pr = read_proc_file("/proc/self/maps");
    if (pr.error && rep.error.empty())
      rep.error = "cannot read /proc/self/maps: " + pr.error.message();
    const MapsParse mp = parse_proc_maps(pr.text);
    rep.maps_malformed = mp.malformed;
    hook(SynthesisStep::maps_read, 0);
    for (const ProcMapping& m : mp.mappings) {
      ++rep.mappings;
      t.emit<Mmap>(rep.lost_mappings, ev.mmap(), pid, pid, rep.synth, m.prot, m.flags, m.maj, m.min,
                   std::string_view(m.path), m.start, m.len(), m.pgoff, m.ino);
    }
  }

  // (Y5) synth_done: what a reader needs to check the round (S3).
  const uint64_t kept_before = rep.kept;
  const uint32_t lost32 = rep.lost > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(rep.lost);
  rep.done_kept = t.emit<SynthDone>(rep.lost_other, ev.synth_done(), rep.synth, rep.threads,
                                    rep.mappings, lost32, kept_before) == EmitResult::kept;
  hook(SynthesisStep::done_written, 0);
  for (uint32_t c = 0; c < overrun_before.size(); ++c)
    if (overrun_before[c]) rep.overwritten += overrun_of(inst, c) - *overrun_before[c];
  rep.elapsed_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  return rep;
}

std::string SynthesisReport::summary() const {
  std::string s = "synth " + std::to_string(synth) + ": " + std::to_string(threads) + " threads, " +
                  std::to_string(mappings) + " mappings; " + std::to_string(kept) +
                  " records kept, " + std::to_string(lost) + " lost";
  if (lost != 0)
    s += " (threads " + std::to_string(lost_threads) + ", mappings " +
         std::to_string(lost_mappings) + ", other " + std::to_string(lost_other) + ")";
  if (discarded != 0) s += ", " + std::to_string(discarded) + " discarded by filters";
  if (disabled != 0) s += ", " + std::to_string(disabled) + " not enabled";
  if (overwritten != 0) s += ", " + std::to_string(overwritten) + " overwritten while writing";
  if (threads_gone != 0) s += ", " + std::to_string(threads_gone) + " threads exited meanwhile";
  if (!done_kept) s += ", synth_done not written";
  if (!error.empty()) s += "; error: " + error;
  s += complete() ? " [complete]" : " [INCOMPLETE]";
  return s;
}

}  // namespace tracepipe
