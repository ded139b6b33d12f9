// The network sink: a recording sent to a real `trace-cmd listen` on
// loopback (trace-cmd's record -N protocol, version 3), compared through
// trace-cmd report with a local recording of the same events; the collector
// killed mid-run and unreachable at the start; a name whose nameserver
// never answers.
#include "tracepipe/core/record/net_sink.h"

#include <fmt/format.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "../instance/test_events.h"
#include "../tracedat/tracedat_test_util.h"
#include "collector.h"
#include "test_support.h"
#include "tracepipe/core/record/recorder.h"

using namespace tracepipe;
using namespace tp_core_test;
using tp_record_test::Collector;
using tp_tracedat_test::have_trace_cmd;
using tp_tracedat_test::run;
using tp_tracedat_test::TempPath;

using tp_record_test::big_options;
using tp_record_test::emit_range;
using tp_record_test::report_records;

// What a recorder's on_error reported: how many times, and the last message.
struct Failures {
  std::atomic<int> reports{0};
  std::mutex mu;
  std::string last;
  std::function<void(const std::string&)> hook() {
    return [this](const std::string& m) {
      std::lock_guard lk(mu);
      last = m;
      reports.fetch_add(1);
    };
  }
  std::string message() {
    std::lock_guard lk(mu);
    return last;
  }
};

// A recording to a real `trace-cmd listen` whose processes are then frozen
// (as one suspended in a terminal), with a 300 ms collector timeout: the
// sink's sends stall until it reports its fault. Skips without trace-cmd.
struct FrozenCollector {
  Collector col;
  Instance inst{small_options(Staging::per_thread)};
  Failures failures;
  std::unique_ptr<record::Recorder> rec;
  FrozenCollector() {
    if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
    if (!col.ok()) TP_SKIP("cannot start trace-cmd listen: " + col.why());
    inst.enable(Sample::desc());
    record::RecorderOptions ro;
    ro.collector = col.address();
    ro.watermark_percent = 0;
    ro.collector_timeout = std::chrono::milliseconds(300);
    ro.on_error = failures.hook();
    rec = std::make_unique<record::Recorder>(inst, ro);
    REQUIRE(rec->wait_ready(std::chrono::seconds(10)));
    col.freeze(true);  // the collector's processes stop: its socket buffers fill, then sends stall
  }
  /// Emits 1000 events at a time until the sink reports its fault; returns
  /// {emitted, kept}.
  std::pair<uint64_t, uint64_t> emit_until_fault() {
    uint64_t emitted = 0, kept = 0;
    for (int round = 0; round < 20000 && failures.reports.load() == 0; ++round) {
      kept += emit_range(inst, 0, 1000);
      emitted += 1000;
    }
    return {emitted, kept};
  }
};

TEST_CASE("net sink: collector addresses are spelled as trace-cmd record -N takes them",
          "[record][net]") {
  auto a = record::parse_collector("example.org:1234");
  REQUIRE(a);
  CHECK(a->host == "example.org");
  CHECK(a->port == 1234);
  a = record::parse_collector("5000");
  REQUIRE(a);
  CHECK(a->host == "localhost");
  CHECK(a->port == 5000);
  a = record::parse_collector("[::1]:77");
  REQUIRE(a);
  CHECK(a->host == "::1");
  CHECK(a->text() == "[::1]:77");
  CHECK_FALSE(record::parse_collector("host:"));
  CHECK_FALSE(record::parse_collector("host:0"));
  CHECK_FALSE(record::parse_collector("host:65536"));
  CHECK_FALSE(record::parse_collector("host:12x"));
  CHECK_FALSE(record::parse_collector("::1:80"));
  CHECK_FALSE(record::parse_collector(""));
  Instance inst(small_options(Staging::per_thread));
  record::RecorderOptions ro;
  ro.collector = "nohost:";
  CHECK_THROWS_AS(record::Recorder(inst, ro), std::invalid_argument);
  ro.collector = "localhost:1";
  ro.output = "x.dat";
  CHECK_THROWS_AS(record::Recorder(inst, ro), std::invalid_argument);
  ro.output.clear();
  ro.max_file_bytes = 1 << 20;
  CHECK_THROWS_AS(record::Recorder(inst, ro), std::invalid_argument);
}

