// Live sideband: renames through the API, announce, note_mapping, the core
// hooks (first write, exit), and silence when nobody listens (S4).
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>

#include "sideband_test_util.h"
#include "test_support.h"
#include "tracepipe/core/sideband/sideband_hooks.h"
#include "tracepipe/core/sideband/testing/hooks.h"

using namespace tracepipe;
using namespace tp_sideband_test;

namespace {

struct CommRec {
  int32_t common_pid, pid, tid;
  std::string comm, oldcomm;
  uint8_t reason;
};

std::vector<CommRec> comm_records(const Instance& inst) {
  std::vector<CommRec> out;
  for (const Rec& r : of_type(snapshot(inst), SidebandEvents::global().task_comm()))
    out.push_back({r.common_pid(), r.at<int32_t>(8), r.at<int32_t>(12), r.chars(16, 16),
                   r.chars(32, 16), r.at<uint8_t>(48)});
  return out;
}

std::string saved_comm(int32_t tid) {
  for (const Cmdline& c : cmdlines())
    if (c.pid == tid) return c.comm;
  return "?";
}

}  // namespace

TEST_CASE(
    "sideband live: set_thread_name renames, refreshes the cache and writes task_comm(rename)",
    "[sideband][live]") {
  KeepName keep;
  prepare_thread();
  Instance inst(small_options());
  enable_sideband(inst, false);
  const std::string before = kernel_comm();
  REQUIRE_FALSE(set_thread_name("sb-renamed-xxxxxxx"));
  CHECK(kernel_comm() == "sb-renamed-xxxx");
  CHECK(thread_context()->comm_view() == "sb-renamed-xxxx");
  const int32_t me = static_cast<int32_t>(gettid());
  CHECK(saved_comm(me) == "sb-renamed-xxxx");
  const auto recs = comm_records(inst);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].common_pid == me);
  CHECK(recs[0].pid == getpid());
  CHECK(recs[0].tid == me);
  CHECK(recs[0].comm == "sb-renamed-xxxx");
  CHECK(recs[0].oldcomm == before);
  CHECK(recs[0].reason == static_cast<uint8_t>(CommReason::rename));
}

TEST_CASE("sideband live: renaming another thread writes its record from the renamer",
          "[sideband][live]") {
  prepare_thread();
  std::atomic<int32_t> tid{0};
  std::atomic<bool> stop{false};
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "sb-victim");
    tid = static_cast<int32_t>(gettid());
    while (!stop) std::this_thread::yield();
  });
  while (tid == 0) std::this_thread::yield();
  Instance inst(small_options());
  enable_sideband(inst, false);
  REQUIRE_FALSE(set_thread_name(tid, "sb-renamed"));
  CHECK(read_thread_comm(tid)->view() == "sb-renamed");
  const auto recs = comm_records(inst);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].common_pid == static_cast<int32_t>(gettid()));
  CHECK(recs[0].tid == tid);
  CHECK(recs[0].comm == "sb-renamed");
  CHECK(recs[0].oldcomm == "sb-victim");
  stop = true;
  t.join();
  // Errors: nothing written.
  CHECK(set_thread_name(0, "x") == std::errc::invalid_argument);
  CHECK(set_thread_name(0x7ffffff0, "x") == std::errc::no_such_process);
  CHECK(comm_records(inst).size() == 1);
}

TEST_CASE("sideband live: announce_thread and note_mapping", "[sideband][live]") {
  prepare_thread();
  Instance inst(small_options());
  enable_sideband(inst, false);
  announce_thread();
  const auto recs = comm_records(inst);
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].comm == kernel_comm());
  CHECK(recs[0].reason == static_cast<uint8_t>(CommReason::announce));
  ProcMapping m;
  m.start = 0x7000000;
  m.end = 0x7004000;
  m.pgoff = 0x1000;
  m.prot = MapProt::read | MapProt::exec;
  m.flags = MapFlags::private_;
  m.path = "/jit/code-1";
  note_mapping(m);
  SidebandState sb;
  for (const Rec& r : snapshot(inst)) sb.observe(r.span());
  const auto* got = sb.mapping_at(0x7003fff);
  REQUIRE(got != nullptr);
  CHECK(got->filename == "/jit/code-1");
  CHECK(got->synth == 0);
  CHECK(got->len == 0x4000);
  CHECK(got->pgoff == 0x1000);
  CHECK(sb.rounds().empty());
}

