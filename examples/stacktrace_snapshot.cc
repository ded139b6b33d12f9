// Triggers that answer "how did we get here?" and "what led up to it?":
// a stacktrace of the code that emitted a failing request, and a snapshot
// of the trace at each failure while tracing goes on.
// (docs/triggers.md, "Stacktrace" and "Snapshot", walks through this file.)
//
//   snapshot if status >= 500       the live buffer becomes the snapshot
//   stacktrace:1 if status >= 500   the call chain of the first failure
#include <tracepipe/core/triggers/triggers.h>
#include <tracepipe/tracepipe.h>

#include <cstdint>
#include <cstdio>
#include <string>

using RequestDone = tracepipe::EventDecl<"app", "request_done",           //
                                         tracepipe::Int<"id", uint32_t>,  //
                                         tracepipe::Int<"status", uint16_t>>;

// A made-up call chain; noinline keeps each function a frame of its own.
extern "C" [[gnu::noinline]] void finish_request(tracepipe::Instance& inst, uint32_t id,
                                                 uint16_t status) {
  RequestDone::emit(inst, id, status);
  asm volatile("" ::: "memory");  // no tail call: this frame stays on the stack
}
extern "C" [[gnu::noinline]] void handle_request(tracepipe::Instance& inst, uint32_t id) {
  finish_request(inst, id, id % 7 == 6 ? 503 : 200);
  asm volatile("" ::: "memory");
}

int main() {
  tracepipe::Instance inst;
  const tracepipe::EventDesc& ev = RequestDone::desc();
  inst.enable(ev);
  // Triggers run newest first: the stack is written, then the swap takes it
  // into the snapshot with the failing request.
  for (const char* t : {"snapshot if status >= 500", "stacktrace:1 if status >= 500"})
    if (auto st = tracepipe::set_trigger(inst, ev, t); !st)
      return std::fputs(st.render().c_str(), stderr), 1;

  for (uint32_t id = 0; id < 10; ++id) handle_request(inst, id);  // fails at 6

  // The trace went on after the failure (requests 7..9); the snapshot holds
  // requests 0..6 and the stack.
  const std::string trace = tracepipe::trace_text(inst);
  const std::string snap = tracepipe::snapshot_file(inst);
  std::fputs(trace.c_str(), stdout);
  std::fputs("\n--- snapshot ---\n", stdout);
  std::fputs(snap.c_str(), stdout);
  const bool ok = snap.find("id=6 status=503") != std::string::npos &&
                  snap.find("<stack trace>\n => finish_request+") != std::string::npos &&
                  snap.find("\n => handle_request+") != std::string::npos &&
                  trace.find("id=9 status=200") != std::string::npos;
  return ok ? 0 : 1;
}
