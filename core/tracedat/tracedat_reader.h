#pragma once
// Reader of trace-cmd's trace.dat files.
//
// Supported: version 6 (all of it: header_page/header_event, ftrace and
// event formats, kallsyms, printk formats, saved cmdlines, options,
// flyrecord per-CPU data, latency text) and version 7, uncompressed or
// compressed with zstd or zlib (sections located through the OPTIONS
// section; the top instance's flyrecord data from its BUFFER option).
// Every buffer is read: the top instance and each named instance that
// `trace-cmd record/extract -B NAME` stored (v6: a BUFFER option with the
// offset of the instance's own "flyrecord" CPU table; v7: a BUFFER option
// per instance with its clock, CPU count and per-CPU data). buffers()
// lists them; the top-instance calls (cpu_data, cpu_records, records)
// are unchanged.
// Compressed sections are decompressed at open into buffers the reader
// owns, and so is each CPU's chunked trace data: a compressed file costs
// its uncompressed size in memory (core/tracedat/tracedat_decompress.h caps it).
// Other algorithms and big-endian files are rejected with a TraceDatError.
// See docs/tracedat.md.
//
//   file (mmap'd, read-only)
//   ├─ headers ──► formats (by ID), cmdlines, options, kallsyms/printk text
//   └─ per CPU: [page][page]...  each page = kernel sub-buffer (kernel_page.h)
//                 │
//                 ▼
//      CpuRecordCursor (one CPU, file order = time order)
//      MergedRecordCursor (all CPUs, by time stamp, ties to the lower CPU)
//
// Records are zero-copy: TraceRecord::payload points into the mapping (or
// the decompressed buffer) and stays valid while the reader lives. A
// malformed page makes the cursor throw TraceDatError naming the CPU and
// the file offset ("cpu N decompressed data" and the offset within that
// CPU's decompressed data for a compressed file).
//
// Thread-safety: a reader is immutable after construction; any number of
// threads may use it and create cursors concurrently (one cursor per
// thread).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/files/mapped_file.h"
#include "tracepipe/core/tracedat/kernel_page.h"
#include "tracepipe/core/tracedat/tracedat_error.h"

namespace tracepipe {

/// Option ids known to trace-cmd (lib/trace-cmd/include/private/trace-cmd-private.h).
enum class TraceDatOptionId : uint16_t {
  done = 0,
  date = 1,
  cpustat = 2,
  buffer = 3,
  traceclock = 4,
  uname = 5,
  hook = 6,
  offset = 7,
  cpucount = 8,
  version = 9,
  procmaps = 10,
  traceid = 11,
  time_shift = 12,
  guest = 13,
  tsc2nsec = 14,
  strings = 15,
  header_info = 16,
  ftrace_events = 17,
  event_formats = 18,
  kallsyms = 19,
  printk = 20,
  cmdlines = 21,
  buffer_text = 22,
  btf_file = 23,
  last_boot_info = 24,
  modules_file = 25,
};

/// One option as stored: id, where its data starts in the file, its bytes.
struct TraceDatOption {
  uint16_t id;
  uint64_t file_offset;
  std::span<const std::byte> data;
};

/// Where one CPU's ring-buffer pages lie in the file.
struct CpuDataInfo {
  uint32_t cpu;                    ///< CPU number
  uint64_t offset;                 ///< byte offset in the file (page aligned)
  uint64_t size;                   ///< bytes as stored (a whole number of pages, normally; for
                                   ///< compressed files the chunk bytes, which trace-cmd
                                   ///< records 4 bytes short)
  uint64_t uncompressed_size = 0;  ///< bytes of page data (== size unless compressed)
};

/// One ring buffer stored in the file: the top instance (name "") or a
/// named instance (tracefs instances/NAME).
struct TraceDatBuffer {
  std::string name;        ///< "" for the top instance
  std::string clock;       ///< its trace clock ("local"); empty when not recorded
  uint32_t cpu_count = 0;  ///< CPUs of the buffer (v6: the file header's; v7: its BUFFER option's)
  uint64_t option_offset = 0;  ///< file offset of its BUFFER option's data (0 for the v6 top table)
  std::vector<CpuDataInfo> cpu_data;  ///< one entry per CPU in file order
};

/// The parsed header_page text: where the sub-buffer header fields are.
struct HeaderPageInfo {
  FormatField timestamp;
  FormatField commit;  ///< its size is the kernel's long size (4 or 8)
  std::optional<FormatField> overwrite;
  FormatField data;  ///< offset = page header size
  kpage::PageLayout layout;
};

/// One event record of the file.
struct TraceRecord {
  uint64_t ts;   ///< time stamp in trace-clock units (ns for local/global/mono)
  uint32_t cpu;  ///< CPU whose buffer held it
  std::span<const std::byte> payload;  ///< starts at common_type; 4-byte padded length
  /// Events lost on this CPU just before this record (the page's
  /// RB_MISSED_EVENTS flag): 0 none, -1 some but the count was not stored,
  /// otherwise the count. Set only on the first record of such a page.
  int64_t lost_before = 0;

