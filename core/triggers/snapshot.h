#pragma once
// The instance's snapshot file: a spare ring buffer that a snapshot trigger
// (or `echo 1 > snapshot`) swaps with the live one, so that the snapshot
// keeps what was traced up to that moment while tracing goes on
// (core/instance/snapshot_buffer.h has the swap).
//
//   snapshot_write(inst, 1)   // echo 1 > snapshot: allocate if needed, take a snapshot
//   snapshot_write(inst, 2)   // echo 2 > snapshot: clear it (allocated stays allocated)
//   snapshot_write(inst, 0)   // echo 0 > snapshot: clear and free it
//   snapshot_file(inst)       // cat snapshot
//
// A snapshot trigger allocates the spare when it is added (the kernel's
// tracing_arm_snapshot), so the write path never allocates.
//
// Mirrors kernel/trace/trace.c: tracing_snapshot_write, print_snapshot_help,
// s_show. Thread-safety: control plane (serialised with set_trigger; never
// from a signal handler or inside an emit); the trigger's swaps run
// concurrently, lock-free.
#include <string>

#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/triggers/triggers.h"

namespace tracepipe {

/// `echo VALUE > snapshot`: 0 clears and frees the spare, 1 allocates it if
/// needed and takes a snapshot (a swap), any other value clears the
/// snapshot if one is allocated. Errors: EBUSY on a flight-recorder
/// instance (its ring is its file; a swap would move tracing out of it),
/// ENOMEM if the spare cannot be allocated. Each carries a message.
TriggerStatus snapshot_write(Instance& instance, unsigned long value);

/// `cat snapshot`: the snapshot's records in the `trace` layout, or, when it
/// holds none, the kernel's help text ("# * Snapshot is allocated *" or
/// "# * Snapshot is freed *" and the commands).
std::string snapshot_file(const Instance& instance);

/// The snapshot ring (paused; read it with buffers::Iterator or
/// buffers::Snapshot::take), nullptr when none is allocated. Valid until the
/// next snapshot_write(0 or 2) or the instance's end.
const buffers::RingBufferBase* snapshot_ring(const Instance& instance);

/// True when the instance has a spare allocated.
bool snapshot_allocated(const Instance& instance);

}  // namespace tracepipe
