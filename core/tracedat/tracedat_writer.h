#pragma once
// Writer of trace-cmd's trace.dat, version 6, so that `trace-cmd report`
// (libtracecmd + libtraceevent) and KernelShark open tracepipe's traces.
//
//   TraceDatWriter w({.cpus = 2});
//   w.add_format(fmt);                       // every event the records use
//   w.set_cmdline(1234, "myapp");
//   w.add_record(cpu, ts_ns, payload);       // payload starts at common_type
//   ...                                      // (per CPU, any interleaving)
//   w.write("trace.dat");                    // or write_to(bytes)
//
// File layout written (see docs/tracedat.md and shared/reference/tracedat.md):
//   magic "\x17\x08\x44tracing" "6\0" | endian 0 | long 8 | u32 page size
//   header_page (generated from kpage::PageHeader64) | header_event
//   ftrace formats (system "ftrace") | event systems, formats grouped by system
//   kallsyms (u32 0 unless given) | printk (u32 0 unless given) | cmdlines (u64 size)
//   u32 cpus | "options  \0" CPUCOUNT, TRACECLOCK, u16 0 | "flyrecord\0"
//   cpus x (u64 offset, u64 size) | u64 size + "[clock]" | pad to a page
//   CPU 0 pages | CPU 1 pages | ...
//
// Records are encoded into kernel sub-buffers as they arrive (per-CPU page
// encoders; finished pages are kept in memory, so memory use is about the
// size of the file). Time stamps are in trace-clock units (ns for "local").
// Records of one CPU should be added in non-decreasing time order; a record
// older than its predecessor is stored with an absolute time stamp.
//
// Thread-safety: none; one thread feeds a writer.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/tracedat/kernel_page.h"
#include "tracepipe/core/tracedat/page_encoder.h"

namespace tracepipe {

struct TraceDatWriterConfig {
  uint32_t cpus = 1;          ///< number of per-CPU streams (CPU numbers 0..cpus-1)
  uint32_t page_size = 4096;  ///< sub-buffer bytes; a power of two >= 256
  /// The clock the time stamps come from, written as the TRACECLOCK option
  /// ("[local]"). trace-cmd prints local/global/mono/boot/... as seconds;
  /// "counter" and "x86-tsc" as raw counts.
  std::string clock = "local";
};

/// What a writer has stored.
struct TraceDatWriterStats {
  uint64_t records = 0;
  uint64_t pages = 0;       ///< finished pages (the pages being filled not included)
  uint64_t lost_marks = 0;  ///< add_lost() calls
};

class TraceDatWriter {
 public:
  /// Throws std::invalid_argument on a bad config (cpus 0 or > 65536, page
  /// size not a power of two in [256, 2^27]).
  explicit TraceDatWriter(TraceDatWriterConfig config);

  /// Declares an event the file will describe. Formats of system "ftrace"
  /// go to the ftrace section, all others to the event systems. Throws
  /// std::invalid_argument if another format already has this ID, or the ID
  /// does not fit common_type (> 65535), or the system/name is empty or
  /// contains whitespace.
  void add_format(const EventFormat& format);
  /// Sets pid -> comm (saved_cmdlines). Later calls override earlier ones.
  void set_cmdline(int32_t pid, std::string_view comm);
  /// Raw kallsyms / printk_formats text to embed (optional).
  void set_kallsyms(std::string text) { kallsyms_ = std::move(text); }
  void set_printk(std::string text) { printk_ = std::move(text); }
  /// Per-CPU statistics written as CPUSTAT options (one per CPU, in order),
  /// each the text of the kernel's per_cpu/cpuN/stats after a "CPU: N"
  /// line, as trace-cmd record stores them and `trace-cmd report --stat`
  /// prints them (tracecmd/trace-record.c: record_stats, add_buffer_stat).
  /// Empty (the default): no CPUSTAT option.
  void set_cpu_stats(std::vector<std::string> per_cpu) { cpu_stats_ = std::move(per_cpu); }
  const std::vector<std::string>& cpu_stats() const noexcept { return cpu_stats_; }

