// run_replay(): the per-CPU TBB pipelines described in replay.h.
#include <fmt/core.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_group.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <system_error>

#include "tracepipe/buffers/current_cpu.h"
#include "tracepipe/buffers/readers.h"
#include "tracepipe/buffers/subbuf_reader.h"
#include "tracepipe/core/files/input_file.h"
#include "tracepipe/core/record/page_batch.h"
#include "tracepipe/core/record/trace_file.h"
#include "tracepipe/core/replay/filter_plan.h"
#include "tracepipe/core/replay/progress.h"
#include "tracepipe/core/replay/replay.h"
#include "tracepipe/core/replay/router.h"
#include "tracepipe/core/replay/symbols.h"
#include "tracepipe/core/tracedat/trace_symbols.h"
#include "tracepipe/core/tracedat/tracedat_reader.h"
#include "tracepipe/core/tracedat/tracedat_writer.h"
#include "tracepipe/core/triggers/synthetic.h"
#include "tracepipe/core/triggers/triggers.h"

namespace tracepipe::replay {
namespace {

struct Batch {
  std::vector<Rec> recs;
  std::vector<std::pair<uint32_t, int64_t>>
      lost;  // (record index, lost_before) from the input pages
};

struct CpuJob {
  size_t data_index = 0;  // in reader.cpu_data()
  uint32_t cpu = 0;
  std::vector<Counter> counters;  // by Router slot
  CpuWalkStats walk;
  uint64_t written = 0;
};

// ---- the output file ---------------------------------------------------------

class Output {
 public:
  // The records go through the recorder's page writer: each CPU's kept
  // records are encoded once into kernel pages (record::PageBatch), and full
  // batches of pages are appended to a trace.dat that grows in place
  // (record::TraceFile), written beside `path` and renamed over it at the
  // end (never over the input while it is read). Memory: one batch per CPU.
  Output(const TraceDatReader& in, uint32_t cpus, uint32_t subbuf_size,
         const std::filesystem::path& path, std::vector<std::string>& warnings)
      : pages_per_subbuf_(subbuf_size / in.page_size() + 1),
        meta_(TraceDatWriterConfig{cpus, in.page_size(),
                                   in.clock_name().empty() ? "local" : in.clock_name()}),
        path_(path) {
    for (const EventFormat& f : in.formats()) {
      try {
        meta_.add_format(f);
      } catch (const std::invalid_argument& e) {
        warnings.push_back(
            fmt::format("-o: format {}/{} not written: {}", f.system, f.name, e.what()));
      }
    }
    for (const auto& [pid, comm] : in.cmdlines()) meta_.set_cmdline(pid, comm);
    if (!in.kallsyms_text().empty()) meta_.set_kallsyms(std::string(in.kallsyms_text()));
    if (!in.printk_text().empty()) meta_.set_printk(std::string(in.printk_text()));
    for (uint32_t c = 0; c < cpus; ++c)
      batches_.push_back(std::make_unique<record::PageBatch>(
          in.page_size(), std::max<uint32_t>(64, 2 * pages_per_subbuf_ + 2)));
    tmp_ = path_;
    tmp_ += fmt::format(".tracepipe-{}", ::getpid());
    record::TraceFileOptions fo;
    fo.path = tmp_;
    file_ = std::make_unique<record::TraceFile>(fo, meta_);
    // The output's space, allocated now rather than page by page while the
    // pipeline runs: as much as the input's data of each CPU (the kept
    // records, packed densely, take no more); the rest is released at the end.
    for (const auto& d : in.cpu_data())
      if (d.cpu < cpus) (void)file_->preallocate(d.cpu, d.size);
  }
  ~Output() {
    if (file_) {
      file_.reset();
      std::error_code ec;
      std::filesystem::remove(tmp_, ec);
    }
  }
  // One batch of kept records of `cpu`, drained from the ring right after
  // the batch was fed (P2): the ring then holds exactly this batch's kept
  // records, which leave it a sub-buffer at a time (buffers::SubbufReader,
  // as the recorder drains) and are encoded in place into pages, each
  // paired with the batch's next kept record for its recorded stamp and the
  // input's loss marks.
  uint64_t write_batch(uint32_t cpu, const Batch& b, buffers::SubbufReader& ring) {
    record::PageBatch& pb = *batches_[cpu];
    PairSink sink{pb, b, cpu};
    for (;;) {
      if (pb.room() < pages_per_subbuf_ + 1) flush(cpu);
      pb.checkpoint();
      sink.checkpoint();
      if (ring.consume(sink, true) == buffers::Taken::none) break;
    }
    uint64_t kept = 0;
    for (const Rec& r : b.recs) kept += r.result == EmitResult::kept;
    if (sink.n != kept) sink.mismatch("nothing");
    sink.marks_before(
        b.recs.size());  // marks before records that were not kept, at the batch's end
    return sink.n;
  }
  // After the pipelines: the last pages, the final headers, the rename.
  void write() {
    for (uint32_t c = 0; c < batches_.size(); ++c) {
      batches_[c]->close_open(true);
      flush(c);
    }
    if (const int err = file_->finalize(meta_); err != 0)
      throw std::system_error(err, std::generic_category(), "cannot write " + tmp_.string());
    file_.reset();
    std::error_code ec;
    std::filesystem::rename(tmp_, path_, ec);
    if (ec) {
      std::filesystem::remove(tmp_);
      throw std::system_error(ec, "cannot rename " + tmp_.string() + " to " + path_.string());
    }
  }

