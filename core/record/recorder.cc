#include "tracepipe/core/record/recorder.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <system_error>

#include "tracepipe/buffers/subbuf_reader.h"
#include "tracepipe/core/events/event_format.h"
#include "tracepipe/core/instance/instance.h"
#include "tracepipe/core/record/convert_sink.h"
#include "tracepipe/core/record/net_sink.h"
#include "tracepipe/core/record/pacing.h"
#include "tracepipe/core/record/page_batch.h"
#include "tracepipe/core/record/retired_files.h"
#ifdef TRACEPIPE_TEST_HOOKS
#include "tracepipe/core/record/testing/hooks.h"
#endif
#include "tracepipe/core/record/trace_file.h"
#include "tracepipe/core/sideband/sideband_events.h"
#include "tracepipe/core/sideband/sideband_state.h"
#include "tracepipe/core/tracedat/cpu_stat_text.h"
#include "tracepipe/core/tracedat/tracedat_v7_writer.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"

namespace tracepipe::record {

#ifdef TRACEPIPE_TEST_HOOKS
std::atomic<const std::function<void()>*> pass_test_hook{nullptr};
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kMinSleepNs = 20'000;
// An append slower than a fixed bound, or than a copy at a rate far below
// any page cache's, waited for its output rather than copied.
constexpr uint64_t kSlowWriteNs = 1'000'000;
constexpr uint64_t kSlowCopyNsPerByte = 4;

// A loss counted while the tail was at or before sub-buffer `tail_seq`:
// marked on the first page written from a later sub-buffer.
struct PendingMark {
  uint64_t tail_seq;
  uint64_t count;
};

using buffers::LossCounts;

struct CpuState {
  CpuState(const buffers::RingBufferBase& rb, uint32_t cpu, uint32_t page_size,
           uint32_t batch_pages)
      : rd(rb, cpu), batch(page_size, batch_pages) {
    pending.reserve(kMaxPending);
  }
  static constexpr size_t kMaxPending = 64;
  buffers::SubbufReader rd;
  PageBatch batch;
  LossCounts seen;  // the ring's counters as last noted
  std::vector<PendingMark> pending;
  uint64_t marker_records = 0;  // lost_at_end records among the batch's finished records
  Clock::time_point last_flush = Clock::now();
  std::atomic<uint64_t> records{0}, pages{0}, dropped{0}, unwritten{0}, too_big{0}, unmarked{0};
  // dropped by cause, since the recording started (RecorderCpuStats)
  std::atomic<uint64_t> overrun{0}, lost_full{0}, lost_busy{0}, commit_overrun{0},
      lost_set_aside{0}, lost_too_big{0};
};

uint64_t thread_cpu_ns() noexcept {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

// Only the recorder thread stores; stats() reads from any thread.
void raise_max(std::atomic<uint64_t>& m, uint64_t v) noexcept {
  if (v > m.load(std::memory_order_relaxed)) m.store(v, std::memory_order_relaxed);
}

// Blocking mode's policy (RingBufferBase::set_block_policy): a writer may
// wait unless its emit interrupted another emit of its own thread (nesting
// > 1: a signal handler, or the nested emit of a staged one) or runs in a
// SignalScope: the record it interrupted may be the one the recorder waits
// for. A thread with no context writes outside any emit (it may wait).
bool writer_may_block() noexcept {
  const ThreadContext* c = tracepipe::detail::tl_context;
  return c == nullptr || (c->nesting() <= 1 && c->in_signal.load(std::memory_order_relaxed) == 0);
}

// tracepipe:lost_at_end: closes a CPU's data when events were lost after
// its last record, so that the mark has a record to stand before
// (libtraceevent's kbuffer_missed_events reports a page's loss only on its
// first record; a page without records shows nothing). An ID above the
// declared range, which kernel events do not reach.
constexpr uint16_t kLostAtEndId = 65534;
constexpr uint32_t kLostAtEndSize = 16;  // common header (8), u64 lost

const EventFormat& lost_at_end_format() {
  static const EventFormat f = parse_event_format(
      "name: lost_at_end\nID: 65534\nformat:\n"
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
      "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:u64 lost;\toffset:8;\tsize:8;\tsigned:0;\n\n"
      "print fmt: \"lost=%llu\", REC->lost\n",
      "tracepipe");
  return f;
}

// The recorder thread pins itself with pthread_setaffinity_np, and a failure
// there has no one to tell: the recording would run unpinned while its
// options say otherwise. So a CPU the creating thread (whose affinity the
// recorder thread inherits) may not run on is refused here, as the config's
// [recording] cpu is (core/config/config.cc).
void check_pin_cpu(int cpu) {
  if (cpu < 0) return;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  if (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed))
    throw std::invalid_argument(fmt::format(
        "recorder: cpu {}: not a CPU this thread may run on (see taskset -p, nproc); -1 pins "
        "nothing",
        cpu));
}

}  // namespace

struct Recorder::State {
  State(Instance& i, RecorderOptions o) : inst(i), opt(std::move(o)), sb_ids(65536, 0) {}

  Instance& inst;
  RecorderOptions opt;
  std::vector<std::unique_ptr<CpuState>> cpus;
  std::unique_ptr<TraceSink> file;          // a TraceFile, or the NetSink below
  NetSink* net = nullptr;                   // when recording to a collector
  std::optional<detail::Compression> v7;    // file_version 7
  std::deque<std::filesystem::path> files;  // on disk, oldest first; back() is `file`'s
  RetiredFiles retired;                     // files max_files dropped, still being freed
  uint64_t file_seq = 0;
  std::atomic<uint64_t> files_started{0}, files_removed{0};
  std::unique_ptr<SidebandState> sideband;
  std::vector<uint8_t> sb_ids;  // common_type -> is a sideband event
  uint32_t registry_seen = 0;
  uint32_t formats_seen = 0;  // registry size in the converting sink's headers
  size_t cmdlines_seen = 0;
  uint64_t sideband_seen = 0;
  uint32_t page_size = 4096;
  std::atomic<bool> stopping{false};
  std::atomic<bool> stop_requested{false};  // request_stop(): tracing_off first, on_stopped after
  std::atomic<bool> finished{false};        // the thread finalized the output
  bool lost_at_end = false;                 // tracepipe:lost_at_end's ID is free in the registry
  std::string output_desc;                  // RecorderStats::output (under mu)
  std::atomic<uint64_t> triggers{0};
  uint64_t triggers_done = 0;
  bool dead = false;               // the output failed: consume and count only
  bool stall_in_progress = false;  // the last append was slow: time the next one's CPU too
  // The output takes data: 0 not yet (connecting), 1 yes, -1 failed.
  int ready = 0;
  mutable std::mutex ready_mu;
  mutable std::condition_variable ready_cv;
  void set_ready(int v) {
    {
      std::lock_guard lk(ready_mu);
      ready = v;
    }
    ready_cv.notify_all();
  }
  mutable std::mutex mu;  // error text
  std::optional<std::string> error;
  std::atomic<uint64_t> passes{0}, header_rewrites{0}, peak_unread{0}, longest_gap_ns{0},
      longest_pass_ns{0}, longest_wake_late_ns{0}, pass_ns{0}, write_ns{0}, write_wait_ns{0},
      longest_write_wait_ns{0};
  std::atomic<bool> realtime{false};
  std::atomic<uint64_t> cpu_ns_final{0};   // the thread's CPU time when it ended
  std::atomic<uint64_t> unacked_bytes{0};  // a collector's, at the end (NetSink::unacked_bytes)
  Clock::time_point last_check = Clock::now();

