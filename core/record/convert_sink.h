#pragma once
// core/record/convert_sink.h — a recording written as a Perfetto trace or a
// CTF 1.8 trace directory while it runs (RecorderOptions::format), by the
// writers of `tracepipe convert` (core/convert).
//
//   recorder drain ─▶ PageBatch pages ─▶ ConvertSink::append(cpu, pages)
//                                          │ decoded as a trace.dat's CPU data is
//                                          │ (TraceDatReader::page_records: records,
//                                          │ RB_MISSED_EVENTS marks as lost_before)
//                                          ▼
//                         PerfettoWriter | CtfWriter (WriterOptions::stream):
//                         one bundle / one packet per append and CPU
//
// The metadata (formats, saved cmdlines, clock) is the recorder's own
// trace.dat headers, parsed by TraceDatReader: the writers see exactly what
// they would see converting the same recording's trace.dat, so records,
// fields, loss marks (the recorder's, tracepipe:lost_at_end included) and
// thread names come out as `tracepipe convert` renders them. When the
// recorder learns events or names it hands new headers (rewrite_headers),
// which replace the parsed ones.
//
// Memory: the writers' per-CPU buffers (one bundle or packet) and the parsed
// headers; no temporary trace.dat, no second pass.
// Errors: returned as errno values (TraceSink's contract), never thrown
// after construction. Thread-safety: the recorder thread only.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "tracepipe/core/convert/converter.h"
#include "tracepipe/core/record/sink.h"

namespace tracepipe::record {

class ConvertSink final : public TraceSink {
 public:
  /// Creates `path` (Perfetto: the file, truncated; CTF: the directory,
  /// its metadata and streams replaced) and writes what precedes the
  /// records. `start_ts`: the trace clock when the recording starts (the
  /// time stamp of Perfetto's process_tree and clock snapshot). Throws
  /// std::system_error when the output cannot be created.
  ConvertSink(convert::Format format, const std::filesystem::path& path, const TraceDatWriter& meta,
              uint64_t start_ts);
  ~ConvertSink() override;
  ConvertSink(const ConvertSink&) = delete;
  ConvertSink& operator=(const ConvertSink&) = delete;

  int append(uint32_t cpu, std::span<const std::byte> pages) noexcept override;
  int rewrite_headers(const TraceDatWriter& meta) noexcept override;
  /// ENOENT once the file (Perfetto) or the directory (CTF) was removed or replaced.
  int check_present() const noexcept override;
  /// The final headers (names learnt since), then the writer's end: the
  /// Perfetto file's closing statistics, the CTF metadata.
  int finalize(const TraceDatWriter& meta) noexcept override;
  uint64_t total_bytes() const noexcept override { return bytes_; }
  std::string describe() const override { return path_.string(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::filesystem::path path_;
  uint64_t bytes_ = 0;
};

}  // namespace tracepipe::record