 private:
  // Pairs the records one SubbufReader::consume() hands out with the
  // batch's kept records, in order (P2): the recorded stamp, the length
  // check, and the input's loss marks before each record.
  struct PairSink {
    record::PageBatch& pb;
    const Batch& b;
    uint32_t cpu;
    size_t i = 0, lost_i = 0;  // next record and next loss mark of the batch
    uint64_t n = 0;            // records written
    size_t ck_i = 0, ck_lost = 0;
    uint64_t ck_n = 0;
    void checkpoint() noexcept {
      ck_i = i;
      ck_lost = lost_i;
      ck_n = n;
    }
    void rollback() noexcept {  // another reader took the sub-buffer (none does here)
      pb.rollback();
      i = ck_i;
      lost_i = ck_lost;
      n = ck_n;
    }
    void marks_before(size_t at) noexcept {
      while (lost_i < b.lost.size() && b.lost[lost_i].first <= at) {
        const int64_t l = b.lost[lost_i++].second;
        if (l < 0)
          pb.mark_missed_unknown();
        else
          pb.mark_lost(static_cast<uint64_t>(l));
      }
    }
    [[noreturn]] void mismatch(const std::string& got) const {
      throw std::logic_error(
          fmt::format("replay: CPU {}: the ring handed out {} where a kept record was expected "
                      "(records out of order?)",
                      cpu, got));
    }
    [[gnu::always_inline]] void record(uint64_t, std::span<const std::byte> payload) {
      while (i < b.recs.size() && b.recs[i].result != EmitResult::kept) ++i;
      if (i == b.recs.size()) mismatch(fmt::format("{} bytes more", payload.size()));
      const Rec& r = b.recs[i];
      if (payload.size() != r.len)
        mismatch(fmt::format("{} bytes for a record of {}", payload.size(), r.len));
      if (lost_i < b.lost.size() && b.lost[lost_i].first <= i) [[unlikely]]
        marks_before(i);
      pb.record(r.ts, payload);
      ++i;
      ++n;
    }
  };

  void flush(uint32_t cpu) {
    record::PageBatch& pb = *batches_[cpu];
    if (pb.finished_pages() == 0) return;
    int err;
    {
      std::lock_guard lk(mu_);
      err = file_->append(cpu, pb.finished());
    }
    if (err != 0)
      throw std::system_error(err, std::generic_category(), "cannot write " + tmp_.string());
    pb.take_finished();
  }

