#pragma once
// The sideband events: what a trace needs besides its events to name tasks
// and map addresses. Schemas modelled on the kernel's task/sched events and
// on perf's sideband records (PERF_RECORD_COMM, _FORK, _EXIT, _MMAP2,
// _FINISHED_INIT), in system "tracepipe":
//
//   event                   written when                                 kernel / perf model
//   ─────────────────────── ────────────────────────────────────────────
//   ───────────────────────────── tracepipe:task_comm     a thread's first event (core hook), a
//   rename  task:task_rename,
//                           through set_thread_name(), announce_thread()  PERF_RECORD_COMM
//   tracepipe:task_newtask  state synthesis: one per live thread          task:task_newtask,
//                                                                         PERF_RECORD_FORK
//                                                                         (synthesized)
//   tracepipe:task_exit     a registered thread exits (core hook)         sched:sched_process_exit,
//                                                                         PERF_RECORD_EXIT
//   tracepipe:process_exec  state synthesis: the process image            sched:sched_process_exec,
//                                                                         PERF_RECORD_COMM|MISC_COMM_EXEC
//   tracepipe:mmap          state synthesis: one per /proc/self/maps      PERF_RECORD_MMAP2
//                           line; note_mapping() for live mappings
//   tracepipe:synth_done    end of a state synthesis, with its counts     PERF_RECORD_FINISHED_INIT
//
// Field conventions (every event): `pid` is the process (tgid), `tid` the
// thread (the kernel's task pid, what common_pid holds), as in perf's
// records. `synth` is 0 for a live record and N for a record written by the
// Nth state synthesis of this process (perf's PERF_RECORD_MISC_STATUS_ONLY,
// with a round number so a reader can count the round's records and check
// them against synth_done.records).
//
// Record layouts (bytes from the start of the record; 8-byte common header
// first; pinned by tests/core/sideband/sideband_events_test.cc):
//
//   task_comm     pid@8 s32, tid@12 s32, comm@16 char[16], oldcomm@32 char[16],
//                 reason@48 u8                                      fixed 52
//   task_newtask  pid@8, tid@12, ptid@16, synth@20 u32, comm@24 char[16],
//                 clone_flags@40 u64                                fixed 48
//   task_exit     pid@8, tid@12, comm@16 char[16]                   fixed 32
//   process_exec  filename@8 __data_loc char[], pid@12, old_pid@16,
//                 synth@20 u32                                      fixed 24 + name
//   mmap          pid@8, tid@12, synth@16, prot@20 u32, flags@24 u32, maj@28 u32,
//                 min@32 u32, filename@36 __data_loc char[], addr@40 u64,
//                 len@48 u64, pgoff@56 u64, ino@64 u64              fixed 72 + name
//   synth_done    synth@8 u32, threads@12 u32, mappings@16 u32, lost@20 u32,
//                 records@24 u64                                    fixed 32
//
// Thread-safety: the descriptors are registered once (static initialisation
// of any program that links core/sideband/sideband.cc) and immutable afterwards.
#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/instance/event_decl.h"

