#include "tracepipe/core/clock/trace_clock.h"

#include <time.h>

#include <array>
#include <atomic>
#include <fstream>
#include <mutex>
#include <string>

#include "tracepipe/buffers/ring_buffer.h"  // FunctionClock
#include "tracepipe/buffers/tsc_clock.h"    // TRACEPIPE_HAVE_TSC, read_tsc, scale_tsc

namespace tracepipe {
namespace {

// Written once under g_calibrate, before any `local` read function is handed
// out; read-only afterwards.
TscCalibration g_tsc;
std::once_flag g_calibrate;
std::atomic<uint64_t> g_counter{0};

[[gnu::always_inline]] inline uint64_t read_clockid(clockid_t id) noexcept {
  timespec ts{};
  clock_gettime(id, &ts);  // vDSO: no system call for these ids on Linux >= 5.3
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

[[gnu::always_inline]] inline uint64_t read_tsc() noexcept {
#if TRACEPIPE_HAVE_TSC
  return buffers::read_tsc();
#else
  return read_clockid(CLOCK_MONOTONIC_RAW);
#endif
}

uint64_t clock_mono() noexcept { return read_clockid(CLOCK_MONOTONIC); }
uint64_t clock_mono_raw() noexcept { return read_clockid(CLOCK_MONOTONIC_RAW); }
uint64_t clock_boot() noexcept { return read_clockid(CLOCK_BOOTTIME); }
uint64_t clock_tai() noexcept { return read_clockid(CLOCK_TAI); }
uint64_t clock_counter() noexcept { return g_counter.fetch_add(1, std::memory_order_relaxed) + 1; }
uint64_t clock_uptime() noexcept { return read_clockid(CLOCK_MONOTONIC_COARSE) / 10'000'000u; }
uint64_t clock_x86_tsc() noexcept { return read_tsc(); }
uint64_t clock_local() noexcept { return tsc_to_ns(read_tsc()); }

bool cpu_has_invariant_tsc() {
#if TRACEPIPE_HAVE_TSC
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const auto has = [&](std::string_view flag) {
      const std::string padded = " " + std::string(flag);
      const auto pos = line.find(padded);
      return pos != std::string::npos &&
             (pos + padded.size() == line.size() || line[pos + padded.size()] == ' ');
    };
    return has("constant_tsc") && has("nonstop_tsc");
  }
#endif
  return false;
}

struct Pair {
  uint64_t tsc;
  uint64_t ns;
};

// One (tsc, mono_raw) pair, taken as the middle of the tightest of a few
// rdtsc / clock_gettime / rdtsc brackets.
Pair sample_pair() {
  Pair best{};
  uint64_t best_width = ~0ull;
  for (int i = 0; i < 7; ++i) {
    const uint64_t t1 = read_tsc();
    const uint64_t ns = read_clockid(CLOCK_MONOTONIC_RAW);
    const uint64_t t2 = read_tsc();
    if (t2 >= t1 && t2 - t1 < best_width) {
      best_width = t2 - t1;
      best = {t1 + (t2 - t1) / 2, ns};
    }
  }
  return best;
}

void calibrate() {
  g_tsc.invariant_tsc = cpu_has_invariant_tsc();
  if (!g_tsc.invariant_tsc) return;
  const Pair a = sample_pair();
  const timespec wait{0, 10'000'000};  // 10 ms: the two samples' brackets are a few ppm of it
  nanosleep(&wait, nullptr);
  const Pair b = sample_pair();
  if (b.ns <= a.ns || b.tsc <= a.tsc) {
    g_tsc.invariant_tsc = false;
    return;
  }
  const unsigned __int128 hz =
      static_cast<unsigned __int128>(b.tsc - a.tsc) * 1000000000u / (b.ns - a.ns);
  if (hz == 0) {
    g_tsc.invariant_tsc = false;
    return;
  }
  g_tsc.tsc_hz = static_cast<uint64_t>(hz);
  g_tsc.shift = buffers::TscScale::kShift;
  g_tsc.mult =
      static_cast<uint64_t>((static_cast<unsigned __int128>(1000000000u) << g_tsc.shift) / hz);
  g_tsc.base_tsc = b.tsc;
  g_tsc.base_ns = b.ns;
}

constexpr std::array<TraceClock, 10> kClocks{{
    {ClockId::local, "local", &clock_local, true},
    {ClockId::global, "global", &clock_mono, true},
    {ClockId::counter, "counter", &clock_counter, false},
    {ClockId::uptime, "uptime", &clock_uptime, false},
    {ClockId::perf, "perf", &clock_local, true},
    {ClockId::mono, "mono", &clock_mono, true},
    {ClockId::mono_raw, "mono_raw", &clock_mono_raw, true},
    {ClockId::boot, "boot", &clock_boot, true},
    {ClockId::tai, "tai", &clock_tai, true},
    {ClockId::x86_tsc, "x86-tsc", &clock_x86_tsc, false},
}};
static_assert(
    [] {
      for (size_t i = 0; i < kClocks.size(); ++i)
        if (static_cast<size_t>(kClocks[i].id) != i) return false;
      return true;
    }(),
    "kClocks is indexed by ClockId");

// Same as kClocks, with local/perf redirected to mono_raw when the TSC
// cannot be trusted.
constexpr TraceClock kLocalFallback{ClockId::local, "local", &clock_mono_raw, true};
constexpr TraceClock kPerfFallback{ClockId::perf, "perf", &clock_mono_raw, true};

}  // namespace

uint64_t tsc_to_ns(uint64_t tsc) noexcept {
  return buffers::scale_tsc({g_tsc.base_tsc, g_tsc.base_ns, g_tsc.mult}, tsc);
}

namespace detail {
std::optional<buffers::TscScale> inline_tsc_scale(ClockId id) {
  if (!buffers::kHaveTsc || (id != ClockId::local && id != ClockId::perf)) return std::nullopt;
  const TscCalibration& c = tsc_calibration();
  if (!c.invariant_tsc) return std::nullopt;  // local/perf read mono_raw then
  return buffers::TscScale{c.base_tsc, c.base_ns, c.mult};
}

buffers::FunctionClock ring_clock(ClockId id) {
  const ClockFn read = trace_clock(id).read;
  if (const auto scale = inline_tsc_scale(id)) return buffers::FunctionClock(read, *scale);
  return buffers::FunctionClock(read);
}
}  // namespace detail

const TscCalibration& tsc_calibration() {
  std::call_once(g_calibrate, calibrate);
  return g_tsc;
}

const TraceClock& trace_clock(ClockId id) {
  const auto& c = kClocks[static_cast<size_t>(id)];
  if (id == ClockId::local || id == ClockId::perf) {
    if (!tsc_calibration().invariant_tsc)
      return id == ClockId::local ? kLocalFallback : kPerfFallback;
  }
  return c;
}

std::optional<ClockId> parse_trace_clock(std::string_view name) noexcept {
  for (const auto& c : kClocks)
    if (c.name == name) return c.id;
  return std::nullopt;
}

std::string_view trace_clock_name(ClockId id) noexcept {
  return kClocks[static_cast<size_t>(id)].name;
}

std::span<const TraceClock> trace_clocks() { return kClocks; }

std::string trace_clock_list(ClockId selected) {
  std::string out;
  for (const auto& c : kClocks) {
    if (!out.empty()) out += ' ';
    if (c.id == selected) {
      out += '[';
      out += c.name;
      out += ']';
    } else {
      out += c.name;
    }
  }
  return out;
}

}  // namespace tracepipe
