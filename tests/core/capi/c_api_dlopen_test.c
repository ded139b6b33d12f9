/* libtracepipe_c loaded with dlopen() by a program that does not link it
 * (as Python's ctypes, a plugin host or a JNI library load it), with no
 * GLIBC_TUNABLES reserve: the library needs no static TLS. Sixteen threads
 * emit through every lane that reads a thread-local (the stack lane's
 * filter, the unfiltered direct emit, the per-thread staging slot): eight
 * that existed before the dlopen() (their thread-local block for the
 * library is made at their first emit) and eight started after it. Every
 * record is read back and checked field by field, so a register the
 * loader's TLS code clobbered would show as a wrong value.
 *
 *   c_api_dlopen_test LIBTRACEPIPE_C.so
 *
 * Exit 0 when every count and record is right; a message and 1 otherwise. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tracepipe/tracepipe_c.h>

#define EARLY 8   /* threads started before the dlopen() */
#define LATE 8    /* ... and after it */
#define N 1000    /* events of each kind per thread */
#define LIMIT 600 /* fixed's filter: seq < LIMIT */

/* The functions used, looked up with dlsym(). */
/* clang-format does not settle on a layout for this list. */
// clang-format off
#define FUNCS(X) \
  X(tracepipe_last_error) \
  X(tracepipe_event_declare) \
  X(tracepipe_instance_create) \
  X(tracepipe_instance_enable) \
  X(tracepipe_instance_set_filter) \
  X(tracepipe_trace) \
  X(tracepipe_trace_values) \
  X(tracepipe_instance_event_stats) \
  X(tracepipe_instance_trace_text) \
  X(tracepipe_instance_destroy)
// clang-format on
#define DECLARE(f) static __typeof__(&f) p_##f;
FUNCS(DECLARE)

static int failures;
#define CHECK(cond)                                                                           \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              p_tracepipe_last_error != NULL ? p_tracepipe_last_error() : "");                \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

struct body {
  uint32_t seq;
  uint32_t thread;
  uint32_t check;
  char tag[4];
};
static uint32_t check_of(uint32_t seq, uint32_t thread) {
  return (seq * 2654435761u) ^ (thread << 20);
}

static tracepipe_tracepoint tp_fixed, tp_direct, tp_text;
static tracepipe_event *fixed, *direct, *text;
static pthread_barrier_t loaded;

static tracepipe_event* declare(const char* name, tracepipe_tracepoint* tp, int dynamic) {
  const tracepipe_field f[] = {
      {.name = "seq", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "thread", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "check", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "tag",
       .kind = dynamic ? TRACEPIPE_FIELD_STRING : TRACEPIPE_FIELD_CHARS,
       .array_len = 4},
  };
  tracepipe_event_spec s = TRACEPIPE_EVENT_SPEC_INIT;
  s.system = "dl";
  s.name = name;
  s.fields = f;
  s.field_count = 4;
  tracepipe_event* e = NULL;
  CHECK(p_tracepipe_event_declare(&s, tp, &e) == TRACEPIPE_OK);
  return e;
}

static void* writer(void* arg) {
  const uint32_t t = (uint32_t)(uintptr_t)arg;
  if (t < EARLY) pthread_barrier_wait(&loaded); /* started before the library was there */
  for (uint32_t i = 0; i < N; ++i) {
    const struct body b = {i, t, check_of(i, t), "dl"};
    if (TRACEPIPE_TRACEPOINT_ENABLED(tp_fixed))
      p_tracepipe_trace(fixed, &b, sizeof b); /* stack lane */
    if (TRACEPIPE_TRACEPOINT_ENABLED(tp_direct))
      p_tracepipe_trace(direct, &b, sizeof b); /* direct */
    char msg[32];
    snprintf(msg, sizeof msg, "%s %u", i % 2 == 0 ? "keep" : "drop", i);
    const tracepipe_value v[4] = {
        {.num = i}, {.num = t}, {.num = check_of(i, t)}, {.data = msg, .len = TRACEPIPE_STRLEN}};
    if (TRACEPIPE_TRACEPOINT_ENABLED(tp_text))
      p_tracepipe_trace_values(text, v, 4); /* staging slot */
  }
  return NULL;
}

/* Every record of the trace text: the right count per event, and each
 * one's fields as written. */
