#include "core/thread_context.h"

#include "core/sideband_hooks.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

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
  std::vector<ThreadContext*> live;      // registered threads
  std::vector<ThreadContext*> spare;     // contexts of exited threads, zeroed, for reuse
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

// Adds every counter of `c` to the retired totals and zeroes it. Caller holds mu.
void fold_counters(Registry& r, ThreadContext& c) {
  for (uint32_t b = 0; b < kMaxBlocks; ++b) {
    CounterBlock* blk = c.blocks[b].load(std::memory_order_acquire);
    if (blk == nullptr) continue;
    for (uint32_t g = 0; g < kGroupsPerBlock; ++g) {
      const uint32_t group = b * kGroupsPerBlock + g;
      if (group >= r.retired.size()) break;
      for (uint32_t s = 0; s < kGroupSlots; ++s) {
        const uint64_t v = blk->groups[g].v[s].load(std::memory_order_relaxed);
        if (v == 0) continue;
        r.retired[group][s] += v;
        blk->groups[g].v[s].store(0, std::memory_order_relaxed);
      }
    }
  }
}

struct ExitHook {
  ThreadContext* ctx = nullptr;
  ~ExitHook() {
    if (ctx == nullptr) return;
    sideband_thread_exiting(*ctx);  // (H2) task_exit, while the context is still ours
    tl_exited = true;
    tl_context = nullptr;
    Registry& r = registry();
    std::lock_guard lk(r.mu);
    fold_counters(r, *ctx);
    ctx->nesting.store(0, std::memory_order_relaxed);
    ctx->in_signal.store(0, std::memory_order_relaxed);
    ctx->gp_epoch.store(0, std::memory_order_release);
    r.live.erase(std::find(r.live.begin(), r.live.end(), ctx));
    r.spare.push_back(ctx);  // never freed: synchronize() may still be reading it
  }
};

thread_local ExitHook tl_exit_hook;

}  // namespace

ThreadContext* register_thread() {
  if (tl_registering || tl_exited || tl_signal_depth != 0) return nullptr;
  tl_registering = true;
  Registry& r = registry();
  ThreadContext* c = nullptr;
  {
    std::lock_guard lk(r.mu);
    if (!r.spare.empty()) {
      c = r.spare.back();
      r.spare.pop_back();
    } else {
      c = new ThreadContext;
    }
    c->tid = static_cast<int32_t>(gettid());
    read_comm(*c);
    r.comms[c->tid] = std::string(c->comm_view());
    r.live.push_back(c);
  }
  // Pre-allocate this thread's counter blocks for every group in use, so the
  // first event of each (instance, event) pair does not allocate.
  {
    uint32_t groups = 0;
    {
      std::lock_guard lk(r.mu);
      groups = r.next_group;
    }
    for (uint32_t b = 0; b * kGroupsPerBlock < groups && b < kMaxBlocks; ++b)
      if (c->blocks[b].load(std::memory_order_relaxed) == nullptr) (void)allocate_block(*c, b * kGroupsPerBlock);
  }
  tl_exit_hook.ctx = c;
  tl_context = c;
  tl_registering = false;
  sideband_thread_registered(*c);  // (H1) task_comm(first_write), outside the registry mutex
  return c;
}

CounterGroup& allocate_block(ThreadContext& ctx, uint32_t group) {
  const uint32_t b = group / kGroupsPerBlock;
  auto* blk = new CounterBlock{};
  CounterBlock* expected = nullptr;
  // allocate_counter_group() may install the block concurrently: keep the first.
  if (!ctx.blocks[b].compare_exchange_strong(expected, blk, std::memory_order_acq_rel)) {
    delete blk;
    blk = expected;
  }
  return blk->groups[group % kGroupsPerBlock];
}

std::vector<ThreadContext*> snapshot_threads() {
  // Contexts are never freed (exited threads' go to `spare`), so the caller
  // may read them after the lock is dropped; spare ones read gp_epoch 0.
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
  ctx_->in_signal.store(ctx_->in_signal.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

SignalScope::~SignalScope() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (ctx_ != nullptr)
    ctx_->in_signal.store(ctx_->in_signal.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
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
    if (r.next_group >= detail::kMaxBlocks * detail::kGroupsPerBlock)
      throw std::length_error("tracepipe: too many (instance, event) counter groups (max 65535)");
    g = r.next_group++;
  }
  if (r.retired.size() <= g) r.retired.resize(g + 1);
  r.retired[g] = {};
  // Zero every thread's slice (a recycled group may hold old counts) and make
  // sure every live thread has the block, so their first event does not
  // allocate.
  const uint32_t b = g / detail::kGroupsPerBlock;
  for (auto* list : {&r.live, &r.spare}) {
    for (ThreadContext* c : *list) {
      detail::CounterBlock* blk = c->blocks[b].load(std::memory_order_acquire);
      if (blk == nullptr) {
        if (list == &r.spare) continue;
        // Another thread's block pointer is only ever written by that thread,
        // except here, under the mutex, before the group is handed out: the
        // owner cannot be touching block b for group g yet, but it may be
        // allocating block b for an older group at this very moment; a
        // compare-exchange keeps whichever block lands first.
        auto* fresh = new detail::CounterBlock{};
        detail::CounterBlock* expected = nullptr;
        if (!c->blocks[b].compare_exchange_strong(expected, fresh, std::memory_order_acq_rel))
          delete fresh;
        continue;
      }
      for (auto& v : blk->groups[g % detail::kGroupsPerBlock].v) v.store(0, std::memory_order_relaxed);
    }
  }
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
  if (group < r.retired.size()) out = r.retired[group];
  const uint32_t b = group / detail::kGroupsPerBlock;
  for (ThreadContext* c : r.live) {
    detail::CounterBlock* blk = c->blocks[b].load(std::memory_order_acquire);
    if (blk == nullptr) continue;
    for (uint32_t s = 0; s < detail::kGroupSlots; ++s)
      out[s] += blk->groups[group % detail::kGroupsPerBlock].v[s].load(std::memory_order_relaxed);
  }
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