TEST_CASE("net sink: trace-cmd listen writes the same records as a local recording",
          "[record][net]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  Collector col;
  if (!col.ok()) TP_SKIP("cannot start trace-cmd listen: " + col.why());
  const uint32_t n = 20000;
  const int cpus = static_cast<int>(std::min(2u, std::thread::hardware_concurrency()));
  // The same events twice: into a local file, then to the collector.
  auto record_once = [&](record::RecorderOptions ro) {
    Instance inst(big_options());
    inst.enable(Sample::desc());
    record::Recorder rec(inst, ro);
    REQUIRE(rec.wait_ready(std::chrono::seconds(10)));
    uint64_t kept = 0;
    for (uint32_t at = 0; at < n; at += 1000)
      kept += emit_range(inst, at, at + 1000, static_cast<int>(at / 1000) % cpus);
    const record::RecorderStats s = rec.stop();
    REQUIRE(!rec.error());
    CHECK(kept == n);
    CHECK(s.records == n);
    CHECK(s.dropped == 0);
    CHECK(s.unwritten == 0);
    return s;
  };
  TempPath local("net_local.dat");
  record::RecorderOptions lo;
  lo.output = local.path;
  (void)record_once(lo);
  record::RecorderOptions no;
  no.collector = col.address();
  const record::RecorderStats s = record_once(no);
  CHECK(s.bytes > 0);
  // The collector stored everything (its readers closed the connections):
  // nothing sent is left unacknowledged, and the summary says "sent".
  CHECK(s.collector);
  CHECK(s.unacked_bytes == 0);
  {
    const std::string sum = record::format_summary(s, std::nullopt, "tp: ");
    INFO(sum);
    CHECK(sum.find(fmt::format("tp: collector {}: {} records, {} bytes sent, 0 dropped\n",
                               col.address(), n, s.bytes)) != std::string::npos);
    CHECK(sum.find("acknowledged") == std::string::npos);
  }
  const auto file = col.wait_file();
  INFO(col.log());
  REQUIRE(file);
  const auto want = report_records(local.path);
  const auto got = report_records(*file);
  REQUIRE(want.size() == n);
  REQUIRE(got.size() == want.size());
  CHECK(got == want);
  CHECK(got.front().find("seq=0 ") != std::string::npos);
  // The readers read 64 KiB at a time (MSG_TINIT's page size, net_sink.h),
  // and the file's pages are still 4 KiB ones (the report above).
  CHECK(col.log().find("pagesize=65536") != std::string::npos);
}

TEST_CASE("net sink: the collector's read size is whole pages, 64 KiB or one page if larger",
          "[record][net]") {
  record::NetSinkOptions o;
  o.address = *record::parse_collector("localhost:1");
  CHECK(record::NetSink(o, 2, 4096).read_size() == 65536);
  CHECK(record::NetSink(o, 2, 12288).read_size() == 61440);  // 5 pages of 12 KiB
  CHECK(record::NetSink(o, 2, 65536).read_size() == 65536);
  CHECK(record::NetSink(o, 2, 1u << 20).read_size() == 1u << 20);
}

TEST_CASE("net sink: an empty recording reaches the collector as a valid trace.dat",
          "[record][net]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  Collector col;
  if (!col.ok()) TP_SKIP("cannot start trace-cmd listen: " + col.why());
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  record::RecorderOptions ro;
  ro.collector = col.address();
  record::Recorder rec(inst, ro);
  const auto s = rec.stop();
  REQUIRE(!rec.error());
  CHECK(s.records == 0);
  const auto file = col.wait_file();
  INFO(col.log());
  REQUIRE(file);
  CHECK_NOTHROW(run(fmt::format("trace-cmd report -i {}", file->string())));
}