  /// Appends one record to `cpu`'s stream. `payload` starts at common_type.
  /// Throws std::invalid_argument if cpu >= cpus, or the payload is shorter
  /// than 2 bytes or larger than max_payload().
  void add_record(uint32_t cpu, uint64_t ts, std::span<const std::byte> payload);
  /// Records that `count` events (nullopt: an unknown number) were lost on
  /// `cpu` after the records added so far: the next page of that CPU is
  /// flagged RB_MISSED_EVENTS, with the count when it fits.
  void add_lost(uint32_t cpu, std::optional<uint64_t> count);

  /// Largest payload a record may have with this page size.
  uint32_t max_payload() const noexcept;

  /// Writes the file. May be called more than once (e.g. snapshots), each
  /// time with everything added so far. Throws std::system_error on I/O
  /// failure. write() replaces `path` atomically (temporary file + rename).
  void write(const std::filesystem::path& path) const;
  /// The file as bytes.
  std::vector<std::byte> to_bytes() const;

  TraceDatWriterStats stats() const noexcept { return stats_; }

  /// Where one CPU's data lies in a file: byte offset (page aligned) and size.
  struct CpuExtent {
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  /// The file's headers (everything before the CPU data: formats, cmdlines,
  /// options, the flyrecord CPU table filled from `extents`, the clock text),
  /// padded with zeros to a page boundary; for writers that place the CPU
  /// data themselves (core/record: a trace.dat that grows while recording).
  /// `table_offset` receives the file offset of the CPU table (cpus x
  /// {u64 offset, u64 size}). Records added with add_record are not used.
  std::vector<std::byte> header_bytes(const std::vector<CpuExtent>& extents,
                                      size_t* table_offset = nullptr) const;
  /// The metadata as trace.dat stores it, one part per version-7 section
  /// (version 6 has them back to back after the file header): header_page
  /// and header_event (16), ftrace formats (17), event formats (18),
  /// kallsyms (19), printk (20), cmdlines (21). For core/tracedat/tracedat_v7_writer.h.
  struct MetaSections {
    std::vector<std::byte> header_info, ftrace_events, event_formats, kallsyms, printk, cmdlines;
  };
  MetaSections meta_sections() const;
  const std::string& clock() const noexcept { return config_.clock; }
  uint32_t cpus() const noexcept { return config_.cpus; }
  uint32_t page_size() const noexcept { return layout_.page_size; }
  /// Number of formats added, and of cmdlines set.
  size_t format_count() const noexcept { return formats_.size(); }
  size_t cmdline_count() const noexcept { return cmdlines_.size(); }

 private:
  struct CpuStream {
    explicit CpuStream(kpage::PageLayout layout) : encoder(layout) {}
    kpage::PageEncoder encoder;    // the page being filled
    std::vector<std::byte> pages;  // finished pages, back to back
    bool marked = false;           // encoder carries a missed-events mark
  };
  void finish_page(CpuStream& s);
  // Headers with the CPU table filled in for data starting at data_offset()
  // and these per-CPU sizes.
  std::vector<std::byte> headers(const std::vector<uint64_t>& cpu_sizes) const;
  // The current page of `s` finished (a copy; the stream is unchanged), or
  // empty if it holds nothing.
  std::vector<std::byte> tail_page(const CpuStream& s) const;

  TraceDatWriterConfig config_;
  kpage::PageLayout layout_;
  std::vector<EventFormat> formats_;  // in add order
  std::map<int32_t, std::string> cmdlines_;
  std::string kallsyms_, printk_;
  std::vector<std::string> cpu_stats_;  // CPUSTAT options
  std::vector<CpuStream> cpus_;
  TraceDatWriterStats stats_;
};

}  // namespace tracepipe
