/* tracepipe_capi_bench's C side (capi_bench_c.c), callable from C++. */
#ifndef TRACEPIPE_BENCH_CAPI_BENCH_C_H
#define TRACEPIPE_BENCH_CAPI_BENCH_C_H
#include <stdint.h>
#include <tracepipe/tracepipe_c.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CAPI_BENCH_LEGS 8

/* The body of tpbench:<name> (value u32, seq u32, char pad[48]): 56 bytes,
 * a 64-byte record with its header, as the C++ side's event. */
struct capi_bench_body {
  uint32_t value;
  uint32_t seq;
  char pad[48];
};

/* Declares tpbench:<name> bound to leg `leg`'s tracepoint; NULL on error. */
tracepipe_event* capi_bench_declare(int leg, const char* name);
/* n events of leg `leg` with this value; returns the block's ns. */
uint64_t capi_bench_block(int leg, uint32_t value, uint32_t* seq, uint32_t n);

#ifdef __cplusplus
}
#endif
#endif
