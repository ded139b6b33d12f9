// Recording without code changes: a program linked with tracepipe (the
// tracepipe::tracepipe target pulls this file in) that starts with
//
//   TRACEPIPE_CONFIG=FILE            a config file (core/config/config.h)
//   TRACEPIPE_RECORD_OUTPUT=OUT.dat  optional: overrides [recording] output
//   TRACEPIPE_RECORD_COLLECTOR=H:P   optional: send to trace-cmd listen at H:P
//                                    instead (overrides output and collector)
//   TRACEPIPE_RECORD_FILE_VERSION=7  optional: trace.dat version (6 or 7)
//   TRACEPIPE_RECORD_COMPRESSION=zstd optional: version 7's compression
//   TRACEPIPE_RECORD_FORMAT=perfetto optional: the output's format (tracedat,
//                                    perfetto or ctf; overrides [recording] format)
//   TRACEPIPE_RECORD_QUIET=1         optional: no summary at the end
//   TRACEPIPE_RECORD_STATUS=FILE     optional: once the recording ended, its
//                                    outcome is written there ("ok N" with
//                                    the records written, or "failed CAUSE":
//                                    the config rejected, the output or the
//                                    collector failed), so that `tracepipe
//                                    record` knows the command recorded at
//                                    all and how it ended (and, with a
//                                    collector, to connect before main(),
//                                    bounded by collector_timeout, as
//                                    trace-cmd record -N connects before
//                                    tracing)
//
// builds the file's instances during static initialisation, after the
// program's own (events declared in the program are registered by then:
// objects of a static library come after the program's in .init_array), and
// records the main instance with the file's [recording] settings until the
// program exits (static destruction: stop() finalizes the file), then
// prints the summary (format_summary) on stderr, and each hist with
// [recording] print_hist. The config's triggers are applied through the
// triggers library, registered here before the config is applied (a
// static initialiser of the triggers library may run after this one). The
// variables are removed from the environment once read, so child processes
// do not record over the same file. A bad config, or one without
// [recording] output, is reported on stderr once and nothing is recorded;
// the program runs on either way.
//
// SIGINT and SIGTERM: when the program has no handler of its own at that
// point (the disposition is the default), a handler is installed that
// stops the recording as `trace-cmd record` does on Ctrl-C (tracing off,
// the ring drained, the file finalized, the summary printed) and then lets
// the signal take its default course (the program ends by that signal). A
// second signal ends the program at once, with what is written (the file
// stays a valid trace.dat). A program that installs its own handler later
// (in main()) replaces this one: its exit then finalizes the file as any
// exit does. A forked child that keeps the handler gets the default action
// (it has no recorder thread). The same signal arriving twice within 50 ms counts once (a
// signal sent to the process group and forwarded by `tracepipe record`).
// A forked child records nothing (what it emits goes to its copy of the
// ring) and its exit leaves the parent's recording alone.
//
// `tracepipe record (-o OUT.dat | -N HOST:PORT) -- COMMAND` sets the
// variables (tools/record_cmd.cc).
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tracepipe/core/config/config.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/record/recorder.h"
#include "tracepipe/core/triggers/triggers.h"

namespace tracepipe::record {
namespace {

std::string take_env(const char* name) {
  const char* v = std::getenv(name);
  std::string s = v != nullptr ? v : "";
  ::unsetenv(name);
  return s;
}

std::atomic<Recorder*> g_recorder{nullptr};
std::atomic<pid_t> g_pid{0};  // the recording process (a forked child has no recorder thread)
std::atomic<int> g_signal{0};
std::atomic<int64_t> g_signal_ns{0};

int64_t monotonic_ns() noexcept {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

void die_by(int sig) noexcept {
  ::signal(sig, SIG_DFL);
  ::kill(::getpid(), sig);
}

// Async-signal-safe: the first signal asks the recorder thread to stop (it
// ends the program once the file is finalized); a later one ends it now.
void on_signal(int sig) {
  if (::getpid() != g_pid.load()) return die_by(sig);  // a forked child: the default, as without us
  int none = 0;
  const int64_t now = monotonic_ns();
  if (g_signal.compare_exchange_strong(none, sig)) {
    g_signal_ns.store(now);
    if (Recorder* r = g_recorder.load())
      r->request_stop();
    else
      die_by(sig);
    return;
  }
  if (none == sig && now - g_signal_ns.load() < 50'000'000)
    return;  // the same signal, delivered twice
  die_by(sig);
}

// Installs on_signal for sig unless the program has a disposition of its own.
void take_signal(int sig) {
  struct sigaction old {};
  if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) != 0 ||
      old.sa_handler != SIG_DFL)
    return;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  (void)::sigaction(sig, &sa, nullptr);
}

RecorderOptions recorder_options(const Config& cfg, const std::string& out,
                                 const std::string& collector, const std::string& version,
                                 const std::string& compression, const std::string& block,
                                 const std::string& format) {
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
    ro.format = parse_output_format(cfg.recording->format).value_or(OutputFormat::tracedat);
    ro.realtime_priority = static_cast<int>(cfg.recording->realtime_priority);
    ro.cpu = cfg.recording->cpu;
    if (cfg.recording->block_timeout_us < 0)
      ro.block_timeout = RecorderOptions::kBlockForever;
    else
      ro.block_timeout = std::chrono::microseconds(cfg.recording->block_timeout_us);
  }
  // tracepipe record --block[=US]
  if (block == "inf")
    ro.block_timeout = RecorderOptions::kBlockForever;
  else if (!block.empty())
    ro.block_timeout = std::chrono::microseconds(std::strtoll(block.c_str(), nullptr, 10));
  if (version == "6" || version == "7") ro.file_version = version == "7" ? 7 : 6;
  if (!compression.empty()) ro.compression = compression;
  if (!format.empty()) {  // tracepipe record --format
    const auto f = parse_output_format(format);
    if (!f)
      throw std::invalid_argument("TRACEPIPE_RECORD_FORMAT=" + format +
                                  ": expected tracedat, perfetto or ctf");
    ro.format = *f;
  }
  if (!collector.empty()) {
    ro.output.clear();
    ro.collector = collector;
  }
  return ro;
}