  std::mutex mu_;
  uint32_t pages_per_subbuf_ = 1;  // output pages one ring sub-buffer's records can fill
  TraceDatWriter meta_;            // formats, cmdlines, kallsyms, printk, clock: the headers
  std::filesystem::path path_, tmp_;
  std::vector<std::unique_ptr<record::PageBatch>> batches_;
  std::unique_ptr<record::TraceFile> file_;
};

uint64_t process_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}
uint64_t wall_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// ---- the pipeline of one CPU ----------------------------------------------------

class CpuPipeline {
 public:
  CpuPipeline(const TraceDatReader& reader, Instance& inst, const Router& router, Output* out,
              ProgressBar& progress, bool timing, CpuJob& job)
      : reader_(reader),
        inst_(inst),
        router_(router),
        out_(out),
        progress_(progress),
        timing_(timing),
        job_(job),
        cursor_(reader.cpu_records(job.data_index)) {
    pool_.reserve(kMaxLiveBatches + 1);  // at most that many batches exist: Recycle never allocates
  }

  void run() {
    auto read =
        tbb::make_filter<void, Batch*>(tbb::filter_mode::serial_in_order,
                                       [this](tbb::flow_control& fc) { return read_batch(fc); });
    auto filter =
        tbb::make_filter<Batch*, Batch*>(tbb::filter_mode::serial_in_order, [this](Batch* b) {
          router_.feed(b->recs, job_.cpu, job_.counters, timing_);
          return b;
        });
    if (out_ != nullptr) {
      // [filter] and [write] in one stage: each batch is drained right after
      // it is fed, so the ring holds one batch at a time (P2, P3).
      buffers::SubbufReader ring(inst_.ring(), job_.cpu);
      auto filter_write = tbb::make_filter<Batch*, void>(
          tbb::filter_mode::serial_in_order, [this, &ring](Batch* b) {
            Recycle back(*this, b);
            router_.feed(b->recs, job_.cpu, job_.counters, timing_);
            job_.written += out_->write_batch(job_.cpu, *b, ring);
          });
      tbb::parallel_pipeline(kMaxLiveBatches, read & filter_write);
    } else {
      auto drop = tbb::make_filter<Batch*, void>(tbb::filter_mode::serial_in_order,
                                                 [this](Batch* b) { Recycle back(*this, b); });
      tbb::parallel_pipeline(kMaxLiveBatches, read & filter & drop);
    }
    job_.walk = cursor_.stats();
  }

 private:
  // Batches are reused: a fresh one (160 KiB of records) is a new mapping
  // whose pages fault in on first touch, which cost more than the records'
  // decoding; kMaxLiveBatches of them circulate. The stages may run on
  // different threads, hence the lock (once per batch, not per record).
  std::unique_ptr<Batch> take_batch() {
    {
      std::lock_guard lk(pool_mu_);
      if (!pool_.empty()) {
        std::unique_ptr<Batch> b = std::move(pool_.back());
        pool_.pop_back();
        return b;
      }
    }
    auto b = std::make_unique<Batch>();
    b->recs.reserve(kBatchRecords);
    return b;
  }
  struct Recycle {  // gives a batch back to the pool when its last stage ends
    CpuPipeline& p;
    Batch* b;
    Recycle(CpuPipeline& pp, Batch* bb) : p(pp), b(bb) {}
    ~Recycle() {
      std::unique_ptr<Batch> own(b);
      own->recs.clear();
      own->lost.clear();
      std::lock_guard lk(p.pool_mu_);
      p.pool_.push_back(std::move(own));
    }
  };

  // [read] up to kBatchRecords records or kBatchBytes of payload.
  Batch* read_batch(tbb::flow_control& fc) {
    std::unique_ptr<Batch> b = take_batch();
    size_t bytes = 0;
    while (b->recs.size() < kBatchRecords && bytes < kBatchBytes) {
      const std::optional<TraceRecord> r = cursor_.next();
      if (!r) break;
      if (r->lost_before != 0) [[unlikely]]
        b->lost.emplace_back(static_cast<uint32_t>(b->recs.size()), r->lost_before);
      b->recs.push_back(Rec{r->ts, r->payload.data(), static_cast<uint32_t>(r->payload.size()),
                            EmitResult::disabled, seq_++});
      bytes += r->payload.size();
    }
    const uint64_t pages = cursor_.stats().pages;
    progress_.add((pages - pages_seen_) * reader_.page_size(), b->recs.size());
    pages_seen_ = pages;
    if (b->recs.empty()) {
      fc.stop();
      return nullptr;
    }
    return b.release();
  }