TEST_CASE(
    "net sink: the collector killed mid-run is reported once with its cause, the application goes "
    "on",
    "[record][net][fault]") {
  if (!have_trace_cmd()) TP_SKIP("trace-cmd is not installed (Debian package trace-cmd)");
  Collector col;
  if (!col.ok()) TP_SKIP("cannot start trace-cmd listen: " + col.why());
  Instance inst(small_options(Staging::per_thread));
  inst.enable(Sample::desc());
  Failures failures;
  record::RecorderOptions ro;
  ro.collector = col.address();
  ro.watermark_percent = 0;
  ro.collector_timeout = std::chrono::milliseconds(1000);
  ro.on_error = failures.hook();
  record::Recorder rec(inst, ro);
  uint64_t emitted = 0, kept = 0;
  // Some data reaches the collector first.
  for (int round = 0; round < 5000 && rec.stats().records == 0; ++round) {
    kept += emit_range(inst, 0, 1000);
    emitted += 1000;
  }
  REQUIRE(rec.stats().records > 0);
  REQUIRE(failures.reports.load() == 0);
  col.kill();
  for (int round = 0; round < 20000 && failures.reports.load() == 0; ++round) {
    kept += emit_range(inst, 0, 1000);
    emitted += 1000;
    tp_record_test::pause_ms(1);  // lets the recorder send and look (200 ms period)
  }
  REQUIRE(failures.reports.load() == 1);
  {
    const std::string msg = failures.message();
    INFO(msg);
    CHECK(msg.find("collector " + col.address()) != std::string::npos);
    const bool cause = msg.find("Broken pipe") != std::string::npos ||
                       msg.find("Connection reset") != std::string::npos ||
                       msg.find("closed the connection") != std::string::npos;
    CHECK(cause);
  }
  // The application goes on; what follows is counted, not sent.
  kept += emit_range(inst, 0, 5000);
  emitted += 5000;
  const auto s = rec.stop();
  CHECK(failures.reports.load() == 1);
  CHECK(s.failed);
  CHECK(s.unwritten > 0);
  CHECK(s.records + s.unwritten == kept);
  CHECK(s.records + s.unwritten + s.dropped == emitted);
}

TEST_CASE("net sink: a collector unreachable at the start is reported once, every record counted",
          "[record][net][fault]") {
  const uint16_t port = tp_record_test::free_port();  // nothing listens there
  Instance inst(big_options());
  inst.enable(Sample::desc());
  Failures failures;
  record::RecorderOptions ro;
  ro.collector = fmt::format("127.0.0.1:{}", port);
  ro.on_error = failures.hook();
  record::Recorder rec(inst, ro);
  CHECK_FALSE(rec.wait_ready(std::chrono::seconds(10)));  // false at once: refused
  const uint64_t kept = emit_range(inst, 0, 10000);
  const auto s = rec.stop();
  REQUIRE(failures.reports.load() == 1);
  CHECK(failures.message() ==
        fmt::format(
            "recording to collector 127.0.0.1:{}: connecting to 127.0.0.1:{}: Connection refused",
            port, port));
  CHECK(s.failed);
  CHECK(s.records == 0);
  CHECK(s.unwritten == kept);
  CHECK(kept == 10000);
}

TEST_CASE(
    "net sink: a collector that stops reading fails the sink after the timeout, nothing waits "
    "longer",
    "[record][net][fault]") {
  FrozenCollector fc;
  Failures& failures = fc.failures;
  const auto [emitted, kept] = fc.emit_until_fault();
  REQUIRE(failures.reports.load() == 1);
  {
    const std::string msg = failures.message();
    INFO(msg);
    CHECK(msg.find("no progress for 300 ms") != std::string::npos);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto s = fc.rec->stop();
  // stop() is bounded (one timeout for the readers, whatever the CPU count),
  // not a hang: a loose bound, not a performance figure.
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(300 * 10));
  fc.col.freeze(false);
  CHECK(failures.reports.load() == 1);
  CHECK(s.failed);
  CHECK(s.unwritten > 0);
  CHECK(s.records + s.unwritten + s.dropped == emitted);
  CHECK(s.records + s.unwritten == kept);
}