struct AutoRecord {
  std::vector<std::unique_ptr<Instance>> instances;
  std::unique_ptr<Recorder> recorder;
  std::string status;  // TRACEPIPE_RECORD_STATUS
  bool quiet = false;
  bool print_hist = false;
  std::atomic<bool> reported{false};

  AutoRecord() {
    const std::string path = take_env("TRACEPIPE_CONFIG");
    const std::string out = take_env("TRACEPIPE_RECORD_OUTPUT");
    const std::string collector = take_env("TRACEPIPE_RECORD_COLLECTOR");
    const std::string version = take_env("TRACEPIPE_RECORD_FILE_VERSION");
    const std::string compression = take_env("TRACEPIPE_RECORD_COMPRESSION");
    const std::string block = take_env("TRACEPIPE_RECORD_BLOCK");  // tracepipe record --block[=US]
    const std::string format = take_env("TRACEPIPE_RECORD_FORMAT");
    quiet = !take_env("TRACEPIPE_RECORD_QUIET").empty();
    status = take_env("TRACEPIPE_RECORD_STATUS");
    if (path.empty()) return;
    // The config's trigger keys need the triggers library's hook before the
    // instances apply it, whatever order static initialisers run in.
    detail::set_config_triggers_hook(&apply_triggers);
    try {
      const Config cfg = load_config(path);
      for (const InstanceConfig& ic : cfg.instances) instances.push_back(Instance::from_config(ic));
      RecorderOptions ro =
          recorder_options(cfg, out, collector, version, compression, block, format);
      print_hist = cfg.recording && cfg.recording->print_hist;
      if (ro.output.empty() && ro.collector.empty()) {
        std::fprintf(stderr,
                     "%s%s: no [recording] output or collector (and "
                     "TRACEPIPE_RECORD_OUTPUT unset): not "
                     "recording\n",
                     prefix(), path.c_str());
        write_status("failed no [recording] output or collector in " + path);
        return;
      }
      const bool connect_first = !ro.collector.empty() && !status.empty();
      const auto timeout = ro.collector_timeout;
      ro.on_error = [](const std::string&) {};  // named once, in the summary (report())
      ro.on_stopped = [this] {                  // on the recorder thread, the file finalized
        if (reported.exchange(true)) return;    // the program is exiting and reports itself
        report(recorder->stats());
        die_by(g_signal.load());
      };
      recorder = std::make_unique<Recorder>(*instances.front(), std::move(ro));
      g_recorder.store(recorder.get());
      g_pid.store(::getpid());
      take_signal(SIGINT);
      take_signal(SIGTERM);
      // Under `tracepipe record -N`, as trace-cmd record -N: the connection
      // is made before the program runs on (bounded; a failure is reported
      // at the end and the program runs unrecorded).
      if (connect_first) (void)recorder->wait_ready(timeout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%snot recording: %s\n", prefix(), e.what());
      write_status(std::string("failed ") + e.what());
      recorder.reset();
      instances.clear();
    }
  }

  // Under `tracepipe record` (which names a status file) the program's own
  // lines carry the subcommand's prefix, as the tool's own lines do.
  const char* prefix() const { return status.empty() ? "tracepipe: " : "tracepipe record: "; }

  void write_status(const std::string& line) const {
    if (status.empty()) return;
    std::ofstream f(status);
    f << line << "\n";
  }

  // At the end: the summary, the hists, the status line.
  void report(const RecorderStats& s) {
    const std::optional<std::string> err = recorder->error();
    if (!quiet) std::fputs(format_summary(s, err, prefix()).c_str(), stderr);
    if (print_hist) {
      for (const auto& inst : instances) {
        for (const EventDesc* d : inst->registry().events()) {
          const std::string h = hist_file(*inst, *d);
          if (h.empty()) continue;
          std::fprintf(stderr, "%shist of %s (instance %s):\n%s", prefix(), d->full_name().c_str(),
                       inst->name().empty() ? "main" : inst->name().c_str(), h.c_str());
        }
      }
    }
    std::fflush(stderr);
    write_status(err ? "failed " + *err : "ok " + std::to_string(s.records));
  }

  ~AutoRecord() {
    if (!recorder) return;
    // A forked child that exits: the recording is its parent's (the child
    // has no recorder thread, and its ring is a copy): stopping it here
    // joined a thread of another process, finalized the parent's file under
    // its writes, wrote a status line and printed a second summary.
    if (::getpid() != g_pid.load()) {
      (void)recorder.release();
      return;
    }
    // A signal's stop may be under way on the recorder thread: stop() joins
    // it; whichever comes first reports.
    const bool first = !reported.exchange(true);
    const RecorderStats s = recorder->stop();
    if (first) report(s);
    g_recorder.store(nullptr);
    recorder.reset();
  }
};

AutoRecord auto_record;

}  // namespace
}  // namespace tracepipe::record

/// Referenced by the tracepipe::tracepipe target's link options, so that
/// this file is linked into every program that uses the umbrella target.
extern "C" void tracepipe_record_autostart() noexcept {}