  const TraceDatReader& reader_;
  Instance& inst_;
  const Router& router_;
  Output* out_;
  ProgressBar& progress_;
  bool timing_;
  CpuJob& job_;
  CpuRecordCursor cursor_;
  uint64_t seq_ = 0;  // records read so far from this CPU's stream
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Batch>> pool_;  // batches done with, for read_batch
  uint64_t pages_seen_ = 0;
};

// ---- time order across CPUs (inter-event triggers) ---------------------------

// A trigger that pairs events (variables, onmatch/onmax/onchange) needs them
// in the order they happened, across CPUs, as the kernel saw them: the
// records of all CPUs merged by time stamp (ties to the lower CPU, as
// `trace-cmd report` orders them), fed on one thread in runs of one CPU.
// A trigger command for "sys:event", and where it was given: "--trigger
// '...'", or the config's "FILE:LINE: events."PATTERN".trigger" (its error
// names that place).
struct TriggerCmd {
  std::string event, cmd, origin;
};
using TriggerCmds = std::vector<TriggerCmd>;

bool needs_time_order(const ReplayOptions& o, const TriggerCmds& cmds) {
  if (!o.synthetic_args.empty()) return true;
  for (const auto& [ev, cmd, origin] : cmds)
    if (cmd.find('$') != std::string::npos || cmd.find("onmatch(") != std::string::npos ||
        cmd.find("onmax(") != std::string::npos || cmd.find("onchange(") != std::string::npos ||
        cmd.find("_hist:") != std::string::npos)
      return true;
  return false;
}

void run_ordered(const TraceDatReader& reader, const Router& router, bool timing,
                 std::vector<CpuJob>& jobs) {
  std::vector<CpuJob*> by_cpu;
  for (CpuJob& j : jobs) {
    if (by_cpu.size() <= j.cpu) by_cpu.resize(j.cpu + 1, nullptr);
    by_cpu[j.cpu] = &j;
  }
  std::vector<uint64_t> seq(by_cpu.size(), 0);
  std::vector<Rec> run;
  run.reserve(kBatchRecords);
  uint32_t run_cpu = UINT32_MAX;
  auto flush = [&] {
    if (run.empty()) return;
    router.feed(run, run_cpu, by_cpu[run_cpu]->counters, timing);
    run.clear();
  };
  MergedRecordCursor cur = reader.records();
  while (const std::optional<TraceRecord> r = cur.next()) {
    if (r->cpu >= by_cpu.size() || by_cpu[r->cpu] == nullptr) [[unlikely]]
      continue;
    if (r->cpu != run_cpu || run.size() == kBatchRecords) {
      flush();
      run_cpu = r->cpu;
    }
    run.push_back(Rec{r->ts, r->payload.data(), static_cast<uint32_t>(r->payload.size()),
                      EmitResult::disabled, seq[r->cpu]++});
  }
  flush();
}

// The input's own counts (discarded, lost) per CPU after a run_ordered():
// one more walk, outside the timed part.
void walk_stats(const TraceDatReader& reader, std::vector<CpuJob>& jobs) {
  for (CpuJob& j : jobs) {
    CpuRecordCursor c = reader.cpu_records(j.data_index);
    while (c.next()) {
    }
    j.walk = c.stats();
  }
}

// Ring geometry for the replay instance (P3).
uint64_t ring_kb(uint32_t subbuf_kb) {
  // Worst case per batch in the ring: every record 16 bytes of header plus
  // up to 7 of alignment plus its payload; plus one partly used sub-buffer
  // per batch (a record never spans sub-buffers).
  const uint64_t per_batch = kBatchRecords * 24 + kBatchBytes + 2ull * subbuf_kb * 1024;
  // One batch is in the ring at a time ([filter] and [write] are one stage
  // with -o); twice more as slack.
  const uint64_t bytes = 3 * per_batch;
  return (bytes + 1023) / 1024;
}

// The input file, with what its reader skipped noted. The open refuses a
// FIFO (without blocking), a device or a directory.
TraceDatReader open_input(const ReplayOptions& o, ReplayResult& res) {
  TraceDatReader reader = [&] {
    try {
      return TraceDatReader::open(o.input);
    } catch (const InputFileError& e) {
      throw ReplayError(e.what());
    }
  }();
  if (reader.is_latency())
    throw ReplayError(o.input.string() + ": a latency-format file has no records to replay");
  // Formats the reader skipped (unparsable text): their records replay as unknown IDs.
  for (const std::string& w : reader.warnings())
    res.warnings.push_back(fmt::format("{}: {}", reader.name(), w));
  return reader;
}

// Registers the file's events with their kernel IDs; returns the CPU count
// the replay needs (the file's, or one past its highest CPU with data).
uint32_t register_events(const TraceDatReader& reader, Registry& registry, ReplayResult& res) {
  for (const EventFormat& f : reader.formats()) {
    try {
      registry.add(f);
    } catch (const std::exception& e) {
      res.warnings.push_back(
          fmt::format("format {}/{} (ID {}) not replayable: {}", f.system, f.name, f.id, e.what()));
    }
  }
  uint32_t ncpu = std::max<uint32_t>(reader.cpu_count(), 1);
  for (const CpuDataInfo& c : reader.cpu_data()) ncpu = std::max(ncpu, c.cpu + 1);
  return ncpu;
}

// The recording kernel's symbols, which its filters compiled against:
// --kallsyms, else the file's.
SymbolRanges filter_symbols(const ReplayOptions& o, const TraceDatReader& reader) {
  if (!o.kallsyms) return SymbolRanges(reader.kallsyms_text());
  std::string text;
  try {
    text = read_regular_file(*o.kallsyms, kMaxKallsymsBytes);
  } catch (const InputFileError& e) {
    throw ReplayError(std::string("--kallsyms: ") + e.what());
  }
  return SymbolRanges(text);
}

// What make_plan takes: the --filter arguments and the config's main
// instance (loaded into `config`, which the result points into), compiled
// as the recording kernel would have: its CPU count and `symbols`, which
// must outlive the result.
PlanInput plan_input(const ReplayOptions& o, const SymbolRanges& symbols, uint32_t ncpu,
                     std::optional<Config>& config, ReplayResult& res) {
  PlanInput in;
  for (const std::string& a : o.filter_args) in.filters.push_back(parse_filter_arg(a));
  if (o.config) {
    try {
      config = load_config(*o.config);
    } catch (const ConfigError& e) {
      throw ReplayError(e.what());
    }
    in.config = &config->instances.front();
    if (config->instances.size() > 1)
      res.warnings.push_back(
          fmt::format("{}: only the main instance is replayed ({} others ignored)",
                      o.config->string(), config->instances.size() - 1));
  }
  in.only_filtered = o.only_filtered;
  in.compile.nr_cpu_ids = ncpu;
  in.compile.trailing_operator = o.trailing_operator;
  if (!symbols.empty()) {
    in.compile.symbol_by_name = [&symbols](std::string_view n) { return symbols.by_name(n); };
    in.compile.symbol_by_address = [&symbols](uint64_t a) { return symbols.by_address(a); };
  }
  return in;
}

using Triggers = std::vector<std::pair<const EventDesc*, std::string>>;

// --trigger (each names its event), then the config's [events.*] trigger
// keys, in order. A triggered event of the file is replayed (its triggers
// see every record), soft-disabled when nothing else asked for it. Events
// of system "synthetic" are defined by --synthetic on the instance: they
// are resolved once it exists (set_triggers).
TriggerCmds collect_triggers(const ReplayOptions& o, const Registry& registry, const PlanInput& in,
                             std::vector<EventPlan>& plan) {
  Triggers triggers;
  TriggerCmds trigger_cmds;
  for (const std::string& a : o.trigger_args) {
    const size_t c1 = a.find(':'), c2 = c1 == std::string::npos ? c1 : a.find(':', c1 + 1);
    if (c2 == std::string::npos)
      throw ReplayError(fmt::format("--trigger '{}': expected 'SYS:EVENT: TRIGGER'", a));
    std::string cmd = a.substr(c2 + 1);
    cmd.erase(0, cmd.find_first_not_of(" \t"));
    const bool synthetic = a.substr(0, c1) == "synthetic";
    const EventDesc* ev =
        synthetic ? nullptr : registry.find(a.substr(0, c1), a.substr(c1 + 1, c2 - c1 - 1));
    if (ev == nullptr && !synthetic)
      throw ReplayError(
          fmt::format("--trigger '{}': the file has no event {}", a, a.substr(0, c2)));
    trigger_cmds.push_back({a.substr(0, c2), cmd, fmt::format("--trigger '{}'", a)});
    if (ev != nullptr) triggers.emplace_back(ev, std::move(cmd));
  }
  if (in.config != nullptr)
    for (const EventSettings& s : in.config->events)
      for (const std::string& cmd : s.triggers)
        for (const EventDesc* ev : registry.match(s.pattern)) {
          triggers.emplace_back(ev, cmd);
          trigger_cmds.push_back(
              {ev->full_name(), cmd,
               fmt::format("{}:{}: {}: trigger '{}' rejected for {}", s.trigger_where.file,
                           s.trigger_where.line, s.trigger_where.key, cmd, ev->full_name())});
        }
  for (const auto& t : triggers)
    for (EventPlan& p : plan)
      if (p.event == t.first && !p.replayed) p.replayed = p.soft_disabled = true;
  return trigger_cmds;
}

// The replay instance's options: the config's, with one ring per recorded
// CPU, any_cpu writers, the recorded time stamps, and sub-buffers that hold
// a kernel page.
InstanceOptions replay_options(const ReplayOptions& o, const PlanInput& in,
                               const TraceDatReader& reader, uint32_t ncpu, ReplayResult& res) {
  InstanceOptions opts;
  if (in.config != nullptr) opts = in.config->options;
  opts.name = "replay";
  opts.cpus = ncpu;
  // Records go to the CPU they were recorded on, written from this thread:
  // only any_cpu writers can do that (cpu_local writes where it runs).
  if (opts.writers == WriterMode::cpu_local)
    res.warnings.push_back(
        fmt::format("{}: writers = \"cpu_local\" does not apply to replay, which writes each "
                    "record to its recorded CPU; using any_cpu",
                    o.config->string()));
  opts.writers = WriterMode::any_cpu;
  if (o.staging) opts.staging = *o.staging;
  const uint32_t page_kb = std::max<uint32_t>(4, (reader.page_size() + 1023) / 1024);
  uint32_t subbuf_kb = o.subbuf_size_kb != 0  ? o.subbuf_size_kb
                       : in.config != nullptr ? opts.subbuf_size_kb
                                              : 16;
  while (subbuf_kb < 2 * page_kb) subbuf_kb *= 2;  // a kernel record always fits
  opts.subbuf_size_kb = subbuf_kb;
  // Without -o nobody reads the ring: the kernel's default size, as a flight
  // recorder. With -o, room for every batch in flight (P3).
  if (o.buffer_size_kb != 0)
    opts.buffer_size_kb = o.buffer_size_kb;
  else if (in.config == nullptr)
    opts.buffer_size_kb = o.output ? ring_kb(subbuf_kb) : InstanceOptions{}.buffer_size_kb;
  if (o.output) opts.buffer_size_kb = std::max(opts.buffer_size_kb, ring_kb(subbuf_kb));
  // The ring stamps each record with its recorded time stamp (no clock read).
  opts.external_time = true;
  opts.mode = o.output ? BufferMode::drop_newest : BufferMode::overwrite;
  return opts;
}

// --synthetic, then the config's synthetic_events: before the triggers, which
// may name them.
void define_synthetic(const ReplayOptions& o, const PlanInput& in, Instance& inst) {
  for (const std::string& def : o.synthetic_args)
    if (const TriggerStatus st = set_synthetic_event(inst, def); !st)
      throw ReplayError(fmt::format("--synthetic '{}': {}", def, st.render()));
  if (in.config != nullptr)
    for (const std::string& def : in.config->synthetic_events)
      if (const TriggerStatus st = set_synthetic_event(inst, def); !st)
        throw ReplayError(
            fmt::format("{}: synthetic_events '{}': {}", o.config->string(), def, st.render()));
}

// Sets the triggers on the instance in the order given (a trigger may refer
// to the variables of one before it); returns them with their events.
Triggers set_triggers(Instance& inst, const Registry& registry, const TriggerCmds& trigger_cmds) {
  Triggers triggers;
  for (const auto& [name, cmd, origin] : trigger_cmds) {
    const EventDesc* ev = registry.find(name);
    if (ev == nullptr)
      throw ReplayError(
          fmt::format("{}: no synthetic event {} (define it with --synthetic)", origin, name));
    if (const TriggerStatus st = set_trigger(inst, *ev, cmd); !st)
      throw ReplayError(fmt::format("{}: {}", origin, st.render()));
    triggers.emplace_back(ev, cmd);
  }
  return triggers;
}

// -o's writer, or none.
std::unique_ptr<Output> open_output(const ReplayOptions& o, const TraceDatReader& reader,
                                    uint32_t ncpu, Instance& inst, ReplayResult& res) {
  if (!o.output) return nullptr;
  try {
    return std::make_unique<Output>(reader, ncpu, inst.ring().subbuf_size(), *o.output,
                                    res.warnings);
  } catch (const std::system_error& e) {
    throw ReplayError(std::string("-o: ") + e.what());
  }
}

// The timed part: one TBB pipeline per CPU stream, or one walk in time order
// (`ordered`). Sets wall_s and cpu_s; returns ns per rdtsc cycle, calibrated
// over the run itself.
double run_timed(const ReplayOptions& o, const TraceDatReader& reader, Instance& inst,
                 const Router& router, Output* out, bool ordered, std::vector<CpuJob>& jobs,
                 ReplayResult& res) {
  uint64_t total_bytes = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].data_index = i;
    jobs[i].cpu = reader.cpu_data()[i].cpu;
    jobs[i].counters.resize(router.counter_slots());
    total_bytes += reader.cpu_data()[i].size;
  }
  const bool bar = o.progress == ProgressMode::on ||
                   (o.progress == ProgressMode::automatic && ProgressBar::wanted(total_bytes));

  std::optional<tbb::global_control> limit;
  if (o.threads != 0) limit.emplace(tbb::global_control::max_allowed_parallelism, o.threads);

  const uint64_t w0 = wall_ns(), c0 = process_cpu_ns(), tsc0 = __rdtsc();
  if (ordered) {
    run_ordered(reader, router, o.timing, jobs);
  } else {
    ProgressBar progress(bar, total_bytes);
    tbb::task_group tg;
    for (CpuJob& job : jobs)
      tg.run([&, jp = &job] {
        CpuPipeline(reader, inst, router, out, progress, o.timing, *jp).run();
      });
    tg.wait();
  }
  const uint64_t w1 = wall_ns(), c1 = process_cpu_ns(), tsc1 = __rdtsc();
  if (ordered) walk_stats(reader, jobs);
  res.wall_s = static_cast<double>(w1 - w0) * 1e-9;
  res.cpu_s = static_cast<double>(c1 - c0) * 1e-9;
  return tsc1 > tsc0 ? static_cast<double>(w1 - w0) / static_cast<double>(tsc1 - tsc0) : 0;
}

