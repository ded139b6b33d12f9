// Pieces of `tracepipe bench-peers` that need no peer: the interleaved
// runner over fake sides, the pinned pool, and the parsers of LTTng's MI
// listing and the kernel's per_cpu stats.
#include <sched.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tracepipe/bench/peers/lttng_session.h"
#include "tracepipe/bench/peers/micro.h"
#include "tracepipe/bench/peers/pinned_pool.h"
#include "tracepipe/bench/peers/tracefs.h"

using namespace tracepipe::peers;

namespace {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> v;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) v.push_back(i);
  return v;
}

/// A side that records what the runner asks of it.
class FakeSide final : public MicroSide {
 public:
  FakeSide(std::string name, std::vector<std::string>& log, std::mutex& mu)
      : name_(std::move(name)), log_(log), mu_(mu) {}
  std::string_view name() const override { return name_; }
  void begin_case(const MicroSetup& s) override {
    if (fail_begin) throw std::runtime_error("cannot begin");
    setup = s;
    add("begin");
  }
  void emit(uint32_t thread, uint64_t n) override {
    if (thread == 0) add("emit " + std::to_string(n));
    emitted.fetch_add(n);
    const int cpu = sched_getcpu();
    std::lock_guard<std::mutex> g(mu_);
    cpus_seen.push_back(cpu);
    threads_seen.push_back(thread);
  }
  void after_round() override { add("after"); }
  SideCounts end_case() override {
    add("end");
    SideCounts c;
    c.lost = 3;
    return c;
  }
  MicroSetup setup;
  bool fail_begin = false;
  std::atomic<uint64_t> emitted{0};
  std::vector<int> cpus_seen;
  std::vector<uint32_t> threads_seen;

 private:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> g(mu_);
    log_.push_back(name_ + " " + what);
  }
  std::string name_;
  std::vector<std::string>& log_;
  std::mutex& mu_;
};

}  // namespace

TEST_CASE("peers: micro case names round-trip and classify", "[peers]") {
  for (MicroCase c : kMicroCases) {
    REQUIRE(parse_micro_case(name(c)) == c);
  }
  CHECK(parse_micro_case("reject_int") == MicroCase::reject_int);
  CHECK_FALSE(parse_micro_case("reject"));
  CHECK_FALSE(parse_micro_case(""));
  CHECK(commits(MicroCase::enabled));
  CHECK(commits(MicroCase::accept_int));
  CHECK(commits(MicroCase::overwrite));
  CHECK_FALSE(commits(MicroCase::disabled));
  CHECK_FALSE(commits(MicroCase::reject_int));
  CHECK_FALSE(commits(MicroCase::reject_glob));
}

TEST_CASE("peers: the emitted event has the kernel's sched_switch payload", "[peers]") {
  const tp_peer_event e = peer_event();
  CHECK(std::string(e.prev_comm) == "hackbench");
  CHECK(std::string(e.next_comm) == "swapper/0");
  CHECK(e.prev_prio == 120);
  CHECK(e.next_prio == 120);
  // 16 + 4 + 4 + 8 + 16 + 4 + 4 bytes of payload on both sides.
  CHECK(sizeof e.prev_comm + sizeof(int32_t) + sizeof e.prev_prio + sizeof e.prev_state +
            sizeof e.next_comm + sizeof e.next_pid + sizeof e.next_prio ==
        56);
}

