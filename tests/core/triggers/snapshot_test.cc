// The snapshot file and its spare ring: echo 0/1/2 > snapshot, the help
// text when empty, the swap by trigger (tracing goes on), a flight
// recorder's refusal, and, under concurrent writers and snapshots, that
// every kept record is in exactly one of the two rings.
#include "tracepipe/core/triggers/snapshot.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>
#include <vector>

#include "tracepipe/buffers/readers.h"
#include "tracepipe/core/export/instance_export.h"
#include "tracepipe/core/instance/event_decl.h"
#include "tracepipe/core/triggers/triggers.h"

using namespace tracepipe;

namespace {

using Ev = EventDecl<"tpsnap", "ev", Int<"seq", uint32_t>, Int<"thread", uint32_t>>;

InstanceOptions small(uint32_t kb = 16) {
  InstanceOptions o;
  o.buffer_size_kb = kb;
  o.cpus = 2;
  return o;
}

uint64_t records(const buffers::RingBufferBase& rb) {
  uint64_t n = 0;
  for (uint32_t cpu = 0; cpu < rb.cpus(); ++cpu) {
    buffers::Iterator it(rb, cpu);
    while (it.next()) ++n;
  }
  return n;
}

const std::string kHelp =
    "# Snapshot commands:\n"
    "# echo 0 > snapshot : Clears and frees snapshot buffer\n"
    "# echo 1 > snapshot : Allocates snapshot buffer, if not already allocated.\n"
    "#                      Takes a snapshot of the main buffer.\n"
    "# echo 2 > snapshot : Clears snapshot buffer (but does not allocate or free)\n"
    "#                      (Doesn't have to be '2' works with any number that\n"
    "#                       is not a '0' or '1')\n";

}  // namespace

TEST_CASE("snapshot: echo 1/2/0 > snapshot and the file's text", "[triggers][snapshot]") {
  Instance inst(small());
  inst.enable(Ev::desc());
  CHECK(snapshot_file(inst) == "# tracer: nop\n#\n#\n# * Snapshot is freed *\n#\n" + kHelp);
  CHECK_FALSE(snapshot_allocated(inst));
  for (uint32_t i = 0; i < 3; ++i) Ev::emit(inst, i, 0);
  REQUIRE(snapshot_write(inst, 1).ok());  // allocate and take
  REQUIRE(snapshot_ring(inst) != nullptr);
  CHECK(records(*snapshot_ring(inst)) == 3);
  CHECK(records(inst.ring()) == 0);  // the spare went live, empty
  const std::string snap = snapshot_file(inst);
  CHECK(snap.starts_with("# tracer: nop\n#\n# entries-in-buffer/entries-written: 3/3   #P:2\n"));
  CHECK(snap.find("ev: seq=2 thread=0") != std::string::npos);
  CHECK(buffers::Snapshot::take(*snapshot_ring(inst), 0)
            .has_value());  // paused: readable as a snapshot
  Ev::emit(inst, 3, 0);     // tracing goes on
  CHECK(records(inst.ring()) == 1);
  REQUIRE(snapshot_write(inst, 2).ok());  // clear: still allocated
  CHECK(snapshot_allocated(inst));
  CHECK(snapshot_file(inst) == "# tracer: nop\n#\n#\n# * Snapshot is allocated *\n#\n" + kHelp);
  CHECK(records(inst.ring()) == 1);
  REQUIRE(snapshot_write(inst, 1).ok());  // swap again: the cleared spare goes live
  CHECK(records(*snapshot_ring(inst)) == 1);
  CHECK(records(inst.ring()) == 0);
  REQUIRE(snapshot_write(inst, 0).ok());  // free
  CHECK_FALSE(snapshot_allocated(inst));
  CHECK(snapshot_file(inst).find("# * Snapshot is freed *") != std::string::npos);
  Ev::emit(inst, 4, 0);
  CHECK(records(inst.ring()) == 1);
  CHECK(snapshot_write(inst, 7).ok());  // any other number: clear (nothing allocated: no-op)
  CHECK_FALSE(snapshot_allocated(inst));
}

