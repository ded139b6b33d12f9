#pragma once
// An output file written in large appends, with the errors a converter
// reports: "<path>: <what failed>: <strerror>". Internal to core/convert.
// Thread-safety: none (one owner).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "tracepipe/core/convert/convert_error.h"

namespace tracepipe::convert {

class OutFile {
 public:
  OutFile() = default;
  /// Creates or truncates `path` (mode 0644). Throws ConvertOutputError.
  explicit OutFile(std::filesystem::path path);
  ~OutFile();
  OutFile(OutFile&& o) noexcept;
  OutFile& operator=(OutFile&& o) noexcept;

  /// Appends `n` bytes, retrying short writes. Throws ConvertOutputError;
  /// then the file is cut back (ftruncate) to its size before the call, so
  /// it ends with the last whole write (a Perfetto packet, a CTF packet)
  /// and not with part of this one, and later writes go on from there.
  void write(const void* p, size_t n);
  /// Cuts the file back to `size` bytes (<= size()), where the next write
  /// goes: to give up what was written since. False (the file unchanged)
  /// when ftruncate or lseek fails.
  bool truncate(uint64_t size) noexcept;
  /// Bytes written so far.
  uint64_t size() const noexcept { return size_; }
  /// Closes the file (fsync not implied). Throws ConvertOutputError on a close error.
  void close();
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace tracepipe::convert
