// Triggers: a latency histogram of an application event, with no trace
// written at all, and a flight recorder that stops at the first slow request.
// (docs/triggers.md walks through this file.)
//
//   hist:keys=latency_us.log2:sort=latency_us         how many requests took ~2^k us
//   hist:keys=status:vals=latency_us:sort=status      per status: count and total latency
//   traceoff:1 if latency_us > 50000                  keep what led to the first slow request
#include <tracepipe/core/triggers/triggers.h>
#include <tracepipe/tracepipe.h>

#include <cstdint>
#include <cstdio>

using RequestDone = tracepipe::EventDecl<"app", "request_done",                   //
                                         tracepipe::Int<"id", uint32_t>,          //
                                         tracepipe::Int<"latency_us", uint32_t>,  //
                                         tracepipe::Int<"status", uint16_t>>;

int main() {
  tracepipe::InstanceOptions o;
  o.mode = tracepipe::BufferMode::overwrite;  // a flight recorder
  tracepipe::Instance inst(o);
  const tracepipe::EventDesc& ev = RequestDone::desc();
  inst.enable(ev);
  // The trace keeps only errors; the histograms see every request.
  if (auto st = inst.set_filter(ev, "status >= 500"); !st)
    return std::fputs(st.render().c_str(), stderr), 1;
  for (const char* t :
       {"hist:keys=latency_us.log2:sort=latency_us", "hist:keys=status:vals=latency_us:sort=status",
        "traceoff:1 if latency_us > 50000"})
    if (auto st = tracepipe::set_trigger(inst, ev, t); !st)
      return std::fputs(st.render().c_str(), stderr), 1;

  // A made-up workload: mostly fast, a tail, a few errors, one very slow request.
  uint32_t lcg = 12345;
  for (uint32_t id = 0; id < 10000; ++id) {
    lcg = lcg * 1103515245u + 12345u;
    uint32_t latency = 100 + (lcg >> 16) % 900;  // 100..999 us
    if (id % 50 == 0) latency *= 10;             // a tail
    if (id == 7000) latency = 80000;             // the slow one
    const uint16_t status = id % 97 == 0 ? 503 : 200;
    RequestDone::emit(inst, id, latency, status);
  }

  std::fputs(tracepipe::trigger_file(inst, ev).c_str(), stdout);
  std::fputs("\n", stdout);
  std::fputs(tracepipe::hist_file(inst, ev).c_str(), stdout);
  // The ring stopped at request 7000: the errors before it are in the trace.
  const tracepipe::EventStats s = inst.event_stats(ev);
  std::printf(
      "\npaused: %s, kept %llu errors (before the slow request), discarded %llu, lost %llu\n",
      inst.paused() ? "yes" : "no", static_cast<unsigned long long>(s.kept),
      static_cast<unsigned long long>(s.discarded), static_cast<unsigned long long>(s.lost));
  return inst.paused() && s.kept == 73 && s.emitted() == 10000 ? 0 : 1;
}