// The per-event rows (replayed or skipped events, by name) and totals from
// the CPUs' counters, the input's own losses, and the ring's counts.
void collect_counts(const std::vector<CpuJob>& jobs, const std::vector<EventPlan>& plan,
                    const Router& router, Instance& inst, double ns_per_cycle, ReplayResult& res) {
  std::vector<EventCounts> per_event(router.counter_slots());
  for (const CpuJob& j : jobs) {
    for (size_t s = 0; s < j.counters.size(); ++s) {
      const Counter& c = j.counters[s];
      // Sampled cycles scaled to every record of this event on this CPU.
      const double cycles = c.samples == 0
                                ? 0
                                : static_cast<double>(c.cycles) * static_cast<double>(c.ticks) /
                                      static_cast<double>(c.samples);
      per_event[s] +=
          EventCounts{c.replayed, c.kept,    c.discarded,
                      c.lost,     c.skipped, static_cast<uint64_t>(cycles * ns_per_cycle)};
    }
    res.input_discarded += j.walk.discarded;
    res.input_lost += j.walk.lost_events;
  }
  for (const EventPlan& p : plan) {
    const EventCounts& c = per_event[p.event->index()];
    if (c.replayed + c.skipped == 0) continue;
    EventRow row;
    row.name = p.event->full_name();
    row.filter = p.filter;
    row.route = router.route(*p.event);
    row.replayed = p.replayed;
    row.soft_disabled = p.soft_disabled;
    row.note = p.note;
    row.counts = c;
    row.path = inst.event_stats(*p.event);
    res.events.push_back(std::move(row));
    res.total += c;
  }
  std::sort(res.events.begin(), res.events.end(),
            [](const EventRow& a, const EventRow& b) { return a.name < b.name; });
  res.unknown = per_event[router.unknown_slot()].skipped;
  res.total.ns += per_event[router.unknown_slot()].ns;
  res.ring = inst.cpu_stats();
}

