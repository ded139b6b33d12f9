// The snapshot file (snapshot.h) over the instance's spare ring.
#include "tracepipe/core/triggers/snapshot.h"

#include <fmt/format.h>

#include <cerrno>
#include <mutex>
#include <new>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/export/process_symbols.h"
#include "tracepipe/core/export/text_output.h"

namespace tracepipe {

namespace triggers {
std::mutex& control_mutex();  // triggers.cc
TriggerStatus snapshot_allocate_locked(Instance& instance);
}  // namespace triggers

TriggerStatus triggers::snapshot_allocate_locked(Instance& instance) {
  if (!instance.flight_path().empty()) {
    TriggerError e;
    e.err = EBUSY;
    e.location = "snapshot";
    e.message =
        "Snapshot is not supported on a flight-recorder instance (its ring buffer is its file)";
    e.pos = 0;
    return TriggerStatus(std::move(e));
  }
  try {
    detail::InstanceAccess::live_ring(instance).allocate();
  } catch (const std::bad_alloc&) {
    TriggerError e;
    e.err = ENOMEM;
    e.location = "snapshot";
    e.message = "Could not allocate the snapshot buffer";
    e.pos = 0;
    return TriggerStatus(std::move(e));
  }
  return {};
}

TriggerStatus snapshot_write(Instance& instance, unsigned long value) {
  const std::lock_guard lk(triggers::control_mutex());
  detail::LiveRing& ring = detail::InstanceAccess::live_ring(instance);
  switch (value) {
    case 0:
      ring.free();
      return {};
    case 1: {
      TriggerStatus st = triggers::snapshot_allocate_locked(instance);
      if (!st) return st;
      ring.take();
      return {};
    }
    default:
      ring.clear();
      return {};
  }
}

const buffers::RingBufferBase* snapshot_ring(const Instance& instance) {
  return detail::InstanceAccess::live_ring(instance).snapshot();
}

bool snapshot_allocated(const Instance& instance) { return snapshot_ring(instance) != nullptr; }

std::string snapshot_file(const Instance& instance) {
  const std::lock_guard lk(triggers::control_mutex());  // the ring stays while we read it
  const buffers::RingBufferBase* snap = snapshot_ring(instance);
  uint64_t entries = 0, written = 0;
  if (snap != nullptr)
    for (uint32_t cpu = 0; cpu < snap->cpus(); ++cpu) {
      const buffers::CpuStats s = snap->stats(cpu);
      entries += s.entries;
      written += s.entries + s.overrun;
    }
  if (entries == 0) {
    // s_show: an empty snapshot prints its help (print_snapshot_help).
    return fmt::format(
        "# tracer: nop\n"
        "#\n"
        "#\n"
        "# * Snapshot is {} *\n"
        "#\n"
        "# Snapshot commands:\n"
        "# echo 0 > snapshot : Clears and frees snapshot buffer\n"
        "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
        "#                      Takes a snapshot of the main buffer.\n"
        "# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n"
        "#                      (Doesn't have to be '2' works with any number that\n"
        "#                       is not a '0' or '1')\n",
        snap != nullptr ? "allocated" : "freed");
  }
  std::string out = trace_header(entries, written, snap->cpus());
  TextFormatter f(instance.registry(), FieldStyle::print_fmt, instance.clock().in_nanoseconds);
  f.set_cmdlines(instance.cmdlines());
  f.set_symbolizer(&process_symbol_text);
  auto m = buffers::merged_iterator(*snap);
  fmt::memory_buffer line;
  while (auto r = m.next()) {
    line.clear();
    f.format(r->cpu, r->ts, r->payload, line);
    out.append(line.data(), line.size());
  }
  return out;
}

}  // namespace tracepipe