TEST_CASE("sideband live: the core hooks write first_write and task_exit", "[sideband][live]") {
  prepare_thread();
  Instance inst(small_options());
  inst.enable(Seen::desc());
  enable_sideband(inst, false);
  std::atomic<int32_t> tid{0};
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "sb-hooked");
    // What core/instance/thread_context.cc does (H1, H2), called explicitly here so
    // this test checks the sideband side whether or not core is wired.
    ThreadContext* ctx = thread_context();
    tid = ctx->tid;
    sideband_thread_registered(*ctx);
    emit_seen(inst, 1);
    sideband_thread_exiting(*ctx);
  });
  t.join();
  const auto recs = snapshot(inst);
  std::vector<uint16_t> types;
  for (const Rec& r : recs)
    if (r.common_pid() == tid) types.push_back(r.type());
  const SidebandEvents& ev = SidebandEvents::global();
  // With core's hooks wired there is one more first_write/exit pair around ours.
  REQUIRE(types.size() >= 3);
  const auto first_comm = std::find(types.begin(), types.end(), ev.task_comm().id());
  const auto seen = std::find(types.begin(), types.end(), Seen::desc().id());
  const auto exit = std::find(types.begin(), types.end(), ev.task_exit().id());
  CHECK(first_comm < seen);
  CHECK(seen < exit);
  SidebandState sb;
  for (const Rec& r : recs) sb.observe(r.span());
  REQUIRE(sb.task(tid) != nullptr);
  CHECK(sb.task(tid)->exited);
  CHECK(sb.comm(tid) == "sb-hooked");
  const auto cr = comm_records(inst);
  REQUIRE_FALSE(cr.empty());
  CHECK(cr.back().reason == static_cast<uint8_t>(CommReason::first_write));
}

TEST_CASE("sideband live: a thread's first event is preceded by its name (core hook H1 wired)",
          "[sideband][live]") {
  prepare_thread();
  Instance inst(small_options());
  inst.enable(Seen::desc());
  enable_sideband(inst, false);
  const uint64_t calls = sideband_hook_calls_for_testing();
  std::atomic<int32_t> tid{0};
  std::thread t([&] {
    pthread_setname_np(pthread_self(), "sb-auto");
    tid = static_cast<int32_t>(gettid());
    emit_seen(inst, 7);  // registers the thread
  });
  t.join();
  if (sideband_hook_calls_for_testing() == calls)
    TP_SKIP("core hook H1 (sideband_thread_registered in register_thread) is not wired yet");
  const auto recs = snapshot(inst);
  std::vector<const Rec*> mine;
  for (const Rec& r : recs)
    if (r.common_pid() == tid) mine.push_back(&r);
  const SidebandEvents& ev = SidebandEvents::global();
  REQUIRE(mine.size() == 3);  // task_comm(first_write), seen, task_exit (H2)
  CHECK(mine[0]->type() == ev.task_comm().id());
  CHECK(mine[0]->chars(16, 16) == "sb-auto");
  CHECK(mine[0]->at<uint8_t>(48) == static_cast<uint8_t>(CommReason::first_write));
  CHECK(mine[1]->type() == Seen::desc().id());
  CHECK(mine[2]->type() == ev.task_exit().id());
}

TEST_CASE("sideband live: nothing is written where sideband is not enabled (S4)",
          "[sideband][live]") {
  KeepName keep;
  prepare_thread();
  Instance quiet(small_options());
  quiet.enable(Seen::desc());
  Instance loud(small_options());
  enable_sideband(loud, false);
  REQUIRE_FALSE(set_thread_name("sb-s4"));
  announce_thread();
  ThreadContext* ctx = thread_context();
  sideband_thread_registered(*ctx);
  CHECK(snapshot(quiet).empty());
  CHECK(comm_records(loud).size() == 3);
  disable_sideband(loud);
  REQUIRE_FALSE(set_thread_name("sb-s4-again"));
  CHECK(comm_records(loud).size() == 3);
  CHECK(thread_context()->comm_view() == "sb-s4-again");  // the rename itself still happens
}
