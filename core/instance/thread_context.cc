#include "tracepipe/core/instance/thread_context.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <new>

namespace tracepipe {
namespace detail {

thread_local constinit ThreadContext* tl_context = nullptr;

namespace {

thread_local constinit bool tl_registering = false;
// SignalScope depth, kept even for unregistered threads: registering (malloc,
// a mutex) is not async-signal-safe, so a handler never registers its thread.
thread_local constinit uint32_t tl_signal_depth = 0;
thread_local constinit bool tl_exited = false;

// Process-wide registry of thread contexts. Never destroyed (threads may exit
// after static destructors ran), hence allocated once and leaked on purpose.
struct Registry {
  std::mutex mu;
  std::vector<ThreadContext*> live;   // registered threads
  std::vector<ThreadContext*> spare;  // contexts of exited threads, zeroed, for reuse
  std::vector<std::array<uint64_t, kGroupSlots>> retired;  // per group: counts of exited threads
  std::vector<uint32_t> free_groups;
  uint32_t next_group = 1;               // group 0 is never handed out
  std::map<int32_t, std::string> comms;  // pid -> comm, every thread ever registered
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::atomic<uint64_t> g_unregistered_drops{0};

void read_comm(ThreadContext& c) {
  char name[17] = {};
  if (prctl(PR_GET_NAME, name, 0, 0, 0) != 0) name[0] = '\0';
  const size_t n = strnlen(name, 15);
  std::memset(c.comm, 0, sizeof c.comm);
  std::memcpy(c.comm, name, n);
  c.comm_len = static_cast<uint8_t>(n);
}

// Adds every counter of `c` to the retired totals and zeroes it, so a spare
// context's window reads zero everywhere. Caller holds mu. Reading a page
// the thread never touched maps the shared zero page: no memory is added.
void fold_counters(Registry& r, ThreadContext& c) {
  for (uint32_t group = 1; group < r.retired.size(); ++group) {
    for (uint32_t s = 0; s < kGroupSlots; ++s) {
      std::atomic<uint64_t>& slot = c.groups[group].v[s];
      const uint64_t v = slot.load(std::memory_order_relaxed);
      if (v == 0) continue;
      r.retired[group][s] += v;
      slot.store(0, std::memory_order_relaxed);
    }
  }
}

constexpr size_t kWindowBytes = size_t{kMaxGroups} * sizeof(CounterGroup);

// Reserves a counter window: zero-filled, backed page by page on first touch.
CounterGroup* map_window() {
  void* p = mmap(nullptr, kWindowBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<CounterGroup*>(p);
}

// Backs the pages that hold groups [0, groups) of `c`'s window, so its first
// add to any of them takes no page fault. The counters keep their values (a
// relaxed load and store of the same value, one per page). Caller holds mu,
// so no allocate_counter_group() zeroes a slice meanwhile; only this thread
// ever adds to them.
void touch_window(ThreadContext& c, uint32_t groups) {
  constexpr size_t kPerPage = 4096 / sizeof(CounterGroup);
  for (size_t g = 0; g < groups; g += kPerPage) {
    std::atomic<uint64_t>& first = c.groups[g].v[0];
    first.store(first.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
}

// A new context with its window; nullptr when either cannot be had (the
// thread's events are then dropped, and counted).
ThreadContext* new_context() {
  CounterGroup* window = map_window();
  if (window == nullptr) return nullptr;
  auto* c = new (std::nothrow) ThreadContext;
  if (c == nullptr) {
    munmap(window, kWindowBytes);
    return nullptr;
  }
  c->groups = window;
  return c;
}

std::atomic<const ThreadObserver*> g_observer{nullptr};

struct ExitHook {
  ThreadContext* ctx = nullptr;
  ~ExitHook() {
    if (ctx == nullptr) return;
    if (const ThreadObserver* o = g_observer.load(std::memory_order_acquire);
        o != nullptr && o->exiting != nullptr)
      o->exiting(*ctx);  // (H2) e.g. sideband's task_exit, while the context is still ours
    tl_exited = true;
    tl_context = nullptr;
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    fold_counters(r, *ctx);
    ctx->in_signal.store(0, std::memory_order_relaxed);
    ctx->read_section.store(0, std::memory_order_release);
    r.live.erase(std::find(r.live.begin(), r.live.end(), ctx));
    r.spare.push_back(ctx);  // never freed: synchronize() may still be reading it
  }
};

thread_local ExitHook tl_exit_hook;

}  // namespace

namespace {
// The calling thread's stack range (cold: the main thread's is read from
// /proc/self/maps by glibc).
void read_stack_bounds(ThreadContext& c) noexcept {
  c.stack_lo = c.stack_hi = 0;
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr != nullptr) {
    c.stack_lo = reinterpret_cast<uintptr_t>(addr);
    c.stack_hi = c.stack_lo + size;
  }
  pthread_attr_destroy(&attr);
}
}  // namespace

void set_thread_observer(const ThreadObserver* observer) noexcept {
  g_observer.store(observer, std::memory_order_release);
}

ThreadContext* register_thread() {
  if (tl_registering || tl_exited || tl_signal_depth != 0) return nullptr;
  tl_registering = true;
  Registry& r = registry();
  ThreadContext* c = nullptr;
  {
    std::lock_guard lk(r.mu);
    if (!r.spare.empty()) {
      c = r.spare.back();  // keeps its window, all zero (fold_counters)
      r.spare.pop_back();
    } else if ((c = new_context()) == nullptr) {
      tl_registering = false;
      return nullptr;
    }
    c->tid = static_cast<int32_t>(gettid());
    read_comm(*c);
    r.comms[c->tid] = std::string(c->comm_view());
    // The pages of every group in use, so the first event of each
    // (instance, event) pair takes no page fault.
    touch_window(*c, r.next_group);
    r.live.push_back(c);
  }
  read_stack_bounds(*c);
  tl_exit_hook.ctx = c;
  tl_context = c;
  tl_registering = false;
  if (const ThreadObserver* o = g_observer.load(std::memory_order_acquire);
      o != nullptr && o->registered != nullptr)
    o->registered(*c);  // (H1) e.g. sideband's task_comm(first_write), outside the registry mutex
  return c;
}

std::vector<ThreadContext*> snapshot_threads() {
  // Contexts are never freed (exited threads' go to `spare`), so the caller
  // may read them after the lock is dropped; spare ones read read_section 0.
  Registry& r = registry();
  std::lock_guard lk(r.mu);
  return r.live;
}

}  // namespace detail

using detail::registry;

uint64_t unregistered_drops() noexcept {
  return detail::g_unregistered_drops.load(std::memory_order_relaxed);
}

void count_unregistered_drop() noexcept {
  detail::g_unregistered_drops.fetch_add(1, std::memory_order_relaxed);
}

void prepare_thread() { (void)thread_context(); }

void refresh_thread_comm() {
  ThreadContext* c = thread_context();
  if (c == nullptr) return;
  detail::read_comm(*c);
  auto& r = registry();
  std::lock_guard lk(r.mu);
  r.comms[c->tid] = std::string(c->comm_view());
}

SignalScope::SignalScope() noexcept : ctx_(detail::tl_context) {
  ++detail::tl_signal_depth;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (ctx_ == nullptr) return;
  ctx_->in_signal.store(ctx_->in_signal.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

SignalScope::~SignalScope() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (ctx_ != nullptr)
    ctx_->in_signal.store(ctx_->in_signal.load(std::memory_order_relaxed) - 1,
                          std::memory_order_relaxed);
  --detail::tl_signal_depth;
}

uint32_t allocate_counter_group() {
  auto& r = registry();
  std::lock_guard lk(r.mu);
  uint32_t g;
  if (!r.free_groups.empty()) {
    g = r.free_groups.back();
    r.free_groups.pop_back();
  } else {
    if (r.next_group >= detail::kMaxGroups)
      throw std::length_error("tracepipe: too many (instance, event) counter groups (max 65535)");
    g = r.next_group++;
  }
  if (r.retired.size() <= g) r.retired.resize(g + 1);
  r.retired[g] = {};
  // Zero every live thread's slice (a recycled group may hold old counts).
  // The stores also back the slice's page, so no thread's first event of
  // this group takes a page fault. No thread adds to g before the caller
  // publishes it. Spare contexts read zero already (fold_counters).
  for (ThreadContext* c : r.live)
    for (auto& v : c->groups[g].v) v.store(0, std::memory_order_relaxed);
  return g;
}

void free_counter_group(uint32_t group) {
  if (group == 0) return;
  auto& r = registry();
  std::lock_guard lk(r.mu);
  r.free_groups.push_back(group);
}

uint64_t counter_sum(uint32_t group, uint32_t slot) { return counter_sums(group)[slot]; }

std::array<uint64_t, detail::kGroupSlots> counter_sums(uint32_t group) {
  auto& r = registry();
  std::lock_guard lk(r.mu);
  std::array<uint64_t, detail::kGroupSlots> out{};
  if (group >= detail::kMaxGroups) return out;
  if (group < r.retired.size()) out = r.retired[group];
  for (ThreadContext* c : r.live)
    for (uint32_t s = 0; s < detail::kGroupSlots; ++s)
      out[s] += c->groups[group].v[s].load(std::memory_order_relaxed);
  return out;
}

std::vector<Cmdline> cmdlines() {
  auto& r = registry();
  std::lock_guard lk(r.mu);
  std::vector<Cmdline> out;
  out.reserve(r.comms.size());
  for (const auto& [pid, comm] : r.comms) out.push_back({pid, comm});
  return out;
}

size_t registered_thread_count() {
  auto& r = registry();
  std::lock_guard lk(r.mu);
  return r.live.size();
}

}  // namespace tracepipe
