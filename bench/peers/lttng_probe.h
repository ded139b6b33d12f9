#pragma once
// The LTTng-UST probe loop of the peers plugin (lttng_plugin/peer_plugin.h),
// loaded into this process: the bench-peers micro table (lttng_side.h) and the
// recording bench (bench/record/lttng_record.h) fire tracepipe_peer:sched_switch
// through it.
//
// Order matters: the plugin's liblttng-ust registers this process with a
// session daemon while it loads, so load() must run after LttngDaemon::start()
// (lttng_session.h). The library is never dlclose()d (liblttng-ust keeps
// threads and must stay mapped); loading it twice is harmless (dlopen counts).
#include <chrono>
#include <string>

#include "tracepipe/bench/peers/lttng_plugin/peer_plugin.h"

namespace tracepipe::peers {

/// Where the plugin is looked for, in order: `explicit_path` (if not empty),
/// $TRACEPIPE_PEER_LTTNG_PLUGIN, the directory of this executable, the
/// install libdir's tracepipe/ folder. Returns "" if none exists.
std::string find_lttng_plugin(const std::string& explicit_path);

struct LttngProbe {
  std::string path;                           ///< the plugin file loaded
  tp_peer_lttng_emit_loop_fn loop = nullptr;  ///< fires the tracepoint n times
  tp_peer_lttng_enabled_fn enabled = nullptr;
  tp_peer_event event{};  ///< the constant fields (peer_event(), micro.h)

  /// Finds (find_lttng_plugin) and loads the plugin, checks its ABI. Throws
  /// PeerUnavailable (lttng_session.h) naming what is missing.
  static LttngProbe load(const std::string& explicit_path);

  /// Fires the tracepoint `n` times from the calling thread.
  void emit(uint64_t n) const { loop(&event, n); }

  /// Waits until the tracepoint's enabled state is `want` (the daemon pushes
  /// a session's events to registered apps while `lttng start` runs; this
  /// only guards against a slow push). Returns false after `timeout`.
  bool wait_enabled(bool want, std::chrono::milliseconds timeout) const;
};

}  // namespace tracepipe::peers
