// Recording without code changes: a program linked with tracepipe (the
// tracepipe::tracepipe target pulls this file in) that starts with
//
//   TRACEPIPE_CONFIG=FILE            a config file (core/config/config.h)
//   TRACEPIPE_RECORD_OUTPUT=OUT.dat  optional: overrides [recording] output
//   TRACEPIPE_RECORD_COLLECTOR=H:P   optional: send to trace-cmd listen at H:P
//                                    instead (overrides output and collector)
//   TRACEPIPE_RECORD_FILE_VERSION=7  optional: trace.dat version (6 or 7)
//   TRACEPIPE_RECORD_COMPRESSION=zstd optional: version 7's compression
//   TRACEPIPE_RECORD_STATUS=FILE     optional: once the recording ended, its
//                                    outcome is written there ("recorded N
//                                    records", or the fault), so that
//                                    `tracepipe record` knows the command
//                                    recorded at all (and, with a collector,
//                                    to connect before main(), bounded by
//                                    collector_timeout, as trace-cmd
//                                    record -N connects before tracing)
//
// builds the file's instances during static initialisation, after the
// program's own (events declared in the program are registered by then:
// objects of a static library come after the program's in .init_array), and
// records the main instance with the file's [recording] settings until the
// program exits (static destruction: stop() finalizes the file). The
// variables are removed from the environment once read, so child processes
// do not record over the same file. A bad config, or one without
// [recording] output, is reported on stderr once and nothing is recorded;
// the program runs on either way.
//
// `tracepipe record (-o OUT.dat | -N HOST:PORT) -- COMMAND` sets them
// (tools/record_cmd.cc).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tracepipe/core/config/config.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/record/recorder.h"

namespace tracepipe::record {
namespace {

struct AutoRecord {
  std::vector<std::unique_ptr<Instance>> instances;
  std::unique_ptr<Recorder> recorder;
  std::string status;  // TRACEPIPE_RECORD_STATUS

  AutoRecord() {
    const char* file = std::getenv("TRACEPIPE_CONFIG");
    if (file == nullptr || *file == '\0') return;
    const std::string path = file;
    const char* out_env = std::getenv("TRACEPIPE_RECORD_OUTPUT");
    const std::string out = out_env != nullptr ? out_env : "";
    const char* col_env = std::getenv("TRACEPIPE_RECORD_COLLECTOR");
    const std::string collector = col_env != nullptr ? col_env : "";
    const char* ver_env = std::getenv("TRACEPIPE_RECORD_FILE_VERSION");
    const std::string version = ver_env != nullptr ? ver_env : "";
    const char* comp_env = std::getenv("TRACEPIPE_RECORD_COMPRESSION");
    const std::string compression = comp_env != nullptr ? comp_env : "";
    const char* block_env = std::getenv("TRACEPIPE_RECORD_BLOCK");  // tracepipe record --block[=US]
    const std::string block = block_env != nullptr ? block_env : "";
    const char* status_env = std::getenv("TRACEPIPE_RECORD_STATUS");
    status = status_env != nullptr ? status_env : "";
    ::unsetenv("TRACEPIPE_CONFIG");
    ::unsetenv("TRACEPIPE_RECORD_OUTPUT");
    ::unsetenv("TRACEPIPE_RECORD_COLLECTOR");
    ::unsetenv("TRACEPIPE_RECORD_STATUS");
    ::unsetenv("TRACEPIPE_RECORD_FILE_VERSION");
    ::unsetenv("TRACEPIPE_RECORD_COMPRESSION");
    ::unsetenv("TRACEPIPE_RECORD_BLOCK");
    try {
      const Config cfg = load_config(path);
      for (const InstanceConfig& ic : cfg.instances) instances.push_back(Instance::from_config(ic));
      RecorderOptions ro;
      ro.output = out;
      if (cfg.recording) {
        if (ro.output.empty() && collector.empty()) {
          ro.output = cfg.recording->output;
          if (ro.output.empty()) ro.collector = cfg.recording->collector;
        }
        ro.mode = cfg.recording->flight_recorder ? RecordMode::flight_recorder : RecordMode::stream;
        ro.watermark_percent = cfg.recording->watermark_percent;
        ro.flush_interval = std::chrono::milliseconds(cfg.recording->flush_interval_ms);
        ro.max_poll_interval = std::chrono::microseconds(cfg.recording->max_poll_interval_us);
        ro.max_file_bytes = cfg.recording->max_file_kb * 1024;
        ro.max_files = cfg.recording->max_files;
        ro.file_version = cfg.recording->file_version;
        ro.compression = cfg.recording->compression;
        ro.realtime_priority = static_cast<int>(cfg.recording->realtime_priority);
        ro.cpu = cfg.recording->cpu;
        if (cfg.recording->block_timeout_us < 0) ro.block_timeout = RecorderOptions::kBlockForever;
        else ro.block_timeout = std::chrono::microseconds(cfg.recording->block_timeout_us);
      }
      if (block == "inf") ro.block_timeout = RecorderOptions::kBlockForever;
      else if (!block.empty()) ro.block_timeout = std::chrono::microseconds(std::strtoll(block.c_str(), nullptr, 10));
      if (version == "6" || version == "7") ro.file_version = version == "7" ? 7 : 6;
      if (!compression.empty()) ro.compression = compression;
      if (!collector.empty()) {
        ro.output.clear();
        ro.collector = collector;
      }
      if (ro.output.empty() && ro.collector.empty()) {
        std::fprintf(stderr,
                     "tracepipe: %s: no [recording] output or collector (and TRACEPIPE_RECORD_OUTPUT unset): not "
                     "recording\n",
                     path.c_str());
        return;
      }
      const bool connect_first = !ro.collector.empty() && !status.empty();
      const auto timeout = ro.collector_timeout;
      recorder = std::make_unique<Recorder>(*instances.front(), std::move(ro));
      // Under `tracepipe record -N`, as trace-cmd record -N: the connection
      // is made before the program runs on (bounded; a failure is reported
      // and the program runs unrecorded).
      if (connect_first) (void)recorder->wait_ready(timeout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tracepipe: not recording: %s\n", e.what());
      recorder.reset();
      instances.clear();
    }
  }
  ~AutoRecord() {
    if (recorder) {
      const RecorderStats s = recorder->stop();
      if (!status.empty()) {
        std::ofstream f(status);
        if (const auto err = recorder->error()) f << "failed: " << *err << "\n";
        else f << "recorded " << s.records << " records\n";
      }
    }
    recorder.reset();
  }
};

AutoRecord auto_record;

}  // namespace
}  // namespace tracepipe::record

/// Referenced by the tracepipe::tracepipe target's link options, so that
/// this file is linked into every program that uses the umbrella target.
extern "C" void tracepipe_record_autostart() noexcept {}
