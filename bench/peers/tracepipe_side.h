#pragma once
// tracepipe as side A of table 1: the same sched_switch-like event
// (bench/peers/lttng_plugin/peer_plugin.h) declared with EventDecl and fired
// with TRACEPIPE_TRACE (the tracepoint-style macro, the analogue of
// lttng_ust_tracepoint(); default), the EventDecl::trace() function
// (--tp-api trace-fn) or EventDecl::emit(instance) (--tp-api emit), recorded
// by a fresh Instance per case:
//   disabled     the event is registered, not enabled in the instance
//   enabled      enabled, no filter, drop-newest buffer
//   reject-int   filter `prev_pid < 0`
//   accept-int   filter `prev_pid >= 0`
//   reject-glob  filter `prev_comm ~ "<glob>"`
//   overwrite    enabled, no filter, overwrite buffer of overwrite_kb per CPU
// The drop-newest buffer holds one round per CPU; after each round a
// consuming reader drains it (untimed), so nothing is lost. Lost events
// (EventStats::lost) are reported and must be 0.
#include <cstdint>
#include <memory>
#include <string>

#include "tracepipe/bench/peers/micro.h"

namespace tracepipe {
class Instance;
}

namespace tracepipe::peers {

class TracepipeSide final : public MicroSide {
 public:
  /// `staging`: a core/config/instance_options.h Staging name, "" for the default.
  /// `api`: "trace" (TRACEPIPE_TRACE), "trace-fn" (EventDecl::trace) or
  /// "emit" (EventDecl::emit).
  /// Throws std::invalid_argument for an unknown name.
  TracepipeSide(const std::string& staging, const std::string& api);
  ~TracepipeSide() override;

  std::string_view name() const override { return "tracepipe"; }
  void begin_case(const MicroSetup& setup) override;
  void emit(uint32_t thread, uint64_t n) override;
  void after_round() override;
  SideCounts end_case() override;

  /// One line about the setup, for the report.
  std::string description() const;
  /// The record size in bytes (common header included).
  static uint32_t record_size() noexcept;

 private:
  enum class Api : uint8_t { trace, trace_fn, emit };
  Api api_ = Api::trace;
  std::string staging_;
  MicroSetup setup_;
  std::unique_ptr<Instance> instance_;
  tp_peer_event event_{};
};

}  // namespace tracepipe::peers
