#pragma once
// The flight file: a ring buffer that outlives its process, and what is
// needed to read it. Written by core/flight/flight_file.h (the instance
// option InstanceOptions::flight_recorder), read by core/recover/recover.h
// (`tracepipe recover`), which trusts none of it. User guide: docs/flight.md.
//
//   offset 0        FileHeader (kHeaderBytes): magic, version, geometry,
//                   where the parts are, clock, pid; a CRC-32 over its fixed
//                   part; then the mutable words (meta_used, state)
//   meta_offset     the metadata log: entries appended under the instance's
//                   control mutex (event formats, pid -> comm), each
//                   [MetaEntry][bytes][pad to 8] with its own CRC-32; an
//                   entry counts once meta_used (release-stored) covers it
//   ring_offset     the ring buffer's region (buffers::RingMemoryLayout):
//                   cpus x detail::CpuBuffer (tail word, loss counters) |
//                   position words | spare words | slot words |
//                   sub-buffers (each position's memory is the one its slot
//                   word names), exactly as the writers use them (the write
//                   path is the same code)
//
// The idea is LTTng-UST's buffers in shared memory read by lttng-crash,
// without a session daemon: the file is the buffer. All integers are in the
// byte order of the writing host (checked with kEndianMark).
#include <cstddef>
#include <cstdint>

namespace tracepipe::flight {

inline constexpr char kMagic[8] = {'T', 'P', 'F', 'L', 'I', 'G', 'H', 'T'};
/// 2: the ring has set-aside spares (nr_spares, spares_offset) and a slot
/// word per position (slots_offset) saying which sub-buffer of memory it
/// uses (buffers/ring_buffer.h, "Set aside").
inline constexpr uint32_t kVersion = 2;
inline constexpr uint32_t kEndianMark = 0x01020304;
inline constexpr size_t kHeaderBytes = 4096;
/// Default metadata log capacity (formats and cmdlines; ~1-2 KiB per event
/// format; FlightFileConfig::meta_capacity).
inline constexpr size_t kMetaCapacity = size_t{1} << 20;
/// File name suffix: <instance>-<pid>.tpflight
inline constexpr const char* kSuffix = ".tpflight";

/// FileHeader::state
enum class FileState : uint32_t {
  creating = 0,  ///< the header or ring is not complete yet (a crash during creation)
  live = 1,      ///< writers may be running (or the process died)
  closed = 2,    ///< the instance was destroyed cleanly (its file is then removed)
};

/// FileHeader::ring_mode
inline constexpr uint32_t kModeOverwrite = 0;
inline constexpr uint32_t kModeDropNewest = 1;

/// At offset 0. The fixed part, [0, offsetof(header_crc)), is written once
/// before the state becomes live, and covered by header_crc (zlib crc32).
struct FileHeader {
  char magic[8];
  uint32_t version;
  uint32_t endian;        ///< kEndianMark
  uint32_t header_bytes;  ///< kHeaderBytes
  uint32_t reserved0;
  uint64_t file_size;  ///< bytes of the whole file
  // Ring geometry (buffers::RingMemoryLayout); offsets from ring_offset.
  uint32_t cpus;
  uint32_t nr_subbufs;
  uint64_t subbuf_size;
  uint32_t ring_mode;  ///< kModeOverwrite / kModeDropNewest
  uint32_t cpu_local;  ///< 1: writers reserve in their own CPU's buffer (rseq)
  uint64_t ring_offset;
  uint64_t ring_size;
  uint64_t cpu_state_offset;
  uint64_t cpu_state_size;  ///< sizeof(buffers::detail::CpuBuffer) of the writer
  uint64_t positions_offset;
  uint64_t pages_offset;
  uint64_t pages_per_cpu;  ///< (nr_subbufs + nr_spares) * subbuf_size
  uint64_t
      slots_offset;  ///< cpus x nr_subbufs u32: the sub-buffer (of pages_per_cpu) position i uses
  uint64_t spares_offset;  ///< cpus x nr_spares u64 spare words
  uint32_t nr_spares;      ///< sub-buffers per CPU outside the ring (swapped in for a stalled one)
  uint32_t reserved2;
  // Metadata log.
  uint64_t meta_offset;
  uint64_t meta_capacity;
  // The trace clock.
  char clock[32];                ///< trace-cmd's name ("local", "mono", ...), NUL-terminated
  uint32_t clock_in_ns;          ///< 1 if stamps are ns
  int32_t pid;                   ///< the process that created the file
  char comm[16];                 ///< its name (NUL-terminated)
  char instance[64];             ///< instance name (NUL-terminated)
  uint64_t created_realtime_ns;  ///< CLOCK_REALTIME at creation
  uint32_t header_crc;           ///< crc32 of [0, offsetof(header_crc))
  uint32_t reserved1;
  // Mutable words (not in the CRC), accessed atomically.
  uint64_t meta_used;     ///< bytes of complete entries in the metadata log (release)
  uint32_t state;         ///< FileState (release)
  uint32_t meta_dropped;  ///< entries that did not fit the log
};
static_assert(sizeof(FileHeader) <= kHeaderBytes);

/// One metadata log entry's head; `bytes` bytes follow, then zero padding
/// to a multiple of 8. crc = crc32 over kind, len and the bytes.
struct MetaEntry {
  uint32_t kind;  ///< MetaKind
  uint32_t len;   ///< bytes after this head (padding excluded)
  uint32_t crc;
  uint32_t reserved;
};
static_assert(sizeof(MetaEntry) == 16);

enum class MetaKind : uint32_t {
  format = 1,   ///< system NUL format-file text (core/events/event_format.h: to_format_text)
  cmdline = 2,  ///< i32 pid, then the comm (no NUL)
};

}  // namespace tracepipe::flight