// The trigger and hist files of every triggered event, once each:
// .execname from the file's saved cmdlines, .sym from its kallsyms.
void collect_triggered(const ReplayOptions& o, const TraceDatReader& reader, Instance& inst,
                       const SymbolRanges& symbols, const Triggers& triggers, ReplayResult& res) {
  const KallsymsTable kallsyms(o.kallsyms ? read_regular_file(*o.kallsyms, kMaxKallsymsBytes)
                                          : std::string(reader.kallsyms_text()));
  HistNames names;
  names.comm = [&reader](int32_t pid) {
    if (pid == 0) return std::string("<idle>");
    const auto it = reader.cmdlines().find(pid);
    return it == reader.cmdlines().end() ? std::string("<...>") : it->second;
  };
  names.sym = [&](uint64_t addr, bool with_offset) -> std::optional<std::string> {
    const std::optional<SymbolHit> hit = kallsyms.lookup(addr);
    if (!hit) return std::nullopt;
    if (!with_offset) return std::string(hit->name);
    const auto range = symbols.by_address(addr);
    return fmt::format("{}+0x{:x}/0x{:x}", hit->name, hit->offset, range ? range->size : 0);
  };
  for (const auto& trigger : triggers) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda.
    const EventDesc* ev = trigger.first;
    if (std::any_of(res.triggered.begin(), res.triggered.end(),
                    [&](const ReplayResult::Triggered& t) { return t.event == ev->full_name(); }))
      continue;
    res.triggered.push_back(
        {ev->full_name(), trigger_file(inst, *ev), hist_file(inst, *ev, names)});
  }
}

}  // namespace

