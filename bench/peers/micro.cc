#include "tracepipe/bench/peers/micro.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "tracepipe/bench/peers/pinned_pool.h"

namespace tracepipe::peers {

std::string_view name(MicroCase c) noexcept {
  switch (c) {
    case MicroCase::disabled:
      return "disabled";
    case MicroCase::enabled:
      return "enabled";
    case MicroCase::reject_int:
      return "reject-int";
    case MicroCase::accept_int:
      return "accept-int";
    case MicroCase::reject_glob:
      return "reject-glob";
    case MicroCase::overwrite:
      return "overwrite";
  }
  return "?";
}

std::optional<MicroCase> parse_micro_case(std::string_view s) noexcept {
  for (MicroCase c : kMicroCases) {
    std::string_view n = name(c);
    if (s == n) return c;
    // Also accept '_' for '-'.
    if (s.size() == n.size() && std::equal(s.begin(), s.end(), n.begin(), [](char a, char b) {
          return a == b || (a == '_' && b == '-');
        }))
      return c;
  }
  return std::nullopt;
}

bool commits(MicroCase c) noexcept {
  return c == MicroCase::enabled || c == MicroCase::accept_int || c == MicroCase::overwrite;
}

tp_peer_event peer_event() noexcept {
  tp_peer_event e{};
  std::strncpy(e.prev_comm, "hackbench", sizeof e.prev_comm - 1);
  e.prev_prio = 120;
  e.prev_state = 1;  // TASK_INTERRUPTIBLE
  std::strncpy(e.next_comm, "swapper/0", sizeof e.next_comm - 1);
  e.next_pid = 0;
  e.next_prio = 120;
  return e;
}

namespace {
constexpr int kWarmupRounds = 2;
}  // namespace

uint64_t round_buffer_kb(uint64_t events) noexcept {
  const uint64_t kb = (events * 64 * 2 + 1023) / 1024;
  return std::max<uint64_t>(kb, 1024);
}

std::vector<MicroCell> run_micro(const MicroOptions& o, const std::vector<MicroSide*>& sides,
                                 const std::vector<int>& cpus, std::vector<std::string>& skipped,
                                 void (*progress)(const std::string&, void*), void* progress_ctx) {
  if (sides.empty()) throw std::invalid_argument("run_micro: no side");
  if (o.rounds == 0 || o.events == 0)
    throw std::invalid_argument("run_micro: rounds and events must be > 0");
  uint32_t max_threads = 0;
  for (uint32_t t : o.threads) {
    if (t == 0) throw std::invalid_argument("run_micro: a thread count is 0");
    if (t > cpus.size()) {
      skipped.push_back(fmt::format("{} threads: only {} CPU(s) allowed; each thread needs its own",
                                    t, cpus.size()));
      continue;
    }
    max_threads = std::max(max_threads, t);
  }
  std::vector<MicroCell> cells;
  if (max_threads == 0) return cells;
  PinnedPool pool({cpus.begin(), cpus.begin() + max_threads});

  for (MicroCase kase : o.cases) {
    for (uint32_t threads : o.threads) {
      if (threads > max_threads) continue;
      MicroCell cell;
      cell.kase = kase;
      cell.threads = threads;
      cell.events = kase == MicroCase::disabled ? o.events * o.disabled_scale : o.events;
      MicroSetup setup;
      setup.kase = kase;
      setup.threads = threads;
      setup.events = cell.events;
      setup.rounds = o.rounds;
      setup.glob = o.glob;
      setup.buffer_kb = o.buffer_kb != 0 ? o.buffer_kb : round_buffer_kb(o.events);
      setup.overwrite_kb = o.overwrite_kb;
      if (progress != nullptr) progress(fmt::format("{} x{}", name(kase), threads), progress_ctx);

      std::vector<bool> live(sides.size(), false);   // still measuring
      std::vector<bool> begun(sides.size(), false);  // begin_case succeeded: end_case is due
      cell.sides.resize(sides.size());
      for (size_t s = 0; s < sides.size(); ++s) {
        cell.sides[s].side = std::string(sides[s]->name());
        try {
          sides[s]->begin_case(setup);
          live[s] = begun[s] = true;
        } catch (const std::exception& e) {
          cell.sides[s].error = e.what();
        }
      }
      // One round of side s: (ns per event by the chosen timing, in wall time).
      auto run_round = [&](size_t s, uint64_t n) -> std::pair<double, double> {
        MicroSide* side = sides[s];
        const std::vector<PinnedPool::Elapsed> el =
            pool.run(threads, [&](uint32_t t) { side->emit(t, n); });
        side->after_round();
        return {PinnedPool::mean_per(el, n, o.timing == Timing::cpu),
                PinnedPool::mean_per(el, n, false)};
      };
      // Untimed warm-up, whole rounds: threads register, and every page of a
      // one-round buffer is written once, so no timed round pays a first
      // touch (a tenth of a round left most of it to the first two).
      for (size_t s = 0; s < sides.size(); ++s) {
        if (!live[s]) continue;
        try {
          for (int w = 0; w < kWarmupRounds; ++w) (void)run_round(s, cell.events);
        } catch (const std::exception& e) {
          cell.sides[s].error = e.what();
          live[s] = false;
        }
      }
      for (uint32_t r = 0; r < o.rounds; ++r) {
        for (size_t s = 0; s < sides.size(); ++s) {  // A B A B ...
          if (!live[s]) continue;
          try {
            const auto [ns, wall] = run_round(s, cell.events);
            cell.sides[s].ns.push_back(ns);
            cell.sides[s].wall_ns.push_back(wall);
          } catch (const std::exception& e) {
            cell.sides[s].error = e.what();
            live[s] = false;
          }
        }
      }
      for (size_t s = 0; s < sides.size(); ++s) {
        SideResult& res = cell.sides[s];
        res.summary = bench::summarize(res.ns);
        if (begun[s]) {
          try {
            res.counts = sides[s]->end_case();
          } catch (const std::exception& e) {
            if (res.error.empty()) res.error = e.what();
          }
        }
      }
      cells.push_back(std::move(cell));
    }
  }
  return cells;
}

}  // namespace tracepipe::peers