  // The file's metadata; with `stats`, the per-CPU statistics too (CPUSTAT
  // options, written when a file is finished).
  TraceDatWriter meta(bool stats = false) const {
    TraceDatWriterConfig cfg;
    cfg.cpus = inst.cpus();
    cfg.page_size = page_size;
    cfg.clock = std::string(trace_clock_name(inst.options().clock));
    TraceDatWriter w(cfg);
    for (const EventDesc* d : inst.registry().events()) w.add_format(d->format());
    if (lost_at_end) w.add_format(lost_at_end_format());
    for (const Cmdline& c : inst.cmdlines()) w.set_cmdline(c.pid, c.comm);
    if (sideband) sideband->apply_cmdlines(w);
    if (stats) w.set_cpu_stats(cpu_stat_texts());
    return w;
  }

  // One CPUSTAT text per CPU: trace-cmd's "CPU: N" line, then the kernel's
  // per_cpu/cpuN/stats lines over this recording (entries and bytes: what is
  // still in the ring; read events: what the recorder consumed), then
  // tracepipe's own (written, unwritten).
  std::vector<std::string> cpu_stat_texts() const {
    const TraceClock& clk = trace_clock(inst.options().clock);
    const uint64_t now = clk.read();
    std::vector<std::string> out;
    for (uint32_t cpu = 0; cpu < cpus.size(); ++cpu) {
      const CpuState& c = *cpus[cpu];
      const buffers::CpuStats rs = inst.ring().stats(cpu);
      const auto ld = [](const std::atomic<uint64_t>& a) {
        return a.load(std::memory_order_relaxed);
      };
      const uint64_t lost =
          ld(c.lost_full) + ld(c.lost_busy) + ld(c.lost_set_aside) + ld(c.lost_too_big);
      const uint64_t written = ld(c.records), unwritten = ld(c.unwritten);
      const CpuStatLines k{.entries = rs.entries,
                           .overrun = ld(c.overrun),
                           .commit_overrun = ld(c.commit_overrun),
                           .bytes = rs.bytes,
                           .oldest_ts = rs.oldest_ts,
                           .now_ts = now,
                           .dropped = lost,
                           .read = written + unwritten + ld(c.too_big)};
      out.push_back(cpu_stat_text(cpu, k, clk.in_nanoseconds) +
                    fmt::format("written events: {}\nunwritten events: {}\n", written, unwritten));
    }
    return out;
  }

  void refresh_sideband_ids() {
    const uint32_t n = inst.registry().size();
    if (n == registry_seen) return;
    registry_seen = n;
    bool any = false;
    for (const EventDesc* d : inst.registry().system_events(sideband::kSystem)) {
      sb_ids[d->id()] = 1;
      any = true;
    }
    if (any && (!sideband || sideband->observed() == 0))
      sideband = std::make_unique<SidebandState>(inst.registry());
  }

  void fail(int err, std::string_view what) {
    if (dead) return;
    dead = true;
    std::string cause = std::strerror(err);
    if (net && !net->cause().empty()) cause = net->cause();  // e.g. the resolver's own words
    if (err == ENOENT && !net) cause = "the output file was removed";
    if (err == ECONNRESET && net) cause = "the collector closed the connection (" + cause + ")";
    if (err == ETIMEDOUT && net)
      cause = fmt::format("no progress for {} ms ({})", opt.collector_timeout.count(), cause);
    std::string msg = fmt::format("recording to {}: {}: {}",
                                  file ? file->describe() : opt.output.string(), what, cause);
    {
      std::lock_guard lk(mu);
      error = msg;
    }
    if (opt.on_error) {
      try {
        opt.on_error(msg);
      } catch (...) {
      }
    } else {
      std::fprintf(stderr, "tracepipe: %s\n", msg.c_str());
    }
  }

  // Writes cpu's finished pages (or counts them unwritten).
  void flush(uint32_t cpu) {
    CpuState& c = *cpus[cpu];
    const uint32_t n = c.batch.finished_pages();
    if (n == 0) return;
    const uint64_t recs = c.batch.finished_records() - c.marker_records;
    const uint64_t marked = c.batch.finished_lost();
    c.marker_records = 0;
    if (!dead && opt.max_file_bytes != 0 && file->total_bytes() != 0 &&
        file->total_bytes() + c.batch.finished().size() > opt.max_file_bytes)
      rotate();
    // A converting sink decodes the pages with the headers it has: events
    // registered since need theirs first. (Not maybe_rewrite_headers: a
    // drain in progress holds the sideband state it may replace.)
    if (!dead && opt.format != OutputFormat::tracedat && inst.registry().size() != formats_seen) {
      formats_seen = inst.registry().size();
      if (const int err = file->rewrite_headers(meta()); err != 0) fail(err, "writing headers");
      header_rewrites.fetch_add(1, std::memory_order_relaxed);
    }
    if (!dead) {
      const int err = timed_append(cpu, c.batch.finished());
      if (err == 0) {
        c.records.fetch_add(recs, std::memory_order_relaxed);
        c.pages.fetch_add(n, std::memory_order_relaxed);
      } else {
        fail(err, err == EFBIG ? "CPU region full" : net ? net->stage() : "writing");
      }
    }
    if (dead) {
      c.unwritten.fetch_add(recs, std::memory_order_relaxed);
      c.unmarked.fetch_add(marked, std::memory_order_relaxed);  // their marks went with the pages
    }
    c.batch.take_finished();
  }

