#pragma once
// core/record/trace_file.h — a trace.dat (version 6) that grows while it is
// recorded, and is a valid trace.dat after every append.
//
// Version 6 keeps each CPU's data contiguous and finds it through one table
// in the headers (cpus x {u64 offset, u64 size}). trace-cmd record writes
// each CPU to its own temporary file and joins them at the end; here each
// CPU gets its own region of one sparse file instead, so the file is the
// recording at every moment:
//
//   0                 data_base         data_base + C     data_base + 2C
//   ┌───────────────┬──────────────────┬─────────────────┬────────── ...
//   │ headers + pad │ CPU 0 pages ▶    │ CPU 1 pages ▶   │ CPU 2 ...
//   │ (reserve, pre-│   (hole after)   │   (hole after)  │
//   │  allocated)   │                  │                 │
//   └───────────────┴──────────────────┴─────────────────┴────────── ...
//
//   append(cpu, pages):  (1) pwrite the pages at the end of the CPU's data
//                        (2) pwrite that CPU's 16-byte table entry
//   A reader that opens the file between appends sees every page whose
//   table entry was written, and nothing torn: (2) only follows a complete (1).
//   The holes cost no disk space. finalize() moves CPUs 1.. down so that the
//   data is contiguous (copy_file_range within the file, entry by entry,
//   each table entry rewritten after its move), rewrites the headers (final
//   formats and cmdlines) and truncates the file after the last page. On a
//   full disk the blocks of a cut-short write are returned first and a move
//   that finds no room goes page by page (room for one page needed, taken
//   from the header reserve's unused part when the disk is full to its last
//   block), so the file is not left larger than its data; if even that
//   fails, the file stays as it was before that move: valid, sparse.
//
// Errors are returned as errno values (0 = done), never thrown after
// construction: the recorder decides what a failure means. Once an append
// fails, the caller should not append to that file again (the data written
// before stays readable).
//
// Thread-safety: none; one recorder thread owns a TraceFile.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tracepipe/core/record/sink.h"
#include "tracepipe/core/tracedat/tracedat_decompress.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tracepipe::record {

struct TraceFileOptions {
  std::filesystem::path path;
  /// Bytes of each CPU's region (a multiple of the page size); 0: 16 GiB
  /// per CPU, less above 64 CPUs (at most 1 TiB of address space in all).
  uint64_t cpu_region = 0;
  /// Version 7 at finalize(): the recording (version 6 while it grows) is
  /// rewritten as a version 7 file compressed with `v7` (zstd, zlib or
  /// none), page by page into a temporary beside it, renamed over it.
  std::optional<detail::Compression> v7;
};

class TraceFile final : public TraceSink {
 public:
  /// Creates (or truncates) `options.path` and writes the headers of
  /// `meta` (its formats, cmdlines, clock, cpus and page size) with an
  /// empty CPU table. Throws std::system_error on failure.
  TraceFile(const TraceFileOptions& options, const TraceDatWriter& meta);
  ~TraceFile() override;
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  /// Appends whole pages (a multiple of the page size) to `cpu`'s data.
  /// Returns 0, an errno of pwrite (ENOSPC, EIO, ...), or EFBIG when the
  /// CPU's region is full. On failure nothing of `pages` is in the table.
  int append(uint32_t cpu, std::span<const std::byte> pages) noexcept override;
  /// Allocates file space for `bytes` more of `cpu`'s data (after what it
  /// holds, within its region) now, so that the appends that fill it only
  /// copy: for a writer that knows its output's size ahead (`replay -o`)
  /// and wants the allocation out of its timed part. Whatever is not filled
  /// is released at finalize() (before the compaction). Returns 0, or an
  /// errno of fallocate (ENOSPC: nothing is reserved; appends still try;
  /// EOPNOTSUPP on a file system without it). Measured on tmpfs: allocating
  /// ahead costs as much as allocating while appending; only where it
  /// happens changes.
  int preallocate(uint32_t cpu, uint64_t bytes) noexcept;
  /// Rewrites the headers with `meta`'s formats and cmdlines (e.g. names
  /// learnt since). Returns 0, an errno, or EFBIG when they outgrow the
  /// reserve (then the old headers stay).
  int rewrite_headers(const TraceDatWriter& meta) noexcept override;
  /// 0 while the file still has a name; ENOENT once it was removed (or
  /// replaced by another file) and the errno of fstat/stat on failure.
  int check_present() const noexcept override;
  /// Makes the data contiguous, writes the final headers, truncates and
  /// closes. Returns the first error (the file stays valid, maybe sparse).
  /// With `v7`: writes the version 7 file instead; if that fails (disk
  /// full), returns its error and finishes the version 6 file as above.
  int finalize(const TraceDatWriter& meta) noexcept override;

  /// After a finalize() whose version 7 rewrite failed: true when the file
  /// was finished as version 6 instead (complete, every record in it).
  bool kept_v6() const noexcept { return kept_v6_; }
  /// Where finalize() writes the version 7 file of `path` before renaming
  /// it over `path` (left behind only if the process dies meanwhile).
  static std::filesystem::path v7_temp_path(std::filesystem::path path) {
    path += ".v7.tmp";
    return path;
  }

  uint64_t cpu_bytes(uint32_t cpu) const noexcept { return ext_[cpu].size; }
  uint64_t total_bytes() const noexcept override;
  std::string describe() const override { return path_.string(); }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  int write_table_entry(uint32_t cpu) noexcept;
  int move_down(uint32_t cpu, uint64_t to) noexcept;
  int move_down_page_by_page(uint32_t cpu, uint64_t to) noexcept;
  void release_header_reserve(const TraceDatWriter& meta) noexcept;
  int finalize_v7(const TraceDatWriter& meta) noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t dev_ = 0, ino_ = 0;
  uint32_t page_size_ = 4096;
  uint64_t data_base_ = 0;  // header reserve
  uint64_t region_ = 0;
  size_t table_off_ = 0;
  std::vector<TraceDatWriter::CpuExtent> ext_;
  std::vector<uint64_t> reserved_;  // per CPU: bytes allocated by preallocate() from its offset
  std::optional<detail::Compression> v7_;
  bool kept_v6_ = false;
};

}  // namespace tracepipe::record
