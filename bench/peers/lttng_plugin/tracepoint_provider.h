// LTTng-UST tracepoint provider of the peers bench: tracepipe_peer:sched_switch.
// Included twice by LTTng's macros (LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ),
// so no #pragma once. Only probe.cc includes it.
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER tracepipe_peer

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "tracepipe/bench/peers/lttng_plugin/tracepoint_provider.h"

#if !defined(TRACEPIPE_PEERS_TRACEPOINT_PROVIDER_H) || \
    defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define TRACEPIPE_PEERS_TRACEPOINT_PROVIDER_H

#include <lttng/tracepoint.h>
#include <stdint.h>

// The kernel's sched_switch payload: two 16-byte text arrays (filterable as
// strings, glob patterns included) and five integers: 56 bytes.
LTTNG_UST_TRACEPOINT_EVENT(
    tracepipe_peer, sched_switch,
    LTTNG_UST_TP_ARGS(const char*, prev_comm, int32_t, prev_pid, int32_t, prev_prio, int64_t,
                      prev_state, const char*, next_comm, int32_t, next_pid, int32_t, next_prio),
    LTTNG_UST_TP_FIELDS(lttng_ust_field_array_text(char, prev_comm, prev_comm, 16)
                            lttng_ust_field_integer(int32_t, prev_pid, prev_pid)
                                lttng_ust_field_integer(int32_t, prev_prio, prev_prio)
                                    lttng_ust_field_integer(int64_t, prev_state, prev_state)
                                        lttng_ust_field_array_text(char, next_comm, next_comm, 16)
                                            lttng_ust_field_integer(int32_t, next_pid, next_pid)
                                                lttng_ust_field_integer(int32_t, next_prio,
                                                                        next_prio)))

#endif

#include <lttng/tracepoint-event.h>