  // The output's append, timed: its wall time and, of that, the time the
  // thread waited for the output (RecorderStats::write_*), which tells a
  // loss the output caused from one the recorder's own work did. The wall
  // clock (vDSO) on every append; the thread's CPU clock, a system call
  // that would cost every batch more than its wall-clock reads, only while
  // a stall is in progress (the previous append was slow). An append timed
  // by the wall clock alone waited for what exceeds a slow copy of its
  // bytes (kSlowCopyNsPerByte, at least kSlowWriteNs): a page-cache copy
  // never takes that long, a blocked send or a throttled pwrite does.
  int timed_append(uint32_t cpu, std::span<const std::byte> pages) {
    const bool measure = stall_in_progress;
    const auto t0 = Clock::now();
    const uint64_t cpu0 = measure ? thread_cpu_ns() : 0;
    const int err = file->append(cpu, pages);
    const uint64_t cpu_in = measure ? thread_cpu_ns() - cpu0 : 0;
    const auto wall = static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - t0).count());
    const uint64_t allowance = std::max<uint64_t>(kSlowWriteNs, pages.size() * kSlowCopyNsPerByte);
    const uint64_t busy = measure ? cpu_in : allowance;
    const uint64_t wait = wall > busy ? wall - busy : 0;
    stall_in_progress = wall > allowance;
    write_ns.fetch_add(wall, std::memory_order_relaxed);
    write_wait_ns.fetch_add(wait, std::memory_order_relaxed);
    raise_max(longest_write_wait_ns, wait);
    return err;
  }

  // The path of file number `seq` (rotation): OUT with ".seq" before the extension.
  std::filesystem::path path_of(uint64_t seq) const {
    if (opt.max_file_bytes == 0) return opt.output;
    std::filesystem::path p = opt.output;
    const std::string ext = p.extension().string();
    p.replace_extension();
    p += "." + std::to_string(seq) + ext;
    return p;
  }

  // What trace-cmd record -N sends before the data: a version 6 file up to
  // its options (the collector writes "flyrecord" and the CPU table), or
  // version 7 sections.
  std::vector<std::byte> net_headers(const TraceDatWriter& m) const {
    if (v7) return tracedat_v7_headers(m, *v7);  // up to its options; the collector adds the rest
    size_t table = 0;
    std::vector<std::byte> h =
        m.header_bytes(std::vector<TraceDatWriter::CpuExtent>(m.cpus()), &table);
    h.resize(table - 10);  // "flyrecord\0"
    return h;
  }

  void open_next() {
    ++file_seq;
    TraceFileOptions fo;
    fo.path = path_of(file_seq);
    fo.cpu_region = opt.cpu_region;
    fo.v7 = v7;
    if (opt.format == OutputFormat::tracedat) {
      file = std::make_unique<TraceFile>(fo, meta());
    } else {
      formats_seen = inst.registry().size();
      file = std::make_unique<ConvertSink>(
          opt.format == OutputFormat::ctf ? convert::Format::ctf : convert::Format::perfetto,
          fo.path, meta(), trace_clock(inst.options().clock).read());
    }
    {
      std::lock_guard lk(mu);
      output_desc = fo.path.string();
    }
    files.push_back(fo.path);
    files_started.fetch_add(1, std::memory_order_relaxed);
    while (opt.max_files != 0 && files.size() > opt.max_files) {
      (void)retired.retire(files.front());
      files.pop_front();
      files_removed.fetch_add(1, std::memory_order_relaxed);
    }
    // A retired file gives its blocks back over the next passes. Where the
    // new file could not grow to max_file_bytes beside it, free it now.
    struct statvfs fs {};
    if (retired.queued() != 0 &&
        (::statvfs(fo.path.c_str(), &fs) != 0 ||
         static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize < opt.max_file_bytes))
      retired.finish();
  }

  // Finishes the current file (a complete trace.dat) and starts the next.
  void rotate() {
    if (const int err = file->finalize(meta(true)); err != 0) {
      fail(err, "finishing " + file->describe());
      return;
    }
    try {
      open_next();
    } catch (const std::system_error& e) {
      fail(e.code().value(), "starting the next file");
    }
  }

  // Looks at cpu's loss counters: overrun is marked before the next record,
  // the other losses after the tail's sub-buffer as seen now.
  void note_losses(CpuState& c) {
    const LossCounts now = c.rd.losses();
    const uint64_t over = now.overrun - c.seen.overrun;
    if (over != 0) {
      c.batch.mark_lost(over);
      c.dropped.fetch_add(over, std::memory_order_relaxed);
      c.overrun.fetch_add(over, std::memory_order_relaxed);
    }
    const uint64_t n = now.ring_lost() - c.seen.ring_lost();
    if (n != 0) {
      const uint64_t t =
          c.rd.tail_seq();  // after the counters: every loss counted happened at or before t
      c.dropped.fetch_add(n, std::memory_order_relaxed);
      c.lost_full.fetch_add(now.lost_full - c.seen.lost_full, std::memory_order_relaxed);
      c.lost_busy.fetch_add(now.lost_busy - c.seen.lost_busy, std::memory_order_relaxed);
      c.commit_overrun.fetch_add(now.commit_overrun - c.seen.commit_overrun,
                                 std::memory_order_relaxed);
      c.lost_set_aside.fetch_add(now.lost_set_aside - c.seen.lost_set_aside,
                                 std::memory_order_relaxed);
      c.lost_too_big.fetch_add(now.lost_too_big - c.seen.lost_too_big, std::memory_order_relaxed);
      if (c.pending.size() < CpuState::kMaxPending)
        c.pending.push_back({t, n});
      else
        c.pending.back() = {t, c.pending.back().count + n};
    }
    c.seen = now;
  }

  // The end of cpu's data: losses noted after its last record (no record
  // follows them) are marked on a tracepipe:lost_at_end record.
  void mark_end(uint32_t cpu) {
    CpuState& c = *cpus[cpu];
    note_losses(c);
    uint64_t n = 0;
    for (const PendingMark& m : c.pending) n += m.count;
    c.pending.clear();
    c.batch.mark_lost(n);
    if (!c.batch.mark_waiting() || !lost_at_end)
      return;  // (without the format: an empty flagged page)
    if (c.batch.room() < 2) flush(cpu);
    std::byte rec[kLostAtEndSize] = {};
    const uint16_t id = kLostAtEndId;
    const int32_t pid = ::getpid();
    const uint64_t lost = c.batch.pending_lost();
    std::memcpy(rec, &id, 2);
    std::memcpy(rec + 4, &pid, 4);
    std::memcpy(rec + 8, &lost, 8);
    c.batch.record(trace_clock(inst.options().clock).read(), rec);
    ++c.marker_records;
  }

  // Applies the pending marks whose sub-buffer the reader has passed.
  void apply_marks(CpuState& c) {
    if (c.pending.empty()) return;
    const uint64_t P = c.rd.nr_subbufs();
    const uint64_t M = (buffers::detail::kLapMask + 1) * P;
    const uint64_t r = c.rd.read_seq();
    size_t k = 0;
    uint64_t n = 0;
    while (k < c.pending.size()) {
      const uint64_t d = (r + M - c.pending[k].tail_seq) % M;  // > 0: the reader is past it
      if (d == 0 || d > M / 2) break;
      n += c.pending[k].count;
      ++k;
    }
    if (k == 0) return;
    c.pending.erase(c.pending.begin(), c.pending.begin() + static_cast<std::ptrdiff_t>(k));
    c.batch.mark_lost(n);
  }

  // What consume() hands each record to: the page batch, and with
  // sideband events registered (sb), their observer.
  struct Sink {
    PageBatch& b;
    const uint8_t* sb_ids;
    SidebandState* sb;
    [[gnu::always_inline]] void record(uint64_t ts, std::span<const std::byte> p) noexcept {
      b.record(ts, p);
      if (sb != nullptr && p.size() >= 2) [[likely]] {
        uint16_t id;
        std::memcpy(&id, p.data(), 2);
        if (sb_ids[id] != 0) [[unlikely]] {
          try {
            (void)sb->observe(p);
          } catch (...) {
          }
        }
      }
    }
    void rollback() noexcept { b.rollback(); }
  };

  // Drains cpu's closed sub-buffers (all committed records with `all`).
  // Returns the sub-buffers taken.
  uint64_t drain(uint32_t cpu, bool all, bool final = false) {
    CpuState& c = *cpus[cpu];
    // Without sideband events (none registered: sb_ids all 0) the records
    // go to the batch alone, with no look-up per record.
    Sink sink{c.batch, sb_ids.data(), sideband.get()};
    Sink plain{c.batch, sb_ids.data(), nullptr};
    const bool observe = sink.sb != nullptr;
    // Overwrite: a recycle ahead of the reader counts overrun, marked before
    // the next record read, so each sub-buffer looks. Drop-newest: a loss is
    // marked after the tail's sub-buffer as the look saw it, so one look per
    // drain marks no loss early (at most the drain's length late), and the
    // counters' line, which dropping writers keep taking, is read once.
    const bool each = inst.ring().mode() == buffers::OverflowMode::overwrite;
    uint64_t taken = 0;
    for (uint64_t guard = 0; guard < 4ull * c.rd.nr_subbufs() + 16; ++guard) {
      if (guard == 0 || each) note_losses(c);
      apply_marks(c);
      if (c.batch.room() < 2) flush(cpu);
      c.batch.checkpoint();
      const buffers::Taken t = observe ? c.rd.consume(sink, all) : c.rd.consume(plain, all);
      if (t == buffers::Taken::none) break;
      ++taken;
      inst.ring().wake_blocked(
          cpu);  // blocking mode: a writer may wait for the sub-buffer just freed
    }
    const uint64_t tb = c.batch.too_big();
    if (tb != c.too_big.load(std::memory_order_relaxed)) {
      c.dropped.fetch_add(tb - c.too_big.load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
      c.too_big.store(tb, std::memory_order_relaxed);
    }
    if (final) mark_end(cpu);
    if (all) {
      c.batch.close_open(final);
      c.last_flush = Clock::now();
    }
    flush(cpu);
    return taken;
  }

  void maybe_rewrite_headers(bool force) {
    refresh_sideband_ids();
    if (dead || net) return;  // a collector got its headers at the start
    const size_t cmd = inst.cmdlines().size();
    const uint64_t sbn = sideband ? sideband->observed() : 0;
    if (!force && cmd == cmdlines_seen && sbn == sideband_seen &&
        inst.registry().size() == registry_seen)
      return;
    cmdlines_seen = cmd;
    sideband_seen = sbn;
    if (const int err = file->rewrite_headers(meta()); err != 0 && err != EFBIG)
      fail(err, "writing headers");
    header_rewrites.fetch_add(1, std::memory_order_relaxed);
  }

  // The recorder thread's own settings: pinning, timer slack, SCHED_FIFO, name.
  void set_up_thread() {
    if (opt.cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(opt.cpu, &set);
      (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (opt.realtime_priority > 0) {
      sched_param sp{};
      sp.sched_priority = std::clamp(opt.realtime_priority, 1, 99);
      realtime.store(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0,
                     std::memory_order_relaxed);
    }
    (void)pthread_setname_np(pthread_self(), "tp-recorder");  // its own line in top and perf
  }

  // A collector: the handshake and the headers as they are now (a stream
  // cannot take later ones).
  void connect_collector() {
    if (!net) return;
    std::vector<std::byte> h;
    try {
      h = net_headers(meta());
    } catch (const std::exception&) {
    }
    if (h.empty())
      fail(ENOMEM, "preparing the headers");
    else if (const int err = net->connect(h); err != 0)
      fail(err, net->stage());
    set_ready(dead ? -1 : 1);
  }

  // How the loop paces itself. Writers never wake the recorder (no system
  // call on the write path), and a wake-up costs the recorder more CPU than
  // the look it makes (the kernel's timer and scheduler work, dearer on a
  // VM), so with few records its cost is the number of looks: the sleep is as long as the rings
  // allow, from what a look can read without the writers' help (each CPU's tail and its unread
  // sub-buffers):
  //   aim:   a CPU is drained once drain_at (half the watermark) of its
  //          sub-buffers are full; the next look is when the first CPU is
  //          expected to get there at its rate over the last interval, so a
  //          look that drains takes a batch of about drain_at sub-buffers.
  //   guard: never longer than a CPU's free sub-buffers last at 4x its
  //          rate (the look comes before a rate that jumps that much can
  //          overflow the ring; it binds with a large watermark_percent).
  //   quiet: with no rate (the rings are quiet or slower than a sub-buffer
  //          per interval), max_poll_interval: how long a burst from quiet
  //          goes unseen (trace-cmd record's default sleep, 1 ms).
  //   full:  a CPU found full (it lost records, or blocking mode's
  //          writers wait) is looked at again after the shortest sleep (its
  //          tail stood still while the ring was full, so its rate reads low).
  // A CPU whose rate is known is drained from 3/4 of drain_at: a look aimed
  // at drain_at that finds a little less (the rate dipped) drains rather
  // than wake again soon after.
  // Aim, guard and quiet per CPU: pacing::next_look_ns (core/record/pacing.h).
  struct Pacing {
    uint64_t want = 1, drain_at = 1, max_sleep = kMinSleepNs, lap = 1, usable = 1;
    std::vector<uint64_t> tail_prev;
    std::vector<double> rate;  // per CPU: sub-buffers closed per ns over the last interval
    uint64_t dt = 0;           // ns since the previous look
    uint64_t next_ns = 0;      // the sleep the last look asked for
    Clock::time_point prev = Clock::now();
  };
  Pacing pacing() const {
    Pacing p;
    const uint64_t P = cpus[0]->rd.nr_subbufs();
    p.usable = std::max<uint64_t>(1, P - 1);
    p.want = std::max<uint64_t>(1, (uint64_t{opt.watermark_percent} * (P - 1) + 99) / 100);
    p.drain_at = std::max<uint64_t>(1, p.want / 2);
    p.max_sleep = std::max<uint64_t>(
        kMinSleepNs,
        static_cast<uint64_t>(std::chrono::nanoseconds(opt.max_poll_interval).count()));
    p.lap = (buffers::detail::kLapMask + 1) * P;
    for (const auto& c : cpus) p.tail_prev.push_back(c->rd.tail_seq());
    p.rate.assign(cpus.size(), 0.0);
    return p;
  }

  // One look at the buffers: drains the CPUs that reached the watermark (or
  // whose flush interval passed, or all on a trigger), and sets p.next_ns,
  // the sleep until the next look (see Pacing).
  void look(Pacing& p, Clock::time_point now) {
    const uint32_t n = static_cast<uint32_t>(cpus.size());
    const uint64_t trig = triggers.load(std::memory_order_acquire);
    const bool triggered = trig != triggers_done;
    for (uint32_t cpu = 0; cpu < n; ++cpu) {
      const uint64_t t = cpus[cpu]->rd.tail_seq();
      const uint64_t moved = (t + p.lap - p.tail_prev[cpu]) % p.lap;
      p.tail_prev[cpu] = t;
      p.rate[cpu] = p.dt != 0 ? static_cast<double>(moved) / static_cast<double>(p.dt) : 0.0;
    }
    p.next_ns = p.max_sleep;
    if (opt.mode == RecordMode::flight_recorder) {
      if (triggered) {
        for (uint32_t cpu = 0; cpu < n; ++cpu) (void)drain(cpu, true);
        triggers_done = trig;
      }
      return;
    }
    uint64_t next = p.max_sleep;
    for (uint32_t cpu = 0; cpu < n; ++cpu) {
      CpuState& c = *cpus[cpu];
      uint64_t full = c.rd.closed_unread();
      if (full > peak_unread.load(std::memory_order_relaxed))
        peak_unread.store(full, std::memory_order_relaxed);
      const double r = p.rate[cpu];
      const uint64_t at = r > 0 ? std::max<uint64_t>(1, p.drain_at - p.drain_at / 4) : p.drain_at;
      const bool timed = triggered || now - c.last_flush >= opt.flush_interval;
      if (full >= at || timed) {
        const uint64_t dropped = c.dropped.load(std::memory_order_relaxed);
        const bool was_full = full + 1 >= p.usable;
        (void)drain(cpu, timed);
        // The ring filled before this look (it lost records, or blocking
        // mode's writers waited): its tail stood still meanwhile, so the
        // rate read from it is too low. Look again soon, with the rate of a
        // ring that has room.
        if (was_full || c.dropped.load(std::memory_order_relaxed) != dropped) next = 0;
        full = c.rd.closed_unread();
      }
      next = std::min(next, pacing::next_look_ns(r, full, p.drain_at, p.usable, p.max_sleep));
    }
    p.next_ns = next;
    triggers_done = trig;
  }

  // Every 200 ms: is the output still there, have names been learnt.
  void check_now_and_then(Clock::time_point now) {
    if (now - last_check < std::chrono::milliseconds(200)) return;
    last_check = now;
    if (!dead) {
      if (const int err = file->check_present(); err != 0)
        fail(err, net ? "checking the connection" : "checking the output");
    }
    maybe_rewrite_headers(false);
  }

  // Sleeps until the next look (p.next_ns, see Pacing), and notes how late it woke.
  void sleep_until_next(const Pacing& p, Clock::time_point now) {
    const uint64_t cap =
        static_cast<uint64_t>(std::chrono::nanoseconds(opt.flush_interval).count());
    const uint64_t sleep_ns =
        std::clamp<uint64_t>(std::min(p.next_ns, cap), kMinSleepNs, p.max_sleep);
    const timespec ts{static_cast<time_t>(sleep_ns / 1'000'000'000),
                      static_cast<long>(sleep_ns % 1'000'000'000)};
    const auto slept_at = Clock::now();
    const auto pass = static_cast<uint64_t>(std::chrono::nanoseconds(slept_at - now).count());
    raise_max(longest_pass_ns, pass);
    pass_ns.fetch_add(pass, std::memory_order_relaxed);
    (void)clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, nullptr);
    const auto slept =
        static_cast<uint64_t>(std::chrono::nanoseconds(Clock::now() - slept_at).count());
    if (slept > sleep_ns) raise_max(longest_wake_late_ns, slept - sleep_ns);
  }

  // The end: everything committed now is drained (after tracing_off when
  // asked to stop by request_stop()), the output finalized with the
  // statistics. Also after a fault: the compaction may fail, the truncation
  // and the headers (in preallocated space) still make the file what was
  // written.
  void finish() {
    const bool async = stop_requested.load(std::memory_order_acquire);
    if (async) inst.set_tracing_on_from_writer(false);
    for (uint32_t cpu = 0; cpu < cpus.size(); ++cpu) (void)drain(cpu, true, true);
    refresh_sideband_ids();
    try {
      if (const int err = file->finalize(meta(true)); err != 0) {
        const auto* tf = dynamic_cast<const TraceFile*>(file.get());
        fail(err, net                   ? net->stage()
                  : tf && tf->kept_v6() ? "rewriting it as version 7 (it is kept, complete, as "
                                          "version 6)"
                                        : "finishing the file");
      }
    } catch (const std::exception&) {
      fail(ENOMEM, "finishing the file");
    }
    if (net) unacked_bytes.store(net->unacked_bytes(), std::memory_order_relaxed);
    file.reset();
    retired.finish();
    net = nullptr;
    cpu_ns_final.store(thread_cpu_ns());
    finished.store(true, std::memory_order_release);
    if (async && opt.on_stopped) {
      try {
        opt.on_stopped();
      } catch (...) {
      }
    }
  }

  void run() {
    set_up_thread();
    connect_collector();
    Pacing p = pacing();
    while (!stopping.load(std::memory_order_acquire)) {
      passes.fetch_add(1, std::memory_order_relaxed);
#ifdef TRACEPIPE_TEST_HOOKS
      if (const auto* hook = pass_test_hook.load(std::memory_order_acquire)) (*hook)();
#endif
      const auto now = Clock::now();
      p.dt = static_cast<uint64_t>(std::chrono::nanoseconds(now - p.prev).count());
      raise_max(longest_gap_ns, p.dt);
      p.prev = now;
      look(p, now);
      retired.step();
      check_now_and_then(now);
      sleep_until_next(p, now);
    }
    finish();
  }
};

Recorder::Recorder(Instance& instance, RecorderOptions options)
    : st_(std::make_unique<State>(instance, std::move(options))) {
  State& s = *st_;
  if (s.opt.batch_pages < 3)
    throw std::invalid_argument("recorder: batch_pages must be at least 3");
  check_pin_cpu(s.opt.cpu);
  if (s.opt.mode == RecordMode::flight_recorder &&
      instance.ring().mode() != buffers::OverflowMode::overwrite)
    throw std::invalid_argument(
        "recorder: flight_recorder needs an overwrite buffer (mode = \"overwrite\")");
  if (s.opt.output.empty() && s.opt.collector.empty())
    throw std::invalid_argument("recorder: no output file or collector");
  if (!s.opt.output.empty() && !s.opt.collector.empty())
    throw std::invalid_argument("recorder: an output file and a collector (choose one)");
  std::optional<CollectorAddress> addr;
  if (!s.opt.collector.empty()) {
    addr = parse_collector(s.opt.collector);
    if (!addr)
      throw std::invalid_argument("recorder: collector '" + s.opt.collector + "' is not HOST:PORT");
    if (s.opt.max_file_bytes != 0)
      throw std::invalid_argument("recorder: rotation (max_file_bytes) needs an output file");
  }
  if (s.opt.format != OutputFormat::tracedat) {
    const std::string_view f = output_format_name(s.opt.format);
    if (!s.opt.collector.empty())
      throw std::invalid_argument(fmt::format(
          "recorder: format {}: a collector (trace-cmd listen) takes trace.dat only", f));
    if (s.opt.max_file_bytes != 0)
      throw std::invalid_argument(fmt::format(
          "recorder: format {}: rotation (max_file_bytes) writes trace.dat files only", f));
    if (s.opt.file_version != 6)
      throw std::invalid_argument(
          fmt::format("recorder: format {}: file_version is a trace.dat setting", f));
  }
  if (s.opt.file_version != 6 && s.opt.file_version != 7)
    throw std::invalid_argument(
        fmt::format("recorder: file_version {} (6 or 7)", s.opt.file_version));
  if (s.opt.file_version == 7) {
    if (s.opt.compression == "zstd")
      s.v7 = detail::Compression::zstd;
    else if (s.opt.compression == "zlib")
      s.v7 = detail::Compression::zlib;
    else if (s.opt.compression == "none")
      s.v7 = detail::Compression::none;
    else
      throw std::invalid_argument("recorder: compression '" + s.opt.compression +
                                  "' (zstd, zlib or none)");
  }
  if (s.opt.block_timeout.count() < 0)
    throw std::invalid_argument("recorder: block_timeout must not be negative");
  if (s.opt.block_timeout.count() != 0 &&
      instance.ring().mode() != buffers::OverflowMode::drop_newest)
    throw std::invalid_argument(
        "recorder: block_timeout needs a drop-newest buffer (mode = \"drop_newest\"): "
        "an overwrite buffer never waits");
  s.page_size = static_cast<uint32_t>(std::max<size_t>(instance.ring().subbuf_size(), 4096));
  s.refresh_sideband_ids();
  for (uint32_t cpu = 0; cpu < instance.cpus(); ++cpu)
    s.cpus.push_back(
        std::make_unique<CpuState>(instance.ring(), cpu, s.page_size, s.opt.batch_pages));
  // Losses from before the recording are not this recording's.
  for (auto& c : s.cpus) c->seen = c->rd.losses();
  s.lost_at_end = instance.registry().by_id(kLostAtEndId) == nullptr;
  if (addr) {
    auto sink = std::make_unique<NetSink>(NetSinkOptions{*addr, s.opt.collector_timeout},
                                          instance.cpus(), s.page_size);
    s.net = sink.get();
    s.file = std::move(sink);
    s.output_desc = s.file->describe();
  } else {
    s.open_next();
    s.ready = 1;
  }
  s.cmdlines_seen = instance.cmdlines().size();
  thread_ = std::thread([&s] { s.run(); });
  if (s.opt.block_timeout.count() != 0) {
    const auto us = s.opt.block_timeout;
    instance.ring().set_block_policy(&writer_may_block);
    instance.ring().set_block_timeout(us == RecorderOptions::kBlockForever ||
                                              us.count() > INT64_MAX / 1000
                                          ? buffers::RingBufferBase::kBlockForever
                                          : static_cast<uint64_t>(us.count()) * 1000);
  }
}

Recorder::~Recorder() {
  try {
    (void)stop();
  } catch (...) {
  }
}

RecorderStats Recorder::stop() {
  if (stopped_) return final_;
  stopped_ = true;
  // Blocking mode ends first: no writer may wait for a recorder that stops.
  if (st_->opt.block_timeout.count() != 0) st_->inst.ring().set_block_timeout(0);
  st_->stopping.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();  // the thread drains and finalizes (State::finish)
  final_ = stats();
  return final_;
}

void Recorder::request_stop() noexcept {
  st_->stop_requested.store(true, std::memory_order_release);
  st_->stopping.store(true, std::memory_order_release);
}

bool Recorder::wait_ready(std::chrono::milliseconds max) const {
  std::unique_lock lk(st_->ready_mu);
  st_->ready_cv.wait_for(lk, max, [&] { return st_->ready != 0; });
  return st_->ready == 1;
}

void Recorder::trigger() noexcept { st_->triggers.fetch_add(1, std::memory_order_release); }

RecorderStats Recorder::stats() const {
  RecorderStats r;
  for (const auto& c : st_->cpus) {
    RecorderCpuStats s;
    s.records = c->records.load(std::memory_order_relaxed);
    s.pages = c->pages.load(std::memory_order_relaxed);
    s.dropped = c->dropped.load(std::memory_order_relaxed);
    s.unwritten = c->unwritten.load(std::memory_order_relaxed);
    s.unmarked = c->unmarked.load(std::memory_order_relaxed);
    s.too_big = c->too_big.load(std::memory_order_relaxed);
    s.bytes = s.pages * st_->page_size;
    s.overrun = c->overrun.load(std::memory_order_relaxed);
    s.lost_full = c->lost_full.load(std::memory_order_relaxed);
    s.lost_busy = c->lost_busy.load(std::memory_order_relaxed);
    s.commit_overrun = c->commit_overrun.load(std::memory_order_relaxed);
    s.lost_set_aside = c->lost_set_aside.load(std::memory_order_relaxed);
    s.lost_too_big = c->lost_too_big.load(std::memory_order_relaxed);
    r.records += s.records;
    r.pages += s.pages;
    r.dropped += s.dropped;
    r.unwritten += s.unwritten;
    r.unmarked += s.unmarked;
    r.cpus.push_back(s);
  }
  r.bytes = r.pages * st_->page_size;
  r.passes = st_->passes.load(std::memory_order_relaxed);
  r.header_rewrites = st_->header_rewrites.load(std::memory_order_relaxed);
  r.peak_unread = st_->peak_unread.load(std::memory_order_relaxed);
  r.realtime = st_->realtime.load(std::memory_order_relaxed);
  r.longest_gap_ns = st_->longest_gap_ns.load(std::memory_order_relaxed);
  r.longest_pass_ns = st_->longest_pass_ns.load(std::memory_order_relaxed);
  r.longest_wake_late_ns = st_->longest_wake_late_ns.load(std::memory_order_relaxed);
  r.pass_ns = st_->pass_ns.load(std::memory_order_relaxed);
  r.write_ns = st_->write_ns.load(std::memory_order_relaxed);
  r.write_wait_ns = st_->write_wait_ns.load(std::memory_order_relaxed);
  r.longest_write_wait_ns = st_->longest_write_wait_ns.load(std::memory_order_relaxed);
  r.files = st_->files_started.load(std::memory_order_relaxed);
  r.files_removed = st_->files_removed.load(std::memory_order_relaxed);
  if (stopped_) r.kept_files.assign(st_->files.begin(), st_->files.end());
  r.cpu_ns = st_->cpu_ns_final.load();
  if (r.cpu_ns == 0 && thread_.joinable()) {
    clockid_t id;
    timespec t{};
    if (pthread_getcpuclockid(const_cast<std::thread&>(thread_).native_handle(), &id) == 0 &&
        clock_gettime(id, &t) == 0)
      r.cpu_ns =
          static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
  }
  r.block_timeout = st_->opt.block_timeout;
  if (r.block_timeout.count() != 0) {
    for (uint32_t cpu = 0; cpu < st_->inst.cpus(); ++cpu) {
      const auto b = st_->inst.ring().block_stats(cpu);
      r.block_waits += b.waits;
      r.block_wait_ns += b.wait_ns;
      r.block_max_wait_ns = std::max(r.block_max_wait_ns, b.max_wait_ns);
      r.block_timed_out += b.timed_out;
    }
  }
  std::lock_guard lk(st_->mu);
  r.failed = st_->error.has_value();
  r.output = st_->output_desc;
  r.format = st_->opt.format;
  r.collector = !st_->opt.collector.empty();
  r.unacked_bytes = st_->unacked_bytes.load(std::memory_order_relaxed);
  return r;
}

std::optional<std::string> Recorder::error() const {
  std::lock_guard lk(st_->mu);
  return st_->error;
}

}  // namespace tracepipe::record

namespace tracepipe::record {

std::optional<OutputFormat> parse_output_format(std::string_view name) noexcept {
  if (name == "tracedat") return OutputFormat::tracedat;
  if (name == "perfetto") return OutputFormat::perfetto;
  if (name == "ctf") return OutputFormat::ctf;
  return std::nullopt;
}

std::string_view output_format_name(OutputFormat format) noexcept {
  switch (format) {
    case OutputFormat::perfetto:
      return "perfetto";
    case OutputFormat::ctf:
      return "ctf";
    default:
      return "tracedat";
  }
}

namespace {

// "48000 dropped (buffer full 47000, overwritten 1000)": the causes that count.
std::string dropped_by_cause(const RecorderCpuStats& c) {
  const std::pair<uint64_t, std::string_view> causes[] = {
      {c.lost_full, "buffer full"},          {c.overrun, "overwritten"},
      {c.lost_busy, "next sub-buffer busy"}, {c.commit_overrun, "commit overrun"},
      {c.lost_set_aside, "set aside"},       {c.lost_too_big + c.too_big, "too big"},
  };
  std::string s;
  for (const auto& [n, what] : causes) {
    if (n == 0) continue;
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", what, n);
  }
  return s;
}

double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }

// Why a drop-newest buffer filled, from what the recorder saw: writers that
// waited the whole block time-out; the output, when the recorder spent its
// time waiting in writes to it (a collector that stopped reading, a disk
// that does not keep up), which a larger buffer or a faster recorder does
// not cure; else the recorder itself (its work, or the scheduler keeping it
// from its CPU: longest_pass_ns and longest_wake_late_ns tell which).
std::string buffer_full_cause(const RecorderStats& st) {
  if (st.block_timed_out != 0)
    return ": writers waited the whole block time-out for the recorder; a longer block time-out "
           "(--block=US, block_timeout_us) or a larger buffer_size_kb holds longer bursts";
  const bool output_stalled =
      st.write_wait_ns != 0 &&
      (st.write_wait_ns * 2 >= st.pass_ns || st.longest_write_wait_ns * 2 >= st.longest_gap_ns);
  if (output_stalled)
    return fmt::format(
        ": the output ({}) did not take the data fast enough: the recorder waited for it up to "
        "{:.1f} ms in one write, {:.1f} ms in all, while writers filled the buffer; a larger "
        "buffer_size_kb rides out shorter stalls",
        st.output, ms(st.longest_write_wait_ns), ms(st.write_wait_ns));
  return ": the recorder did not keep up; a larger buffer_size_kb holds longer bursts";
}

}  // namespace

std::string format_summary(const RecorderStats& st, const std::optional<std::string>& error,
                           std::string_view prefix) {
  std::string out;
  RecorderCpuStats total;
  // To a collector the bytes are those handed to its connections: what it
  // received is known only when it stored them all (unacked_bytes below).
  const std::string_view sent = st.collector ? " sent" : "";
  for (size_t cpu = 0; cpu < st.cpus.size(); ++cpu) {
    const RecorderCpuStats& c = st.cpus[cpu];
    out += fmt::format("{}CPU {}: {} records, {} bytes{}", prefix, cpu, c.records, c.bytes, sent);
    if (c.dropped != 0) out += fmt::format(", {} dropped ({})", c.dropped, dropped_by_cause(c));
    if (c.unwritten != 0) out += fmt::format(", {} not written", c.unwritten);
    out += '\n';
    total.lost_full += c.lost_full;
    total.overrun += c.overrun;
    total.lost_busy += c.lost_busy;
    total.commit_overrun += c.commit_overrun;
    total.lost_set_aside += c.lost_set_aside;
    total.lost_too_big += c.lost_too_big;
    total.too_big += c.too_big;
  }
  // With rotation the counts are the whole run's, over every file: the
  // line says so, and what max_files removed is not passed off as on disk.
  const std::string where =
      st.files > 1 ? fmt::format("{} and the {} files before it", st.output, st.files - 1)
                   : st.output;
  out += fmt::format("{}{}: {} records, {} bytes{}, {} dropped", prefix, where, st.records,
                     st.bytes, sent, st.dropped);
  if (st.unwritten != 0) out += fmt::format(", {} not written", st.unwritten);
  out += '\n';
  if (st.files_removed != 0)
    out += fmt::format(
        "{}warning: {} of the {} files were removed to keep the newest {} (max_files): their "
        "records, counted above, are no longer on disk{}\n",
        prefix, st.files_removed, st.files, st.files - st.files_removed,
        st.kept_files.empty() ? std::string()
                              : fmt::format("; kept: {} to {}", st.kept_files.front().string(),
                                            st.kept_files.back().string()));
  const bool blocking = st.block_timeout.count() != 0;
  if (blocking) {
    const std::string bound = st.block_timeout == RecorderOptions::kBlockForever
                                  ? std::string("no bound")
                                  : fmt::format("up to {} us", st.block_timeout.count());
    out += fmt::format(
        "{}blocking ({}): writers waited {} times, {:.3f} ms in all (longest {:.3f} ms), {} "
        "dropped after a time-out\n",
        prefix, bound, st.block_waits, ms(st.block_wait_ns), ms(st.block_max_wait_ns),
        st.block_timed_out);
  }
  // Each loss is either marked in the output or lost to the write error
  // (its mark was in pages that could not be written): records + marked +
  // lost to the write error = the events emitted into the instance.
  const uint64_t unmarked = std::min(st.unmarked, st.dropped);
  const uint64_t marked = st.dropped - unmarked;
  if (st.dropped != 0) {
    out +=
        fmt::format("{}warning: {} events lost ({}", prefix, st.dropped, dropped_by_cause(total));
    if (total.lost_full != 0) out += buffer_full_cause(st);
    const std::string_view mark = st.format == OutputFormat::perfetto ? "a bundle's lost_events"
                                  : st.format == OutputFormat::ctf ? "a packet's events_discarded"
                                                                   : "[EVENTS DROPPED]";
    if (unmarked == 0)
      out += fmt::format("), each marked in {} where it happened ({})\n", st.output, mark);
    else if (marked == 0)
      out += fmt::format("), none marked in {}: their marks were lost to the write error\n",
                         st.output);
    else
      out += fmt::format(
          "), {} of them marked in {} where they happened ({}), {} not: their marks were lost to "
          "the write error\n",
          marked, st.output, mark, unmarked);
  }
  if (error) {
    // What the failed output kept: everything before the fault (a file
    // stays a valid trace.dat of it).
    std::string kept;
    if (st.collector)
      kept = st.records != 0 ? fmt::format("; the {} records before it were sent", st.records)
                             : std::string("; no record was sent");
    else
      kept = st.records != 0
                 ? fmt::format("; {} keeps the {} records written before it", where, st.records)
                 : fmt::format("; {} keeps no record", where);
    out += fmt::format("{}warning: the recording failed: {}{}\n", prefix, *error, kept);
  }
  if (st.unacked_bytes != 0)
    out += fmt::format(
        "{}warning: {} bytes sent to {} were not acknowledged by its host when the connection "
        "closed: they may not have arrived\n",
        prefix, st.unacked_bytes, st.output);
  if (st.unwritten + unmarked != 0) {
    out += fmt::format(
        "{}warning: {} events lost to the write error, neither in {} nor marked there (", prefix,
        st.unwritten + unmarked, st.output);
    if (st.unwritten != 0) out += fmt::format("{} recorded but not written", st.unwritten);
    if (st.unwritten != 0 && unmarked != 0) out += ", ";
    if (unmarked != 0) out += fmt::format("{} dropped with their marks", unmarked);
    out += ")\n";
  }
  return out;
}

}  // namespace tracepipe::record