TEST_CASE("peers: a round's buffer holds every record of the round", "[peers]") {
  CHECK(round_buffer_kb(1) == 1024);  // floor
  CHECK(round_buffer_kb(200'000) * 1024 >= 200'000ull * 64 * 2);
  CHECK(round_buffer_kb(200'000) * 1024 < 200'000ull * 64 * 2 + 1024);
}

TEST_CASE("peers: run_micro interleaves sides A B A B and pins threads", "[peers][concurrency]") {
  const std::vector<int> cpus = allowed_cpus();
  REQUIRE_FALSE(cpus.empty());
  std::vector<std::string> log;
  std::mutex mu;
  FakeSide a("A", log, mu), b("B", log, mu);
  MicroOptions o;
  o.cases = {MicroCase::reject_int};
  o.threads = {1};
  o.events = 100;
  o.rounds = 3;
  std::vector<std::string> skipped;
  const std::vector<MicroCell> cells = run_micro(o, {&a, &b}, cpus, skipped);
  REQUIRE(cells.size() == 1);
  CHECK(skipped.empty());
  const std::vector<std::string> want{"A begin",    "B begin",  // untimed set-up
                                      "A emit 100", "A after", "A emit 100", "A after",  // warm-up
                                      "B emit 100", "B after", "B emit 100", "B after",  // warm-up
                                      "A emit 100", "A after", "B emit 100", "B after",  // round 1
                                      "A emit 100", "A after", "B emit 100", "B after",  // round 2
                                      "A emit 100", "A after", "B emit 100", "B after",  // round 3
                                      "A end",      "B end"};
  CHECK(log == want);
  REQUIRE(cells[0].sides.size() == 2);
  for (const SideResult& s : cells[0].sides) {
    CHECK(s.ns.size() == 3);
    CHECK(s.error.empty());
    CHECK(s.counts.lost == 3);
    CHECK(s.summary.n == 3);
    CHECK(s.summary.min <= s.summary.median);
    CHECK(s.summary.median <= s.summary.max);
  }
  CHECK(a.setup.kase == MicroCase::reject_int);
  CHECK(a.setup.events == 100);
  CHECK(a.setup.buffer_kb == round_buffer_kb(100));
  for (int cpu : a.cpus_seen) CHECK(cpu == cpus[0]);
}

TEST_CASE("peers: run_micro runs T threads on T CPUs and scales the disabled case",
          "[peers][concurrency]") {
  const std::vector<int> cpus = allowed_cpus();
  std::vector<std::string> log;
  std::mutex mu;
  FakeSide a("A", log, mu);
  MicroOptions o;
  o.cases = {MicroCase::disabled};
  o.threads = {1, 2, static_cast<uint32_t>(cpus.size() + 1)};
  o.events = 10;
  o.disabled_scale = 7;
  o.rounds = 2;
  std::vector<std::string> skipped;
  const std::vector<MicroCell> cells = run_micro(o, {&a}, cpus, skipped);
  // The impossible thread count is skipped with a reason.
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].find("only") != std::string::npos);
  const size_t runnable = cpus.size() >= 2 ? 2 : 1;
  REQUIRE(cells.size() == runnable);
  CHECK(cells[0].events == 70);
  // Per cell: two warm-up rounds then 2 timed rounds, on every thread.
  uint64_t want = 0;
  for (const MicroCell& c : cells) want += c.threads * (2 * 70 + 2 * 70);
  CHECK(a.emitted.load() == want);
  if (runnable == 2) {
    std::vector<int> two;
    for (size_t i = 0; i < a.threads_seen.size(); ++i)
      if (a.threads_seen[i] == 1) two.push_back(a.cpus_seen[i]);
    REQUIRE_FALSE(two.empty());
    for (int cpu : two) CHECK(cpu == cpus[1]);
  }
}

TEST_CASE("peers: a side that cannot begin is reported, the others still run", "[peers]") {
  const std::vector<int> cpus = allowed_cpus();
  std::vector<std::string> log;
  std::mutex mu;
  FakeSide a("A", log, mu), b("B", log, mu);
  b.fail_begin = true;
  MicroOptions o;
  o.cases = {MicroCase::enabled};
  o.threads = {1};
  o.events = 5;
  o.rounds = 2;
  std::vector<std::string> skipped;
  const std::vector<MicroCell> cells = run_micro(o, {&a, &b}, cpus, skipped);
  REQUIRE(cells.size() == 1);
  CHECK(cells[0].sides[0].ns.size() == 2);
  CHECK(cells[0].sides[1].ns.empty());
  CHECK(cells[0].sides[1].error == "cannot begin");
  for (const std::string& l : log) CHECK(l.rfind("B end", 0) != 0);  // never ended what never began
}

