#pragma once
// A dedicated instance of the kernel's tracefs (instances/NAME) for the peers
// bench: every setting the bench touches lives inside it, and the destructor
// disables its events and removes it, so nothing of the machine's tracing
// state changes. The name carries this process's PID
// ("tracepipe-peers-<pid>"); an instance left by a bench process that died
// (its PID no longer exists) is removed by the next create().
//
// Raw file writes, as `echo VALUE > FILE` does: one write(2) of the value; an
// error carries the kernel's errno text and, for a filter, the last line of
// the instance's error_log.
#include <cstdint>
#include <memory>
#include <string>

namespace tracepipe::peers {

/// The mounted tracefs ("/sys/kernel/tracing", else
/// "/sys/kernel/debug/tracing"), or "" if neither holds one.
std::string tracefs_root();

/// Sum of per_cpu/cpuN/stats over the instance's CPUs.
struct TracefsCounts {
  uint64_t entries = 0;  ///< records in the buffer
  uint64_t overrun = 0;  ///< overwritten (overwrite mode)
  uint64_t dropped = 0;  ///< "dropped events": lost because the buffer was full (drop mode)
  uint64_t recorded() const noexcept { return entries + overrun + dropped; }
};

/// Parses one per_cpu/cpuN/stats text into `into` (added). Unknown lines are
/// ignored; throws std::runtime_error if "entries:" is missing.
void add_stats_text(const std::string& text, TracefsCounts& into);

class TracefsInstance {
 public:
  /// Creates instances/tracepipe-peers-<pid>. Throws PeerUnavailable
  /// (bench/peers/lttng_session.h) when tracefs is absent, not writable or
  /// has no instances/ folder.
  static std::unique_ptr<TracefsInstance> create();
  /// Disables the events enabled through it, then removes the instance
  /// (retrying while the kernel reports it busy).
  ~TracefsInstance();
  TracefsInstance(const TracefsInstance&) = delete;
  TracefsInstance& operator=(const TracefsInstance&) = delete;

  const std::string& path() const noexcept { return path_; }
  const std::string& name() const noexcept { return name_; }

  /// Writes `value` to `rel` (relative to the instance); throws
  /// std::runtime_error naming the file, value and the kernel's error.
  void write(const std::string& rel, const std::string& value);
  /// Reads `rel`; throws std::runtime_error if it cannot be read.
  std::string read(const std::string& rel) const;
  /// True if events/<system>/<event>/ exists.
  bool has_event(const std::string& system, const std::string& event) const;
  void enable_event(const std::string& system, const std::string& event, bool on);
  /// Sets the event's filter; "" clears it (writes "0").
  void set_filter(const std::string& system, const std::string& event, const std::string& expr);
  /// Empties the buffers and zeroes their counters (truncates `trace`).
  void clear();
  TracefsCounts counts() const;

 private:
  TracefsInstance() = default;
  std::string root_;
  std::string name_;
  std::string path_;
  std::string enabled_;  ///< "sys/event\n" of every event enabled through us
};

}  // namespace tracepipe::peers
