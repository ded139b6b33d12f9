/* tracepipe from C (docs/c_api.md): declare an event at run time, filter it
 * with the kernel's filter language, emit, and write a trace.dat that
 * `trace-cmd report c_api.dat` prints.
 *
 *   cc -std=c11 c_api.c $(pkg-config --cflags --libs tracepipe-c)
 */
#include <stdio.h>
#include <tracepipe/tracepipe_c.h>

/* The event site's word: static storage, zero-initialised. */
static tracepipe_tracepoint tp_request_done;

/* The record's body, laid out as the event declares it (natural alignment). */
struct request_done {
  uint32_t id;
  uint32_t latency_us;
  uint16_t status;
  char method[6];
};

int main(void) {
  const tracepipe_field fields[] = {
      {.name = "id", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "latency_us", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "status", .kind = TRACEPIPE_FIELD_INT, .size = 2},
      {.name = "method", .kind = TRACEPIPE_FIELD_CHARS, .array_len = 6},
  };
  tracepipe_event_spec spec = TRACEPIPE_EVENT_SPEC_INIT;
  spec.system = "app";
  spec.name = "request_done";
  spec.fields = fields;
  spec.field_count = sizeof fields / sizeof fields[0];
  tracepipe_event* request_done;
  tracepipe_instance* inst;
  if (tracepipe_event_declare(&spec, &tp_request_done, &request_done) != TRACEPIPE_OK ||
      tracepipe_instance_create(NULL, &inst) != TRACEPIPE_OK) {
    fprintf(stderr, "%s\n", tracepipe_last_error());
    return 1;
  }
  tracepipe_instance_enable(inst, request_done, 1);

  /* A typo: the kernel's message, with a caret under the bad field. */
  if (tracepipe_instance_set_filter(inst, request_done, "latency > 1000") != TRACEPIPE_OK)
    printf("%s\n", tracepipe_last_error());
  if (tracepipe_instance_set_filter(inst, request_done, "latency_us > 1000 || status >= 500") !=
      TRACEPIPE_OK) {
    fprintf(stderr, "%s\n", tracepipe_last_error());
    return 1;
  }

  const struct request_done reqs[] = {
      {1, 1500, 200, "GET"}, /* kept: slow */
      {2, 80, 200, "GET"},   /* discarded */
      {3, 90, 503, "POST"},  /* kept: an error */
  };
  for (size_t i = 0; i < 3; ++i) /* no argument is evaluated while nobody listens */
    TRACEPIPE_C_TRACE(tp_request_done, request_done, &reqs[i], sizeof reqs[i]);

  char text[4096];
  tracepipe_instance_trace_text(inst, text, sizeof text); /* like `cat trace` */
  fputs(text, stdout);
  tracepipe_event_stats st = TRACEPIPE_EVENT_STATS_INIT;
  tracepipe_instance_event_stats(inst, request_done, &st);
  printf("kept %llu of %llu\n", (unsigned long long)st.kept,
         (unsigned long long)(st.kept + st.discarded));
  if (tracepipe_instance_write_trace_dat(inst, "c_api.dat", 0) != TRACEPIPE_OK) {
    fprintf(stderr, "%s\n", tracepipe_last_error());
    return 1;
  }
  tracepipe_instance_destroy(inst);
  return 0;
}
