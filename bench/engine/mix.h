#pragma once
// The replayed event mix: the bench's first table drives recorded kernel
// events through the real emit path (a tracepipe Instance per cell, the
// cases' filters and staging modes) on pinned threads, without the
// workload's system calls, so that the cost of tracing is measured apart
// from the time the kernel spends in socket calls.
//
// The mix is the sched_switch, sched_wakeup, sys_enter and sys_exit records
// of a kernel capture (by default ../shared/data/kernel/hackbench.dat, the
// kernel's trace of `hackbench -g 2 -l 50`), in recorded order per CPU, with
// their recorded payloads; the other record kinds of the file (kmalloc,
// kfree, ...) are not replayed (the bench's instance registers the four
// kernel formats only). When no capture is found the engine's embedded mix
// is used instead: the in-process hackbench's own pattern, 6 events per
// message. EventMix::source says which.
//
// Measurement order (interleave_order): every round runs each traced cell
// once as a pair of adjacent blocks, the cell's block and a block of the
// `off` cell (the base: same loop, events disabled), the pair's two blocks
// in random order, the pairs in a random order of their own; a round's cost
// of a cell is (time of its block - time of its off block) / events.
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tracepipe/bench/engine/records.h"

namespace tracepipe::bench {

/// One recorded event: its kind and payload bytes as laid out in the ring
/// (common header first; the emit path writes its own common header and
/// copies bytes [8, size)).
struct MixRecord {
  std::array<std::byte, 64> bytes{};
  EventKind kind = EventKind::sys_enter;
  uint16_t size = 0;  ///< payload bytes, the kernel format's size (<= 64)
};

/// Records to replay, one lane per replaying thread (thread w, pinned to
/// the w-th allowed CPU, replays lane w).
struct EventMix {
  std::string source;  ///< the capture's path, or "embedded"
  /// Why the embedded mix was used ("" when a capture was read).
  std::string fallback_reason;
  std::vector<std::vector<MixRecord>> lanes;
  std::array<uint64_t, kEventKinds> per_kind{};  ///< replayable records per kind
  uint64_t file_records = 0;                     ///< every record of the capture (0 for embedded)
  uint32_t file_cpus = 0;                        ///< CPUs of the capture (0 for embedded)

  uint64_t records() const {
    uint64_t n = 0;
    for (uint64_t k : per_kind) n += k;
    return n;
  }
};

/// Reads the four kinds' records of a trace.dat capture into `lanes` lanes:
/// recorded CPU c goes to lane c mod lanes; with fewer CPUs than lanes, lane
/// l repeats CPU l mod cpus. Throws (the reader's error, or
/// std::runtime_error) when the file cannot be read or holds none of the
/// four events.
EventMix load_mix(const std::filesystem::path& path, std::size_t lanes);

/// The embedded mix: per lane, `messages` messages of the in-process
/// hackbench's pattern (sender: sys_enter(write), sched_wakeup, sys_exit;
/// receiver: sys_enter(read), sched_switch, sys_exit).
EventMix embedded_mix(std::size_t lanes, uint32_t messages = 4096);

/// The default capture's path (../shared/data/kernel/hackbench.dat beside
/// the source tree), or nullopt when the build does not know one.
std::optional<std::filesystem::path> default_mix_path();

/// The mix the bench uses: `requested` ("embedded", or a path; a path that
/// cannot be read is an error) or, when empty, the default capture if it
/// exists and reads, else the embedded mix with fallback_reason set. Never
/// throws for a missing default capture.
EventMix find_mix(const std::string& requested, std::size_t lanes);

/// One block of the paired schedule: `cell` is the traced cell's index
/// (1..cells-1; 0 is the off base), `base` says this block runs the base
/// for that cell's pair.
struct BlockSlot {
  uint32_t round = 0;
  uint32_t cell = 0;
  bool base = false;
  friend bool operator==(const BlockSlot&, const BlockSlot&) = default;
};

/// The measurement order: `rounds` rounds; in each, every traced cell
/// 1..cells-1 once, as two adjacent blocks (the cell and the base, in an
/// order drawn at random), the pairs in a random order. Deterministic for a
/// given seed. Empty when cells < 2.
std::vector<BlockSlot> interleave_order(uint32_t cells, uint32_t rounds, uint64_t seed);

}  // namespace tracepipe::bench
