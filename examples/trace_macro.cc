// Tracepoint-style emission with TRACEPIPE_TRACE: while no instance has the
// event enabled, a call costs one load and a branch and evaluates none of
// its arguments (here, a string built per call); once an instance enables
// it, every call records into that instance, through its filter.
//
//   build/examples/example_trace_macro
#include <tracepipe/tracepipe.h>

#include <cstdio>
#include <string>

using CacheMiss = tracepipe::EventDecl<"app", "cache_miss",              //
                                       tracepipe::Int<"key", uint64_t>,  //
                                       tracepipe::Str<"detail">>;

namespace {

int described = 0;  // how many times the expensive argument was built

std::string describe(uint64_t key) {
  ++described;
  return "shard " + std::to_string(key % 8) + ", key " + std::to_string(key);
}

void lookup(uint64_t key) {
  if (key % 3 == 0)  // a miss
    TRACEPIPE_TRACE(CacheMiss, key, describe(key));
}

}  // namespace

int main() {
  tracepipe::Instance inst;

  // Not enabled anywhere: describe() never runs.
  for (uint64_t k = 0; k < 30; ++k) lookup(k);
  std::printf("disabled: enabled()=%d, describe() ran %d times\n", CacheMiss::enabled(), described);
  if (described != 0) return 1;

  // Enabled with a filter: every miss builds its argument, the filter keeps some.
  inst.enable(CacheMiss::desc());
  if (!inst.set_filter(CacheMiss::desc(), "key >= 15")) return 1;
  for (uint64_t k = 0; k < 30; ++k) lookup(k);
  std::printf("enabled:  enabled()=%d, describe() ran %d times\n\n", CacheMiss::enabled(),
              described);

  std::fputs(tracepipe::trace_text(inst).c_str(), stdout);
  const tracepipe::EventStats s = inst.event_stats(CacheMiss::desc());
  std::printf("\nkept %llu, discarded %llu\n", static_cast<unsigned long long>(s.kept),
              static_cast<unsigned long long>(s.discarded));
  // Misses are k = 0, 3, ..., 27 (10 of them); the filter keeps 15..27 (5).
  return described == 10 && s.kept == 5 && s.discarded == 5 ? 0 : 1;
}