namespace tracepipe {

/// Why a tracepipe:task_comm record was written (its `reason` field).
enum class CommReason : uint8_t {
  first_write = 0,  ///< the thread's first event (it registered with tracepipe)
  rename = 1,       ///< set_thread_name(): `oldcomm` holds the previous name
  announce = 2,     ///< announce_thread(): an explicit "this is my name"
};
std::string_view to_string(CommReason r) noexcept;

/// mmap `prot` bits (PROT_READ/WRITE/EXEC values) and `flags` (MAP_SHARED /
/// MAP_PRIVATE values), as /proc/self/maps shows them ("r-xp").
namespace MapProt {
inline constexpr uint32_t read = 0x1, write = 0x2, exec = 0x4;
}
namespace MapFlags {
inline constexpr uint32_t shared = 0x01, private_ = 0x02;
}

namespace sideband {

/// Record layouts (EventDecl only computes offsets and writes fields; the
/// schemas registered carry kernel-like types and print fmts, see
/// sideband_formats()).
using TaskComm = EventDecl<"tracepipe", "task_comm", Int<"pid", int32_t>, Int<"tid", int32_t>,
                           Chars<"comm", 16>, Chars<"oldcomm", 16>, Int<"reason", uint8_t>>;
using TaskNewtask = EventDecl<"tracepipe", "task_newtask", Int<"pid", int32_t>, Int<"tid", int32_t>,
                              Int<"ptid", int32_t>, Int<"synth", uint32_t>, Chars<"comm", 16>,
                              Int<"clone_flags", uint64_t>>;
using TaskExit = EventDecl<"tracepipe", "task_exit", Int<"pid", int32_t>, Int<"tid", int32_t>,
                           Chars<"comm", 16>>;
using ProcessExec = EventDecl<"tracepipe", "process_exec", Str<"filename">, Int<"pid", int32_t>,
                              Int<"old_pid", int32_t>, Int<"synth", uint32_t>>;
using Mmap =
    EventDecl<"tracepipe", "mmap", Int<"pid", int32_t>, Int<"tid", int32_t>, Int<"synth", uint32_t>,
              Int<"prot", uint32_t>, Int<"flags", uint32_t>, Int<"maj", uint32_t>,
              Int<"min", uint32_t>, Str<"filename">, Int<"addr", uint64_t>, Int<"len", uint64_t>,
              Int<"pgoff", uint64_t>, Int<"ino", uint64_t>>;
using SynthDone =
    EventDecl<"tracepipe", "synth_done", Int<"synth", uint32_t>, Int<"threads", uint32_t>,
              Int<"mappings", uint32_t>, Int<"lost", uint32_t>, Int<"records", uint64_t>>;

static_assert(TaskComm::fixed_size == 52);
static_assert(TaskNewtask::fixed_size == 48);
static_assert(TaskExit::fixed_size == 32);
static_assert(ProcessExec::fixed_size == 24);
static_assert(Mmap::fixed_size == 72);
static_assert(SynthDone::fixed_size == 32);

/// The system name of every sideband event.
inline constexpr std::string_view kSystem = "tracepipe";

}  // namespace sideband

/// Which sideband event (index into SidebandEvents::all()).
enum class SidebandKind : uint8_t {
  task_comm,
  task_newtask,
  task_exit,
  process_exec,
  mmap,
  synth_done
};
inline constexpr size_t kSidebandKinds = 6;

/// The six schemas (ID 0: the registry assigns one), in SidebandKind order:
/// the EventDecl layouts above with kernel-like field types (pid_t) and
/// print fmts ("addr=0x%llx", __print_symbolic for task_comm's reason).
std::vector<EventFormat> sideband_formats();

/// The sideband events' descriptors in one registry.
struct SidebandEvents {
  std::array<const EventDesc*, kSidebandKinds> by_kind{};

  const EventDesc& operator[](SidebandKind k) const noexcept {
    return *by_kind[static_cast<size_t>(k)];
  }
  const EventDesc& task_comm() const noexcept { return (*this)[SidebandKind::task_comm]; }
  const EventDesc& task_newtask() const noexcept { return (*this)[SidebandKind::task_newtask]; }
  const EventDesc& task_exit() const noexcept { return (*this)[SidebandKind::task_exit]; }
  const EventDesc& process_exec() const noexcept { return (*this)[SidebandKind::process_exec]; }
  const EventDesc& mmap() const noexcept { return (*this)[SidebandKind::mmap]; }
  const EventDesc& synth_done() const noexcept { return (*this)[SidebandKind::synth_done]; }

  /// Registered in Registry::global() (at static initialisation). Live
  /// sideband (first write, renames, exits) is emitted through these.
  static const SidebandEvents& global();
  /// Registers the six schemas in `registry` (or finds them: same schema ->
  /// same descriptors). Throws RegistryError if a different schema already
  /// holds one of the names.
  static SidebandEvents register_in(Registry& registry);
};

}  // namespace tracepipe
