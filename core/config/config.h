#pragma once
// Configuration files: one TOML file describes one or more instances, their
// buffers and clock, the staging policy, and which events each records with
// which filter (the kernel's filter strings, unchanged).
//
//   buffer_size_kb = 1408            # per CPU, as buffer_size_kb (1..kMaxBufferSizeKb)
//   subbuf_size_kb = 4               # as buffer_subbuf_size_kb (power of two, 4..1024)
//   mode = "overwrite"               # or "drop_newest"
//   clock = "local"                  # any name of trace_clock
//   staging = "per_thread"           # "on" (= "per_cpu"), "per_thread", "off", "adaptive"
//   adaptive_threshold = 0.9         # acceptance rate above which adaptive goes direct
//
//   [systems.sched]                  # as events/sched/{enable,filter}
//   enable = true
//   filter = "common_pid != 0"
//
//   [events."sched:sched_switch"]    # as events/sched/sched_switch/{enable,filter};
//   enable = true                    # keys may be set_event patterns ("sched:*")
//   filter = "prev_prio < 100"
//   soft_disable = false
//
//   [recording]                      # record the main instance (core/record/recorder.h)
//   output = "trace.dat"             # the trace.dat to write (TRACEPIPE_RECORD_OUTPUT overrides)
//   # collector = "host:12345"       # or: send to `trace-cmd listen` there (trace-cmd record -N)
//   # format = "perfetto"            # or "ctf" (output names a directory); default "tracedat"
//   file_version = 7                 # 6 (default) or 7, trace-cmd 3.x's sectioned format
//   compression = "zstd"             # with version 7: zstd (default), zlib or none
//   mode = "stream"                  # or "flight_recorder" (needs mode = "overwrite" above)
//   watermark_percent = 25           # drain a CPU once this share of its buffer is full
//   flush_interval_ms = 1000         # longest a record waits in the ring
//   max_poll_interval_us = 1000      # longest the recorder sleeps between looks
//   realtime_priority = 10           # recorder thread SCHED_FIFO (1..99; 0: default policy), as
//   perf record -r cpu = 1                          # pin the recorder thread (-1: not pinned)
//   max_file_kb = 65536              # rotation: files of 64 MiB (run.1.dat, run.2.dat, ...)
//   max_files = 4                    # keep the newest 4 (the last 256 MiB of the run)
//   block_timeout_us = 1000          # a writer of a full drop-newest buffer waits up to 1 ms
//                                    # for the recorder ("inf": no bound; 0: drops at once)
//
//   [instances.errors]               # another instance, as instances/errors/
//   buffer_size_kb = 64              # same keys as the top level
//   [instances.errors.events."app:request_done"]
//   enable = true
//   filter = "latency_ns > 1000000"
//
// The top level is the instance named "main". Within an instance, systems are
// applied before events, so an event's own filter overrides its system's
// (as writing events/SYS/filter and then events/SYS/EV/filter would).
//
// Every error (TOML syntax, unknown key, wrong type, bad value, unknown event,
// rejected filter, writers = "cpu_local" with cpus set or where rseq is
// unusable) is a ConfigError naming the file, the line and the key; filter
// errors add the kernel's parse_error text and caret. An unknown key or table
// lists the keys valid where it stands, and names the one it is close to:
//   f.toml:1: buffer_size: unknown key (expected buffer_size_kb, ... or
//   instances); did you mean 'buffer_size_kb'?
// (core/config/key_suggest.h; on one line).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "tracepipe/core/config/instance_options.h"

namespace tracepipe {

class ConfigError : public std::runtime_error {
 public:
  /// what() reads "FILE:LINE: KEY: MESSAGE" (LINE omitted when 0, KEY when empty).
  ConfigError(std::string file, uint32_t line, std::string key, std::string message);
  const std::string& file() const noexcept { return file_; }
  uint32_t line() const noexcept { return line_; }          ///< 1-based; 0 = unknown
  const std::string& key() const noexcept { return key_; }  ///< dotted TOML path
  const std::string& message() const noexcept { return message_; }

