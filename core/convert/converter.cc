#include "tracepipe/core/convert/converter.h"

#include <filesystem>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "tracepipe/core/convert/ctf_writer.h"
#include "tracepipe/core/convert/out_file.h"
#include "tracepipe/core/convert/perfetto_writer.h"

namespace tracepipe::convert {

std::optional<Format> parse_format(std::string_view name) noexcept {
  if (name == "perfetto") return Format::perfetto;
  if (name == "ctf") return Format::ctf;
  return std::nullopt;
}

namespace {

size_t pick_buffer(const TraceDatReader& reader, const std::string& name) {
  if (const auto b = reader.find_buffer(name)) return *b;
  if (name.empty() && !reader.buffers().empty()) return 0;  // v7 with named instances only
  if (name.empty())
    throw std::invalid_argument(reader.name() +
                                ": the file holds no per-CPU data (a latency trace?)");
  throw std::invalid_argument(reader.name() + ": no buffer named '" + name + "' in the file");
}

}  // namespace

ConvertStats convert_records(const TraceDatReader& reader, TraceSink& sink,
                             const ConvertOptions& options) {
  const size_t buffer = pick_buffer(reader, options.buffer);
  const TraceDatBuffer& buf = reader.buffers()[buffer];
  const size_t n = buf.cpu_data.size();
  ConvertStats stats;
  std::vector<CpuRecordCursor> cursors;
  std::vector<TraceRecord> head(n);
  std::vector<uint8_t> live(n, 0);
  std::vector<uint32_t> cpu_numbers;
  std::optional<TraceDatError> first_error;
  cursors.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    cursors.push_back(reader.buffer_cpu_records(buffer, i));
    stats.cpus.push_back({buf.cpu_data[i].cpu});
    cpu_numbers.push_back(buf.cpu_data[i].cpu);
  }
  const uint32_t page_size = reader.page_size();
  auto bytes_done = [&] {
    uint64_t b = 0;
    for (const auto& c : cursors) b += c.stats().pages * page_size;
    return b;
  };
  // Takes the next record of CPU i; a damaged page ends that CPU.
  auto advance = [&](size_t i) {
    try {
      if (auto r = cursors[i].next()) [[likely]] {
        head[i] = *r;
        return;
      }
    } catch (const TraceDatError& e) {
      if (!first_error) first_error = e;
      stats.cpus[i].damaged = true;
    }
    live[i] = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    live[i] = 1;
    advance(i);
  }
  uint64_t first_ts = std::numeric_limits<uint64_t>::max();
  for (size_t i = 0; i < n; ++i)
    if (live[i] && head[i].ts < first_ts) first_ts = head[i].ts;
  if (first_ts == std::numeric_limits<uint64_t>::max()) first_ts = 0;

  const uint32_t chunk = options.chunk_records ? options.chunk_records : 512;
  uint64_t next_progress = 1u << 16;
  try {
    sink.begin(reader, buffer, first_ts, cpu_numbers);
    for (;;) {
      size_t best = n;
      for (size_t i = 0; i < n; ++i)
        if (live[i] && (best == n || head[i].ts < head[best].ts)) best = i;
      if (best == n) break;
      ConvertStats::Cpu& cs = stats.cpus[best];
      for (uint32_t k = 0; k < chunk && live[best]; ++k) {
        const TraceRecord& rec = head[best];
        if (rec.lost_before != 0) [[unlikely]] {
          ++cs.loss_marks;
          cs.lost_events += rec.lost_before > 0 ? static_cast<uint64_t>(rec.lost_before) : 1;
        }
        sink.record(rec);
        ++cs.records;
        advance(best);
      }
      sink.end_chunk(cpu_numbers[best]);
      stats.records = 0;
      for (const auto& c : stats.cpus) stats.records += c.records;
      if (options.progress && stats.records >= next_progress) {
        options.progress(bytes_done(), stats.records);
        next_progress = stats.records + (1u << 16);
      }
    }
  } catch (...) {
    // An output error: finish what can be finished, report the first error.
    try {
      sink.finish(stats);
    } catch (...) {
    }
    throw;
  }
  sink.finish(stats);
  stats.bytes_in = bytes_done();
  if (options.progress) options.progress(stats.bytes_in, stats.records);
  if (first_error) throw *first_error;
  return stats;
}

namespace {

// The files CtfWriter removes and writes in its directory (ctf_writer.cc).
bool ctf_writer_file(const std::string& n) {
  return n == "metadata" || n == "metadata.tmp" || n == ".metadata.tmp" ||
         n.rfind("channel0_", 0) == 0;
}

// The reader maps its input: truncating it under the mapping makes the next
// read a SIGBUS, and replacing it loses the trace. So an output that is the
// input under any name (the same path, a hard link, a symbolic link) - or,
// for CTF, a file in the directory the writer removes or replaces - is
// refused before anything is created.
void refuse_output_over_input(const TraceDatReader& reader, const std::filesystem::path& out,
                              Format format) {
  const auto refuse = [&](const std::filesystem::path& p) {
    throw std::invalid_argument(out.string() + ": is the input trace (" + reader.name() +
                                (p == out ? "" : ", as " + p.string()) +
                                "): writing it would destroy it; choose another output");
  };
  if (reader.is_file(out)) refuse(out);
  if (format != Format::ctf) return;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(out, ec)) {
    if (ctf_writer_file(e.path().filename().string()) && reader.is_file(e.path())) refuse(e.path());
  }
}

// An output error (a full disk) leaves what finish() could not complete: a
// Perfetto file without its last bundles and statistics, a CTF directory
// whose metadata may be missing, so no output a reader takes as the whole
// trace. Unlike a recording, a conversion can be run again from its input,
// so what it created is removed rather than kept.
void remove_partial_output(const std::filesystem::path& out, Format format, bool existed) {
  std::error_code ec;
  if (format != Format::ctf) {
    std::filesystem::remove(out, ec);
    return;
  }
  std::vector<std::filesystem::path> ours;
  for (const auto& e : std::filesystem::directory_iterator(out, ec)) {
    if (ctf_writer_file(e.path().filename().string())) ours.push_back(e.path());
  }
  for (const auto& p : ours) std::filesystem::remove(p, ec);
  if (!existed) std::filesystem::remove(out, ec);  // only if now empty
}

}  // namespace

ConvertStats convert(const TraceDatReader& reader, const std::filesystem::path& out,
                     const ConvertOptions& options) {
  refuse_output_over_input(reader, out, options.format);
  std::error_code ec;
  const bool existed = std::filesystem::exists(out, ec);
  // A writer that throws here created nothing of its own (an existing file
  // where the CTF directory should be is the user's): nothing to remove.
  std::unique_ptr<TraceSink> w;
  if (options.format == Format::ctf)
    w = std::make_unique<CtfWriter>(out);
  else
    w = std::make_unique<PerfettoWriter>(out);
  try {
    return convert_records(reader, *w, options);
  } catch (const ConvertOutputError& e) {
    w.reset();
    remove_partial_output(out, options.format, existed);
    throw ConvertOutputError(std::string(e.what()) + " (the partial output was removed)", e.code());
  }
}

}  // namespace tracepipe::convert
