/* The C API end to end, as a C program sees it (C11, -Wall -Wextra -Werror
 * -pedantic): events declared at run time, filters good and bad (the
 * kernel's caret), four threads emitting packed records and field values,
 * the recorder to a file (and a blocking one), a paused snapshot, a hist trigger, a config file,
 * and a flight file left by a killed child and recovered.
 *
 *   c_api_test OUTDIR
 *
 * Writes OUTDIR/record.dat (recorder), OUTDIR/snapshot.dat (snapshot),
 * OUTDIR/flight.dat (recovered) and prints the counts the caller checks in
 * `trace-cmd report` of each:
 *   ticks=N requests=N snapshot=N flight=N request_line=<one expected line>
 * Exit 0 when every check in here passed; a message and 1 otherwise. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <tracepipe/tracepipe_c.h>
#include <unistd.h>

#define THREADS 4
#define TICKS 2000      /* per thread */
#define TICK_LIMIT 1000 /* filter: seq < 1000 */

static int failures;
#define CHECK(cond)                                                                           \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              tracepipe_last_error());                                                        \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)
#define OK(call) CHECK((call) == TRACEPIPE_OK)

/* capi:tick, fixed size: the stack lane. */
struct tick {
  uint32_t seq;
  uint32_t thread;
  char tag[16];
};
static tracepipe_tracepoint tp_tick;
static tracepipe_event* tick;

/* capi:request, a signed field, a u64, a char array, an array of u16 and a
 * __data_loc string. */
static tracepipe_tracepoint tp_request;
static tracepipe_event* request;

static void declare(void) {
  const tracepipe_field tf[] = {
      {.name = "seq", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "thread", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "tag", .kind = TRACEPIPE_FIELD_CHARS, .array_len = 16},
  };
  tracepipe_event_spec ts = TRACEPIPE_EVENT_SPEC_INIT;
  ts.system = "capi";
  ts.name = "tick";
  ts.fields = tf;
  ts.field_count = 3;
  OK(tracepipe_event_declare(&ts, &tp_tick, &tick));
  CHECK(tracepipe_event_fixed_size(tick) == 8 + sizeof(struct tick));
  CHECK(tracepipe_event_field_offset(tick, 2) == 16);

  const tracepipe_field rf[] = {
      {.name = "id", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "delta", .kind = TRACEPIPE_FIELD_INT, .size = 4, .is_signed = 1},
      {.name = "latency_ns", .kind = TRACEPIPE_FIELD_INT, .size = 8},
      {.name = "method", .kind = TRACEPIPE_FIELD_CHARS, .array_len = 8},
      {.name = "vals", .kind = TRACEPIPE_FIELD_INT, .size = 2, .array_len = 4},
      {.name = "path", .kind = TRACEPIPE_FIELD_STRING},
  };
  tracepipe_event_spec rs = TRACEPIPE_EVENT_SPEC_INIT;
  rs.system = "capi";
  rs.name = "request";
  rs.fields = rf;
  rs.field_count = 6;
  OK(tracepipe_event_declare(&rs, &tp_request, &request));
  /* Again: the same handle. */
  tracepipe_event* again = NULL;
  OK(tracepipe_event_declare(&rs, &tp_request, &again));
  CHECK(again == request);
  CHECK(tracepipe_event_find("capi:request", NULL) == request);
  CHECK(tracepipe_event_find("capi", "tick") == tick);

  char fmt[4096];
  CHECK(tracepipe_event_format(request, fmt, sizeof fmt) < sizeof fmt);
  CHECK(strstr(fmt, "\tfield:s32 delta;\toffset:12;\tsize:4;\tsigned:1;\n") != NULL);
  CHECK(strstr(fmt, "\tfield:u16 vals[4];\toffset:32;\tsize:8;\tsigned:0;\n") != NULL);
  CHECK(strstr(fmt, "\tfield:__data_loc char[] path;\toffset:40;\tsize:4;\tsigned:0;\n") != NULL);

  /* A different schema under the same name. */
  tracepipe_event* clash = NULL;
  rs.field_count = 5;
  CHECK(tracepipe_event_declare(&rs, NULL, &clash) == TRACEPIPE_EEXIST);
  /* A bad spec names the field. */
  const tracepipe_field bad[] = {{.name = "x", .kind = TRACEPIPE_FIELD_INT, .size = 3}};
  tracepipe_event_spec bs = TRACEPIPE_EVENT_SPEC_INIT;
  bs.system = "capi";
  bs.name = "bad";
  bs.fields = bad;
  bs.field_count = 1;
  CHECK(tracepipe_event_declare(&bs, NULL, &clash) == TRACEPIPE_EINVAL);
  CHECK(strstr(tracepipe_last_error(), "'x'") != NULL);
}

