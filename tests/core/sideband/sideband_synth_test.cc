// State synthesis: what it writes for a process with named threads and
// mappings, how it orders with events, and how it reports a buffer that
// fills up (S3: never a silent truncation).
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "sideband_test_util.h"
#include "test_support.h"

using namespace tracepipe;
using namespace tp_sideband_test;

namespace {

// Threads that name themselves and wait until destroyed.
class NamedThreads {
 public:
  explicit NamedThreads(std::vector<std::string> names) {
    tids_.resize(names.size());
    for (size_t i = 0; i < names.size(); ++i)
      threads_.emplace_back([this, i, n = names[i]] {
        prctl(PR_SET_NAME, n.c_str(), 0, 0,
              0);  // truncates to 15 bytes (pthread_setname_np refuses)
        tids_[i] = static_cast<int32_t>(gettid());
        ready_.fetch_add(1);
        while (!stop_.load()) std::this_thread::yield();
      });
    while (ready_.load() != names.size()) std::this_thread::yield();
  }
  ~NamedThreads() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  int32_t tid(size_t i) const { return tids_[i]; }

 private:
  std::vector<std::thread> threads_;
  std::vector<int32_t> tids_;
  std::atomic<size_t> ready_{0};
  std::atomic<bool> stop_{false};
};

// `n` one-page anonymous mappings that cannot merge with anything: each sits
// between PROT_NONE guard pages (and protections alternate).
class Mappings {
 public:
  explicit Mappings(size_t n) {
    const size_t page = 4096;
    len_ = (2 * n + 1) * page;
    base_ = static_cast<char*>(mmap(nullptr, len_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    for (size_t i = 0; i < n; ++i) {
      char* p = base_ + (2 * i + 1) * page;
      mprotect(p, page, (i % 2) != 0 ? PROT_READ : PROT_READ | PROT_WRITE);
      addrs_.push_back(reinterpret_cast<uint64_t>(p));
    }
  }
  ~Mappings() { munmap(base_, len_); }
  const std::vector<uint64_t>& addrs() const { return addrs_; }

 private:
  char* base_;
  size_t len_;
  std::vector<uint64_t> addrs_;
};

uint64_t lost_total(const Instance& inst) {
  uint64_t n = 0;
  for (const auto& s : inst.cpu_stats()) n += s.lost();
  return n;
}

}  // namespace

TEST_CASE("sideband synth: one record per thread and mapping, the executable, and synth_done",
          "[sideband][synth]") {
  prepare_thread();  // no first_write record of ours in the counts
  NamedThreads threads({"sb-alpha", "sb-beta", "sb-a-very-long-name"});
  Mappings maps(5);
  Instance inst(small_options());
  const SynthesisReport rep = enable_sideband(inst);
  INFO(rep.summary());
  REQUIRE(rep.complete());
  const ThreadList live = list_threads();
  CHECK(rep.threads == live.tids.size());
  CHECK(rep.threads >= 4);
  CHECK(rep.mappings >= 5);
  CHECK(rep.synth >= 1);
  CHECK(rep.attempted == 1 + rep.threads + rep.mappings + 1);
  CHECK(rep.kept == rep.attempted);
  CHECK(rep.lost == 0);
  CHECK(rep.summary().find("[complete]") != std::string::npos);

  const SidebandEvents& ev = SidebandEvents::global();
  const auto recs = snapshot(inst);
  const auto newtasks = of_type(recs, ev.task_newtask());
  const auto mmaps = of_type(recs, ev.mmap());
  const auto execs = of_type(recs, ev.process_exec());
  const auto dones = of_type(recs, ev.synth_done());
  CHECK(newtasks.size() == rep.threads);
  CHECK(mmaps.size() == rep.mappings);
  REQUIRE(execs.size() == 1);
  REQUIRE(dones.size() == 1);
  // Buffer order: process_exec, threads, mappings, synth_done.
  CHECK(recs.front().type() == ev.process_exec().id());
  CHECK(recs.back().type() == ev.synth_done().id());
  CHECK(execs[0].str(8) == read_exe_path());
  CHECK(execs[0].at<int32_t>(12) == getpid());
  CHECK(execs[0].at<uint32_t>(20) == rep.synth);
  CHECK(dones[0].at<uint32_t>(8) == rep.synth);
  CHECK(dones[0].at<uint32_t>(12) == rep.threads);
  CHECK(dones[0].at<uint32_t>(16) == rep.mappings);
  CHECK(dones[0].at<uint32_t>(20) == 0);
  CHECK(dones[0].at<uint64_t>(24) == rep.kept - 1);
  for (const Rec& r : newtasks) {
    CHECK(r.at<int32_t>(8) == getpid());
    CHECK(r.at<uint32_t>(20) == rep.synth);
    CHECK(r.at<uint64_t>(40) == (r.at<int32_t>(12) == getpid() ? 0u : 0x10900u));
  }

  SidebandState sb(inst.registry());
  for (const Rec& r : recs) sb.observe(r.span());
  CHECK(sb.malformed() == 0);
  CHECK(sb.comm(threads.tid(0)) == "sb-alpha");
  CHECK(sb.comm(threads.tid(1)) == "sb-beta");
  CHECK(sb.comm(threads.tid(2)) == "sb-a-very-long-");  // the kernel keeps 15 bytes
  CHECK(sb.comm(static_cast<int32_t>(gettid())) == kernel_comm());
  CHECK(sb.executable() == read_exe_path());
  for (uint64_t a : maps.addrs()) {
    const auto* m = sb.mapping_at(a + 100);
    REQUIRE(m != nullptr);
    CHECK(m->addr == a);
    CHECK(m->len == 4096);
    CHECK((m->prot & MapProt::read) != 0);
    CHECK(m->flags == MapFlags::private_);
    CHECK(m->synth == rep.synth);
  }
  const auto rounds = sb.rounds();
  REQUIRE(rounds.size() == 1);
  CHECK(rounds[0].complete());
  CHECK(rounds[0].seen == rep.kept - 1);
}

TEST_CASE("sideband synth: records sit between the events written before and after",
          "[sideband][synth]") {
  prepare_thread();  // no first_write record of ours in the counts
  Instance inst(small_options());
  inst.enable(Seen::desc());
  enable_sideband(inst, false);
  for (uint32_t i = 0; i < 10; ++i) REQUIRE(emit_seen(inst, i) == EmitResult::kept);
  const SynthesisReport rep = synthesize_sideband(inst);
  REQUIRE(rep.complete());
  for (uint32_t i = 10; i < 20; ++i) REQUIRE(emit_seen(inst, i) == EmitResult::kept);
  const auto recs = snapshot(inst);
  REQUIRE(recs.size() == 20 + rep.kept);
  for (size_t i = 0; i < recs.size(); ++i) {
    INFO("record " << i);
    const bool seen = recs[i].type() == Seen::desc().id();
    if (i < 10 || i >= 10 + rep.kept) {
      REQUIRE(seen);
      CHECK(recs[i].at<uint32_t>(8) == (i < 10 ? i : i - rep.kept));
    } else {
      CHECK_FALSE(seen);
    }
    if (i > 0) CHECK(recs[i].ts >= recs[i - 1].ts);
  }
}

TEST_CASE("sideband synth: a drop-newest buffer that fills up reports every lost record",
          "[sideband][synth][loss]") {
  prepare_thread();    // no first_write record of ours in the counts
  Mappings maps(300);  // ~300 mmap records of ~80 bytes: far more than 8 KiB
  Instance inst(small_options(8, BufferMode::drop_newest, 1));
  const SynthesisReport rep = enable_sideband(inst);
  INFO(rep.summary());
  CHECK_FALSE(rep.complete());
  CHECK(rep.lost > 0);
  CHECK(rep.kept > 0);
  CHECK(rep.attempted == rep.kept + rep.lost);
  CHECK(rep.lost == rep.lost_threads + rep.lost_mappings + rep.lost_other);
  CHECK(rep.lost_mappings > 0);
  // synth_done (32 bytes) may still fit where the last mmap record did not.
  CHECK(rep.lost_other == (rep.done_kept ? 0u : 1u));
  CHECK(rep.summary().find("INCOMPLETE") != std::string::npos);
  CHECK(rep.summary().find(std::to_string(rep.lost) + " lost") != std::string::npos);
  // The ring buffer counted the same loss, and holds exactly what was kept.
  CHECK(lost_total(inst) == rep.lost);
  CHECK(inst.cpu_stats(0).lost_full == rep.lost);
  const auto recs = snapshot(inst);
  CHECK(recs.size() == rep.kept);
  const EventStats es = inst.event_stats(SidebandEvents::global().mmap());
  CHECK(es.lost == rep.lost_mappings);
  // The reader, without the report, sees an incomplete round: no
  // synth_done, or one that reports the loss.
  SidebandState sb(inst.registry());
  for (const Rec& r : recs) sb.observe(r.span());
  const auto rounds = sb.rounds();
  REQUIRE(rounds.size() == 1);
  CHECK(rounds[0].done == rep.done_kept);
  if (rounds[0].done) {
    CHECK(rounds[0].lost == rep.lost);
    CHECK(rounds[0].records == rep.kept - 1);
  }
  CHECK_FALSE(rounds[0].complete());
  CHECK(rounds[0].seen == rep.kept - (rep.done_kept ? 1 : 0));
}

TEST_CASE(
    "sideband synth: an overwrite buffer smaller than the state reports it, and so does the reader",
    "[sideband][synth][loss]") {
  prepare_thread();  // no first_write record of ours in the counts
  Mappings maps(300);
  Instance inst(small_options(8, BufferMode::overwrite, 1));
  const SynthesisReport rep = enable_sideband(inst);
  INFO(rep.summary());
  CHECK(rep.lost == 0);        // nothing refused...
  CHECK(rep.overwritten > 0);  // ...but its own start was overwritten
  CHECK(rep.done_kept);
  CHECK_FALSE(rep.complete());
  CHECK(inst.cpu_stats(0).overrun == rep.overwritten);
  SidebandState sb(inst.registry());
  for (const Rec& r : snapshot(inst)) sb.observe(r.span());
  const auto rounds = sb.rounds();
  REQUIRE(rounds.size() == 1);
  CHECK(rounds[0].done);
  CHECK(rounds[0].records == rep.kept - 1);
  CHECK(rounds[0].seen < rounds[0].records);
  CHECK(rounds[0].records - rounds[0].seen <= inst.cpu_stats(0).overrun);
  CHECK_FALSE(rounds[0].complete());
}

TEST_CASE("sideband synth: a paused buffer loses everything, counted", "[sideband][synth][loss]") {
  prepare_thread();  // no first_write record of ours in the counts
  Instance inst(small_options());
  enable_sideband(inst, false);
  inst.pause();
  const SynthesisReport rep = synthesize_sideband(inst);
  CHECK(rep.kept == 0);
  CHECK(rep.lost == rep.attempted);
  CHECK(rep.attempted > 3);
  uint64_t paused = 0;
  for (const auto& s : inst.cpu_stats()) paused += s.lost_paused;
  CHECK(paused == rep.lost);
  CHECK_FALSE(rep.complete());
}

TEST_CASE("sideband synth: filters and disabled events are counted apart from loss",
          "[sideband][synth]") {
  prepare_thread();  // no first_write record of ours in the counts
  Mappings maps(4);
  {
    Instance inst(small_options());
    enable_sideband(inst, false);
    REQUIRE(inst.set_filter(SidebandEvents::global().mmap(), "len > 4096").ok());
    const SynthesisReport rep = synthesize_sideband(inst);
    CHECK(rep.lost == 0);
    CHECK(rep.discarded > 0);
    CHECK(rep.attempted == rep.kept + rep.discarded);
    CHECK_FALSE(rep.complete());
    SidebandState sb(inst.registry());
    for (const Rec& r : snapshot(inst)) sb.observe(r.span());
    for (uint64_t a : maps.addrs())
      CHECK(sb.mapping_at(a) == nullptr);  // 4096-byte ones filtered out
    REQUIRE(sb.rounds().size() == 1);
    CHECK(sb.rounds()[0].complete());  // everything kept is there
  }
  {
    Instance inst(small_options());
    const SynthesisReport rep = synthesize_sideband(inst);  // nothing enabled
    CHECK(rep.disabled == rep.attempted);
    CHECK(rep.kept == 0);
    CHECK(rep.lost == 0);
    CHECK(snapshot(inst).empty());
  }
  {
    Instance inst(small_options());
    enable_sideband(inst, false);
    SynthesisOptions o;
    o.mappings = false;
    o.process = false;
    const SynthesisReport rep = synthesize_sideband(inst, o);
    CHECK(rep.complete());
    CHECK(rep.mappings == 0);
    CHECK(rep.attempted == rep.threads + 1);
  }
}

TEST_CASE("sideband synth: rounds are numbered process-wide and each restates the mappings",
          "[sideband][synth]") {
  prepare_thread();  // no first_write record of ours in the counts
  Instance inst(small_options());
  const SynthesisReport a = enable_sideband(inst);
  uint64_t addr;
  SynthesisReport b;
  {
    Mappings m(1);
    addr = m.addrs()[0];
    b = synthesize_sideband(inst);
  }
  const SynthesisReport c = synthesize_sideband(inst);  // after the munmap
  CHECK(b.synth == a.synth + 1);
  CHECK(c.synth == b.synth + 1);
  SidebandState sb(inst.registry());
  bool mapped_after_b = false;
  for (const Rec& r : snapshot(inst)) {
    sb.observe(r.span());
    if (r.type() == SidebandEvents::global().synth_done().id() && r.at<uint32_t>(8) == b.synth)
      mapped_after_b = sb.mapping_at(addr) != nullptr && sb.mapping_at(addr)->synth == b.synth;
  }
  CHECK(mapped_after_b);
  const auto* now = sb.mapping_at(addr);
  CHECK((now == nullptr || now->synth == c.synth));  // gone, or a new mapping reused the range
  REQUIRE(sb.rounds().size() == 3);
  for (const auto& r : sb.rounds()) CHECK(r.complete());
}

TEST_CASE("sideband synth: comm sources (kernel name vs the name tracepipe wrote)",
          "[sideband][synth]") {
  prepare_thread();  // no first_write record of ours in the counts
  NamedThreads t({"cs-initial"});
  Instance inst(small_options());
  enable_sideband(inst, false);
  REQUIRE_FALSE(set_thread_name(t.tid(0), "cs-api"));
  // Rename behind tracepipe's back.
  {
    const std::string path = "/proc/self/task/" + std::to_string(t.tid(0)) + "/comm";
    FILE* f = std::fopen(path.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("cs-raw", f);
    std::fclose(f);
  }
  auto synth_name = [&](CommSource src) {
    SynthesisOptions o;
    o.comm_source = src;
    o.mappings = false;
    const SynthesisReport rep = synthesize_sideband(inst, o);
    REQUIRE(rep.complete());
    SidebandState sb(inst.registry());
    for (const Rec& r : snapshot(inst)) sb.observe(r.span());
    return std::string(sb.comm(t.tid(0)).value_or("?"));
  };
  CHECK(synth_name(CommSource::tracepipe) == "cs-api");  // what tracepipe last wrote
  CHECK(synth_name(CommSource::kernel) == "cs-raw");     // the truth
  CHECK(synth_name(CommSource::tracepipe) == "cs-raw");  // and now tracepipe wrote that
}

TEST_CASE("sideband synth: an instance with its own registry", "[sideband][synth]") {
  prepare_thread();  // no first_write record of ours in the counts
  Registry reg;
  Instance inst(small_options(), reg);
  const SynthesisReport rep = enable_sideband(inst);
  REQUIRE(rep.complete());
  const SidebandEvents ev = SidebandEvents::register_in(reg);
  CHECK(inst.enabled(ev.mmap()));
  SidebandState sb(reg);
  for (const Rec& r : snapshot(inst)) sb.observe(r.span());
  CHECK(sb.comm(static_cast<int32_t>(gettid())) == kernel_comm());
  REQUIRE(sb.rounds().size() == 1);
  CHECK(sb.rounds()[0].complete());
  disable_sideband(inst);
  CHECK_FALSE(inst.enabled(ev.mmap()));
}

TEST_CASE("sideband synth: without /proc, the names tracepipe knows and a clear error",
          "[sideband][synth]") {
  // In a child with its own mount namespace and an empty tmpfs over /proc.
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (unshare(CLONE_NEWNS) != 0 ||
        mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("none", "/proc", "tmpfs", 0, nullptr) != 0)
      _exit(77);
    prepare_thread();
    Instance inst(small_options());
    enable_sideband(inst, false);
    if (set_thread_name("no-proc")) _exit(10);  // prctl: needs no /proc
    const SynthesisReport rep = synthesize_sideband(inst);
    if (rep.complete()) _exit(11);
    if (rep.error != "cannot read /proc/self/exe") _exit(12);
    if (rep.threads != 1 || rep.mappings != 0 || rep.lost != 0) _exit(13);
    if (rep.kept != rep.attempted || rep.attempted != 3)
      _exit(14);  // exec (empty name), our thread, done
    SidebandState sb(inst.registry());
    for (const Rec& r : snapshot(inst)) sb.observe(r.span());
    if (sb.comm(static_cast<int32_t>(gettid())) != "no-proc") _exit(15);
    if (sb.rounds().size() != 1 || !sb.rounds()[0].complete())
      _exit(16);  // what was written is all there
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77)
    TP_SKIP("cannot mount over /proc in a private mount namespace (needs root)");
  CHECK(WEXITSTATUS(status) == 0);
}
