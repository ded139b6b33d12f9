#pragma once
// Restartable sequences: a compare-and-swap of the 16-byte tail word that is
// atomic against every other writer running on the same CPU, without a
// locked instruction. Used by RingBuffer<..., Writers::cpu_local>; the same
// kind of section claims a per-CPU staging slot (claim_local, used by
// TempBuffer with Writers::cpu_local).
//
// Why: `lock cmpxchg16b` is a full barrier on an exclusive cache line; the
// same update as plain stores inside an rseq critical section is several
// times cheaper (docs/measurements.md, "The ring buffer").
// The kernel's ring buffer gets the same effect from per-CPU data with
// preemption disabled and local_t (non-locked) cmpxchg. Mirrors
// kernel/rseq.c and Documentation/userspace-api/rseq.rst; the section layout
// follows the ABI in include/uapi/linux/rseq.h.
//
// The critical section (one per inlined call site, descriptor in __rseq_cs):
//     start:  if (rseq->cpu_id != cpu) goto abort        (migrated)
//             if (tail.pos != pos || tail.ts != ts) goto changed
//             tail.ts = nts
//             tail.pos = npos                             ← the commit store
//     post_commit:
// The kernel moves the instruction pointer to `abort` if the thread is
// preempted, migrated or interrupted by a signal anywhere between start and
// post_commit, so the two stores land as one step with respect to every
// other thread or handler that runs on this CPU. An aborted section may have
// stored ts without pos: harmless, since ts only ever grows the clamp of a
// record that was never reserved, and the next section's compare fails once.
//
// Debuggers: a thread stopped inside a section (gdb stepi, a ptrace stop, the
// trap flag) is sent to the abort handler when it resumes, so single-stepping
// through a cpu_local reserve() restarts it forever; `continue` completes it.
// Use Writers::any_cpu (InstanceOptions::writers = any_cpu) to step through
// the write path.
//
// Invariant (what the caller must guarantee): every update of a tail word
// while writers may run is either this section run on the tail's own CPU,
// or a locked CAS followed by a fence (rseq_fence(), or run_on_cpu() on every
// CPU when membarrier fails) and a re-check (RingBufferBase::pause does this,
// and reports it when it can do neither). A thread on another CPU must never write the tail with a
// locked CAS alone: a section that already compared would overwrite it.
// The sections are x86-64 assembly. TRACEPIPE_RSEQ_ASM (1 there, 0 on every
// other architecture; a build may set 0 to try the portable path on x86-64)
// guards them; without them writers are any_cpu and the current CPU comes
// from sched_getcpu() (see the #else branch below).
#ifndef TRACEPIPE_RSEQ_ASM
#if defined(__x86_64__)
#define TRACEPIPE_RSEQ_ASM 1
#else
#define TRACEPIPE_RSEQ_ASM 0
#endif
#endif
#if TRACEPIPE_RSEQ_ASM
#include <sys/rseq.h>
#endif

#include <atomic>
#include <cstdint>

#include "tracepipe/buffers/cpu_buffer.h"

