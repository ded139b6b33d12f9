#pragma once
// LTTng-UST as a side of table 1: a private session daemon (lttng_session.h)
// and the plugin libtracepipe_peer_lttng.so (lttng_plugin/peer_plugin.h),
// dlopen()ed in this process once the daemon runs, so that its tracepoint
// registers with that daemon.
//
// Per case (all sessions write to tmpfs; buffers per user, per CPU):
//   disabled     no session: the tracepoint is registered but off
//   enabled      session, channel in discard mode, no filter
//   reject-int   same, --filter 'prev_pid < 0'
//   accept-int   same, --filter 'prev_pid >= 0'
//   reject-glob  same, --filter 'prev_comm == "<glob>"' (LTTng's glob is
//                a '*' inside an == string literal)
//   overwrite    snapshot session, channel in overwrite mode, nobody reads
// Discard-mode channels hold one round per CPU (the consumer daemon drains
// them concurrently, as LTTng always does), so nothing should be lost; the
// channel's discarded-event counter is read at the end of the case and
// reported.
#include <memory>
#include <string>

#include "tracepipe/bench/peers/lttng_probe.h"
#include "tracepipe/bench/peers/lttng_session.h"
#include "tracepipe/bench/peers/micro.h"

namespace tracepipe::peers {

class LttngSide final : public MicroSide {
 public:
  /// Starts the daemon, then loads the plugin (in that order: the plugin's
  /// liblttng-ust registers with the daemon while it loads). Throws
  /// PeerUnavailable with the reason when either is impossible.
  static std::unique_ptr<LttngSide> open(const std::string& plugin_path);
  ~LttngSide() override;

  std::string_view name() const override { return "lttng-ust"; }
  void begin_case(const MicroSetup& setup) override;
  void emit(uint32_t thread, uint64_t n) override;
  SideCounts end_case() override;

  /// One line about the setup, for the report.
  std::string description() const;

 private:
  LttngSide() = default;
  std::unique_ptr<LttngDaemon> daemon_;
  std::unique_ptr<LttngSession> session_;
  LttngProbe probe_;
  MicroSetup setup_;
  uint32_t session_seq_ = 0;
};

}  // namespace tracepipe::peers
