#pragma once
// The C ABI between `tracepipe bench-peers` and its LTTng-UST plugin,
// libtracepipe_peer_lttng.so (built only when pkg-config finds lttng-ust).
//
// Why a plugin: linking liblttng-ust into the `tracepipe` executable would
// make every run of every subcommand register with a session daemon at
// start-up. The bench dlopen()s the plugin only when it measures LTTng, after
// it has started its own private lttng-sessiond, so the LTTng probe loop runs
// in the same process as tracepipe's and the two can be interleaved.
//
// The plugin defines one tracepoint, tracepipe_peer:sched_switch, whose
// payload is the kernel's sched_switch fields (56 bytes):
//   char prev_comm[16]; int32 prev_pid; int32 prev_prio; int64 prev_state;
//   char next_comm[16]; int32 next_pid; int32 next_prio;
// tracepipe's side of the bench emits an event with the same fields (64-byte
// record with the kernel's 8-byte common header).
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Bumped whenever a declaration below changes; the bench refuses a plugin
/// whose tp_peer_lttng_abi() differs.
#define TP_PEER_LTTNG_ABI 1u

/// The constant fields of every emitted event. prev_pid varies: iteration i
/// of a loop emits prev_pid = (int32_t)(i & 0x7fffffff), so it is never
/// negative (a `prev_pid < 0` filter rejects every event).
struct tp_peer_event {
  char prev_comm[16];
  int32_t prev_prio;
  int64_t prev_state;
  char next_comm[16];
  int32_t next_pid;
  int32_t next_prio;
};

/// TP_PEER_LTTNG_ABI.
uint32_t tp_peer_lttng_abi(void);
/// Non-zero while tracepipe_peer:sched_switch is enabled in some LTTng
/// session for this process (the tracepoint's own enabled check).
int tp_peer_lttng_enabled(void);
/// Fires the tracepoint `n` times from the calling thread (iteration i with
/// prev_pid = i & 0x7fffffff). Thread-safe: each thread calls it on its own.
void tp_peer_lttng_emit_loop(const struct tp_peer_event* ev, uint64_t n);

typedef uint32_t (*tp_peer_lttng_abi_fn)(void);
typedef int (*tp_peer_lttng_enabled_fn)(void);
typedef void (*tp_peer_lttng_emit_loop_fn)(const struct tp_peer_event*, uint64_t);

#ifdef __cplusplus
}
#endif
