// Sideband: name every task and map every address from the trace itself.
//
//   1. enable_sideband(instance) enables the tracepipe:* events and writes
//      the current state (threads, mappings, the executable) into the buffer;
//   2. renames through set_thread_name() are recorded in order with events;
//   3. a reader replays the records through a SidebandState: at each event it
//      knows its writer's name then, and which file an address belongs to.
//
// Exit 0 when every event was named as expected and the code address
// resolves to this executable. See docs/sideband.md.
#include <tracepipe/buffers/readers.h>
#include <tracepipe/core/sideband/sideband.h>
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <cstring>
#include <thread>

using Work = tracepipe::EventDecl<"example", "work", tracepipe::Int<"step", uint32_t>,
                                  tracepipe::Int<"pc", uint64_t>>;

int main() {
  using namespace tracepipe;
  Instance inst;
  inst.enable(Work::desc());
  const SynthesisReport initial = enable_sideband(inst);  // state as of now
  std::printf("%s\n", initial.summary().c_str());

  // A code address to resolve later: where main() is.
  const auto pc = reinterpret_cast<uint64_t>(&main);
  std::thread worker([&] {
    (void)set_thread_name("fetcher");  // recorded: task_comm(rename)
    Work::emit(inst, 1, pc);
    Work::emit(inst, 2, pc);
    (void)set_thread_name("parser");  // events after this one belong to "parser"
    Work::emit(inst, 3, pc);
  });
  worker.join();
  const SynthesisReport final_state = synthesize_sideband(inst);  // e.g. just before export
  std::printf("%s\n", final_state.summary().c_str());

  // Read back in time order, replaying the sideband as we go.
  SidebandState sb(inst.registry());
  auto it = buffers::merged_iterator(inst.ring());
  const char* want[] = {"", "fetcher", "fetcher", "parser"};
  int bad = 0;
  while (auto r = it.next()) {
    if (sb.observe(r->payload)) continue;  // a sideband record: state updated
    CommonHeader h;
    std::memcpy(&h, r->payload.data(), sizeof h);
    if (h.common_type != Work::desc().id()) continue;
    uint32_t step;
    uint64_t addr;
    std::memcpy(&step, r->payload.data() + 8, 4);
    std::memcpy(&addr, r->payload.data() + 16, 8);
    const std::string_view who = sb.comm(h.common_pid).value_or("<unknown>");
    const auto* map = sb.mapping_at(addr);
    std::printf("%.*s-%d: work step=%u pc=%#llx (%s)\n", static_cast<int>(who.size()), who.data(),
                h.common_pid, step, static_cast<unsigned long long>(addr),
                map != nullptr ? map->filename.c_str() : "?");
    if (who != want[step]) ++bad;
    if (map == nullptr || map->filename != sb.executable()) ++bad;
  }
  for (const auto& round : sb.rounds())
    std::printf("round %u: %s\n", round.synth, round.complete() ? "complete" : "INCOMPLETE");
  return bad == 0 && initial.complete() && final_state.complete() ? 0 : 1;
}
