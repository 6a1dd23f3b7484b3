/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_wqueue.c - the writer thread's queue (src/sink/json/wqueue.c) with a stalled
 * file system: the test's own pwrite() (it takes precedence over libc's for the
 * plugin objects linked into this program) waits at a gate, as a write to a slow
 * or hung file system would. Checked:
 * - with the writer stuck in its first write, INS_WQUEUE_DEPTH more batches
 *   are queued without waiting, and the next push waits (the dump thread then
 *   stops, and the rings absorb the rest);
 * - ins_wqueue_write_now() waits for a batch of its owner in writing, even with
 *   nothing to write;
 * - once the gate opens, every batch is in the file, in push order, none
 *   counted as unwritten.
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

#define BATCHES (INS_WQUEUE_DEPTH + 2) /* one in writing, DEPTH queued, one waiting */

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

/* The owners of the batches: the first, and the rest (ins_wqueue_push). */
static const int g_first_owner, g_rest_owner;

/* Push one batch holding the line "batch <i>"; false without memory. (No CHECK
 * here: it runs on other threads too, and the counters are the main thread's.) */
static bool push_line(int i) {
  struct ins_buf b = {0};
  char line[64];
  int n = snprintf(line, sizeof line, "batch %d\n", i);
  if (ins_buf_reserve(&b, (size_t)n) != 0) return false;
  memcpy(b.data, line, (size_t)n);
  b.len = (size_t)n;
  ins_wqueue_push(&b, 1, i == 0 ? &g_first_owner : &g_rest_owner);
  ins_buf_free(&b); /* what push handed back: a spare or an empty buffer */
  return true;
}

static atomic_bool g_last_pushed, g_took;

static void *push_last(void *arg) {
  (void)arg;
  atomic_store(&g_last_pushed, push_line(BATCHES - 1));
  return NULL;
}

static void *take_thread(void *arg) {
  (void)arg;
  ins_wqueue_write_now(&g_first_owner, NULL, 0, 0); /* nothing of its own to write */
  atomic_store(&g_took, true);
  return NULL;
}

/* The file's lines, trailing spaces (the writer's page padding) and blank lines dropped. */
static int read_lines(const char *dir, char lines[][64], int cap) {
  char path[512];
  DIR *d = opendir(dir);
  struct dirent *e;
  path[0] = '\0';
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".log")) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  if (d) closedir(d);
  FILE *f = path[0] ? fopen(path, "r") : NULL;
  if (!f) return -1;
  int n = 0;
  char buf[8192];
  while (fgets(buf, sizeof buf, f)) {
    size_t len = strlen(buf);
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' ')) buf[--len] = '\0';
    if (!len) continue;
    if (n < cap) snprintf(lines[n], 64, "%.63s", buf); /* lines are short: the first 63 bytes tell them apart */
    n++;
  }
  fclose(f);
  unlink(path);
  return n;
}

int main(void) {
  char dir[] = "/tmp/inspector-wqueue-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ins_writer_configure(dir, "wqueue");
  CHECK(ins_wqueue_start());

  /* The first batch reaches the writer, which stalls in pwrite. */
  CHECK(push_line(0));
  for (int i = 0; i < 2000 && !atomic_load(&g_in_pwrite); i++) sleep_ms(5);
  CHECK(atomic_load(&g_in_pwrite) == 1);
  /* Nothing queued, one batch in writing: its owner's finalize must wait for it. */
  pthread_t last, taker;
  CHECK(pthread_create(&taker, NULL, take_thread, NULL) == 0);
  sleep_ms(50);
  CHECK(!atomic_load(&g_took));

  /* The queue takes INS_WQUEUE_DEPTH more without waiting on the writer. */
  int pushed = 0;
  for (int i = 1; i < BATCHES - 1; i++) pushed += push_line(i);
  CHECK_EQ_U(pushed, INS_WQUEUE_DEPTH);
  CHECK(pthread_create(&last, NULL, push_last, NULL) == 0);
  sleep_ms(200);
  /* Nothing can have moved: the writer is still at the gate. */
  CHECK(!atomic_load(&g_last_pushed));
  CHECK(!atomic_load(&g_took));
  CHECK(atomic_load(&g_in_pwrite) == 1);

  pthread_mutex_lock(&g_gate_lock);
  g_gate_open = true;
  pthread_cond_broadcast(&g_gate_cond);
  pthread_mutex_unlock(&g_gate_lock);
  pthread_join(last, NULL);
  pthread_join(taker, NULL);
  CHECK(atomic_load(&g_last_pushed));
  ins_wqueue_stop(); /* writes what is still queued */

  static char lines[BATCHES + 8][64];
  int n = read_lines(dir, lines, BATCHES + 8);
  CHECK_EQ_U(n, BATCHES);
  int in_order = 0;
  for (int i = 0; i < n && i < BATCHES; i++) {
    char want[64];
    snprintf(want, sizeof want, "batch %d", i);
    in_order += !strcmp(lines[i], want);
  }
  CHECK_EQ_U(in_order, BATCHES);
  CHECK_EQ_U(ins_writer_unwritten(), 0);
  rmdir(dir);

  printf("%d passed, %d failed\n", g_pass, g_fail);
  return g_fail != 0;
}
