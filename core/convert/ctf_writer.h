#pragma once
// A trace.dat's records as a CTF 1.8 trace directory, for babeltrace2 and
// Trace Compass (https://diamon.org/ctf/v1.8.3/).
//
//   OUT/metadata          TSDL text, starts with "/* CTF 1.8 */": trace (uuid,
//                         le), env, the trace clock, one stream class, one
//                         event class per event that occurs ("SYSTEM:EVENT")
//   OUT/channel0_<cpu>    one data stream per CPU: packets of
//
//   packet ┌ header  : u32 magic 0xC1FC1FC1, u8 uuid[16], u32 stream_id
//          ├ context : timestamp_begin, timestamp_end, content_size, packet_size,
//          │           packet_seq_num, events_discarded, u32 cpu_id
//          └ events  : header { u32 id; u64 timestamp (8-aligned) } + payload
//
// Payload: every field of the event's format under its own name, common
// fields first, in format order. Integers keep their size, signedness and
// the kernel's offsets (natural alignment from an 8-aligned start, so the
// fixed part of a record is copied as it is), unsigned longs and pointers
// are shown in hex (as trace-cmd report -R prints them), char arrays are
// UTF-8 text arrays (babeltrace2 shows them as strings), other fixed arrays
// are arrays, __data_loc strings are CTF strings, other dynamic arrays are
// sequences preceded by their element count `_NAME_length`. A name that
// starts with '_' or is a TSDL keyword is written with one more leading '_'
// (CTF readers strip one).
//
// Losses: a record after a loss closes the CPU's packet; the next packet's
// events_discarded (a running count per stream, as CTF defines it) grows by
// the lost count (1 when trace.dat stored none), so readers report the
// discarded events between the two packets, at the time of the loss. A loss
// before a CPU's first record follows an empty packet (count 0).
//
// env: domain "kernel", tracer_name "perf", sysname/hostname/release/
// version/machine from the file's UNAME option, as `perf data convert
// --to-ctf` writes them: Trace Compass opens the directory as a Linux
// kernel trace (its perf layout: events named "sched:sched_switch").
//
// Mirrors tools/perf/util/data-convert-bt.c (perf data convert --to-ctf:
// env keys, SYSTEM:EVENT names, cpu_id in the packet context), behaviour not code.
//
// The metadata is written when the conversion finishes (it lists only the
// events that occur); packets are written as they fill (1 MiB per CPU).
// Streaming (WriterOptions::stream, a recording): each end_chunk() closes
// the CPU's packet, and the metadata is rewritten (a new file renamed over
// the old) whenever an event class was added, so the directory is a
// readable trace at every chunk boundary.
// Thread-safety: one thread drives a writer.
#include <filesystem>
#include <memory>

#include "tracepipe/core/convert/converter.h"

namespace tracepipe::convert {

class CtfWriter final : public TraceSink {
 public:
  /// `dir` is created if missing; an existing metadata and channel0_* files
  /// in it are replaced. Throws ConvertOutputError.
  explicit CtfWriter(const std::filesystem::path& dir, WriterOptions options = {});
  ~CtfWriter() override;

  void begin(const TraceDatReader& reader, size_t buffer, uint64_t first_ts,
             const std::vector<uint32_t>& cpus) override;
  void record(const TraceRecord& rec) override;
  void end_chunk(uint32_t cpu) override;
  void finish(ConvertStats& stats) override;
  void reload(const TraceDatReader& reader) override;

  /// The TSDL identifier a field name is written as (see above).
  static std::string tsdl_name(std::string_view name);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tracepipe::convert
