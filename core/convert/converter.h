#pragma once
// `tracepipe convert`: any trace.dat the reader opens (trace-cmd's v6/v7,
// zstd/zlib, tracepipe's recordings, recovered flight files) streamed into
// a Perfetto protobuf trace or a CTF 1.8 trace directory.
//
//   TraceDatReader ─▶ per-CPU cursors ─▶ chunks of up to chunk_records records
//                                         of one CPU, the CPU whose next record
//                                         is oldest first
//                                             │
//                                             ▼
//                           TraceSink (PerfettoWriter | CtfWriter)
//
// Memory: the reader maps the file (a compressed v7 file is decompressed at
// open, see core/tracedat/tracedat_reader.h); the converter holds one record
// per CPU and each sink a bounded buffer per CPU (a bundle, a packet), so
// memory does not grow with the number of records.
//
// Damage: a malformed page stops its CPU: what that CPU converted before it
// is kept, the other CPUs go on, the sink is finished so its output is
// valid, and convert() then throws the first TraceDatError (file, section,
// offset). An output error (disk full) throws ConvertOutputError; convert()
// first removes the output it created, which could not be completed.
//
// Thread-safety: convert() is reentrant; a sink is used by one thread.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/convert/convert_error.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"

namespace tracepipe::convert {

/// The output formats.
enum class Format : uint8_t {
  perfetto,  ///< protobuf perfetto.protos.Trace, one file (ui.perfetto.dev, trace_processor)
  ctf,       ///< CTF 1.8 directory: metadata + one stream per CPU (babeltrace2, Trace Compass)
};

/// "perfetto" or "ctf" (case-sensitive), else nullopt.
std::optional<Format> parse_format(std::string_view name) noexcept;

/// What a conversion did, per CPU and in total.
struct ConvertStats {
  struct Cpu {
    uint32_t cpu = 0;
    uint64_t records = 0;      ///< records converted
    uint64_t lost_events = 0;  ///< events trace.dat marks lost (a loss of unknown size counts 1)
    uint64_t loss_marks = 0;   ///< places where trace.dat marks a loss
    bool damaged = false;      ///< stopped at a malformed page
  };
  std::vector<Cpu> cpus;        ///< in the file's CPU order
  uint64_t records = 0;         ///< total records converted
  uint64_t unknown_events = 0;  ///< records whose event ID has no format (written as "unknown")
  uint64_t short_records = 0;   ///< records shorter than their format (missing fields left out)
  uint64_t bytes_out = 0;       ///< bytes written
  uint64_t bytes_in = 0;        ///< bytes of page data read
};

/// A trace.dat streamed in (see the header comment). Called by the
/// converter in this order: begin, then record()/end_chunk() with each
/// CPU's records in file order, then finish() (also after a damaged page).
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  /// `first_ts`: the oldest record's time stamp (0 if none); `cpus`: the
  /// CPU numbers of the converted buffer.
  virtual void begin(const TraceDatReader& reader, size_t buffer, uint64_t first_ts,
                     const std::vector<uint32_t>& cpus) = 0;
  /// One record; lost_before says a loss precedes it on its CPU.
  virtual void record(const TraceRecord& rec) = 0;
  /// The end of a run of records of `cpu` (a natural bundle or packet boundary).
  virtual void end_chunk(uint32_t cpu) = 0;
  /// Flushes everything; the output is complete and valid afterwards.
  virtual void finish(ConvertStats& stats) = 0;
  /// The formats or saved cmdlines grew since begin() (a recording learnt
  /// events or thread names): `reader` replaces the one begin() (or the
  /// last reload()) got, which may be destroyed before this call (a writer
  /// keeps copies of what it took from it, and uses it nowhere else).
  /// Records whose ID had no format until now are looked up again.
  virtual void reload(const TraceDatReader& reader) = 0;
};

/// How a writer writes its output.
struct WriterOptions {
  /// A recording's output (core/record): each end_chunk() reaches the
  /// output at once (CTF: the CPU's packet closes, and the metadata is
  /// rewritten when an event class was added; Perfetto: the bundle is
  /// written), so the output is readable while it grows. false: large
  /// buffered writes (a conversion).
  bool stream = false;
};

struct ConvertOptions {
  Format format = Format::perfetto;
  /// The buffer to convert: "" the top instance (the default), else a
  /// named instance (`trace-cmd record -B NAME`). Throws std::invalid_argument
  /// when the file has no such buffer.
  std::string buffer;
  /// Records taken from one CPU before looking at the others again.
  uint32_t chunk_records = 512;
  /// Called every ~64 Ki records and at the end: bytes of page data and
  /// records done so far (from the converting thread).
  std::function<void(uint64_t bytes, uint64_t records)> progress;
};

/// Streams `reader`'s buffer into `sink`. Throws TraceDatError (after
/// sink.finish()) for a damaged page, ConvertOutputError from the sink.
ConvertStats convert_records(const TraceDatReader& reader, TraceSink& sink,
                             const ConvertOptions& options = {});

/// Converts `reader` into `out`: a file for Format::perfetto, a directory
/// (created if missing; its metadata and stream files replaced) for
/// Format::ctf. Throws as convert_records(), and std::invalid_argument,
/// before creating anything, when `out` is the reader's own file (the same
/// path, a hard link, a symbolic link; for CTF also a file in `out` the
/// writer replaces): writing it would truncate the mapped input. On a
/// ConvertOutputError (a full disk) it removes the Perfetto file, or the
/// CTF files and the directory if it created it, and the message ends with
/// "(the partial output was removed)".
ConvertStats convert(const TraceDatReader& reader, const std::filesystem::path& out,
                     const ConvertOptions& options = {});

}  // namespace tracepipe::convert