  /// common_type (the event ID), or nullopt if the payload is < 2 bytes.
  std::optional<uint16_t> event_id() const noexcept;
};

/// What walking one CPU's data met.
struct CpuWalkStats {
  uint64_t pages = 0;
  uint64_t records = 0;    ///< data records returned
  uint64_t discarded = 0;  ///< padding records with a length (discarded events)
  uint64_t time_extends = 0;
  uint64_t time_stamps = 0;
  uint64_t pages_with_loss = 0;  ///< pages flagged RB_MISSED_EVENTS
  uint64_t lost_events = 0;      ///< sum of the stored lost counts
};

class TraceDatReader;

/// Records of one CPU in file order (non-decreasing time stamps for
/// well-formed data). Throws TraceDatError from next() on a malformed page.
class CpuRecordCursor {
 public:
  CpuRecordCursor() = default;

  /// The next record, or nullopt at the end of this CPU's data.
  [[gnu::always_inline]] inline std::optional<TraceRecord> next() {
    for (;;) {
      if (auto r = page_.next()) [[likely]] {
        TraceRecord out{r->ts + ts_offset_, cpu_, r->payload, pending_lost_};
        pending_lost_ = 0;
        return out;
      }
      if (!next_page()) return std::nullopt;
    }
  }
  /// Counts so far (complete once next() returned nullopt).
  CpuWalkStats stats() const noexcept;
  uint32_t cpu() const noexcept { return cpu_; }

 private:
  friend class TraceDatReader;
  CpuRecordCursor(std::span<const std::byte> data, uint64_t file_offset, uint32_t cpu,
                  kpage::PageLayout layout, int64_t ts_offset, bool decompressed,
                  std::string_view buffer, std::string_view file);
  bool next_page();  // false at the end; throws on a bad page
  [[gnu::cold]] std::string section_name() const;

  std::span<const std::byte> data_;
  uint64_t file_offset_ = 0;
  size_t next_page_ = 0;  // byte offset of the next page within data_
  uint32_t cpu_ = 0;
  kpage::PageLayout layout_;
  int64_t ts_offset_ = 0;
  int64_t pending_lost_ = 0;
  kpage::PageCursor page_;
  size_t page_start_ = 0;
  CpuWalkStats done_;                    // counts of finished pages
  bool decompressed_ = false;            // data_ is decompressed: offsets are within it
  std::string_view buffer_;              // instance name for errors ("" = top); owned by the reader
  std::string_view file_ = "trace.dat";  // TraceDatError's file; owned by the reader
};

/// Records of all CPUs merged by time stamp (ties go to the lower CPU
/// index, as trace-cmd does). Throws TraceDatError from next() on a
/// malformed page.
class MergedRecordCursor {
 public:
  /// The record with the smallest time stamp among the CPUs' next ones.
  [[gnu::always_inline]] inline std::optional<TraceRecord> next() {
    const size_t n = heads_.size();
    size_t best = n;
    for (size_t i = 0; i < n; ++i) {
      if (live_[i] && (best == n || heads_[i].ts < heads_[best].ts)) best = i;
    }
    if (best == n) return std::nullopt;
    const TraceRecord out = heads_[best];
    advance(best);
    return out;
  }

