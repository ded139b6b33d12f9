#include "tracepipe/bench/peers/lttng_side.h"

#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace tracepipe::peers {
namespace {

/// Smallest power of two >= v.
uint64_t pow2_at_least(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

std::unique_ptr<LttngSide> LttngSide::open(const std::string& plugin_path) {
  // Fails early (before a daemon starts) when there is no plugin to load.
  if (find_lttng_plugin(plugin_path).empty()) (void)LttngProbe::load(plugin_path);
  std::unique_ptr<LttngSide> side(new LttngSide());
  side->daemon_ = LttngDaemon::start();
  side->probe_ = LttngProbe::load(plugin_path);
  return side;
}

LttngSide::~LttngSide() {
  session_.reset();  // destroy the session before stopping the daemon
  daemon_.reset();
}

std::string LttngSide::description() const {
  return fmt::format(
      "LTTng-UST plugin {}; private lttng-sessiond pid {} ({}); per-user per-CPU buffers on tmpfs",
      probe_.path, daemon_->pid(), daemon_->isolation());
}

void LttngSide::begin_case(const MicroSetup& setup) {
  setup_ = setup;
  session_.reset();
  if (setup.kase == MicroCase::disabled) {
    if (!probe_.wait_enabled(false, std::chrono::seconds(5)))
      throw std::runtime_error("tracepipe_peer:sched_switch stays enabled with no session");
    return;
  }
  LttngChannelSpec spec;
  std::string filter;
  if (setup.kase == MicroCase::overwrite) {
    spec.overwrite = true;
    spec.subbuf_bytes = 256 * 1024;
    spec.num_subbuf =
        static_cast<uint32_t>(std::max<uint64_t>(2, pow2_at_least(setup.overwrite_kb / 256)));
  } else {
    spec.subbuf_bytes = 1 << 20;
    spec.num_subbuf = static_cast<uint32_t>(
        std::max<uint64_t>(4, pow2_at_least((setup.buffer_kb + 1023) / 1024)));
  }
  switch (setup.kase) {
    case MicroCase::reject_int:
      filter = "prev_pid < 0";
      break;
    case MicroCase::accept_int:
      filter = "prev_pid >= 0";
      break;
    case MicroCase::reject_glob:
      filter = fmt::format("prev_comm == \"{}\"", setup.glob);
      break;
    default:
      break;
  }
  const std::string session =
      fmt::format("tpp{}-{}-{}t", ++session_seq_, peers::name(setup.kase), setup.threads);
  session_ = std::make_unique<LttngSession>(*daemon_, session, spec, filter);
  if (!probe_.wait_enabled(true, std::chrono::seconds(5)))
    throw std::runtime_error(
        fmt::format("session {} started but the tracepoint did not become enabled", session));
}

void LttngSide::emit(uint32_t /*thread*/, uint64_t n) { probe_.emit(n); }

SideCounts LttngSide::end_case() {
  SideCounts c;
  if (!session_) return c;
  const LttngChannelStats st = session_->stop();
  if (setup_.kase == MicroCase::overwrite) {
    c.overrun = st.lost_packets;
    c.note = "overrun counted in packets";
  } else {
    c.lost = st.discarded_events;
  }
  c.bytes = session_->stream_bytes();
  session_.reset();
  return c;
}

}  // namespace tracepipe::peers
