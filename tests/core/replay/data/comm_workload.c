/* The workload behind the COMM captures (capture_comm.py): a process tree
 * whose tasks change their names while they run, between calls of getppid()
 * (the syscalls:sys_enter_getppid event marks "this task ran here").
 *
 *   comm_workload rename   prctl(PR_SET_NAME), a write to /proc/self/comm, a
 *                          thread renamed by another thread through
 *                          /proc/self/task/TID/comm, a forked child that
 *                          inherits a name and renames itself.
 *   comm_workload exec     a child that execs a program whose name is longer
 *                          than 15 characters, one that execs through
 *                          fexecve(), a thread that execs (its process keeps
 *                          the leader's pid), and the parent exec'ing last.
 *
 * The binary is run under the name "tp_comm_work"; capture_comm.py makes the
 * copies named below. Build: cc -O1 -pthread -o tp_comm_work comm_workload.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void mark(int n) {
  for (int i = 0; i < n; ++i) syscall(SYS_getppid);
}

static void nap(void) {
  struct timespec ts = {0, 2 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

static void set_name(const char* name) { prctl(PR_SET_NAME, name, 0, 0, 0); }

static void write_comm(const char* path, const char* name) {
  int fd = open(path, O_WRONLY);
  if (fd < 0 || write(fd, name, strlen(name)) < 0) exit(3);
  close(fd);
}

static char self_dir[4096];

static void exec_copy(const char* name, const char* arg) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", self_dir, name);
  execl(path, path, arg, (char*)NULL);
  exit(4);
}

/* ---- rename ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int step;
static pid_t worker_tid;

static void wait_step(int s) {
  pthread_mutex_lock(&mu);
  while (step < s) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}
static void set_step(int s) {
  pthread_mutex_lock(&mu);
  step = s;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static void* worker(void* arg) {
  (void)arg;
  worker_tid = (pid_t)syscall(SYS_gettid);
  set_name("tp-gamma");
  mark(2);
  set_step(1);
  wait_step(2); /* renamed to tp-delta by the main thread */
  mark(2);
  nap();
  mark(1);
  return NULL;
}

static int do_rename(void) {
  mark(3);
  nap();
  set_name("tp-alpha");
  mark(3);
  nap();
  write_comm("/proc/self/comm", "tp-beta");
  mark(3);
  nap();
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  wait_step(1);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)worker_tid);
  write_comm(path, "tp-delta");
  set_step(2);
  mark(2);
  pthread_join(t, NULL);
  pid_t c = fork();
  if (c == 0) {
    mark(2); /* still tp-beta */
    nap();
    set_name("tp-child");
    mark(2);
    _exit(0);
  }
  waitpid(c, NULL, 0);
  set_name("tp-alpha");
  mark(2);
  return 0;
}

/* ---- exec ---- */
static void* exec_thread(void* arg) {
  (void)arg;
  set_name("tp-mt-thread");
  mark(2);
  exec_copy("tp-execd-0123456789", "done");
  return NULL;
}

static int do_exec(void) {
  mark(2);
  nap();
  pid_t c = fork();
  if (c == 0) {
    mark(2); /* tp_comm_work, a child */
    exec_copy("tp-execd-0123456789", "done");
  }
  waitpid(c, NULL, 0);
  c = fork();
  if (c == 0) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", self_dir, "tp-fexecd");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char* argv[] = {"tp-fexecd", "done", NULL};
    extern char** environ;
    set_name("tp-before-fx");
    mark(2);
    if (fd >= 0) fexecve(fd, argv, environ);
    _exit(5);
  }
  waitpid(c, NULL, 0);
  c = fork();
  if (c == 0) {
    set_name("tp-mt");
    mark(2);
    pthread_t t;
    pthread_create(&t, NULL, exec_thread, NULL);
    pthread_join(t, NULL); /* never returns: the thread's exec ends this image */
    _exit(6);
  }
  waitpid(c, NULL, 0);
  set_name("tp-last");
  mark(2);
  exec_copy("tp-execd-0123456789", "done");
  return 0;
}

int main(int argc, char** argv) {
  const char* slash = strrchr(argv[0], '/');
  snprintf(self_dir, sizeof self_dir, "%.*s", slash ? (int)(slash - argv[0]) : 1,
           slash ? argv[0] : ".");
  if (argc > 1 && strcmp(argv[1], "rename") == 0) return do_rename();
  if (argc > 1 && strcmp(argv[1], "exec") == 0) return do_exec();
  if (argc > 1 && strcmp(argv[1], "done") == 0) {
    mark(3);
    nap();
    mark(1);
    return 0;
  }
  fprintf(stderr, "usage: %s rename|exec\n", argv[0]);
  return 2;
}