 private:
  friend class TraceDatReader;
  explicit MergedRecordCursor(std::vector<CpuRecordCursor> cpus);
  void advance(size_t i) {
    if (auto r = cpus_[i].next())
      heads_[i] = *r;
    else
      live_[i] = 0;
  }
  std::vector<CpuRecordCursor> cpus_;
  std::vector<TraceRecord> heads_;  // the next record of each CPU (valid where live_)
  std::vector<uint8_t> live_;
};

/// A trace.dat file opened for reading. Construction parses every header
/// and validates the layout of the per-CPU data; the pages themselves are
/// decoded lazily by the cursors.
class TraceDatReader {
 public:
  /// Maps and parses `path` (MappedFile::open). Throws InputFileError
  /// (core/files/input_file.h) if it cannot be opened or mapped or is no regular
  /// file - a FIFO is refused without blocking -, TraceDatError (section +
  /// offset) if it is malformed/unsupported. Its errors, and those of its
  /// cursors, name `path`.
  static TraceDatReader open(const std::filesystem::path& path);
  /// Parses bytes already in memory (owned by `file`); `name` is the file
  /// its TraceDatErrors and its cursors' name.
  explicit TraceDatReader(MappedFile file, std::string name = "trace.dat");

  TraceDatReader(TraceDatReader&&) noexcept = default;
  TraceDatReader& operator=(TraceDatReader&&) noexcept = default;

  uint32_t version() const noexcept { return version_; }
  /// sizeof(long) of the recording user space (informational; the kernel's
  /// long is header_page().commit.size).
  uint32_t user_long_size() const noexcept { return user_long_size_; }
  /// Sub-buffer size in bytes, from the file header.
  uint32_t page_size() const noexcept { return page_size_; }
  /// v7 compression name from the file header ("none", "zstd", "zlib");
  /// empty for v6.
  const std::string& compression() const noexcept { return compression_; }

  const HeaderPageInfo& header_page() const noexcept { return header_page_; }
  std::string_view header_page_text() const noexcept { return header_page_text_; }
  std::string_view header_event_text() const noexcept { return header_event_text_; }

  /// Every format in the file: the ftrace ones (system "ftrace") first, then
  /// the event systems in file order.
  const std::vector<EventFormat>& formats() const noexcept { return formats_; }
  /// The format whose ID is `id`, or nullptr. O(1).
  const EventFormat* format(uint32_t id) const noexcept {
    return id < by_id_.size() && by_id_[id] >= 0 ? &formats_[static_cast<size_t>(by_id_[id])]
                                                 : nullptr;
  }
  /// The format named system/name, or nullptr.
  const EventFormat* find_format(std::string_view system, std::string_view name) const noexcept;
  /// Problems the reader stepped over instead of refusing the file, in file
  /// order. Today: an event format whose text does not parse is left out of
  /// formats() (its records then have no format: TraceReport prints them as
  /// "[UNKNOWN TYPE <id>]"); the entry reads "<section> at offset <n>
  /// (0x<hex>): <system>/<name>: format line <N>: <reason>: '<line>'; format
  /// skipped". An entry does not name the file: prefix name(), as
  /// TraceDatError::detail() is prefixed and as the commands print it
  /// ("tracepipe report: warning: <file>: <entry>"). Framing errors (a size
  /// past the end of the file) still throw.
  const std::vector<std::string>& warnings() const noexcept { return warnings_; }

  std::string_view kallsyms_text() const noexcept { return kallsyms_; }
  std::string_view printk_text() const noexcept { return printk_; }
  std::string_view cmdlines_text() const noexcept { return cmdlines_text_; }
  /// pid -> comm from saved_cmdlines.
  const std::unordered_map<int32_t, std::string>& cmdlines() const noexcept { return cmdlines_; }
  /// The comm of `pid`, or nullopt when the file does not know it.
  std::optional<std::string_view> comm(int32_t pid) const noexcept;

  /// All options in file order (v6: the options block; v7: every OPTIONS
  /// section, DONE entries excluded).
  std::span<const TraceDatOption> options() const noexcept { return options_; }
  /// The first option with this id, if any.
  const TraceDatOption* option(TraceDatOptionId id) const noexcept;
  /// Contents of trace_clock as recorded ("[local] global ..."), or empty.
  std::string_view trace_clock() const noexcept { return trace_clock_; }
  /// The selected clock name ("local"), or empty if the file does not say.
  std::string clock_name() const;
  /// Added to every time stamp (OPTION OFFSET); 0 when absent.
  int64_t ts_offset() const noexcept { return ts_offset_; }

