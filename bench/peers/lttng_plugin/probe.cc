// libtracepipe_peer_lttng.so: the LTTng-UST side of `tracepipe bench-peers`
// (see peer_plugin.h). Defines the tracepoint provider and the probe loop.
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "tracepipe/bench/peers/lttng_plugin/peer_plugin.h"
#include "tracepipe/bench/peers/lttng_plugin/tracepoint_provider.h"

extern "C" {

[[gnu::visibility("default")]] uint32_t tp_peer_lttng_abi(void) { return TP_PEER_LTTNG_ABI; }

[[gnu::visibility("default")]] int tp_peer_lttng_enabled(void) {
  return lttng_ust_tracepoint_enabled(tracepipe_peer, sched_switch) ? 1 : 0;
}

// Kept out of line and identical in shape to tracepipe's loop
// (bench/peers/tracepipe_side.cc): one call site, fields from `ev`, prev_pid
// from the iteration number.
[[gnu::visibility("default"), gnu::noinline]] void tp_peer_lttng_emit_loop(
    const struct tp_peer_event* ev, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    lttng_ust_tracepoint(tracepipe_peer, sched_switch, ev->prev_comm,
                         static_cast<int32_t>(i & 0x7fffffff), ev->prev_prio, ev->prev_state,
                         ev->next_comm, ev->next_pid, ev->next_prio);
  }
}

}  // extern "C"
