#pragma once
// core/record/retired_files.h — files that rotation (RecorderOptions::
// max_files) dropped, freed a slice per recorder pass instead of at once.
//
// Why: unlink() of a file nothing holds open frees every block of it inside
// that one system call, which takes time in proportion to the file's size.
// Called on the recorder's thread between two drains, that is a gap in
// which the writers' buffers fill: events are lost, or in blocking mode the
// writers wait. So retire() removes the name at once (the directory shows
// what max_files keeps, and a new file of that name is a new file) while
// holding the file open, and step() gives back kSliceBytes of it per pass
// with ftruncate() from its end, closing it once it is empty.
//
//   retire(p): open p, unlink p, queue the descriptor
//   step():    shrink the oldest queued file by one slice; close it at 0.
//              With more than kMaxQueued files queued (rotation faster than
//              the passes free them), the oldest is closed whole.
//   finish():  close everything queued (the recording has ended).
//
// A file that cannot be opened is removed the usual way. The disk space of
// a retired file comes back within size / kSliceBytes passes, not at once:
// while a file is retired, the recording holds at most one file more than
// max_files on disk (and kMaxQueued bounds it).
//
// Thread-safety: none; the recorder thread owns it. Errors are not thrown:
// a failed ftruncate() closes the file (freeing the rest at once).
#include <cstdint>
#include <deque>
#include <filesystem>

namespace tracepipe::record {

class RetiredFiles {
 public:
  /// Bytes freed per step(): at most a few hundred µs of page freeing.
  static constexpr uint64_t kSliceBytes = 8ull << 20;
  /// Files queued beyond this are closed whole by step().
  static constexpr size_t kMaxQueued = 2;

  RetiredFiles() = default;
  RetiredFiles(const RetiredFiles&) = delete;
  RetiredFiles& operator=(const RetiredFiles&) = delete;
  ~RetiredFiles() { finish(); }

  /// Removes `path` from its directory now, and queues its blocks to be
  /// freed by step(). Returns false when the name could not be removed
  /// (errno kept in `error()`).
  bool retire(const std::filesystem::path& path) noexcept;
  /// Frees one slice of the oldest retired file (or closes files beyond
  /// kMaxQueued). Cheap when nothing is queued.
  void step() noexcept;
  /// Closes every retired file.
  void finish() noexcept;
  /// Files still being freed.
  size_t queued() const noexcept { return files_.size(); }

 private:
  struct File {
    int fd;
    uint64_t size;  ///< bytes left, from its end
  };
  std::deque<File> files_;
};

}  // namespace tracepipe::record
