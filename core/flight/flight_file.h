#pragma once
// The writing side of a flight file (core/flight/flight_format.h): creates
// the file, maps it shared, and keeps its metadata log. An Instance built
// with InstanceOptions::flight_recorder owns one and builds its ring buffer
// in ring_memory() (buffers::RingBufferConfig::memory). User guide:
// docs/flight.md; the reading side: core/recover/recover.h.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/flight/flight_format.h"

namespace tracepipe::flight {

/// The default directory: tmpfs, so the file costs memory, not disk I/O,
/// and survives the process but not a reboot.
inline constexpr const char* kDefaultDir = "/dev/shm/tracepipe";

struct FlightFileConfig {
  std::filesystem::path dir = kDefaultDir;  ///< created if missing; the file is mode 0600
  std::string instance = "main";            ///< instance name, part of the file name
  buffers::RingBufferConfig ring;           ///< geometry (its memory fields are ignored)
  buffers::OverflowMode mode = buffers::OverflowMode::overwrite;
  bool cpu_local = false;
  std::string clock = "local";  ///< trace-cmd's clock name
  bool clock_in_ns = true;
  /// Bytes for the metadata log (formats, cmdlines); at least 4096.
  size_t meta_capacity = kMetaCapacity;
};

/// One flight file, mapped MAP_SHARED read-write. Creation reserves every
/// byte of it (posix_fallocate), so a full tmpfs fails here with an error
/// instead of raising SIGBUS in a writer later.
///
/// Thread-safety: add_format/add_cmdline from any thread (own mutex; not
/// async-signal-safe); the ring memory is the ring buffer's.
class FlightFile {
 public:
  /// Creates DIR/<instance>-<pid>.tpflight (an existing file of that name,
  /// left by an earlier process with the same pid, is replaced). Throws
  /// std::system_error naming the path for I/O errors, buffers::ConfigError
  /// for a bad geometry, std::invalid_argument for a metadata log < 4096.
  static std::unique_ptr<FlightFile> create(const FlightFileConfig& config);
  /// Marks the file closed, unmaps it and removes it (a clean end leaves no
  /// file behind; a crash leaves it for `tracepipe recover`). In a forked
  /// child (another pid than the creator's) it only unmaps.
  ~FlightFile();
  FlightFile(const FlightFile&) = delete;
  FlightFile& operator=(const FlightFile&) = delete;

  /// Where the ring buffer goes (buffers::RingBufferConfig::memory / memory_size).
  std::byte* ring_memory() const noexcept { return base_ + ring_offset_; }
  size_t ring_size() const noexcept { return ring_size_; }
  const std::filesystem::path& path() const noexcept { return path_; }

  /// The ring is built: the file now reads as live.
  void set_live() noexcept;
  /// Appends the event's format to the metadata log (once per event ID).
  /// False if the log is full (counted in the header's meta_dropped).
  bool add_format(const EventFormat& format);
  /// Appends pid -> comm (again only if the comm changed).
  bool add_cmdline(int32_t pid, std::string_view comm);

 private:
  FlightFile() = default;
  bool append(MetaKind kind, std::string_view bytes);
  FileHeader& header() const noexcept { return *reinterpret_cast<FileHeader*>(base_); }

  std::filesystem::path path_;
  std::byte* base_ = nullptr;
  size_t size_ = 0;
  size_t meta_capacity_ = 0;
  size_t ring_offset_ = 0;
  size_t ring_size_ = 0;
  std::mutex mu_;
  std::set<uint32_t> formats_;
  std::set<std::pair<int32_t, std::string>> cmdlines_;
};

/// zlib's crc32 of `n` bytes, continuing from `crc` (0 to start).
uint32_t crc32_bytes(const void* data, size_t n, uint32_t crc = 0) noexcept;

}  // namespace tracepipe::flight