ReplayResult run_replay(const ReplayOptions& o) {
  ReplayResult res;
  const TraceDatReader reader = open_input(o, res);
  Registry registry;
  const uint32_t ncpu = register_events(reader, registry, res);
  res.cpus = ncpu;

  const SymbolRanges symbols = filter_symbols(o, reader);
  std::optional<Config> config;
  const PlanInput in = plan_input(o, symbols, ncpu, config, res);
  std::vector<EventPlan> plan = make_plan(registry, in);
  const TriggerCmds trigger_cmds = collect_triggers(o, registry, in, plan);

  Instance inst(replay_options(o, in, reader, ncpu, res), registry);
  // Enables and filters the events; routes by event ID.
  const Router router(reader, inst, plan, ncpu, o.trailing_operator);
  define_synthetic(o, in, inst);
  const Triggers triggers = set_triggers(inst, registry, trigger_cmds);
  const bool ordered = needs_time_order(o, trigger_cmds) ||
                       (in.config != nullptr && !in.config->synthetic_events.empty());
  if (ordered && o.output)
    throw ReplayError(
        "-o cannot be combined with triggers that pair events (variables, onmatch, onmax, "
        "onchange, "
        "--synthetic): those replay in time order on one thread");
  const std::unique_ptr<Output> out = open_output(o, reader, ncpu, inst, res);

  std::vector<CpuJob> jobs(reader.cpu_data().size());
  const double ns_per_cycle = run_timed(o, reader, inst, router, out.get(), ordered, jobs, res);
  if (out) {
    out->write();
    for (const CpuJob& j : jobs) res.output_records += j.written;
  }
  collect_counts(jobs, plan, router, inst, ns_per_cycle, res);
  if (!triggers.empty()) collect_triggered(o, reader, inst, symbols, triggers, res);
  return res;
}

}  // namespace tracepipe::replay
