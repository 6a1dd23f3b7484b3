/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wqueue_now.c - a finalize's last lines (ins_wqueue_write_now, src/sink/json/
 * wqueue.c) are written next: its communicator's batches still queued, taken out in
 * order, then its own, ahead of every other communicator's batch queued, so that it waits
 * for no other communicator's lines but the one batch in writing (a busy dump thread keeps
 * up to INS_WQUEUE_DEPTH batches queued). The writer's writes go through this program's
 * pwrite() (it takes precedence over libc's for the plugin objects linked in), held at a
 * gate, as on a slow file system. Checked: with X's batch in writing and X's and C's
 * queued, C's finalize is next in line (the queue's test hook says when), and cannot
 * have returned; once the gate opens the file reads X's first batch, C's two and C's
 * own line, then X's second.
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

#define WAIT_MS 30000 /* for an event that must come */

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

static bool reached(atomic_int *flag) {
  for (int i = 0; i < WAIT_MS && !atomic_load(flag); i++) sleep_ms(1);
  return atomic_load(flag) != 0;
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

static atomic_int g_next, g_done;

static void hook(void) { atomic_store(&g_next, 1); }

static void *finalize_c(void *arg) {
  (void)arg;
  ins_wqueue_write_now(&g_c, "c3\n", 3, 1);
  atomic_store(&g_done, 1);
  return NULL;
}

/* The log file's text (the first 255 bytes, the writer's padding spaces dropped), then
 * the file removed. */
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
  char dir[] = "/tmp/inspector-wqueue-now-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ins_writer_configure(dir, "wqueue-now");
  CHECK(ins_wqueue_start());
  ins_wqueue_test_hook = hook;

  push_line("x1\n", &g_x); /* the writer takes it, and holds in its write */
  CHECK(reached(&g_in_pwrite));
  push_line("c1\n", &g_c);
  push_line("x2\n", &g_x);
  push_line("c2\n", &g_c);
  pthread_t fin;
  CHECK(pthread_create(&fin, NULL, finalize_c, NULL) == 0);
  CHECK(reached(&g_next));
  CHECK(!atomic_load(&g_done)); /* its lines cannot be written yet: the gate is shut */
  CHECK_EQ_U(atomic_load(&g_in_pwrite), 1);

  pthread_mutex_lock(&g_gate_lock);
  g_gate_open = true;
  pthread_cond_broadcast(&g_gate_cond);
  pthread_mutex_unlock(&g_gate_lock);
  pthread_join(fin, NULL);
  CHECK(atomic_load(&g_done));
  ins_wqueue_stop();
  char text[256];
  read_file(dir, text, sizeof text);
  CHECK_STR(text, "x1\nc1\nc2\nc3\nx2\n");
  CHECK_EQ_U(ins_writer_unwritten(), 0);
  ins_writer_close();
  rmdir(dir);
  return check_report("wqueue_now");
}
