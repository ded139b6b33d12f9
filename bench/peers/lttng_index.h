#pragma once
// What an LTTng trace's packet index files say about its data streams.
//
// The consumer daemon writes, beside each data stream file of a trace, an
// index (index/<stream>.idx): a header (magic 0xC1F1DCC1, major, minor,
// entry length, big-endian 32-bit words) and one fixed-size entry per packet
// of big-endian 64-bit fields: offset, packet_size and content_size (bits),
// timestamp_begin, timestamp_end, events_discarded, stream_id, then (index
// 1.1) stream_instance_id and packet_seq_num. events_discarded is the
// stream's running count of records the tracer discarded because the ring was
// full (discard mode), as of the end of that packet: a stream's total is its
// last packet's value. Used by the recording bench to cross-check the
// discarded-events count `lttng list` reports.
#include <cstdint>
#include <filesystem>

namespace tracepipe::peers {

struct LttngIndexStats {
  uint64_t streams = 0;           ///< index files read
  uint64_t packets = 0;           ///< entries (packets written) over all streams
  uint64_t events_discarded = 0;  ///< sum over streams of the last packet's count
  uint64_t content_bytes = 0;     ///< sum of content_size / 8
};

/// Reads every *.idx under `trace_dir` (recursively). Throws
/// std::runtime_error naming the file if one has a bad magic or is shorter
/// than its header says.
LttngIndexStats read_lttng_index(const std::filesystem::path& trace_dir);

}  // namespace tracepipe::peers