static void check_records(const char* txt) {
  unsigned seen[3] = {0, 0, 0};
  static const char* const names[3] = {" fixed: ", " direct: ", " text: "};
  for (const char* line = txt; *line != '\0';) {
    const char* end = strchr(line, '\n');
    const size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
    char buf[256];
    const size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
    memcpy(buf, line, n);
    buf[n] = '\0';
    line += len + (end != NULL);
    if (buf[0] == '#') continue;
    for (int k = 0; k < 3; ++k) {
      const char* at = strstr(buf, names[k]);
      if (at == NULL) continue;
      unsigned seq, thread, check;
      char word[8];
      unsigned again;
      int ok =
          sscanf(at + strlen(names[k]), "seq=%u thread=%u check=%u", &seq, &thread, &check) == 3 &&
          thread < EARLY + LATE && seq < N && check == check_of(seq, thread);
      if (k == 0) ok = ok && seq < LIMIT && strstr(at, "tag=dl") != NULL;
      if (k == 2) {
        const char* tag = strstr(at, "tag=");
        ok = ok && tag != NULL && sscanf(tag, "tag=%7s %u", word, &again) == 2 &&
             strcmp(word, "keep") == 0 && again == seq;
      }
      if (!ok && failures < 10) fprintf(stderr, "bad record: %s\n", buf);
      failures += !ok;
      ++seen[k];
    }
  }
  const unsigned threads = EARLY + LATE;
  CHECK(seen[0] == threads * LIMIT);
  CHECK(seen[1] == threads * N);
  CHECK(seen[2] == threads * N / 2);
  printf("c_api_dlopen_test: %u + %u + %u records read back, every field as written\n", seen[0],
         seen[1], seen[2]);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: c_api_dlopen_test LIBTRACEPIPE_C.so\n");
    return 2;
  }
  /* Not linked: the library is not in the process before the dlopen(). */
  if (dlopen("libtracepipe_c.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL) {
    fprintf(stderr, "libtracepipe_c is already loaded: this program must not link it\n");
    return 1;
  }
  pthread_barrier_init(&loaded, NULL, EARLY + 1);
  pthread_t th[EARLY + LATE];
  for (uintptr_t t = 0; t < EARLY; ++t) pthread_create(&th[t], NULL, writer, (void*)t);

  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
#define LOOKUP(f)                                       \
  {                                                     \
    void* sym = dlsym(lib, #f);                         \
    if (sym == NULL) {                                  \
      fprintf(stderr, "dlsym %s: %s\n", #f, dlerror()); \
      return 1;                                         \
    }                                                   \
    memcpy(&p_##f, &sym, sizeof sym);                   \
  }
  FUNCS(LOOKUP)

  fixed = declare("fixed", &tp_fixed, 0);
  direct = declare("direct", &tp_direct, 0);
  text = declare("text", &tp_text, 1);
  tracepipe_instance_options o = TRACEPIPE_INSTANCE_OPTIONS_INIT;
  o.buffer_size_kb = 2048; /* every record stays: nothing overwritten */
  o.mode = TRACEPIPE_MODE_DROP_NEWEST;
  o.staging = TRACEPIPE_STAGING_PER_THREAD;
  tracepipe_instance* inst = NULL;
  CHECK(p_tracepipe_instance_create(&o, &inst) == TRACEPIPE_OK);
  if (inst == NULL) return 1;
  CHECK(p_tracepipe_instance_enable(inst, fixed, 1) == TRACEPIPE_OK);
  CHECK(p_tracepipe_instance_enable(inst, direct, 1) == TRACEPIPE_OK);
  CHECK(p_tracepipe_instance_enable(inst, text, 1) == TRACEPIPE_OK);
  CHECK(p_tracepipe_instance_set_filter(inst, fixed, "seq < 600") == TRACEPIPE_OK);
  CHECK(p_tracepipe_instance_set_filter(inst, text, "tag ~ \"keep*\"") == TRACEPIPE_OK);

  pthread_barrier_wait(&loaded);
  for (uintptr_t t = EARLY; t < EARLY + LATE; ++t) pthread_create(&th[t], NULL, writer, (void*)t);
  for (int t = 0; t < EARLY + LATE; ++t) pthread_join(th[t], NULL);

  const unsigned threads = EARLY + LATE;
  tracepipe_event_stats st = TRACEPIPE_EVENT_STATS_INIT;
  CHECK(p_tracepipe_instance_event_stats(inst, fixed, &st) == TRACEPIPE_OK);
  CHECK(st.kept == threads * LIMIT && st.discarded == threads * (N - LIMIT) && st.lost == 0);
  CHECK(p_tracepipe_instance_event_stats(inst, direct, &st) == TRACEPIPE_OK);
  CHECK(st.kept == threads * N && st.discarded == 0 && st.lost == 0);
  CHECK(p_tracepipe_instance_event_stats(inst, text, &st) == TRACEPIPE_OK);
  CHECK(st.kept == threads * N / 2 && st.discarded == threads * N / 2 && st.lost == 0);
  CHECK(st.staged == threads * N); /* every one built in the thread's slot */

  const size_t len = p_tracepipe_instance_trace_text(inst, NULL, 0);
  char* txt = malloc(len + 1);
  if (txt == NULL) return 1;
  CHECK(p_tracepipe_instance_trace_text(inst, txt, len + 1) == len);
  check_records(txt);
  free(txt);
  p_tracepipe_instance_destroy(inst);
  if (failures != 0) {
    fprintf(stderr, "c_api_dlopen_test: %d failures\n", failures);
    return 1;
  }
  printf("c_api_dlopen_test: dlopen() with %d threads (%d started before it): ok\n", EARLY + LATE,
         EARLY);
  return 0;
}
