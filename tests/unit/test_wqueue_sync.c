/*
 * test_wqueue_sync.c - ins_wqueue_sync() (src/sink/json/wqueue.c) waits for the batches
 * queued before it, not for those queued after: a finalize writing its own lines waits
 * for what the dump thread had handed on, never for a busy dump thread to stop pushing
 * (a queue that never empties). The writer's writes go through this program's pwrite()
 * (it takes precedence over libc's for the plugin objects linked in), which lets a
 * given number of writes through and holds the next, as a slow file system would.
 * Checked: with batch A in writing, a sync begins (the queue's test hook says when it
 * knows what it waits for), then B is pushed; A's write goes
 * through and the writer holds in B's: the sync has returned (bounded wait: a sync that
 * waits for B fails here instead of hanging); then both lines are in the file, in order.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "io/buf.h"
#include "sink/json/writer.h"
#include "sink/json/wqueue.h"

#define DETECT_MS 30000 /* a wait that must end at once; longer is a failure, not a hang */

static pthread_mutex_t g_gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cond = PTHREAD_COND_INITIALIZER;
static int g_let_through;      /* writes that may go on (-1: all) */
static atomic_int g_in_pwrite; /* writes that reached the gate */

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (!real) real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  atomic_fetch_add(&g_in_pwrite, 1);
  pthread_mutex_lock(&g_gate_lock);
  while (g_let_through == 0) pthread_cond_wait(&g_gate_cond, &g_gate_lock);
  if (g_let_through > 0) g_let_through--;
  pthread_mutex_unlock(&g_gate_lock);
  return real(fd, buf, n, off);
}

static void let_through(int n) {
  pthread_mutex_lock(&g_gate_lock);
  g_let_through = n;
  pthread_cond_broadcast(&g_gate_cond);
  pthread_mutex_unlock(&g_gate_lock);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Wait (bounded) until *v reaches want. */
static bool reached(atomic_int *v, int want) {
  for (int i = 0; i < DETECT_MS && atomic_load(v) < want; i++) sleep_ms(1);
  return atomic_load(v) >= want;
}

static void push_line(const char *line) {
  struct ins_buf b = {0};
  size_t n = strlen(line);
  if (ins_buf_reserve(&b, n) != 0) return;
  memcpy(b.data, line, n);
  b.len = n;
  ins_wqueue_push(&b, 1);
  ins_buf_free(&b);
}

static atomic_int g_sync_waits, g_synced;

static void sync_hook(void) { atomic_store(&g_sync_waits, 1); }

static void *sync_thread(void *arg) {
  (void)arg;
  ins_wqueue_sync();
  atomic_store(&g_synced, 1);
  return NULL;
}

/* The log file's text (the first 255 bytes), then the file removed. */
static void read_file(const char *dir, char *out, size_t cap) {
  char path[512] = "";
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".log")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  if (d) closedir(d);
  out[0] = '\0';
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  if (!f) return;
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = '\0';
  fclose(f);
  unlink(path);
}

int main(void) {
  char dir[] = "/tmp/inspector-wqueue-sync-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ins_writer_configure(dir, "wqueue-sync");
  CHECK(ins_wqueue_start());

  push_line("A\n"); /* the writer takes it, and holds in its write */
  CHECK(reached(&g_in_pwrite, 1));
  ins_wqueue_test_hook = sync_hook;
  pthread_t syncer;
  CHECK(pthread_create(&syncer, NULL, sync_thread, NULL) == 0);
  CHECK(reached(&g_sync_waits, 1)); /* the sync knows what it waits for: then B comes */
  push_line("B\n");
  let_through(1);                   /* A's write goes on; B's will hold */
  CHECK(reached(&g_in_pwrite, 2)); /* the writer is in B's write */
  CHECK(reached(&g_synced, 1));     /* and the sync, which wanted A only, has returned */

  let_through(-1);
  pthread_join(syncer, NULL);
  ins_wqueue_stop();
  char text[256];
  read_file(dir, text, sizeof text);
  CHECK_STR(text, "A\nB\n");
  CHECK_EQ_U(ins_writer_unwritten(), 0);
  ins_writer_close();
  rmdir(dir);
  return check_report("wqueue_sync");
}
