#pragma once
// core/record/sink.h — where a recorder's pages go: a growing trace.dat
// (TraceFile) or a trace-cmd collector (NetSink).
//
// The recorder thread is the only caller. Every operation returns 0 or an
// errno value and never throws: the recorder decides what a failure means
// (report once, then count what it cannot write). Once an operation failed,
// the recorder appends nothing more; finalize() is still called once.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tracepipe {
class TraceDatWriter;
}

namespace tracepipe::record {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  /// Appends whole pages (a multiple of the page size) to `cpu`'s data.
  virtual int append(uint32_t cpu, std::span<const std::byte> pages) noexcept = 0;
  /// Replaces the headers with `meta`'s (formats and cmdlines learnt since
  /// the start); a sink that cannot (a stream already sent) returns 0.
  virtual int rewrite_headers(const TraceDatWriter& meta) noexcept = 0;
  /// 0 while the output is still there; ENOENT (file removed or replaced),
  /// ECONNRESET (collector gone) or another errno otherwise.
  virtual int check_present() const noexcept = 0;
  /// Ends the output (final headers, or the end of the stream) and closes it.
  virtual int finalize(const TraceDatWriter& meta) noexcept = 0;
  /// Bytes of CPU data appended so far.
  virtual uint64_t total_bytes() const noexcept = 0;
  /// What the output is, for messages ("out.dat", "collector host:port").
  virtual std::string describe() const = 0;
};

}  // namespace tracepipe::record