// A collector that stops reading (its processes stopped, as a `trace-cmd
// listen` suspended in a terminal): the recorder waits in its sends while
// the writers fill the ring, so the summary blames the losses on the
// output, not on a recorder that "did not keep up", says what was kept,
// and counts the bytes as sent, with those the collector's host never
// acknowledged.
TEST_CASE(
    "net sink: a stopped collector: losses blamed on the output, bytes sent and unacknowledged",
    "[record][net][fault]") {
  FrozenCollector fc;
  Collector& col = fc.col;
  (void)fc.emit_until_fault();
  REQUIRE(fc.failures.reports.load() == 1);
  (void)emit_range(fc.inst, 0, 1000);  // after the fault: not written
  const auto s = fc.rec->stop();
  col.freeze(false);
  const std::string sum = record::format_summary(s, fc.rec->error(), "tp: ");
  INFO(sum);
  REQUIRE(s.failed);
  REQUIRE(s.cpus[0].lost_full > 0);  // the ring filled while the send waited
  // The send waited (off its CPU) for the collector_timeout.
  CHECK(s.longest_write_wait_ns >= 200'000'000);
  CHECK(s.write_wait_ns >= s.longest_write_wait_ns);
  CHECK(s.write_ns >= s.write_wait_ns);
  CHECK(sum.find("the recorder did not keep up") == std::string::npos);
  CHECK(sum.find(fmt::format("the output (collector {}) did not take the data fast enough: the "
                             "recorder waited for it up to ",
                             col.address())) != std::string::npos);
  CHECK(sum.find(fmt::format("no progress for 300 ms (Connection timed out); the {} records "
                             "before it were sent\n",
                             s.records)) != std::string::npos);
  // Bytes handed to the socket, not received: the stopped collector read
  // none of what filled its host's receive buffer and our send queue.
  CHECK(sum.find(fmt::format("tp: collector {}: {} records, {} bytes sent, ", col.address(),
                             s.records, s.bytes)) != std::string::npos);
  CHECK(s.unacked_bytes > 0);
  CHECK(sum.find(fmt::format("tp: warning: {} bytes sent to collector {} were not acknowledged by "
                             "its host when the connection closed: they may not have arrived\n",
                             s.unacked_bytes, col.address())) != std::string::npos);
}

// In a child with private mount and network namespaces: the loopback is up,
// a UDP socket holds 127.0.0.1:53 and never answers, and /etc/resolv.conf
// names it. A bare getaddrinfo() then waits for glibc's retries; the sink's
// lookup must give up at its timeout, with the step and the bound in its
// message. Exit codes: 0 ok, 77 no namespaces (not root), 78 the resolver
// answered at once (nothing to bound here), others a failed check.
TEST_CASE(
    "net sink: a name whose nameserver never answers fails at the timeout, not glibc's retries",
    "[record][net][fault]") {
  const auto conf =
      std::filesystem::temp_directory_path() / fmt::format("tp_resolv_{}.conf", getpid());
  { std::ofstream(conf) << "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n"; }
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNS | CLONE_NEWNET) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount(conf.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0)
      _exit(77);
    const int s = socket(AF_INET, SOCK_DGRAM, 0);
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0) _exit(77);
    ifr.ifr_flags |= IFF_UP;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0) _exit(77);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(53);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      _exit(77);  // the silent nameserver
    using Clock = std::chrono::steady_clock;
    // The precondition: unbounded, the lookup takes glibc's timeout (2 s).
    auto t0 = Clock::now();
    addrinfo* res = nullptr;
    const int g = getaddrinfo("collector.tracepipe-test.invalid", "12345", nullptr, &res);
    if (res != nullptr) freeaddrinfo(res);
    if (g == 0) _exit(10);
    if (Clock::now() - t0 < std::chrono::milliseconds(1500)) _exit(78);
    record::NetSinkOptions o;
    o.address = *record::parse_collector("collector.tracepipe-test.invalid:12345");
    o.timeout = std::chrono::milliseconds(200);
    record::NetSink sink(o, 1, 4096);
    const std::vector<std::byte> headers(16);
    t0 = Clock::now();
    const int err = sink.connect(headers);
    const auto took = Clock::now() - t0;
    if (err != ETIMEDOUT) _exit(11);
    if (sink.stage() != "resolving collector.tracepipe-test.invalid" ||
        sink.cause() != "no answer within 200 ms")
      _exit(12);
    // Bounded by the sink's 200 ms, well under the resolver's 2 s (a loose
    // bound that says "not glibc's", not a performance figure).
    if (took > std::chrono::milliseconds(1000)) _exit(13);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  std::filesystem::remove(conf);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77)
    TP_SKIP("cannot make private mount and network namespaces (needs root)");
  if (WEXITSTATUS(status) == 78)
    TP_SKIP("the resolver answered a silent nameserver at once: nothing to bound");
  CHECK(WEXITSTATUS(status) == 0);
}
