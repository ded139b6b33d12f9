#pragma once
// A read-only memory mapping of a whole file (or an owned in-memory copy),
// exposed as a span of bytes. Move-only; the span stays valid while the
// object lives. Thread-safe for concurrent reads.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace tracepipe {

class MappedFile {
 public:
  MappedFile() = default;
  /// Maps the regular file `path` read-only (MAP_PRIVATE). An empty file
  /// gives an empty span. Opened by RegularFile::open (core/files/input_file.h):
  /// the open never blocks, and the descriptor, not the path, is checked, so
  /// a FIFO, a directory or a device is refused promptly even if it replaced
  /// a regular file a moment earlier. Throws InputFileError "PATH: PROBLEM":
  /// "not a regular file (a FIFO)" (or "a directory", "a character device",
  /// ...), "cannot open it: <strerror>", "cannot map it: <strerror>".
  static MappedFile open(const std::filesystem::path& path);
  /// Owns a copy of `bytes` (for tests and fuzzing).
  static MappedFile copy_of(std::span<const std::byte> bytes);

  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  /// True when `path` (symbolic links followed; a hard link is the same
  /// file) is the file open() mapped, by device and inode: a writer about to
  /// truncate or replace `path` asks first, since truncating a mapped file
  /// makes its later reads a SIGBUS. False for a copy_of() or a path that
  /// cannot be stat()ed.
  bool is_file(const std::filesystem::path& path) const noexcept;

 private:
  void reset() noexcept;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  bool has_id_ = false;  // open() set dev_, ino_
  uint64_t dev_ = 0, ino_ = 0;
  std::vector<std::byte> owned_;
};

}  // namespace tracepipe
