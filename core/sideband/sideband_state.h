#pragma once
// Reading sideband back: replay a trace's records, in order, through a
// SidebandState to learn, at each point, the name of every task and the
// mappings of the process; check that each synthesis round is complete; and
// give trace.dat export its cmdlines.
//
//   SidebandState sb(instance.registry());      // or (reader.formats()) for a trace.dat
//   for each record in time order:
//     sb.observe(record.payload);               // sideband records update the state
//     ... sb.comm(common_pid) names the writer of any other record here ...
//   sb.apply_cmdlines(writer);                  // pid -> comm for trace-cmd report
//
// Fields are located by name in each event's format (not by compiled-in
// offsets), so a trace written by another tracepipe version reads back as
// long as the field names stay.
//
// Rules:
//   * task_comm, task_newtask and task_exit set the thread's name (the last
//     one in trace order wins; an exit keeps the name, for the thread's
//     earlier events).
//   * mmap records add a mapping (replacing any it overlaps); the first
//     record of a new synthesis round clears the mappings learnt before it
//     (the round restates them all).
//   * A round (records with synth = N) is complete iff its synth_done was
//     seen, reports lost = 0, and exactly `records` records of round N were
//     seen (sideband.h, S3).
//   * Malformed records (shorter than the format, a __data_loc pointing
//     outside the record) are counted and otherwise ignored: never a crash
//     or an out-of-bounds read.
//
// Thread-safety: none (one reader feeds one state).
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/instance/thread_context.h"
#include "tracepipe/core/sideband/sideband_events.h"
#include "tracepipe/core/sideband/sideband_proc.h"

namespace tracepipe {

class Instance;
class TraceDatWriter;

class SidebandState {
 public:
  /// Uses the sideband events registered in `registry` (the six are looked
  /// up by name; absent ones are never recognised).
  explicit SidebandState(const Registry& registry = Registry::global());
  /// Uses the events' formats of a trace (e.g. TraceDatReader's formats).
  explicit SidebandState(std::span<const EventFormat> formats);

  /// Feeds one record (payload from common_type), in trace order. Returns
  /// the kind if it was a well-formed sideband record, nullopt otherwise
  /// (another event, or malformed: see malformed()).
  std::optional<SidebandKind> observe(std::span<const std::byte> record);

  struct Task {
    int32_t pid = 0;
    int32_t tid = 0;
    Comm comm;
    bool exited = false;
  };
  /// The thread's state now (in trace order), nullptr if never named.
  const Task* task(int32_t tid) const;
  /// Its name now, nullopt if never named.
  std::optional<std::string_view> comm(int32_t tid) const;
  /// Every named thread with its last name, sorted by tid.
  std::vector<Cmdline> cmdlines() const;
  /// Sets every cmdline on a trace.dat writer (overriding earlier entries).
  void apply_cmdlines(TraceDatWriter& writer) const;

  struct Mapping {
    uint64_t addr = 0, len = 0, pgoff = 0, ino = 0;
    uint32_t prot = 0, flags = 0, maj = 0, min = 0;
    int32_t pid = 0;
    uint32_t synth = 0;  ///< round it came from, 0 for a live record
    std::string filename;
  };
  /// The mapping containing `addr`, nullptr if none.
  const Mapping* mapping_at(uint64_t addr) const;
  /// All mappings, by start address.
  const std::map<uint64_t, Mapping>& mappings() const noexcept { return maps_; }
  /// The executable named by the last process_exec, "" if none.
  const std::string& executable() const noexcept { return exe_; }

  struct Round {
    uint32_t synth = 0;
    uint64_t seen = 0;  ///< records of this round observed (synth_done excluded)
    bool done = false;  ///< its synth_done was observed
    uint32_t threads = 0, mappings = 0, lost = 0;  ///< from synth_done
    uint64_t records = 0;                          ///< from synth_done: records kept before it
    bool complete() const noexcept { return done && lost == 0 && seen == records; }
  };
  /// Every round seen, by number.
  std::vector<Round> rounds() const;

  /// Sideband records that could not be decoded.
  uint64_t malformed() const noexcept { return malformed_; }
  /// Well-formed sideband records observed.
  uint64_t observed() const noexcept { return observed_; }

  /// Where one field sits in a record (from the format).
  struct FieldRef {
    uint32_t offset = 0, size = 0;
    bool present = false, dynamic = false, rel_loc = false, is_signed = false;
  };

 private:
  struct Layout {
    uint16_t id = 0;
    bool present = false;
    uint32_t fixed_size = 0;
    FieldRef pid, tid, synth, comm, filename, addr, len, pgoff, ino, prot, flags, maj, min, threads,
        mappings, lost, records;
  };
  void init(std::span<const EventFormat* const> formats);
  void set_comm(int32_t pid, int32_t tid, const Comm& c, bool exited);
  void start_round(uint32_t synth);

  std::array<Layout, kSidebandKinds> layouts_{};
  std::unordered_map<int32_t, Task> tasks_;
  std::map<uint64_t, Mapping> maps_;
  std::map<uint32_t, Round> rounds_;
  uint32_t last_round_ = 0;
  std::string exe_;
  uint64_t malformed_ = 0;
  uint64_t observed_ = 0;
};

/// Walks `instance`'s buffer (non-consuming iterators, merged by time stamp)
/// through a SidebandState and returns the cmdlines for an export:
/// Instance::cmdlines() (saved_cmdlines) with the sideband names overriding
/// them. Any thread; concurrent writers may add records while it walks.
std::vector<Cmdline> sideband_cmdlines(const Instance& instance);

}  // namespace tracepipe