  /// CPU count from the file header (v6) or, for v7, the CPUCOUNT option
  /// (the top BUFFER option's count when CPUCOUNT is absent): what
  /// `trace-cmd report` prints as "cpus=N".
  uint32_t cpu_count() const noexcept { return cpu_count_; }
  /// Data of the top instance, one entry per CPU in file order (empty when
  /// a v7 file holds only named instances).
  std::span<const CpuDataInfo> cpu_data() const noexcept {
    return top_buffer_ ? std::span<const CpuDataInfo>(buffers_[*top_buffer_].cpu_data)
                       : std::span<const CpuDataInfo>();
  }

  /// Every buffer of the file in trace-cmd report's order: the top
  /// instance first when the file has one (always for v6; for v7 when a
  /// BUFFER option has the empty name), then the named instances in the
  /// order of their BUFFER options. Empty for latency files.
  std::span<const TraceDatBuffer> buffers() const noexcept { return buffers_; }
  /// Index in buffers() of the buffer named `name` ("" = top), or nullopt.
  std::optional<size_t> find_buffer(std::string_view name) const noexcept;
  /// Records of CPU position `cpu_index` of buffers()[buffer].cpu_data.
  /// Throws std::out_of_range for a bad index.
  CpuRecordCursor buffer_cpu_records(size_t buffer, size_t cpu_index) const;
  /// Records of all CPUs of buffers()[buffer], merged by time stamp (ties
  /// to the lower CPU index). Throws std::out_of_range for a bad index.
  MergedRecordCursor buffer_records(size_t buffer) const;
  /// True for "latency" files (no per-CPU data, the rest is ASCII text).
  bool is_latency() const noexcept { return !latency_text_.empty(); }
  std::string_view latency_text() const noexcept { return latency_text_; }

  /// Records of `pages` (whole pages in this file's page layout, held
  /// outside the file: a recorder's drained pages) as CPU `cpu`'s, decoded
  /// and loss-marked as the file's own data is. `pages` must outlive the
  /// cursor; a malformed page throws TraceDatError with its offset in `pages`.
  CpuRecordCursor page_records(std::span<const std::byte> pages, uint32_t cpu) const;
  /// Records of the CPU at position `index` of cpu_data() (the top
  /// instance). Throws std::out_of_range if index >= cpu_data().size().
  CpuRecordCursor cpu_records(size_t index) const;
  /// Records of all CPUs of the top instance merged by time stamp (none
  /// when the file has no top instance).
  MergedRecordCursor records() const;

  /// The whole file.
  std::span<const std::byte> bytes() const noexcept { return file_.bytes(); }
  /// True when `path` is the file open() mapped (MappedFile::is_file): an
  /// output must not truncate or replace it while this reader lives.
  bool is_file(const std::filesystem::path& path) const noexcept { return file_.is_file(path); }
  /// The name errors give the file: open()'s path, or the constructor's
  /// name ("trace.dat" if that is empty, or for a moved-from reader).
  const std::string& name() const noexcept;

 private:
  friend class TraceDatParser;
  TraceDatReader() = default;
  void index_formats();

  MappedFile file_;
  // Behind a pointer so that cursors' views of it survive a move of the reader.
  std::unique_ptr<const std::string> name_ = std::make_unique<const std::string>("trace.dat");
  uint32_t version_ = 0;
  uint32_t user_long_size_ = 0;
  uint32_t page_size_ = 0;
  std::string compression_;
  HeaderPageInfo header_page_;
  std::string_view header_page_text_, header_event_text_;
  std::vector<EventFormat> formats_;
  std::vector<int32_t> by_id_;
  std::vector<std::string> warnings_;
  std::string_view kallsyms_, printk_, cmdlines_text_;
  std::unordered_map<int32_t, std::string> cmdlines_;
  std::vector<TraceDatOption> options_;
  std::string_view trace_clock_;
  std::string buffer_clock_;  // v7 top BUFFER option's clock name
  int64_t ts_offset_ = 0;
  uint32_t cpu_count_ = 0;
  std::vector<TraceDatBuffer> buffers_;
  std::optional<size_t> top_buffer_;  // index in buffers_
  std::string_view latency_text_;
  // Decompressed section bodies and CPU data (compressed v7 files only);
  // the views above point into them. Moving a vector keeps its buffer.
  std::vector<std::vector<std::byte>> owned_;
  std::vector<std::vector<std::span<const std::byte>>>
      cpu_bytes_;  // page data per buffer, per cpu_data entry
};

}  // namespace tracepipe
