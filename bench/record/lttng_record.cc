#include "tracepipe/bench/record/lttng_record.h"

#include <fmt/core.h>

#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tracepipe/bench/peers/lttng_index.h"
#include "tracepipe/bench/peers/process.h"

namespace tracepipe::record_bench {

std::unique_ptr<LttngRecordSide> LttngRecordSide::open(const std::string& plugin) {
  std::string path = plugin;
#ifdef TP_RECORD_BENCH_LTTNG_PLUGIN
  // Not installed, not beside the executable: the plugin of this build tree.
  if (path.empty() && peers::find_lttng_plugin("").empty()) path = TP_RECORD_BENCH_LTTNG_PLUGIN;
#endif
  // No daemon is started when there is no plugin to load.
  if (peers::find_lttng_plugin(path).empty()) (void)peers::LttngProbe::load(path);
  std::unique_ptr<LttngRecordSide> s(new LttngRecordSide());
  s->daemon_ = peers::LttngDaemon::start();
  s->probe_ = peers::LttngProbe::load(path);
  return s;
}

LttngRecordSide::~LttngRecordSide() {
  kept_.reset();  // destroy the session before stopping the daemon
  daemon_.reset();
}

std::optional<std::filesystem::path> LttngRecordSide::last_trace() const {
  if (!kept_) return std::nullopt;
  return kept_->output_dir();
}

std::string LttngRecordSide::description() const {
  return fmt::format(
      "LTTng-UST {} via {}; private lttng-sessiond pid {} ({}); channel per-UID, discard, default "
      "4 x 512 KiB "
      "sub-buffers per CPU, output on tmpfs; consumer and session daemons pinned to CPU {}{}, "
      "writer to CPU {}",
      "2.13", probe_.path, daemon_->pid(), daemon_->isolation(), consumer_cpu,
      consumer_fifo_priority != 0 ? fmt::format(" (consumer SCHED_FIFO {})", consumer_fifo_priority)
                                  : "",
      writer_cpu);
}

Run LttngRecordSide::run(double seconds, double rate, bool keep_trace) {
  kept_.reset();
  peers::LttngChannelSpec spec;  // LTTng's defaults: per-UID, 4 x 512 KiB, discard
  auto session =
      std::make_unique<peers::LttngSession>(*daemon_, fmt::format("rec{}", ++seq_), spec, "");
  if (!probe_.wait_enabled(true, std::chrono::seconds(5)))
    throw std::runtime_error("the LTTng session started but the tracepoint did not become enabled");
  // The session daemon spawns the consumer when the first channel is enabled.
  const std::vector<pid_t> consumers = daemon_->consumer_pids();
  if (consumers.empty())
    throw std::runtime_error("lttng-sessiond has no lttng-consumerd child after `lttng start`");
  peers::pin_process(daemon_->pid(), consumer_cpu);
  uint64_t cpu0 = 0;
  for (const pid_t c : consumers) {
    peers::pin_process(c, consumer_cpu);
    if (consumer_fifo_priority != 0) peers::set_fifo_priority(c, consumer_fifo_priority);
    cpu0 += peers::process_cpu_ns(c);
  }
  Run r;
  std::thread w([&] {
    if (!pin_this_thread(writer_cpu))
      r.note = fmt::format("writer not pinned to CPU {}", writer_cpu);
    const std::string note = r.note;
    r = paced_writer([&](uint64_t n) { probe_.emit(n); }, seconds, rate);
    r.note = note;
  });
  w.join();
  const peers::LttngChannelStats st = session->stop();  // waits until the consumer wrote everything
  uint64_t cpu1 = 0;
  for (const pid_t c : consumers) cpu1 += peers::process_cpu_ns(c);
  const peers::LttngIndexStats idx = peers::read_lttng_index(session->output_dir());
  if (idx.events_discarded != st.discarded_events)
    r.note += fmt::format(" lttng list says {} discarded, the packet indexes {};",
                          st.discarded_events, idx.events_discarded);
  if (st.lost_packets != 0) r.note += fmt::format(" {} packets lost;", st.lost_packets);
  r.dropped = std::max(st.discarded_events, idx.events_discarded) + st.lost_packets;
  r.written = r.emitted > r.dropped ? r.emitted - r.dropped : 0;
  r.bytes = session->stream_bytes();
  r.consumer_ns_per_event =
      r.written != 0 ? static_cast<double>(cpu1 - cpu0) / static_cast<double>(r.written) : 0.0;
  if (keep_trace) kept_ = std::move(session);
  return r;
}

std::optional<uint64_t> count_events(const std::filesystem::path& trace_dir, std::string& why) {
  if (peers::find_in_path("babeltrace2").empty()) {
    why = "babeltrace2 is not installed";
    return std::nullopt;
  }
  // step=+0 (unsigned): the counter prints its totals once, at the end (not every 10000 messages).
  const peers::ProcessResult res = peers::run_process(
      {"babeltrace2", trace_dir.string(), "--component=sink.utils.counter", "--params=step=+0"},
      std::chrono::minutes(5));
  if (!res.ok()) {
    why = fmt::format("babeltrace2 failed ({}): {}", res.exit_code, res.output.substr(0, 300));
    return std::nullopt;
  }
  // One "<count> <Type> message(s)" line per message type, "Event" among them.
  std::istringstream in(res.output);
  std::string line;
  std::optional<uint64_t> events;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    uint64_t n = 0;
    std::string what, kind;
    if (ls >> n >> what >> kind && what == "Event" && kind.starts_with("message")) events = n;
  }
  if (events) return events;
  why = "babeltrace2's counter printed no event count: " + res.output.substr(0, 300);
  return std::nullopt;
}

}  // namespace tracepipe::record_bench
