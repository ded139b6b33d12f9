// Recording without code changes: a program linked with tracepipe (the
// tracepipe::tracepipe target pulls this file in) that starts with
//
//   TRACEPIPE_CONFIG=FILE            a config file (core/config/config.h)
//   TRACEPIPE_RECORD_OUTPUT=OUT.dat  optional: overrides [recording] output
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
// `tracepipe record -o OUT.dat -- COMMAND` sets both variables
// (tools/record_cmd.cc).
#include <cstdio>
#include <cstdlib>
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

  AutoRecord() {
    const char* file = std::getenv("TRACEPIPE_CONFIG");
    if (file == nullptr || *file == '\0') return;
    const std::string path = file;
    const char* out_env = std::getenv("TRACEPIPE_RECORD_OUTPUT");
    const std::string out = out_env != nullptr ? out_env : "";
    ::unsetenv("TRACEPIPE_CONFIG");
    ::unsetenv("TRACEPIPE_RECORD_OUTPUT");
    try {
      const Config cfg = load_config(path);
      for (const InstanceConfig& ic : cfg.instances) instances.push_back(Instance::from_config(ic));
      RecorderOptions ro;
      ro.output = out;
      if (cfg.recording) {
        if (ro.output.empty()) ro.output = cfg.recording->output;
        ro.mode = cfg.recording->flight_recorder ? RecordMode::flight_recorder : RecordMode::stream;
        ro.watermark_percent = cfg.recording->watermark_percent;
        ro.flush_interval = std::chrono::milliseconds(cfg.recording->flush_interval_ms);
        ro.max_poll_interval = std::chrono::microseconds(cfg.recording->max_poll_interval_us);
        ro.max_file_bytes = cfg.recording->max_file_kb * 1024;
        ro.max_files = cfg.recording->max_files;
      }
      if (ro.output.empty()) {
        std::fprintf(stderr, "tracepipe: %s: no [recording] output (and TRACEPIPE_RECORD_OUTPUT unset): not recording\n",
                     path.c_str());
        return;
      }
      recorder = std::make_unique<Recorder>(*instances.front(), std::move(ro));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tracepipe: not recording: %s\n", e.what());
      recorder.reset();
      instances.clear();
    }
  }
  ~AutoRecord() {
    if (recorder) (void)recorder->stop();
    recorder.reset();
  }
};

AutoRecord auto_record;

}  // namespace
}  // namespace tracepipe::record

/// Referenced by the tracepipe::tracepipe target's link options, so that
/// this file is linked into every program that uses the umbrella target.
extern "C" void tracepipe_record_autostart() noexcept {}
