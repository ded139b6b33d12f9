// The recorder (core/record/recorder.h) and flight-file recovery
// (core/recover/recover.h) through the C API.
#include <chrono>
#include <filesystem>
#include <string>

#include "tracepipe/core/capi/capi_internal.h"
#include "tracepipe/core/record/recorder.h"
#include "tracepipe/core/recover/recover.h"

struct tracepipe_recorder {
  std::unique_ptr<tracepipe::record::Recorder> rec;
};

using namespace tracepipe;
using namespace tracepipe::capi;

extern "C" {

tracepipe_status tracepipe_recorder_start(tracepipe_instance* instance,
                                          const tracepipe_recorder_options* options,
                                          tracepipe_recorder** out) {
  return guarded([&] {
    if (instance == nullptr || options == nullptr || out == nullptr)
      return fail(TRACEPIPE_EINVAL, "instance, options and out must not be NULL");
    tracepipe_recorder_options c;
    if (options->struct_size < sizeof(size_t) ||
        !copy_struct_in(&c, sizeof c, options, options->struct_size))
      return fail(TRACEPIPE_EINVAL,
                  "tracepipe_recorder_options: struct_size unknown to this library");
    record::RecorderOptions o;
    if (c.output != nullptr) o.output = c.output;
    if (c.collector != nullptr) o.collector = c.collector;
    if (c.file_version != 0) {
      if (c.file_version != 6 && c.file_version != 7)
        return fail(TRACEPIPE_EINVAL, "file_version: 6 or 7");
      o.file_version = c.file_version;
    }
    if (c.compression != nullptr) {
      const std::string z = c.compression;
      if (z != "zstd" && z != "zlib" && z != "none")
        return fail(TRACEPIPE_EINVAL, "compression: zstd, zlib or none");
      o.compression = z;
    }
    o.mode =
        c.flight_recorder != 0 ? record::RecordMode::flight_recorder : record::RecordMode::stream;
    if (c.watermark_percent != 0) {
      if (c.watermark_percent > 100) return fail(TRACEPIPE_EINVAL, "watermark_percent: 0..100");
      o.watermark_percent = c.watermark_percent;
    }
    if (c.flush_interval_ms != 0) o.flush_interval = std::chrono::milliseconds(c.flush_interval_ms);
    if (c.collector_timeout_ms != 0)
      o.collector_timeout = std::chrono::milliseconds(c.collector_timeout_ms);
    if (c.format != nullptr) {
      const auto f = record::parse_output_format(c.format);
      if (!f) return fail(TRACEPIPE_EINVAL, "format: tracedat, perfetto or ctf");
      o.format = *f;
    }
    if (c.block_timeout_us == TRACEPIPE_BLOCK_FOREVER)
      o.block_timeout = record::RecorderOptions::kBlockForever;
    else if (c.block_timeout_us < 0)
      return fail(TRACEPIPE_EINVAL, "block_timeout_us: microseconds, 0 or TRACEPIPE_BLOCK_FOREVER");
    else
      o.block_timeout = std::chrono::microseconds(c.block_timeout_us);
    auto h = std::make_unique<tracepipe_recorder>();
    h->rec = std::make_unique<record::Recorder>(*instance->inst, std::move(o));
    *out = h.release();
    return TRACEPIPE_OK;
  });
}

int tracepipe_recorder_wait_ready(tracepipe_recorder* recorder, uint32_t timeout_ms) {
  try {
    return recorder != nullptr && recorder->rec->wait_ready(std::chrono::milliseconds(timeout_ms))
               ? 1
               : 0;
  } catch (...) {
    return 0;
  }
}

void tracepipe_recorder_trigger(tracepipe_recorder* recorder) {
  if (recorder != nullptr) recorder->rec->trigger();
}

tracepipe_status tracepipe_recorder_stop(tracepipe_recorder* recorder,
                                         tracepipe_recorder_stats* out) {
  return guarded([&] {
    if (recorder == nullptr) return fail(TRACEPIPE_EINVAL, "recorder must not be NULL");
    const record::RecorderStats s = recorder->rec->stop();
    if (out != nullptr) {
      tracepipe_recorder_stats c{};
      c.struct_size = sizeof c;
      c.records = s.records;
      c.pages = s.pages;
      c.bytes = s.bytes;
      c.dropped = s.dropped;
      c.unwritten = s.unwritten;
      c.failed = s.failed ? 1 : 0;
      c.unmarked = s.unmarked;
      c.block_waits = s.block_waits;
      c.block_wait_ns = s.block_wait_ns;
      c.block_max_wait_ns = s.block_max_wait_ns;
      c.block_timed_out = s.block_timed_out;
      copy_struct_out(out, out->struct_size, &c, sizeof c);
    }
    return TRACEPIPE_OK;
  });
}

size_t tracepipe_recorder_error(const tracepipe_recorder* recorder, char* buf, size_t cap) {
  try {
    const auto e = recorder != nullptr ? recorder->rec->error() : std::nullopt;
    return copy_out(e ? *e : std::string(), buf, cap);
  } catch (...) {
    return copy_out("", buf, cap);
  }
}

void tracepipe_recorder_destroy(tracepipe_recorder* recorder) {
  try {
    delete recorder;
  } catch (...) {
  }
}

tracepipe_status tracepipe_recover(const char* flight_file, const char* output,
                                   const tracepipe_recover_options* options,
                                   tracepipe_recover_stats* out) {
  return guarded([&] {
    if (flight_file == nullptr || output == nullptr)
      return fail(TRACEPIPE_EINVAL, "flight_file and output must not be NULL");
    tracepipe_recover_options c{};
    if (options != nullptr && (options->struct_size < sizeof(size_t) ||
                               !copy_struct_in(&c, sizeof c, options, options->struct_size)))
      return fail(TRACEPIPE_EINVAL,
                  "tracepipe_recover_options: struct_size unknown to this library");
    // Writing the trace over the flight file would destroy the only copy
    // of the crashed process's buffers (tracepipe recover refuses it too).
    std::error_code ec;
    if (std::filesystem::equivalent(flight_file, output, ec) && !ec)
      return fail(TRACEPIPE_EINVAL, std::string("output ") + output +
                                        " is the flight file: writing it would destroy it");
    recover::RecoverOptions o;
    o.live = c.live != 0;
    o.strict = c.strict != 0;
    const recover::RecoveredTrace t = recover::recover_file(flight_file, o);
    recover::write_trace_dat(t, output);
    if (out != nullptr) {
      tracepipe_recover_stats s{};
      s.struct_size = sizeof s;
      s.records = t.records();
      s.uncommitted = t.uncommitted();
      s.cpus = static_cast<uint32_t>(t.cpus.size());
      s.warnings = static_cast<uint32_t>(t.warnings.size());
      s.pid = t.pid;
      copy_struct_out(out, out->struct_size, &s, sizeof s);
    }
    return TRACEPIPE_OK;
  });
}

}  // extern "C"
