#pragma once
// core/record/recorder.h — continuous recording of an instance's buffers to
// a trace.dat that grows while the application runs (what `trace-cmd
// record` does for the kernel's buffers).
//
//   Instance inst({.mode = BufferMode::drop_newest});
//   record::Recorder rec(inst, {.output = "out.dat"});   // starts its thread
//   ... the application emits events ...
//   record::RecorderStats s = rec.stop();                // drains, finalizes
//
// ══ How records leave the ring ══════════════════════════════════════════════
//   recorder thread, per pass over the CPUs:
//     watermark: a CPU is drained when half of `watermark_percent` of its
//       sub-buffers are full and unread (the kernel's buffer_percent), or
//       when `flush_interval` has passed since its last full drain, or at stop.
//     drain(cpu): SubbufReader (buffers/subbuf_reader.h) takes whole closed
//       sub-buffers (at a flush, the open one too); their records are
//       encoded in place into kernel pages (PageBatch, one copy per record,
//       no allocation), and full batches of pages are appended to the file
//       with one pwrite plus one 16-byte table update (TraceFile).
//     sleep: until the first CPU is expected to have filled half the
//       watermark (each CPU's rate over the last interval, read from its
//       tail), so that at a steady rate every look drains a batch; never
//       longer than a CPU's free sub-buffers last at 4x its rate; with no
//       rate (quiet rings) max_poll_interval, 1 ms (20 µs .. that). Writers
//       never wake the recorder (no system call on the write path), and a
//       wake-up, not the look, is most of an idle recorder's CPU.
//       What a look cannot see is how long the scheduler delays it: that,
//       not the drain, is what loses records (peak_unread, longest_gap_ns
//       and its split into longest_pass_ns and longest_wake_late_ns tell;
//       realtime_priority removes other tasks' time slices, not the kernel
//       work or host scheduling that keeps a CPU on a kernel without
//       preemption or a VM: docs/measurements.md, "Recording", measures that floor).
//   Memory: batch_pages pages per CPU, plus the file's headers; constant
//   however long the run.
//
// ══ Losses: counted and marked ═══════════════════════════════════════════════
//   Drop-newest: when the recorder or its output lags, writers find the
//   buffer full and drop their records (CpuStats::lost_full, counted by the
//   ring). Such a loss happens while the tail sits at the last free
//   sub-buffer, so it lies between that sub-buffer and the next one the
//   tail enters. The recorder reads the CPU's loss counters, then the tail's
//   sub-buffer T, and marks the count on the first page it writes from a
//   sub-buffer after T: RB_MISSED_EVENTS with the count stored, which
//   `trace-cmd report` prints as "CPU:N [M EVENTS DROPPED]" at that place.
//   (When the tail moved on between the losses and the look, the mark lands
//   at most that many sub-buffers late, never early.)
//   Overwrite: records overwritten before the recorder read them (overrun)
//   are marked before the next record read.
//   End of a CPU's data: losses noted after its last record have no record
//   to stand before (libtraceevent reports a page's mark on its first record
//   only), so the final drain writes one tracepipe:lost_at_end record (ID
//   65534, field `lost`) carrying the mark. Hence, for every recording:
//   records in the file + the marks' counts = events emitted into the
//   instance (counted by cause in RecorderCpuStats).
//   Records not written because the output failed are counted in
//   `unwritten`, and losses whose marks were due in pages written after
//   that in `unmarked` (a file that no longer takes data cannot mark them):
//   records in the file + the marks' counts + unwritten + unmarked =
//   events emitted.
//   A finished file also holds the recording's per-CPU statistics as CPUSTAT
//   options (the kernel's per_cpu/cpuN/stats layout; trace-cmd report --stat).
//
// ══ Faults ═══════════════════════════════════════════════════════════════════
//   A write error (ENOSPC, EIO, ...), the output file removed or replaced,
//   a CPU's region full (EFBIG), or the collector unreachable, gone or not
//   reading for collector_timeout: reported once through on_error (and
//   error()), with the cause; the file keeps everything written before and
//   stays valid (TraceFile); the recorder keeps consuming, counting what it
//   cannot write, so the application never blocks or sees a difference.
//   A stalled recorder thread: writers drop (drop-newest, counted, marked
//   when it resumes) or overwrite (overrun), never wait, unless blocking
//   mode (block_timeout) asks them to wait for it, up to that bound.
//
// ══ Modes ════════════════════════════════════════════════════════════════════
//   stream:          continuous (any buffer mode; lossless in drop-newest
//                    while the recorder keeps up).
//   flight_recorder: an overwrite buffer is left alone until trigger() or
//                    stop(), which write the newest records it holds.
//
// Thread-safety: stop(), trigger(), stats() and error() may be called from
// any thread; the constructor starts one thread, stop() joins it. The
// instance must outlive the recorder. Records are consumed: do not run
// another consuming reader on the instance meanwhile (each record would go
// to one of them only).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tracepipe {
class Instance;
}