/* The caret sits where the kernel's error_log puts it for an unknown
 * field: under the operator that follows it (checked on Linux 6.18 with
 * sched_switch's filter and "prev_pidx > 1000"). */
static void bad_filters(tracepipe_instance* inst) {
  CHECK(tracepipe_instance_set_filter(inst, request, "latency_nx > 1000") == TRACEPIPE_EFILTER);
  const char* msg = tracepipe_last_error();
  CHECK(strstr(msg, "Field not found") != NULL);
  const char* cmd = strstr(msg, "Command: ");
  CHECK(cmd != NULL);
  if (cmd != NULL) {
    const char* line2 = strchr(cmd, '\n');
    const char* line1 = cmd;
    while (line1 > msg && line1[-1] != '\n') --line1;
    CHECK(line2 != NULL);
    if (line2 != NULL) {
      const char* caret = strchr(line2 + 1, '^');
      CHECK(caret != NULL);
      if (caret != NULL) CHECK(caret - (line2 + 1) == strchr(cmd, '>') - line1);
    }
  }
  CHECK(tracepipe_instance_set_filter(inst, request, "id == ") == TRACEPIPE_EFILTER);
  CHECK(strchr(tracepipe_last_error(), '^') != NULL);
}

/* The stack lane, event by event: one subscribed instance, a fixed-size
 * event, each kind of filter the lane decides in its own way (one integer
 * compare on the caller's bytes; a truth table; a string; a common field;
 * the general evaluator with COMM), each counted against a count made here. */
static void lane(void) {
  static tracepipe_tracepoint tp_lane;
  const tracepipe_field lf[] = {
      {.name = "seq", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "thread", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "tag", .kind = TRACEPIPE_FIELD_CHARS, .array_len = 16},
  };
  tracepipe_event_spec ls = TRACEPIPE_EVENT_SPEC_INIT;
  ls.system = "capi";
  ls.name = "lane";
  ls.fields = lf;
  ls.field_count = 3;
  tracepipe_event* ev = NULL;
  OK(tracepipe_event_declare(&ls, &tp_lane, &ev));
  tracepipe_instance* inst = NULL;
  OK(tracepipe_instance_create(NULL, &inst));
  OK(tracepipe_instance_enable(inst, ev, 1));
  static const struct {
    const char* filter;
    uint32_t kept; /* of seq 0..19, tag "odd" for odd seq, else "even" */
  } cases[] = {
      {"seq < 10", 10},
      {"seq < 5 || thread == 7", 5},
      {"tag == \"odd\"", 10},
      {"common_pid != 0 && seq >= 15", 5},
      {"COMM == \"no such task\" || seq == 3", 1},
  };
  uint64_t kept = 0, emitted = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    OK(tracepipe_instance_set_filter(inst, ev, cases[c].filter));
    for (uint32_t i = 0; i < 20; ++i) {
      struct tick b;
      memset(&b, 0, sizeof b);
      b.seq = i;
      b.thread = 1;
      memcpy(b.tag, i % 2 != 0 ? "odd" : "even", i % 2 != 0 ? 3 : 4);
      TRACEPIPE_C_TRACE(tp_lane, ev, &b, sizeof b);
    }
    kept += cases[c].kept;
    emitted += 20;
    tracepipe_event_stats es = TRACEPIPE_EVENT_STATS_INIT;
    OK(tracepipe_instance_event_stats(inst, ev, &es));
    if (es.kept != kept || es.kept + es.discarded != emitted || es.staged != emitted)
      fprintf(stderr, "lane: filter %s: kept %llu\n", cases[c].filter, (unsigned long long)es.kept);
    CHECK(es.kept == kept && es.kept + es.discarded == emitted && es.staged == emitted);
  }
  char text[16384];
  tracepipe_instance_trace_text(inst, text, sizeof text);
  CHECK(strstr(text, "lane: seq=3 thread=1 tag=odd") != NULL);
  tracepipe_instance_destroy(inst);
}