TEST_CASE("peers: PinnedPool rethrows a job's exception and stays usable", "[peers][concurrency]") {
  const std::vector<int> cpus = allowed_cpus();
  PinnedPool pool({cpus[0]});
  CHECK_THROWS_WITH(pool.run(1, [](uint32_t) { throw std::runtime_error("boom"); }), "boom");
  std::atomic<int> ran{0};
  const std::vector<PinnedPool::Elapsed> el = pool.run(1, [&](uint32_t) { ran.fetch_add(1); });
  CHECK(ran.load() == 1);
  CHECK(el.size() == 1);
  CHECK_THROWS_AS(pool.run(2, [](uint32_t) {}), std::invalid_argument);
  CHECK_THROWS_AS(pool.run(0, [](uint32_t) {}), std::invalid_argument);
}

TEST_CASE("peers: PinnedPool times wall and CPU time apart", "[peers][concurrency]") {
  const std::vector<int> cpus = allowed_cpus();
  PinnedPool pool({cpus[0]});
  // Sleeping takes wall time, not CPU time.
  const auto slept =
      pool.run(1, [](uint32_t) { std::this_thread::sleep_for(std::chrono::milliseconds(30)); });
  REQUIRE(slept.size() == 1);
  CHECK(slept[0].wall >= 30'000'000u);
  CHECK(slept[0].cpu < 10'000'000u);
  // Spinning takes both.
  const auto spun = pool.run(1, [](uint32_t) {
    timespec t0{}, t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    while ((t.tv_sec - t0.tv_sec) * 1'000'000'000 + (t.tv_nsec - t0.tv_nsec) < 20'000'000);
  });
  CHECK(spun[0].cpu >= 20'000'000u);
  CHECK(spun[0].wall >= spun[0].cpu / 2);
  CHECK(PinnedPool::mean_per(slept, 1000, false) == Approx(slept[0].wall / 1000.0));
  CHECK(PinnedPool::mean_per(slept, 1000, true) == Approx(slept[0].cpu / 1000.0));
  CHECK(PinnedPool::mean_per({}, 1000, true) == 0);
}

TEST_CASE("peers: LTTng MI listing gives the discarded and lost counters", "[peers][parser]") {
  const std::string xml =
      "<?xml "
      "version=\"1.0\"?><command><name>list</name><output><sessions><session><name>s</"
      "name><domains>"
      "<domain><type>UST</type><channels>"
      "<channel><name>ch</name><attributes><discarded_events>923631</discarded_events>"
      "<lost_packets>2</lost_packets></attributes></channel>"
      "<channel><name>ch2</name><attributes><discarded_events>9</discarded_events>"
      "<lost_packets>0</lost_packets></attributes></channel>"
      "</channels></domain></domains></session></sessions></output></command>";
  const LttngChannelStats s = parse_mi_channel_stats(xml);
  CHECK(s.discarded_events == 923640);
  CHECK(s.lost_packets == 2);
  CHECK_THROWS_AS(parse_mi_channel_stats("<command><output/></command>"), std::runtime_error);
  CHECK_THROWS_AS(parse_mi_channel_stats("<discarded_events>x</discarded_events>"),
                  std::runtime_error);
}

TEST_CASE("peers: the kernel's per_cpu stats are summed", "[peers][parser]") {
  // As /sys/kernel/tracing/per_cpu/cpu0/stats prints them.
  const std::string cpu0 =
      "entries: 74\noverrun: 5\ncommit overrun: 0\nbytes: 4712\noldest event ts:  1554.114577\n"
      "now ts:  1554.394112\ndropped events: 2\nread events: 0\n";
  const std::string cpu1 = "entries: 6\noverrun: 0\ncommit overrun: 0\ndropped events: 0\n";
  TracefsCounts c;
  add_stats_text(cpu0, c);
  add_stats_text(cpu1, c);
  CHECK(c.entries == 80);
  CHECK(c.overrun == 5);
  CHECK(c.dropped == 2);
  CHECK(c.recorded() == 87);
  TracefsCounts bad;
  CHECK_THROWS_AS(add_stats_text("overrun: 1\n", bad), std::runtime_error);
}