namespace tracepipe::record {

enum class RecordMode : uint8_t {
  stream,           ///< write continuously
  flight_recorder,  ///< write the buffer's newest records at trigger() / stop() (needs an overwrite
                    ///< buffer)
};

/// What a recorder writes.
enum class OutputFormat : uint8_t {
  tracedat,  ///< trace.dat (trace-cmd, KernelShark), version `file_version`
  /// A Perfetto protobuf trace (ui.perfetto.dev, trace_processor), one file,
  /// as `tracepipe convert --to perfetto` writes it (core/convert).
  perfetto,
  /// A CTF 1.8 trace directory (babeltrace2, Trace Compass): `output` names
  /// the directory, as `tracepipe convert --to ctf` writes it.
  ctf,
};

/// "tracedat", "perfetto" or "ctf" (case-sensitive), else nullopt.
std::optional<OutputFormat> parse_output_format(std::string_view name) noexcept;
/// The name parse_output_format() takes.
std::string_view output_format_name(OutputFormat format) noexcept;

struct RecorderOptions {
  std::filesystem::path output;  ///< the trace.dat to write (created or truncated); see `format`
  /// The output's format. perfetto and ctf are written as the recording
  /// goes (core/record/convert_sink.h): each drained batch of a CPU's pages
  /// becomes a Perfetto FtraceEventBundle (appended to the file) or a CTF
  /// packet (appended to the CPU's stream), with the records, fields, loss
  /// marks and thread names that `tracepipe convert` gives the same
  /// recording's trace.dat: a loss is a bundle's lost_events (counted in the
  /// closing ftrace_stats) or a packet's events_discarded, losses after a
  /// CPU's last record a tracepipe:lost_at_end event. The output is
  /// complete at stop() (CTF: the metadata lists every event class; a CTF
  /// directory is also readable after each packet). Not with a collector,
  /// rotation or file_version 7 (std::invalid_argument): those are
  /// trace.dat's.
  OutputFormat format = OutputFormat::tracedat;
  /// Instead of `output`: send the recording to `trace-cmd listen` at
  /// "HOST:PORT" (trace-cmd record -N; core/record/net_sink.h). The
  /// connection is made on the recorder thread, so the constructor never
  /// waits for the network; a collector unreachable at the start, or gone
  /// mid-run, is a fault like a full disk (reported once, the records
  /// counted unwritten). No rotation.
  std::string collector;
  /// The longest one connect, send or receive to the collector may take.
  std::chrono::milliseconds collector_timeout{2000};
  /// trace.dat version: 6, or 7 (sections, compressed with `compression`;
  /// trace-cmd 3.1's default). A file is version 6 while it grows and
  /// becomes version 7 at stop() (or at each rotation); a collector gets
  /// version 7 headers and compresses the pages itself.
  uint32_t file_version = 6;
  /// With version 7: "zstd" (trace-cmd's default), "zlib" or "none".
  std::string compression = "zstd";
  RecordMode mode = RecordMode::stream;
  /// Drain a CPU once half this percentage of its sub-buffers is full and
  /// unread (0: as soon as one is; like the kernel's buffer_percent, whose
  /// default is 50); the recorder's sleep aims at finding that much.
  unsigned watermark_percent = 25;
  /// The longest a committed record waits in the ring before it is written
  /// (the open sub-buffers are drained this often).
  std::chrono::milliseconds flush_interval{1000};
  /// The longest the recorder sleeps between looks at the buffers: its
  /// sleep while the rings are quiet (trace-cmd record's default sleep).
  /// While records arrive it sleeps until the first CPU is expected to reach
  /// half the watermark at its rate, down to 20 µs. Writers never wake it,
  /// so this bounds how long a burst from quiet goes unseen: 1408 KiB per
  /// CPU of 64-byte events (80 bytes in the ring) fill in 1 ms at 18 M
  /// events/s. Cost while idle: 1 s / this wake-ups per second.
  std::chrono::microseconds max_poll_interval{1000};
  /// Blocking mode, as LTTng's --blocking-timeout: with a non-zero value a
  /// writer that finds its drop-newest buffer full waits for this recorder
  /// up to this long (kBlockForever: no bound) instead of dropping; the
  /// recorder wakes it as soon as it frees a sub-buffer. 0 (the default):
  /// writers never wait. Writers that may not wait drop and count as
  /// before: an emit nested in another on its own thread (a signal handler,
  /// a staged emit's nested emit) or inside a SignalScope. The time waited
  /// and what was still dropped, by cause, are in
  /// RingBufferBase::block_stats(cpu) (its drops are also in lost_full).
  /// Active from the constructor until stop() begins (stop releases every
  /// waiting writer). Needs a drop-newest buffer (std::invalid_argument
  /// otherwise). The cost: a waiting writer's thread sleeps in the kernel
  /// (futex) inside its emit, and a filter or event change on the instance
  /// waits for it to finish (its emit holds the read-side section).
  std::chrono::microseconds block_timeout{0};
  static constexpr std::chrono::microseconds kBlockForever = std::chrono::microseconds::max();
  /// Pages per CPU encoded before one write (memory: batch_pages x page size x CPUs).
  uint32_t batch_pages = 64;
  /// Pin the recorder thread to this CPU (-1: no pinning): one the thread
  /// that creates the Recorder may run on (sched_getaffinity), else the
  /// constructor throws std::invalid_argument naming it.
  int cpu = -1;
  /// Run the recorder thread as SCHED_FIFO at this priority (1..99; 0: the
  /// default policy), as `perf record -r` does. Writers never wait for the
  /// recorder, so what bounds the lossless rate on a loaded machine is how
  /// long the scheduler keeps the recorder from running: a full 1408 KiB
  /// buffer of 64-byte events holds 0.9 ms at 20 M events/s, less than one
  /// time slice of a compiler sharing its CPU. Needs CAP_SYS_NICE (or an
  /// RLIMIT_RTPRIO); when refused the thread keeps the default policy and
  /// RecorderStats::realtime says so. The recorder sleeps between looks, so
  /// it does not starve its CPU.
  int realtime_priority = 0;
  /// Bytes of file space per CPU (0: automatic, see TraceFileOptions).
  uint64_t cpu_region = 0;
  /// Rotation (like LTTng's rotation and trace-cmd's size limits): when
  /// non-zero, the recording goes to files of at most this many bytes of
  /// CPU data, each a complete trace.dat, named OUT with a sequence number
  /// before the extension (app.dat -> app.1.dat, app.2.dat, ...). 0: one
  /// file, no limit.
  uint64_t max_file_bytes = 0;
  /// With rotation: keep only the newest this many files (the oldest is
  /// removed when a new one starts); 0 keeps them all. The run then keeps
  /// its last max_files x max_file_bytes.
  uint32_t max_files = 0;
  /// Called once, from the recorder thread, with the first fault (e.g.
  /// "writing out.dat: No space left on device"). Unset: printed to stderr.
  std::function<void(const std::string&)> on_error;
  /// Called on the recorder thread once the recording is finished after
  /// request_stop() (drained, file finalized): e.g. to print a summary and
  /// let a signal take its course. Not called after stop() alone.
  std::function<void()> on_stopped;
};

/// What one CPU's recording holds. Counts are records unless named.
/// dropped = overrun + lost_full + lost_busy + commit_overrun +
/// lost_set_aside + too_big: each is marked in the file, except `unmarked`
/// (their marks were in pages the failed output did not take). After
/// stop(): records + dropped + unwritten = the events emitted into the
/// instance, of which records + (dropped - unmarked) are in the file as
/// records and mark counts, unwritten + unmarked lost to the write error.
struct RecorderCpuStats {
  uint64_t records = 0;    ///< written to the file
  uint64_t pages = 0;      ///< pages written
  uint64_t bytes = 0;      ///< bytes of pages written (pages x page size; to a collector: sent)
  uint64_t dropped = 0;    ///< lost in the ring (all causes below); marked unless `unmarked`
  uint64_t unwritten = 0;  ///< consumed but not written (output failed)
  uint64_t too_big = 0;    ///< larger than a trace.dat page holds (counted in dropped too)
  /// Of `dropped`: not marked, as their marks were due in pages written
  /// after the output failed (a disk full, the file removed, the collector gone).
  uint64_t unmarked = 0;
  // dropped, by cause (the ring's counters over the recording; buffers/stats.h):
  uint64_t overrun = 0;    ///< overwritten before the recorder read them (overwrite buffer)
  uint64_t lost_full = 0;  ///< drop-newest buffer full: the recorder or its output lagged
  uint64_t lost_busy = 0;  ///< the next sub-buffer was busy (being zeroed, or pinned by a reader)
  uint64_t commit_overrun = 0;  ///< the sub-buffer needed held a pending commit
  uint64_t lost_set_aside = 0;  ///< committed into a sub-buffer set aside meanwhile (overwrite)
  uint64_t lost_too_big = 0;    ///< larger than a ring sub-buffer holds
};

struct RecorderStats {
  std::vector<RecorderCpuStats> cpus;
  uint64_t records = 0, pages = 0, bytes = 0, dropped = 0, unwritten = 0, unmarked = 0;
  uint64_t passes = 0;  ///< recorder loop passes
  uint64_t header_rewrites = 0;
  /// The most sub-buffers one CPU had full and unread at a look (of
  /// nr_subbufs - 1; the ring drops, in drop-newest, when it reaches that).
  uint64_t peak_unread = 0;
  /// The longest time between two looks at the buffers (ns): sleep, the
  /// scheduler's delay in waking the thread, and the pass's own work.
  uint64_t longest_gap_ns = 0;
  /// Of that, apart: the longest one pass's own work took (ns: drains,
  /// writes, the 200-ms checks), and the longest a sleep overran what it
  /// asked for (ns: timer and scheduling delay, time the thread was kept
  /// from its CPU). A gap that loses records with a short pass is the
  /// machine's, not the recorder's.
  uint64_t longest_pass_ns = 0;
  uint64_t longest_wake_late_ns = 0;
  /// The passes' own work summed (ns): what longest_pass_ns is the longest of.
  uint64_t pass_ns = 0;
  /// Of the passes' work, the time in the output's writes (ns: the pwrite
  /// of a batch, the send to a collector), and of that the part the thread
  /// waited for the output to take the data (a collector that does not
  /// read, a disk that does not keep up): of a write slower than a slow
  /// copy of its bytes (recorder.cc: kSlowWriteNs, kSlowCopyNsPerByte, far
  /// slower than a page-cache copy), the part beyond that, and of
  /// each write after it while it stays slow, its wall time less the
  /// thread's CPU time in it. The longest such wait in one write apart. The
  /// summary blames a loss on the output when its waits make up half the
  /// passes' work or half the longest gap.
  uint64_t write_ns = 0;
  uint64_t write_wait_ns = 0;
  uint64_t longest_write_wait_ns = 0;
  uint64_t cpu_ns = 0;         ///< CPU time of the recorder thread so far (ns)
  uint64_t files = 1;          ///< files started (rotation)
  uint64_t files_removed = 0;  ///< old files removed to keep max_files
  std::vector<std::filesystem::path>
      kept_files;  ///< the files on disk, oldest first (after stop())
  std::string
      output;  ///< the output: the file (the last one with rotation) or "collector HOST:PORT"
  OutputFormat format = OutputFormat::tracedat;  ///< RecorderOptions::format
  bool failed = false;                           ///< a fault stopped the output (see error())
  /// The output is a collector (RecorderOptions::collector). Its `bytes`
  /// are bytes sent: handed to the connections, not known to be received.
  bool collector = false;
  /// A collector, after stop(): of the bytes sent, those its host had not
  /// acknowledged when the connections were closed, because the collector
  /// did not read them all (NetSink::unacked_bytes: the sockets' send
  /// queues, SIOCOUTQ). They may not have arrived. 0 when it stored them.
  uint64_t unacked_bytes = 0;
  bool realtime = false;  ///< the thread runs SCHED_FIFO (realtime_priority granted)
  /// Blocking mode (RecorderOptions::block_timeout, 0: off), and the
  /// writers' waits summed over the CPUs (RingBufferBase::block_stats):
  /// emits that waited, their total and longest wait (ns), and the events
  /// dropped after waiting the whole bound (counted in lost_full too).
  std::chrono::microseconds block_timeout{0};
  uint64_t block_waits = 0, block_wait_ns = 0, block_max_wait_ns = 0, block_timed_out = 0;
};

/// The end-of-recording summary, as `trace-cmd record` prints one: a line
/// per CPU (records written, dropped by cause, bytes; to a collector, bytes
/// sent), the total with the output, for a collector the bytes sent that
/// its host had not acknowledged at the end (unacked_bytes), in blocking mode the writers' waits
/// (how often, how long, how many dropped after a time-out), then warning lines when anything was
/// lost: the drops, with how many are marked in the output and, for a full buffer, what the
/// recorder saw as the cause (the output, when it waited in writes to it: write_wait_ns against
/// pass_ns and longest_gap_ns; else the recorder itself); the fault (`error`), with what the output
/// kept; and the events lost to it (unwritten, and drops whose marks could not be written), which
/// the output neither holds nor marks. Each line ends with '\n' and starts with `prefix`
/// ("tracepipe record: ").
std::string format_summary(const RecorderStats& stats, const std::optional<std::string>& error,
                           std::string_view prefix);

class Recorder {
 public:
  /// Creates the output (headers with the instance's formats, cmdlines and
  /// clock) and starts the recorder thread (which connects to a collector).
  /// Throws std::system_error when the output file cannot be created,
  /// std::invalid_argument for bad options (flight_recorder on a
  /// drop-newest buffer, block_timeout on an overwrite buffer or negative,
  /// batch_pages < 3, a cpu this thread may not run on, both or neither of output and
  /// collector, a collector that is not HOST:PORT, rotation to a collector,
  /// format perfetto or ctf with a collector, rotation or file_version 7).
  Recorder(Instance& instance, RecorderOptions options);
  /// stop().
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  /// Drains every committed record, writes the final headers (cmdlines
  /// learnt from sideband records included; the per-CPU statistics as
  /// CPUSTAT options, what `trace-cmd report --stat` prints), makes the file
  /// contiguous and closes it. Losses after a CPU's last record are marked
  /// on a tracepipe:lost_at_end record that closes its data (trace-cmd
  /// prints a mark only before a record). Idempotent; returns the final
  /// statistics.
  RecorderStats stop();
  /// Async-signal-safe: asks the recorder thread to stop tracing (the
  /// instance's tracing_off: later writes are dropped, counted lost_paused,
  /// not marked: they come after the end), drain, finalize the output, then
  /// call options.on_stopped. stop() afterwards returns the statistics.
  /// What `trace-cmd record` does on SIGINT.
  void request_stop() noexcept;
  /// flight_recorder: write the records the buffer holds now (returns at
  /// once; the recorder thread writes them). stream: a flush now.
  void trigger() noexcept;
  /// Waits at most `max` until the output takes data: at once for a file;
  /// for a collector, until the connection is made (what trace-cmd record
  /// -N does before it starts tracing). Records emitted before that stay in
  /// the ring (or drop, counted, when it fills). True when ready; false on
  /// a fault (error() says) or when `max` passed. Any thread.
  bool wait_ready(std::chrono::milliseconds max) const;
  /// A snapshot of the counters (any thread).
  RecorderStats stats() const;
  /// The first fault, if any ("writing PATH: CAUSE").
  std::optional<std::string> error() const;

 private:
  struct State;
  std::unique_ptr<State> st_;
  std::thread thread_;
  bool stopped_ = false;
  RecorderStats final_;
};

}  // namespace tracepipe::record