 private:
  std::string file_;
  uint32_t line_;
  std::string key_;
  std::string message_;
};

/// Where a value came from, for error messages raised when it is applied.
struct ConfigSource {
  std::string file;
  uint32_t line = 0;
  std::string key;  ///< dotted path, e.g. events."sched:sched_switch".filter
};

/// [events."PATTERN"] or [systems.NAME]: what to set on the matching events.
struct EventSettings {
  std::string pattern;  ///< "sys:name", "sys:*", ... (for systems: the system name)
  std::optional<bool> enable;
  std::optional<bool> soft_disable;
  std::optional<std::string> filter;  ///< "0" clears, as in the kernel
  /// `trigger = "CMD"` or `trigger = ["CMD", ...]`: trigger-file commands
  /// (core/triggers/triggers.h), events only; applied by the triggers library.
  std::vector<std::string> triggers;
  ConfigSource where;  ///< the table header
  ConfigSource enable_where, soft_disable_where, filter_where, trigger_where;
};

struct InstanceConfig {
  InstanceOptions options;
  /// The `writers` key (line 0 when the file does not set it): errors the
  /// Instance constructor raises about writers are reported there.
  ConfigSource writers_where;
  std::vector<EventSettings> systems;  ///< applied first, in file order
  std::vector<EventSettings> events;   ///< then these, in file order
  /// `synthetic_events = "DEF"` or a list: synthetic event definitions
  /// (docs/triggers.md), defined before the triggers are applied.
  std::vector<std::string> synthetic_events;
  ConfigSource synthetic_where;
  std::string file;  ///< source file, for messages
};

/// [recording] (top level only): the main instance is recorded into a
/// trace.dat while the program runs, by core/record's Recorder. An
/// application linked with tracepipe starts it by itself when the
/// environment names the file (TRACEPIPE_CONFIG; docs/record.md).
struct RecordingConfig {
  std::string output;                ///< path of the trace.dat ("" = none given)
  std::string collector;             ///< or "HOST:PORT" of a `trace-cmd listen` ("" = none given)
  uint32_t file_version = 6;         ///< trace.dat version: 6, or 7 (sections, compressed)
  std::string compression = "zstd";  ///< with version 7: zstd, zlib or none
  /// The output's format (RecorderOptions::format): "tracedat", "perfetto"
  /// or "ctf" (output names the trace directory). Not with a collector.
  std::string format = "tracedat";
  bool flight_recorder = false;          ///< mode = "flight_recorder" (else "stream")
  uint32_t watermark_percent = 25;       ///< 0..100
  uint32_t flush_interval_ms = 1000;     ///< 1..3600000
  uint32_t max_poll_interval_us = 1000;  ///< 20..1000000
  uint32_t realtime_priority =
      0;             ///< 0..99: the recorder thread SCHED_FIFO at this priority (0: default policy)
  int32_t cpu = -1;  ///< -1..4095: pin the recorder thread (-1: not pinned)
  uint64_t max_file_kb = 0;  ///< rotation: KiB of data per file (0: one file, no limit)
  uint32_t max_files = 0;    ///< rotation: keep the newest this many files (0: all)
  /// Blocking mode (RecorderOptions::block_timeout): microseconds a writer
  /// of a full drop-newest buffer waits for the recorder; 0: never waits;
  /// -1: no bound (`block_timeout_us = "inf"`, LTTng's spelling).
  int64_t block_timeout_us = 0;
  bool print_hist = false;  ///< at the end, print every hist trigger's hist file (stderr)
  ConfigSource where;       ///< the [recording] header
};

struct Config {
  std::vector<InstanceConfig> instances;  ///< [0] is "main" (the top level)
  std::optional<RecordingConfig> recording;
};

/// Parses TOML text; `file` names the source in errors. Throws ConfigError.
Config parse_config(std::string_view toml_text, std::string_view file = "<config>");
/// Reads and parses a file. Throws ConfigError (including for an unreadable
/// file: "FILE: cannot open it: <strerror>"). Only a regular file of at most 64 MiB is read: a
/// FIFO, a device (/dev/zero) or a directory is refused without blocking, with "FILE: not a regular
/// file (a FIFO)"; a larger file with "FILE: N bytes is over the limit of 64 MiB for a config
/// file".
Config load_config(const std::filesystem::path& file);

}  // namespace tracepipe
