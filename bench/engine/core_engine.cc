// The bench's emit points bound to tracepipe core: one tracepipe::Instance
// per cell, the four kernel events registered from their format files, the
// case's filters set with Instance::set_filter, and each emit point an
// Instance::emit_fill that writes the event fields in place.
#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "tracepipe/bench/engine/engine.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/clock/trace_clock.h"
#include "tracepipe/core/events/registry.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/instance/thread_context.h"

namespace tracepipe::bench {
namespace {

/// The bench's registry: the four kernel events with their kernel IDs.
/// Shared by every cell (instances refer to events by reference).
Registry& bench_registry() {
  static Registry* r = [] {
    auto* reg = new Registry();  // lives for the process: instances point into it
    for (const EventInfo& e : kEventInfo) reg->add_format_text(e.format, e.system);
    return reg;
  }();
  return *r;
}

/// The emit target handed to the workload: one emit_fill per emit point.
struct CoreTracer {
  Instance* instance;
  std::array<const EventDesc*, kEventKinds> desc;

  template <class Record, class Fill>
  [[gnu::always_inline]] void emit(EventKind kind, Fill&& fill) noexcept {
    instance->emit_fill(*desc[static_cast<size_t>(kind)], sizeof(Record),
                        [&](std::span<std::byte> rec) {
                          // The instance wrote the common header; the site
                          // writes the event fields in place, as the
                          // kernel's TP_fast_assign does.
                          fill(*reinterpret_cast<Record*>(rec.data()));
                        });
  }
  /// Registers the workload thread (one allocation and two system calls)
  /// before the clock starts, after the thread has named itself: the
  /// instance caches the comm then.
  void prepare_thread() { tracepipe::prepare_thread(); }
};
static_assert(EmitTarget<CoreTracer>);

class CoreCaseEngine final : public CaseEngine {
 public:
  CoreCaseEngine(const EngineOptions& o, Case kase, const EventFilters& filters) {
    InstanceOptions io;
    io.name = "bench";
    io.buffer_size_kb = (o.buffer_bytes_per_cpu + 1023) / 1024;
    io.mode = o.overwrite ? BufferMode::overwrite : BufferMode::drop_newest;
    io.clock = *parse_trace_clock(o.clock);  // validated by validate()
    io.staging = o.staging;
    Registry& reg = bench_registry();
    instance_ = std::make_unique<Instance>(io, reg);
    tracer_.instance = instance_.get();
    for (const EventInfo& e : kEventInfo) {
      const EventDesc* d = reg.find(e.system, e.name);
      if (!d) throw std::logic_error(fmt::format("bench: {} not registered", e.name));
      tracer_.desc[static_cast<size_t>(e.kind)] = d;
      if (kase == Case::off) continue;
      const std::string& expr = filters[static_cast<size_t>(e.kind)];
      if (!expr.empty()) {
        FilterStatus st = instance_->set_filter(*d, expr);
        if (!st)
          throw std::runtime_error(fmt::format("filter of case '{}' on {}:{} rejected:\n{}",
                                               name(kase), e.system, e.name, st.render()));
      }
      instance_->enable(*d, true);
    }
  }

  RunTiming run(const WorkloadConfig& workload) override {
    drain();
    const RunCounts before = totals();
    RunTiming t = run_hackbench(workload, tracer_);
    const RunCounts after = totals();
    last_ = {after.emitted - before.emitted,
             after.accepted - before.accepted,
             after.rejected - before.rejected,
             after.lost - before.lost,
             after.lost_commit_overrun - before.lost_commit_overrun,
             after.lost_set_aside - before.lost_set_aside,
             after.lost_busy - before.lost_busy,
             after.overrun - before.overrun,
             after.staged - before.staged,
             after.staging_busy - before.staging_busy,
             after.conserved};
    return t;
  }

  RunCounts last_counts() const override { return last_; }

  void replay(std::span<const MixRecord> lane, uint64_t count) noexcept override {
    constexpr size_t kCommon = sizeof(CommonFields);
    while (count > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(count, lane.size()));
      for (size_t i = 0; i < n; ++i) {
        const MixRecord& m = lane[i];
        instance_->emit_fill(
            *tracer_.desc[static_cast<size_t>(m.kind)], m.size, [&](std::span<std::byte> rec) {
              // The instance wrote the common header; the
              // recorded fields follow it.
              std::memcpy(rec.data() + kCommon, m.bytes.data() + kCommon, m.size - kCommon);
            });
      }
      count -= n;
    }
  }

  void prepare_thread() override { tracepipe::prepare_thread(); }

  RunCounts totals() const override {
    RunCounts c;
    for (const EventDesc* d : tracer_.desc) {
      EventStats s = instance_->event_stats(*d);
      c.emitted += s.emitted();
      c.accepted += s.kept;
      c.rejected += s.discarded;
      c.lost += s.lost;
      c.staged += s.staged;
      c.staging_busy += s.nested + s.contended;
    }
    if (instance_->enabled(*tracer_.desc[0])) {  // the ring's walk is only worth it when tracing
      uint64_t accounted = 0;
      for (const buffers::CpuStats& s : instance_->cpu_stats()) {
        c.lost_commit_overrun += s.commit_overrun;
        c.lost_set_aside += s.lost_set_aside;
        c.lost_busy += s.lost_busy;
        c.overrun += s.overrun;
        accounted += s.accounted();
      }
      // Every record that reached the ring is consumed, overrun, lost,
      // discarded or still buffered (core/instance/instance.h F4, buffers/stats.h).
      c.conserved = accounted == instance_->ring_attempts();
    }
    return c;
  }

  /// Drop-newest buffers keep what the last run left and would refuse the
  /// next run's events: consume them (untimed) first. Overwrite buffers need
  /// nothing: old data is simply overwritten, as in the kernel's runs.
  void drain() override {
    if (instance_->options().mode != BufferMode::drop_newest) return;
    for (uint32_t cpu = 0; cpu < instance_->ring().cpus(); ++cpu) {
      buffers::ConsumingReader r(instance_->ring(), cpu);
      while (r.next()) {
      }
    }
  }

 private:
  std::unique_ptr<Instance> instance_;
  CoreTracer tracer_{};
  RunCounts last_;
};

}  // namespace

void validate(const EngineOptions& o) {
  if (!parse_trace_clock(o.clock)) {
    std::string names;
    for (const TraceClock& c : trace_clocks())
      names += (names.empty() ? "" : ", ") + std::string(c.name);
    throw std::invalid_argument(
        fmt::format("unknown trace clock '{}' (expected one of: {})", o.clock, names));
  }
  if (o.buffer_bytes_per_cpu < 8 * 1024)
    throw std::invalid_argument("buffer size must be at least 8 KiB per CPU");
}

std::unique_ptr<CaseEngine> make_case_engine(const EngineOptions& options, Case kase,
                                             const EventFilters& filters) {
  validate(options);
  return std::make_unique<CoreCaseEngine>(options, kase, filters);
}

std::string engine_description(const EngineOptions& o) {
  return fmt::format("tracepipe core Instance (emit_fill; {} ring buffer, {} CPU buffers)",
                     o.overwrite ? "overwrite" : "drop-newest", possible_cpus());
}

}  // namespace tracepipe::bench
