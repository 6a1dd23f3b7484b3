/*
 * test_wqueue_take.c - ins_wqueue_take() (src/sink/json/wqueue.c) takes its owner's
 * batches out of the writer's queue, in order, without waiting for the other owners'
 * batches ahead of them: a finalize writing its communicator's last lines waits for no
 * other communicator's (a busy dump thread keeps up to INS_WQUEUE_DEPTH batches queued).
 * The writer's writes go through this program's pwrite() (it takes precedence over
 * libc's for the plugin objects linked in), held, as on a slow file system. Checked:
 * with X's batch in writing and X's and C's queued, C's take returns (a bounded wait: a
 * take that waits for X's fails here instead of hanging) with C's two batches, in
 * order; the writer then writes X's, and only X's, in order.
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
static bool g_gate_open;
static atomic_int g_in_pwrite; /* writes that reached the gate */

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  static ssize_t (*real)(int, const void *, size_t, off_t);
  if (!real) real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
  atomic_fetch_add(&g_in_pwrite, 1);
  pthread_mutex_lock(&g_gate_lock);
  while (!g_gate_open) pthread_cond_wait(&g_gate_cond, &g_gate_lock);
  pthread_mutex_unlock(&g_gate_lock);
  return real(fd, buf, n, off);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static const int g_x, g_c; /* the owners */

static void push_line(const char *line, const void *owner) {
  struct ins_buf b = {0};
  size_t n = strlen(line);
  if (ins_buf_reserve(&b, n) != 0) return;
  memcpy(b.data, line, n);
  b.len = n;
  ins_wqueue_push(&b, 1, owner);
  ins_buf_free(&b);
}

static struct ins_wqueue_taken g_q;
static atomic_int g_took;

static void *take_c(void *arg) {
  (void)arg;
  ins_wqueue_take(&g_c, &g_q);
  atomic_store(&g_took, 1);
  return NULL;
}

/* The log file's text (the first 255 bytes, padding spaces dropped), then the file
 * removed. */
static void read_file(const char *dir, char *out, size_t cap) {
  char path[512] = "";
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strstr(e->d_name, ".log")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  if (d) closedir(d);
  out[0] = '\0';
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  if (!f) return;
  size_t n = 0;
  for (int ch; (ch = fgetc(f)) != EOF && n < cap - 1;)
    if (ch != ' ') out[n++] = (char)ch;
  out[n] = '\0';
  fclose(f);
  unlink(path);
}

int main(void) {
  char dir[] = "/tmp/inspector-wqueue-take-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ins_writer_configure(dir, "wqueue-take");
  CHECK(ins_wqueue_start());

  push_line("x1\n", &g_x); /* the writer takes it, and holds in its write */
  for (int i = 0; i < DETECT_MS && !atomic_load(&g_in_pwrite); i++) sleep_ms(1);
  CHECK_EQ_U(atomic_load(&g_in_pwrite), 1);
  push_line("c1\n", &g_c);
  push_line("x2\n", &g_x);
  push_line("c2\n", &g_c);
  pthread_t taker;
  CHECK(pthread_create(&taker, NULL, take_c, NULL) == 0);
  for (int i = 0; i < DETECT_MS && !atomic_load(&g_took); i++) sleep_ms(1);
  CHECK(atomic_load(&g_took)); /* X's write still held */
  CHECK_EQ_U(atomic_load(&g_in_pwrite), 1);

  pthread_mutex_lock(&g_gate_lock);
  g_gate_open = true;
  pthread_cond_broadcast(&g_gate_cond);
  pthread_mutex_unlock(&g_gate_lock);
  pthread_join(taker, NULL);
  CHECK_EQ_U(g_q.n, 2);
  if (g_q.n == 2) {
    CHECK(g_q.buf[0].len == 3 && !memcmp(g_q.buf[0].data, "c1\n", 3));
    CHECK(g_q.buf[1].len == 3 && !memcmp(g_q.buf[1].data, "c2\n", 3));
    CHECK_EQ_U(g_q.records[0] + g_q.records[1], 2);
  }
  for (int i = 0; i < g_q.n; i++) ins_buf_free(&g_q.buf[i]);
  ins_wqueue_stop();
  char text[256];
  read_file(dir, text, sizeof text);
  CHECK_STR(text, "x1\nx2\n");
  CHECK_EQ_U(ins_writer_unwritten(), 0);
  ins_writer_close();
  rmdir(dir);
  return check_report("wqueue_take");
}