TEST_CASE("snapshot: the trigger swaps, keeps tracing_on, and does not empty the swapped-in ring",
          "[triggers][snapshot]") {
  Instance inst(small());
  inst.enable(Ev::desc());
  REQUIRE(set_trigger(inst, Ev::desc(), "snapshot if seq == 5").ok());
  CHECK(snapshot_allocated(inst));  // allocated by the trigger, before it fires
  for (uint32_t i = 0; i < 8; ++i) Ev::emit(inst, i, 0);
  CHECK(records(*snapshot_ring(inst)) == 6);  // 0..5: the swap runs after the commit
  CHECK(records(inst.ring()) == 2);           // 6, 7
  CHECK(trigger_counts(inst, Ev::desc()).snapshots == 1);
  // traceoff in force: the swapped-in ring inherits it.
  REQUIRE(set_trigger(inst, Ev::desc(), "traceoff if seq == 100").ok());
  Ev::emit(inst, 100, 0);
  CHECK(inst.paused());
  Ev::emit(inst, 5, 0);  // dropped (paused), but its trigger swaps
  CHECK(inst.paused());
  CHECK(records(inst.ring()) == 6);  // the old live ring is back, unemptied
  CHECK(records(*snapshot_ring(inst)) == 3);
}

TEST_CASE("snapshot: a flight recorder refuses the spare with a message", "[triggers][snapshot]") {
  InstanceOptions o = small();
  o.flight_recorder = true;
  o.mode = BufferMode::overwrite;
  o.flight_dir = (std::filesystem::temp_directory_path() / "tp_snapshot_flight").string();
  o.name = "snap";
  Instance inst(o);
  const TriggerStatus st = set_trigger(inst, Ev::desc(), "snapshot");
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().err == EBUSY);
  CHECK(st.render().find("flight-recorder") != std::string::npos);
  CHECK(snapshot_write(inst, 1).error().err == EBUSY);
  CHECK(trigger_file(inst, Ev::desc()).starts_with("# Available triggers:"));
  std::error_code ec;
  std::filesystem::remove_all(o.flight_dir, ec);
}

TEST_CASE("snapshot: concurrent writers and swaps: each kept record is in one ring",
          "[triggers][snapshot][concurrency]") {
  InstanceOptions o =
      small(1024);  // room for every record in either ring: nothing overwritten or full
  o.mode = BufferMode::drop_newest;
  Instance inst(o);
  inst.enable(Ev::desc());
  REQUIRE(set_trigger(inst, Ev::desc(), "snapshot if seq < 200").ok());
  constexpr uint32_t kPer = 20000;
  std::atomic<bool> stop{false};
  std::vector<std::thread> ts;
  for (uint32_t t = 0; t < 2; ++t)
    ts.emplace_back([&, t] {
      for (uint32_t i = 0; i < kPer; ++i) Ev::emit(inst, i, t);
    });
  // The control plane takes snapshots meanwhile, and reads the file.
  std::thread control([&] {
    for (int k = 0; k < 20 && !stop.load(); ++k) {
      REQUIRE(snapshot_write(inst, 1).ok());
      (void)snapshot_file(inst);
    }
  });
  for (auto& t : ts) t.join();
  stop = true;
  control.join();
  const EventStats s = inst.event_stats(Ev::desc());
  CHECK(s.emitted() == 2 * kPer);
  // A writer that reserved in a ring just swapped out may find it paused:
  // lost, counted; every record kept is in the live ring or the snapshot.
  uint64_t overrun = 0;
  for (uint32_t cpu = 0; cpu < inst.cpus(); ++cpu)
    overrun += inst.ring().stats(cpu).overrun + snapshot_ring(inst)->stats(cpu).overrun;
  CHECK(overrun == 0);
  CHECK(records(inst.ring()) + records(*snapshot_ring(inst)) == s.kept);
  const auto& ring = detail::InstanceAccess::live_ring(inst);
  CHECK(ring.swaps() >= trigger_counts(inst, Ev::desc()).snapshots);
}