static const char* method_of(uint32_t i) { return (i / 100) % 2 == 0 ? "GET" : "PUT"; }

static void* writer(void* arg) {
  const uint32_t t = (uint32_t)(uintptr_t)arg;
  CHECK(tracepipe_thread_prepare() == TRACEPIPE_OK);
  for (uint32_t i = 0; i < TICKS; ++i) {
    struct tick b;
    memset(&b, 0, sizeof b);
    b.seq = i;
    b.thread = t;
    memcpy(b.tag, "tick", 4);
    TRACEPIPE_C_TRACE(tp_tick, tick, &b, sizeof b);
    if (i % 100 == 0 && TRACEPIPE_TRACEPOINT_ENABLED(tp_request)) {
      char path[32];
      snprintf(path, sizeof path, "/t%u/%u", t, i);
      const uint16_t vals[4] = {1, 2, 3, (uint16_t)t};
      const tracepipe_value v[6] = {{.num = i},
                                    {.num = (uint64_t)(int64_t)-5},
                                    {.num = (uint64_t)i * 10},
                                    {.data = method_of(i), .len = TRACEPIPE_STRLEN},
                                    {.data = vals, .len = 4},
                                    {.data = path, .len = TRACEPIPE_STRLEN}};
      tracepipe_trace_values(request, v, 6);
    }
  }
  return NULL;
}

/* The recorder's later fields: an unknown format and blocking on an
 * overwrite buffer are refused; a blocking recording of a small buffer
 * keeps every event; an older caller's smaller stats struct gets its
 * prefix only. */
static void recorder_options_v2(const char* out) {
  char path[4200];
  snprintf(path, sizeof path, "%s/block.dat", out);
  tracepipe_instance_options io = TRACEPIPE_INSTANCE_OPTIONS_INIT;
  io.name = "block";
  io.mode = TRACEPIPE_MODE_OVERWRITE;
  io.buffer_size_kb = 16;
  tracepipe_instance* ow = NULL;
  OK(tracepipe_instance_create(&io, &ow));
  tracepipe_recorder_options rop = TRACEPIPE_RECORDER_OPTIONS_INIT;
  rop.output = path;
  rop.format = "pdf";
  tracepipe_recorder* r = NULL;
  CHECK(tracepipe_recorder_start(ow, &rop, &r) == TRACEPIPE_EINVAL);
  CHECK(strstr(tracepipe_last_error(), "format: tracedat, perfetto or ctf") != NULL);
  rop.format = "perfetto"; /* taken: the recorder refuses it for a collector */
  rop.output = NULL;
  rop.collector = "127.0.0.1:1";
  CHECK(tracepipe_recorder_start(ow, &rop, &r) == TRACEPIPE_EINVAL);
  CHECK(strstr(tracepipe_last_error(), "format perfetto: a collector") != NULL);
  rop.output = path;
  rop.collector = NULL;
  rop.format = "tracedat";
  rop.block_timeout_us = TRACEPIPE_BLOCK_FOREVER;
  CHECK(tracepipe_recorder_start(ow, &rop, &r) == TRACEPIPE_EINVAL); /* needs drop-newest */
  CHECK(strstr(tracepipe_last_error(), "drop") != NULL);
  rop.block_timeout_us = -2;
  CHECK(tracepipe_recorder_start(ow, &rop, &r) == TRACEPIPE_EINVAL);
  tracepipe_instance_destroy(ow);

  io.mode = TRACEPIPE_MODE_DROP_NEWEST;
  tracepipe_instance* dn = NULL;
  OK(tracepipe_instance_create(&io, &dn));
  OK(tracepipe_instance_enable_pattern(dn, "capi:tick", 1, NULL));
  rop.block_timeout_us = TRACEPIPE_BLOCK_FOREVER;
  OK(tracepipe_recorder_start(dn, &rop, &r));
  enum { N = 50000 }; /* 16 KiB holds a few hundred */
  uint32_t kept = 0;
  for (uint32_t i = 0; i < N; ++i) {
    struct tick b;
    memset(&b, 0, sizeof b);
    b.seq = i;
    kept += tracepipe_emit(dn, tick, &b, sizeof b) == TRACEPIPE_EMIT_KEPT;
  }
  CHECK(kept == N);
  struct {
    tracepipe_recorder_stats s;
    uint64_t canary;
  } old;
  memset(&old, 0xAB, sizeof old);
  old.s.struct_size = offsetof(tracepipe_recorder_stats, unmarked);
  OK(tracepipe_recorder_stop(r, &old.s));
  CHECK(old.s.records == N && old.s.dropped == 0 && old.s.failed == 0);
  CHECK(old.s.unmarked == 0xABABABABABABABABull && old.canary == 0xABABABABABABABABull);
  tracepipe_recorder_stats rs = TRACEPIPE_RECORDER_STATS_INIT;
  OK(tracepipe_recorder_stop(r, &rs)); /* idempotent: the same final counters */
  CHECK(rs.records == N && rs.dropped == 0 && rs.unmarked == 0 && rs.block_timed_out == 0);
  CHECK(rs.block_max_wait_ns <= rs.block_wait_ns);
  tracepipe_recorder_destroy(r);
  tracepipe_instance_destroy(dn);
}

