/* The C API's write path makes no system call and allocates nothing (the
 * write path's F6, core/instance/instance.h): a forked child, its thread
 * registered and every path warmed once, enters a seccomp filter that kills
 * the process on any system call but read, write, exit and rt_sigreturn,
 * with malloc, calloc, realloc and free counted (this program's own
 * definitions, which the library's calls reach), then emits through every
 * C entry point and lane. Exit 0: no call, no allocation. */
#define _GNU_SOURCE
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <tracepipe/tracepipe_c.h>
#include <unistd.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void __libc_free(void*);
static volatile int counting;
static volatile unsigned long allocations;
void* malloc(size_t n) {
  if (counting) ++allocations;
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t s) {
  if (counting) ++allocations;
  return __libc_calloc(n, s);
}
void* realloc(void* p, size_t n) {
  if (counting) ++allocations;
  return __libc_realloc(p, n);
}
void free(void* p) {
  if (counting && p != NULL) ++allocations;
  __libc_free(p);
}

static int jail(void) {
  struct sock_filter prog[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_read, 5, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_write, 4, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit, 3, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_exit_group, 2, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigreturn, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog fprog = {(unsigned short)(sizeof prog / sizeof prog[0]), prog};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 0;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) == 0;
}

struct fixed {
  uint32_t seq;
  char tag[12];
};
static tracepipe_tracepoint tp_fixed, tp_dyn, tp_off, tp_plain;

static tracepipe_event* declare(const char* name, tracepipe_tracepoint* tp, int dynamic) {
  const tracepipe_field f[] = {
      {.name = "seq", .kind = TRACEPIPE_FIELD_INT, .size = 4},
      {.name = "tag",
       .kind = dynamic ? TRACEPIPE_FIELD_STRING : TRACEPIPE_FIELD_CHARS,
       .array_len = 12},
  };
  tracepipe_event_spec s = TRACEPIPE_EVENT_SPEC_INIT;
  s.system = "noalloc";
  s.name = name;
  s.fields = f;
  s.field_count = 2;
  tracepipe_event* e = NULL;
  if (tracepipe_event_declare(&s, tp, &e) != TRACEPIPE_OK)
    fprintf(stderr, "%s\n", tracepipe_last_error());
  return e;
}

/* Every entry point and lane, n times. */
static unsigned emit_all(tracepipe_instance* a, tracepipe_event* fixed, tracepipe_event* dyn,
                         tracepipe_event* off, tracepipe_event* plain, uint32_t n) {
  unsigned kept = 0;
  for (uint32_t i = 0; i < n; ++i) {
    struct fixed b = {i, "tag"};
    TRACEPIPE_C_TRACE(tp_fixed, fixed, &b, sizeof b); /* lane: integer compare, reject or accept */
    TRACEPIPE_C_TRACE(tp_plain, plain, &b, sizeof b); /* lane: unfiltered, straight into the ring */
    const tracepipe_value v[2] = {{.num = i},
                                  {.data = i % 2 ? "odd" : "even", .len = TRACEPIPE_STRLEN}};
    if (TRACEPIPE_TRACEPOINT_ENABLED(tp_dyn))
      tracepipe_trace_values(dyn, v, 2); /* staged slot, string filter */
    kept += tracepipe_emit(a, fixed, &b, sizeof b) == TRACEPIPE_EMIT_KEPT; /* one instance */
    kept += tracepipe_emit_values(a, dyn, v, 2) == TRACEPIPE_EMIT_KEPT;
    TRACEPIPE_C_TRACE(tp_off, off, &b, sizeof b); /* disabled */
    tracepipe_trace(off, &b, sizeof b);
  }
  return kept;
}

int main(void) {
  tracepipe_event* fixed = declare("fixed", &tp_fixed, 0);
  tracepipe_event* dyn = declare("dyn", &tp_dyn, 1);
  tracepipe_event* off = declare("off", &tp_off, 0);
  tracepipe_event* plain = declare("plain", &tp_plain, 0);
  tracepipe_instance *a = NULL, *b = NULL;
  tracepipe_instance_options o = TRACEPIPE_INSTANCE_OPTIONS_INIT;
  o.buffer_size_kb = 256;
  if (!fixed || !dyn || !off || !plain || tracepipe_instance_create(&o, &a) != TRACEPIPE_OK ||
      tracepipe_instance_create(&o, &b) != TRACEPIPE_OK)
    return 1;
  tracepipe_instance_enable(a, fixed, 1);
  tracepipe_instance_enable(a, dyn, 1);
  tracepipe_instance_enable(a, plain, 1);
  tracepipe_instance_enable(b, dyn, 1); /* two subscribers: the fan-out */
  if (tracepipe_instance_set_filter(a, fixed, "seq < 100") != TRACEPIPE_OK ||
      tracepipe_instance_set_filter(a, dyn, "tag == \"odd\"") != TRACEPIPE_OK)
    return 1;
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    tracepipe_thread_prepare();
    emit_all(a, fixed, dyn, off, plain, 8); /* warm: first touches of the counter pages and slots */
    counting = 1;
    if (!jail()) _exit(3);
    const unsigned kept = emit_all(a, fixed, dyn, off, plain, 1000);
    counting = 0;
    char msg[96];
    const int len =
        snprintf(msg, sizeof msg, "jailed: %u kept, %lu allocations\n", kept, allocations);
    if (write(1, msg, (size_t)len) < 0) _exit(4);
    syscall(__NR_exit_group, allocations == 0 && kept == 100 + 500 ? 0 : 5);
  }
  int ws = 0;
  waitpid(pid, &ws, 0);
  if (WIFSIGNALED(ws)) {
    printf("the child was killed by signal %d (%s): a system call on the write path\n",
           WTERMSIG(ws), strsignal(WTERMSIG(ws)));
    return 1;
  }
  printf("child exit %d\n", WEXITSTATUS(ws));
  return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : 1;
}
