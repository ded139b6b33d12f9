#pragma once
// Reading a flight file (core/flight/flight_format.h) after its process
// died, or while it runs: every record whose commit completed, per CPU in
// buffer order, and a trace.dat of them for trace-cmd report and
// KernelShark. `tracepipe recover` is this library. User guide: docs/flight.md.
//
//   recover_file(path) ─▶ RecoveredTrace { header, formats, cmdlines, per-CPU records, counters }
//                      └▶ write_trace_dat(trace, "out.dat")
//
// Method: the file is untrusted input. The header's fixed part is checked
// against its CRC and its geometry against the ring layout the writer
// would have used (buffers::ring_memory_layout); every offset is checked
// against the file size before it is read. Then, per CPU, the LIVE
// sub-buffers are ordered oldest first from the tail word and walked like
// the ring's own readers (buffers/cpu_buffer.h: walk_subbuf): a record is
// shown only when its header word is committed (the ring's I2), so a
// reservation whose writer died before its commit is never a record: its
// stride (stored at reserve, buffers/record.h) steps over it and it is
// counted `uncommitted`. A reservation whose writer died before even that
// (a window of two stores) leaves no length: the walk stops there and the
// sub-buffer is counted `cut_short`. Sub-buffers being recycled (PREPARING)
// hold records already counted as overrun and are skipped: a sub-buffer is
// read only while the ring's protocol says nobody may zero it (I3), so no
// record is torn.
//
// Live (RecoverOptions::live): the writers may still run. Each sub-buffer's
// position word is read again after its records were copied (after an
// acquire fence, as a seqlock reader): if it changed lap or phase the
// sub-buffer was recycled meanwhile and its copies are dropped (counted
// `raced`). Nothing is written to the file; the process is not stopped.
//
// Thread-safety: free functions, no shared state.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tracepipe/buffers/stats.h"
#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/flight/flight_format.h"

namespace tracepipe::recover {

/// A flight file that cannot be read: what() names the file (when known),
/// the part ("header", "header.file_size", "cpu 3 tail word", ...) and the
/// byte offset in the file: "FILE: header.magic (at offset 0): ...".
class RecoverError : public std::runtime_error {
 public:
  RecoverError(std::string part, uint64_t offset, const std::string& why,
               const std::string& file = "flight file");
  /// The same error, naming `file`.
  RecoverError(const RecoverError& e, const std::string& file)
      : RecoverError(e.part_, e.offset_, e.why_, file) {}
  const std::string& part() const noexcept { return part_; }
  uint64_t offset() const noexcept { return offset_; }
  const std::string& why() const noexcept { return why_; }

 private:
  std::string part_;
  uint64_t offset_;
  std::string why_;
};

struct RecoverOptions {
  /// The writing process may still run (see the top of this file).
  bool live = false;
  /// Damage inside a sub-buffer or the metadata log (a record that runs past
  /// its sub-buffer, a bad metadata CRC), or a file shorter than its header
  /// says (truncated), throws RecoverError instead of skipping the
  /// sub-buffer, entry or missing part with a warning. Without it, a
  /// truncated file yields what precedes the cut (the metadata must be
  /// whole), and a warning says where the reading stopped.
  bool strict = false;
};

/// One recovered record; its payload is RecoveredCpu::data[offset, offset + size).
struct RecoveredRecord {
  uint64_t ts = 0;
  uint64_t offset = 0;
  uint32_t size = 0;
};

struct RecoveredCpu {
  uint32_t cpu = 0;
  std::vector<RecoveredRecord> records;  ///< in buffer order (stamps non-decreasing)
  std::vector<std::byte> data;
  /// The writers' own counters as the file holds them (entries, bytes and
  /// stamps are those of the recovered records).
  buffers::CpuStats counters;
  uint64_t uncommitted = 0;  ///< reservations never committed (writer died or is writing): skipped
  uint64_t cut_short = 0;    ///< sub-buffers whose walk stopped at a reservation of unknown length
  uint64_t damaged = 0;      ///< sub-buffers skipped as inconsistent (a warning each)
  uint64_t raced = 0;        ///< live: sub-buffers recycled while copied (their records dropped)
  uint64_t subbufs = 0;      ///< sub-buffers read

  std::span<const std::byte> payload(const RecoveredRecord& r) const noexcept {
    return {data.data() + r.offset, r.size};
  }
};

struct RecoveredTrace {
  uint32_t version = 0;
  flight::FileState state = flight::FileState::creating;
  int32_t pid = 0;
  std::string comm;
  std::string instance;
  std::string clock;
  bool clock_in_ns = true;
  uint64_t created_realtime_ns = 0;
  uint32_t subbuf_size = 0;
  uint32_t nr_subbufs = 0;
  bool overwrite = true;
  bool cpu_local = false;
  std::vector<EventFormat> formats;
  std::vector<std::pair<int32_t, std::string>> cmdlines;  ///< later entries override earlier
  std::vector<RecoveredCpu> cpus;
  std::vector<std::string> warnings;  ///< damage skipped (each names the part and offset)

  uint64_t records() const noexcept;
  uint64_t uncommitted() const noexcept;
  uint64_t cut_short() const noexcept;
};

/// Recovers a flight file held in memory. Throws RecoverError.
RecoveredTrace recover_bytes(std::span<const std::byte> file, const RecoverOptions& options = {});
/// Maps `path` read-only and recovers it. Throws RecoverError, or
/// std::system_error when the file cannot be opened.
RecoveredTrace recover_file(const std::filesystem::path& path, const RecoverOptions& options = {});

/// The flight files (*.tpflight) in `dir`, sorted by name. Throws
/// std::system_error if `dir` cannot be listed.
std::vector<std::filesystem::path> find_flight_files(const std::filesystem::path& dir);

/// The recovered records as a trace.dat (v6): one stream per CPU, the
/// formats and cmdlines of the file, the clock; a CPU whose writers counted
/// overrun starts with a "missed events" mark of that count. Throws
/// std::system_error on I/O failure.
void write_trace_dat(const RecoveredTrace& trace, const std::filesystem::path& path);
std::vector<std::byte> trace_dat_bytes(const RecoveredTrace& trace);

}  // namespace tracepipe::recover
