/* The C side of tracepipe_capi_bench: blocks of event sites written in C
 * against tracepipe_c.h, as an application writes them (the record is the
 * caller's own struct, its fields set per event), each timed as a whole. */
#include "capi_bench_c.h"

#include <string.h>
#include <time.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One event site per leg, so that each leg's word and event are its own. */
static tracepipe_tracepoint tp[CAPI_BENCH_LEGS];
static tracepipe_event* ev[CAPI_BENCH_LEGS];

tracepipe_event* capi_bench_declare(int leg, const char* name) {
  const tracepipe_field f[] = {
      {.name = "value", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "seq", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "pad", .kind = TRACEPIPE_FIELD_CHARS, .array_len = 48},
  };
  tracepipe_event_spec s = TRACEPIPE_EVENT_SPEC_INIT;
  s.system = "tpbench";
  s.name = name;
  s.fields = f;
  s.field_count = 3;
  if (tracepipe_event_declare(&s, &tp[leg], &ev[leg]) != TRACEPIPE_OK) return NULL;
  return ev[leg];
}

/* The same loop shape as the C++ side's: a value, the sequence number and
 * a constant text, one event site per iteration. */
__attribute__((noinline)) uint64_t capi_bench_block(int leg, uint32_t value, uint32_t* seq,
                                                    uint32_t n) {
  struct capi_bench_body b;
  memset(&b, 0, sizeof b);
  memcpy(b.pad, "bench", 5);
  tracepipe_tracepoint* const t = &tp[leg];
  const tracepipe_event* const e = ev[leg];
  uint32_t i = *seq;
  const uint64_t t0 = now_ns();
  for (uint32_t k = 0; k < n; ++k, ++i) {
    b.value = value;
    b.seq = i;
    TRACEPIPE_C_TRACE(*t, e, &b, sizeof b);
    __asm__ volatile("" ::: "memory");
  }
  const uint64_t t1 = now_ns();
  *seq = i;
  return t1 - t0;
}