namespace tracepipe::buffers::detail {

/// Outcome of cas16_local.
enum class LocalCas : uint8_t {
  ok,        ///< stored
  changed,   ///< the tail was not {pos, ts}: nothing stored
  migrated,  ///< not on `cpu`, or preempted / signalled inside: nothing reliable stored
};

#if TRACEPIPE_RSEQ_ASM
/// The calling thread's CPU from its rseq area: one load, no call. Negative
/// when the thread has no rseq area (then never equal to a buffer's cpu).
[[gnu::always_inline]] inline int32_t rseq_cpu() noexcept {
  const auto* area = reinterpret_cast<const volatile struct rseq*>(
      static_cast<const char*>(__builtin_thread_pointer()) + __rseq_offset);
  return static_cast<int32_t>(area->cpu_id);
}

/// The frame every critical section below shares: its struct rseq_cs
/// descriptor (version 0, flags 0, start 1:, length up to the post-commit
/// label 2:, abort handler 4:) in section __rseq_cs, the store of the
/// descriptor's address into rseq->rseq_cs (offset 8 of the area, operand
/// %[area]; clobbers rax) that arms it, then the start label 1:. The body
/// follows; TRACEPIPE_RSEQ_SECTION_END puts the post-commit label and the abort
/// handler (the four signature bytes the kernel checks, glibc's RSEQ_SIG
/// 0x53053053 for x86, then a jump to the asm goto label `migrated`).
/// Both pushed sections carry the "?" flag: they join the section group of
/// the code around them, so when that code is an inline function's COMDAT
/// copy (a debug build, a function that emits in a header) and the linker
/// discards the copy, its descriptor and abort handler go with it instead
/// of pointing into a discarded section, which failed the link
/// (tests/core/instance/link_comdat_test.cc).
#define TRACEPIPE_RSEQ_SECTION_BEGIN    \
  ".pushsection __rseq_cs, \"aw?\"\n\t" \
  ".balign 32\n\t"                      \
  "3:\n\t"                              \
  ".long 0x0, 0x0\n\t"                  \
  ".quad 1f, (2f - 1f), 4f\n\t"         \
  ".popsection\n\t"                     \
  "leaq 3b(%%rip), %%rax\n\t"           \
  "movq %%rax, 8(%[area])\n\t"          \
  "1:\n\t"
#define TRACEPIPE_RSEQ_SECTION_END           \
  "2:\n\t"                                   \
  ".pushsection __rseq_failure, \"ax?\"\n\t" \
  ".byte 0x0f, 0xb9, 0x3d\n\t"               \
  ".long 0x53053053\n\t"                     \
  "4:\n\t"                                   \
  "jmp %l[migrated]\n\t"                     \
  ".popsection\n\t"

/// If the calling thread runs on `cpu` and *t == {pos, ts}: *t = {npos, nts},
/// atomically with respect to every thread and signal handler on that CPU.
/// Not atomic against other CPUs (see the invariant above). Async-signal-safe.
[[gnu::always_inline]] inline LocalCas cas16_local(TailWord* t, uint32_t cpu, uint64_t pos,
                                                   uint64_t ts, uint64_t npos,
                                                   uint64_t nts) noexcept {
  auto* area = reinterpret_cast<struct rseq*>(static_cast<char*>(__builtin_thread_pointer()) +
                                              __rseq_offset);
  asm goto(TRACEPIPE_RSEQ_SECTION_BEGIN
           "cmpl 4(%[area]), %[cpu]\n\t"
           "jnz %l[migrated]\n\t"
           "cmpq (%[t]), %[pos]\n\t"
           "jnz %l[changed]\n\t"
           "cmpq 8(%[t]), %[ts]\n\t"
           "jnz %l[changed]\n\t"
           "movq %[nts], 8(%[t])\n\t"
           "movq %[npos], (%[t])\n\t" TRACEPIPE_RSEQ_SECTION_END
           :
           : [area] "r"(area), [t] "r"(t), [cpu] "r"(cpu), [pos] "r"(pos), [ts] "r"(ts),
             [npos] "r"(npos), [nts] "r"(nts)
           : "memory", "cc", "rax"
           : migrated, changed);
  return LocalCas::ok;
migrated:
  return LocalCas::migrated;
changed:
  return LocalCas::changed;
}

/// If the calling thread runs on `cpu` and *flag == 0: *flag = 1 (ok), as one
/// step with respect to every thread and signal handler on that CPU; changed
/// when *flag was not 0 (nothing stored); migrated when not on `cpu`, or
/// preempted / signalled inside (nothing stored). The staging slot's claim
/// for cpu_local writers (buffers/temp_buffer.h): what the kernel gets from
/// this_cpu_inc_return(trace_buffered_event_cnt) with preemption disabled
/// (kernel/trace/trace.c: trace_event_buffer_lock_reserve), without the
/// locked exchange an any-CPU claim needs. Same rule as
/// cas16_local: a thread on another CPU may only store 0 into a flag it owns.
/// Async-signal-safe.
[[gnu::always_inline]] inline LocalCas claim_local(std::atomic<uint32_t>* flag,
                                                   uint32_t cpu) noexcept {
  auto* area = reinterpret_cast<struct rseq*>(static_cast<char*>(__builtin_thread_pointer()) +
                                              __rseq_offset);
  asm goto(TRACEPIPE_RSEQ_SECTION_BEGIN
           "cmpl 4(%[area]), %[cpu]\n\t"
           "jnz %l[migrated]\n\t"
           "cmpl $0, (%[flag])\n\t"
           "jnz %l[changed]\n\t"
           "movl $1, (%[flag])\n\t" TRACEPIPE_RSEQ_SECTION_END
           :
           : [area] "r"(area), [flag] "r"(flag), [cpu] "r"(cpu)
           : "memory", "cc", "rax"
           : migrated, changed);
  return LocalCas::ok;
migrated:
  return LocalCas::migrated;
changed:
  return LocalCas::changed;
}

/// counter(cpu) += v, where counter(cpu) is the u64 at `base + cpu * stride`
/// and cpu is the CPU the calling thread runs on, as one step with respect to
/// every thread and signal handler on that CPU, without a locked instruction:
/// a per-CPU counter, as the kernel's this_cpu_add() with preemption
/// disabled (librseq's rseq_addv, in our own section). The CPU is read inside
/// the section, so a thread migrated before the add is restarted and adds on
/// its new CPU. Returns false, adding nothing, when the CPU is not below
/// `ncpus` or the thread has no rseq area (rseq_cpu() < 0): the caller adds
/// to a shared counter with a locked add instead. Readers sum the per-CPU
/// counters with plain 8-byte loads. Same rule as cas16_local: nothing else
/// may write these counters while writers run. Async-signal-safe.
[[gnu::always_inline]] inline bool add_local_percpu(void* base, uint64_t stride, uint32_t ncpus,
                                                    uint64_t v) noexcept {
  auto* area = reinterpret_cast<struct rseq*>(static_cast<char*>(__builtin_thread_pointer()) +
                                              __rseq_offset);
retry:
  asm goto(
      TRACEPIPE_RSEQ_SECTION_BEGIN
      "movl 4(%[area]), %%ecx\n\t"
      "cmpl %[ncpus], %%ecx\n\t"
      "jae %l[unavailable]\n\t"
      "imulq %[stride], %%rcx\n\t"
      "addq %[v], (%[base], %%rcx)\n\t" TRACEPIPE_RSEQ_SECTION_END
      :
      : [area] "r"(area), [base] "r"(base), [stride] "r"(stride), [ncpus] "r"(ncpus), [v] "r"(v)
      : "memory", "cc", "rax", "rcx"
      : migrated, unavailable);
  return true;
migrated:  // preempted, migrated or signalled inside: nothing was added
  goto retry;
unavailable:
  return false;
}
#else   // !TRACEPIPE_RSEQ_ASM
// Other architectures: no sections (their abort signature and asm are not
// written), so rseq_usable() is false, writers are any_cpu and the staging
// claim takes its locked exchange; current_cpu() reads sched_getcpu()
// (current_cpu_slow). The functions below keep the callers compiling and
// stay correct if called: atomic, just not CPU-local.
[[gnu::always_inline]] inline int32_t rseq_cpu() noexcept { return -1; }
[[gnu::always_inline]] inline LocalCas cas16_local(TailWord* t, uint32_t /*cpu*/, uint64_t pos,
                                                   uint64_t ts, uint64_t npos,
                                                   uint64_t nts) noexcept {
  return cas16(t, pos, ts, npos, nts) ? LocalCas::ok : LocalCas::changed;
}
[[gnu::always_inline]] inline LocalCas claim_local(std::atomic<uint32_t>* flag,
                                                   uint32_t /*cpu*/) noexcept {
  uint32_t free = 0;
  return flag->compare_exchange_strong(free, 1, std::memory_order_acquire) ? LocalCas::ok
                                                                           : LocalCas::changed;
}
[[gnu::always_inline]] inline bool add_local_percpu(void*, uint64_t, uint32_t, uint64_t) noexcept {
  return false;
}
#endif  // TRACEPIPE_RSEQ_ASM

/// True if the calling thread has an rseq area the kernel keeps current
/// (rseq_cpu() >= 0). Any thread, async-signal-safe.
[[gnu::always_inline]] inline bool rseq_registered() noexcept {
#if TRACEPIPE_RSEQ_ASM
  return __rseq_size > 0 && rseq_cpu() >= 0;
#else
  return false;
#endif
}

/// True if cpu_local writers can run in this process: the calling thread has
/// an rseq area (glibc >= 2.35 registers one for every thread unless
/// GLIBC_TUNABLES=glibc.pthread.rseq=0) and the kernel accepted
/// MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ (needed by rseq_fence).
/// Registers once; thread-safe. Always false under ThreadSanitizer builds
/// (the sanitizer cannot see the sections' synchronisation).
bool rseq_usable() noexcept;

/// Every critical section running on any CPU of this process when this is
/// called is aborted or has completed before it returns, and sections that
/// start afterwards see every store made before the call.
/// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ). A system call: for
/// pause(), never for the write path. Returns false if the call failed
/// (then it guarantees nothing: use the CPU visits below).
bool rseq_fence() noexcept;

/// The same guarantee as rseq_fence() for one CPU, without membarrier:
/// moves the calling thread onto `cpu` alone (sched_setaffinity) and checks
/// that it runs there. For the caller to run on `cpu`, the thread that ran
/// there was switched out: a section it was inside aborts when it resumes
/// (the kernel's rseq_preempt), or it had finished; sections that start
/// there afterwards see every store made before the call (a context switch
/// is a full barrier). Returns false if the caller cannot run on `cpu`
/// (offline, or outside its cpuset). Changes the caller's affinity: save it
/// first (saved_affinity) and restore it after. Control plane only (two
/// system calls and a migration, ~10-50 us). What membarrier does from the
/// kernel (kernel/sched/membarrier.c: an IPI to each CPU that runs one of our
/// threads), done from user space by going there.
bool run_on_cpu(uint32_t cpu) noexcept;

/// The calling thread's CPU affinity, saved by its constructor and put back
/// by restore(); for run_on_cpu() loops. Holds up to 65536 CPUs on the stack.
class SavedAffinity {
 public:
  SavedAffinity() noexcept;
  /// False if the affinity could not be read (then restore() does nothing
  /// and run_on_cpu() must not be used: it could not be undone).
  bool ok() const noexcept { return ok_; }
  /// Puts the saved affinity back; false if the kernel refused it.
  bool restore() noexcept;

 private:
  unsigned long mask_[65536 / (8 * sizeof(unsigned long))];
  bool ok_ = false;
};

}  // namespace tracepipe::buffers::detail