/* A child records into a flight file, then dies by SIGKILL. */
static pid_t flight_child(const char* dir) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  tracepipe_instance_options o = TRACEPIPE_INSTANCE_OPTIONS_INIT;
  o.name = "flight";
  o.flight_recorder = 1;
  o.flight_dir = dir;
  o.buffer_size_kb = 64;
  tracepipe_instance* inst = NULL;
  if (tracepipe_instance_create(&o, &inst) != TRACEPIPE_OK) _exit(3);
  if (tracepipe_instance_enable(inst, tick, 1) != TRACEPIPE_OK) _exit(4);
  for (uint32_t i = 0; i < 100; ++i) {
    struct tick b;
    memset(&b, 0, sizeof b);
    b.seq = i;
    b.thread = 99;
    memcpy(b.tag, "flight", 6);
    if (tracepipe_emit(inst, tick, &b, sizeof b) != TRACEPIPE_EMIT_KEPT) _exit(5);
  }
  raise(SIGKILL);
  _exit(6);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test OUTDIR\n");
    return 2;
  }
  const char* out = argv[1];
  char path[4096];
  CHECK(tracepipe_abi_version() == TRACEPIPE_C_ABI_VERSION);
  declare();
  lane();

  /* Flight file first, before any thread exists (fork). */
  char flight_dir[4096];
  snprintf(flight_dir, sizeof flight_dir, "%s/flight", out);
  const pid_t child = flight_child(flight_dir);
  int ws = 0;
  CHECK(waitpid(child, &ws, 0) == child && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
  char flight_file[4200];
  snprintf(flight_file, sizeof flight_file, "%s/flight-%d.tpflight", flight_dir, (int)child);
  snprintf(path, sizeof path, "%s/flight.dat", out);
  tracepipe_recover_stats rst = TRACEPIPE_RECOVER_STATS_INIT;
  OK(tracepipe_recover(flight_file, path, NULL, &rst));
  CHECK(rst.records == 100 && rst.pid == child);
  CHECK(tracepipe_recover("/nonexistent.tpflight", path, NULL, NULL) != TRACEPIPE_OK);
  /* The output naming the flight file itself: refused, the file kept (it was
   * replaced by the trace). */
  CHECK(tracepipe_recover(flight_file, flight_file, NULL, NULL) == TRACEPIPE_EINVAL);
  CHECK(strstr(tracepipe_last_error(), "is the flight file") != NULL);
  OK(tracepipe_recover(flight_file, path, NULL, &rst));
  CHECK(rst.records == 100);

  /* Options: a newer caller's unknown non-zero byte is refused. */
  struct {
    tracepipe_instance_options o;
    uint64_t newer;
  } big = {TRACEPIPE_INSTANCE_OPTIONS_INIT, 1};
  big.o.struct_size = sizeof big;
  tracepipe_instance* inst = NULL;
  CHECK(tracepipe_instance_create(&big.o, &inst) == TRACEPIPE_EINVAL);
  tracepipe_instance_options bad_clock = TRACEPIPE_INSTANCE_OPTIONS_INIT;
  bad_clock.clock = "sundial";
  CHECK(tracepipe_instance_create(&bad_clock, &inst) == TRACEPIPE_EINVAL);
  CHECK(strstr(tracepipe_last_error(), "sundial") != NULL);
  recorder_options_v2(out);

  /* The recorded instance: drop-newest, filters on both events. */
  tracepipe_instance_options ro = TRACEPIPE_INSTANCE_OPTIONS_INIT;
  ro.name = "rec";
  ro.mode = TRACEPIPE_MODE_DROP_NEWEST;
  ro.buffer_size_kb = 4096;
  tracepipe_instance* rec_inst = NULL;
  OK(tracepipe_instance_create(&ro, &rec_inst));
  CHECK(!TRACEPIPE_TRACEPOINT_ENABLED(tp_tick));
  size_t matched = 0;
  OK(tracepipe_instance_enable_pattern(rec_inst, "capi:*", 1, &matched));
  CHECK(matched == 3); /* tick, request, lane */
  CHECK(tracepipe_instance_enable_pattern(rec_inst, "nope:*", 1, NULL) == TRACEPIPE_ENOENT);
  CHECK(TRACEPIPE_TRACEPOINT_ENABLED(tp_tick));
  OK(tracepipe_instance_set_filter(rec_inst, tick, "seq < 1000"));
  OK(tracepipe_instance_set_filter(rec_inst, request, "latency_ns > 1000 && method == \"GET\""));
  bad_filters(rec_inst);
  char ftext[256];
  tracepipe_instance_filter(rec_inst, request, ftext, sizeof ftext);
  CHECK(strcmp(ftext, "latency_ns > 1000 && method == \"GET\"") == 0); /* the failed ones left it */

  /* The snapshot instance: every tick, a hist trigger per thread. */
  tracepipe_instance_options so = TRACEPIPE_INSTANCE_OPTIONS_INIT;
  so.name = "snap";
  so.staging = TRACEPIPE_STAGING_PER_CPU;
  tracepipe_instance* snap = NULL;
  OK(tracepipe_instance_create(&so, &snap));
  OK(tracepipe_instance_enable(snap, tick, 1));
  OK(tracepipe_instance_set_trigger(snap, tick, "hist:keys=thread"));
  CHECK(tracepipe_instance_set_trigger(snap, tick, "hist:keys=nosuch") == TRACEPIPE_ETRIGGER);
  CHECK(strstr(tracepipe_last_error(), "nosuch") != NULL);

  /* A config file: a third instance, and a bad one. */
  snprintf(path, sizeof path, "%s/c.toml", out);
  FILE* f = fopen(path, "w");
  CHECK(f != NULL);
  if (f != NULL) {
    fputs("buffer_size_kb = 256\n[events.\"capi:tick\"]\nenable = true\nfilter = \"seq >= 1990\"\n",
          f);
    fclose(f);
  }
  tracepipe_instance* cfg = NULL;
  OK(tracepipe_instance_from_config(path, NULL, &cfg));
  char bad_path[4200];
  snprintf(bad_path, sizeof bad_path, "%s/bad.toml", out);
  f = fopen(bad_path, "w");
  if (f != NULL) {
    fputs("[events.\"capi:tick\"]\nenable = true\nfilter = \"seqq >= 1\"\n", f);
    fclose(f);
  }
  tracepipe_instance* bad_cfg = NULL;
  CHECK(tracepipe_instance_from_config(bad_path, NULL, &bad_cfg) == TRACEPIPE_ECONFIG);
  CHECK(strstr(tracepipe_last_error(), "bad.toml:3") != NULL &&
        strchr(tracepipe_last_error(), '^') != NULL);

  /* Record while four threads write. */
  snprintf(path, sizeof path, "%s/record.dat", out);
  tracepipe_recorder_options rop = TRACEPIPE_RECORDER_OPTIONS_INIT;
  rop.output = path;
  tracepipe_recorder* recorder = NULL;
  OK(tracepipe_recorder_start(rec_inst, &rop, &recorder));
  pthread_t th[THREADS];
  for (uintptr_t t = 0; t < THREADS; ++t)
    CHECK(pthread_create(&th[t], NULL, writer, (void*)t) == 0);
  for (int t = 0; t < THREADS; ++t) pthread_join(th[t], NULL);

  /* One packed record with its string, into one instance. */
  struct {
    uint32_t id;
    int32_t delta;
    uint64_t latency_ns;
    char method[8];
    uint16_t vals[4];
    uint32_t path_loc;
    uint32_t tail_padding; /* the fixed part ends at 48: 8-byte aligned (latency_ns) */
    char path[8];
  } packed = {7, -1, 5000, "GET", {9, 9, 9, 9}, 0, 0, "/packed"};
  CHECK(tracepipe_event_fixed_size(request) == 48);
  packed.path_loc = (8u << 16) | 48u; /* 8 bytes with the NUL, at the record's offset 48 */
  CHECK(tracepipe_emit(rec_inst, request, &packed, sizeof packed) == TRACEPIPE_EMIT_KEPT);
  CHECK(tracepipe_emit(rec_inst, request, &packed, 10) == TRACEPIPE_EMIT_INVALID);

  tracepipe_recorder_stats rs = TRACEPIPE_RECORDER_STATS_INIT;
  OK(tracepipe_recorder_stop(recorder, &rs));
  tracepipe_recorder_destroy(recorder);

  const uint32_t ticks_kept = THREADS * TICK_LIMIT;
  uint32_t requests_kept = 1; /* the packed one */
  for (uint32_t i = 0; i < TICKS; i += 100)
    if ((uint64_t)i * 10 > 1000 && strcmp(method_of(i), "GET") == 0) requests_kept += THREADS;
  tracepipe_event_stats es = TRACEPIPE_EVENT_STATS_INIT;
  OK(tracepipe_instance_event_stats(rec_inst, tick, &es));
  CHECK(es.kept == ticks_kept && es.discarded == THREADS * (TICKS - TICK_LIMIT) && es.lost == 0);
  OK(tracepipe_instance_event_stats(rec_inst, request, &es));
  CHECK(es.kept == requests_kept);
  CHECK(rs.records == ticks_kept + requests_kept && rs.dropped == 0 && !rs.failed);

  OK(tracepipe_instance_event_stats(cfg, tick, &es));
  CHECK(es.kept == THREADS * 10);

  /* The hist counted every tick, per thread. */
  char hist[8192];
  CHECK(tracepipe_instance_hist_text(snap, tick, hist, sizeof hist) < sizeof hist);
  CHECK(strstr(hist, "Hits: 8000") != NULL);
  CHECK(strstr(hist, "{ thread:          3 } hitcount:       2000") != NULL);
  snprintf(path, sizeof path, "%s/snapshot.dat", out);
  OK(tracepipe_instance_write_trace_dat(snap, path, TRACEPIPE_SNAPSHOT_PAUSE));
  CHECK(!tracepipe_instance_paused(snap));
  tracepipe_buffer_stats bs = TRACEPIPE_BUFFER_STATS_INIT;
  OK(tracepipe_instance_buffer_stats(snap, &bs));

  tracepipe_instance_destroy(cfg);
  tracepipe_instance_destroy(snap);
  tracepipe_instance_destroy(rec_inst);
  CHECK(!TRACEPIPE_TRACEPOINT_ENABLED(tp_tick));

  printf("ticks=%u requests=%u snapshot=%llu flight=100 request_line=%s\n", ticks_kept,
         requests_kept,
         (unsigned long long)
             bs.entries, /* trace-cmd (libtraceevent) prints __print_array as its elements apart */
         "id=1800 delta=-5 latency_ns=18000 method=GET vals=1 2 3 2 path=/t2/1800");
  if (hist[0] == '\0') fprintf(stderr, "empty hist\n");
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\nhist:\n%s\n", failures, hist);
    return 1;
  }
  return 0;
}
