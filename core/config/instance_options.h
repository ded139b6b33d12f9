#pragma once
// What an Instance is built from: buffer geometry, overflow mode, trace clock
// and the staging policy of the fast path. Plain values; see core/config/config.h for
// the TOML file that fills them.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tracepipe/buffers/ring_buffer.h"
#include "tracepipe/core/clock/trace_clock.h"

namespace tracepipe {

/// What happens when a CPU's ring buffer is full: the ring buffer's own
/// mode (buffers::OverflowMode: overwrite, drop_newest). Mirrors the
/// kernel's options/overwrite (1 = overwrite, 0 = drop newest).
using BufferMode = buffers::OverflowMode;

/// Where the fast path builds a record before the filter decides on it.
enum class Staging : uint8_t {
  off,         ///< always reserve in the ring, then commit or discard (the kernel before 2016)
  per_cpu,     ///< the kernel's design: one non-recursive temp buffer per CPU ("on")
  per_thread,  ///< one non-recursive temp buffer per thread
  adaptive,    ///< per event: reserve directly while most events are accepted, stage
               ///< while most are rejected (per-thread staging buffers)
};

/// Who may write which per-CPU buffer (buffers::Writers).
enum class WriterMode : uint8_t {
  /// cpu_local when this process can (rseq registered and membarrier RSEQ
  /// accepted: detail::rseq_usable()) and neither `cpus` nor `external_time`
  /// is set; any_cpu otherwise.
  automatic,
  /// Any thread may write any CPU's buffer; RawEmit::emit honours its `cpu`.
  /// Each reservation is one locked 16-byte CAS.
  any_cpu,
  /// Each writer reserves in the buffer of the CPU it runs on, as the
  /// kernel's writers do, with a restartable sequence (no locked
  /// instruction). RawEmit::emit's `cpu` then only feeds the filter's CPU
  /// fields: the record goes to the buffer of the CPU the caller runs on.
  /// Needs `cpus` = 0 (one buffer per possible CPU).
  cpu_local,
};

std::string_view to_string(BufferMode m) noexcept;
std::string_view to_string(Staging s) noexcept;
/// "overwrite" | "drop_newest" (also "drop-newest", "discard").
std::optional<BufferMode> parse_buffer_mode(std::string_view s) noexcept;
/// "off" | "on" (= per_cpu) | "per_cpu" | "per_thread" | "adaptive"
/// ('-' accepted for '_').
std::optional<Staging> parse_staging(std::string_view s) noexcept;
std::string_view to_string(WriterMode w) noexcept;
/// "auto", "any_cpu" or "cpu_local" ('-' may stand for '_').
std::optional<WriterMode> parse_writer_mode(std::string_view s) noexcept;

/// Bounds of the numeric options, shared by the config file (core/config/config.h)
/// and the command line (tools/replay_cmd.cc), so both refuse the same values.
/// Largest buffer_size_kb: 1 GiB per CPU (the rings are allocated up front,
/// one per CPU, so a typo such as 4 TiB must fail at parse time, not as an
/// allocation failure or an OOM kill).
inline constexpr uint64_t kMaxBufferSizeKb = uint64_t{1} << 20;
/// subbuf_size_kb: a power of two in [kMinSubbufSizeKb, kMaxSubbufSizeKb].
inline constexpr uint32_t kMinSubbufSizeKb = 4;
inline constexpr uint32_t kMaxSubbufSizeKb = 1024;
/// Largest explicit `cpus` (0 = possible_cpus()).
inline constexpr uint32_t kMaxCpus = 4096;

struct InstanceOptions {
  /// Instance name, as /sys/kernel/tracing/instances/NAME ("main" for the
  /// top-level one).
  std::string name = "main";
  /// Ring buffer size per CPU in KiB (the kernel's buffer_size_kb; default
  /// 1408 as the kernel's). Rounded up to whole sub-buffers.
  uint64_t buffer_size_kb = 1408;
  /// Sub-buffer size in KiB (buffer_subbuf_size_kb; power of two, >= 4).
  uint32_t subbuf_size_kb = 4;
  BufferMode mode = BufferMode::overwrite;
  ClockId clock = ClockId::local;
  Staging staging = Staging::per_thread;
  /// Adaptive staging: reserve directly when the recent acceptance rate of
  /// an event on this thread exceeds this fraction, stage otherwise. The
  /// default is the break-even point measured by bench/micro/core_bench.cc: a
  /// direct discard costs several times a staged one (a reclaim CAS in the
  /// ring), while a direct commit saves only the 64-byte copy, so direct
  /// wins only when nearly every event is kept.
  double adaptive_threshold = 0.9;
  /// Number of per-CPU buffers; 0 = possible_cpus(). Events from CPU c go to
  /// buffer c % cpus.
  uint32_t cpus = 0;
  /// Replay: records are stamped with the time given to
  /// RawEmit::emit_at() instead of reading `clock` (which then only
  /// names the unit, e.g. in trace.dat). The ring still keeps each CPU's
  /// stamps non-decreasing.
  bool external_time = false;
  /// Who may write which per-CPU buffer; see WriterMode. Instance's
  /// constructor throws std::invalid_argument if cpu_local is asked for but
  /// unavailable or `cpus` != 0.
  WriterMode writers = WriterMode::automatic;
  /// Crash-safe flight recorder (docs/flight.md): the ring buffers, their
  /// counters and the event formats live in a file mapping,
  /// `flight_dir`/<name>-<pid>.tpflight, that outlives the process, so that
  /// `tracepipe recover` turns what was committed before a crash into a
  /// trace.dat. The write path is the same code. The file is removed when
  /// the Instance is destroyed. The constructor throws std::system_error if
  /// the file cannot be created or its space reserved.
  bool flight_recorder = false;
  /// Where the flight file goes (created if missing). Default: tmpfs.
  std::string flight_dir = "/dev/shm/tracepipe";
};

}  // namespace tracepipe
