/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_writer_threads.c - the JSON log's writer (src/sink/json/writer.c) appended to by many
 * threads at once, as finalizing threads and the dump thread (or, with no writer thread,
 * every finalize: NCCL_INSPECTOR_DUMP_THREAD_ENABLE=0) append to it: the file's end offset
 * and its layout buffer are shared, and its mutex is all that keeps two batches from being
 * laid out in one buffer or written at one offset. Counted exactly: every record line in the
 * file once, whole, each thread's batches in the order it appended them, none counted
 * unwritten. Without the lock, batches written at the same offset overwrite each other (lost
 * lines) and a shared buffer mixes or repeats them, in the plain build as under TSan: the
 * lock is then not held by the ThreadSanitizer tier alone.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "sink/json/writer.h"

#define THREADS 8
#define BATCHES 60 /* per thread */
#define LINES 160   /* per batch: a write long enough for others to start theirs meanwhile */
#define BATCH_CAP (LINES * 512)

static pthread_barrier_t g_start;

/* A slow file system: every write the writer makes (its batches, its page padding) takes
 * 200 us more. This definition is the one writer.c's calls reach (the program's own symbol
 * comes before libc's), so that a batch is still being written when the next thread's
 * append starts: with the lock, that thread waits; without it, it lays its batch out in the
 * same buffer and writes it at the same offset, on any machine, however loaded. */
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  struct timespec slow = {0, 200 * 1000};
  nanosleep(&slow, NULL);
  return syscall(SYS_pwrite64, fd, buf, n, off);
}

/* Batch b of thread t: LINES record lines "t b i", padded to lengths that vary with i, so that
 * batches end at every offset of a page and the writer pads lines across page boundaries. */
static size_t batch(char *buf, size_t cap, int t, int b) {
  size_t len = 0;
  for (int i = 0; i < LINES; i++) {
    int pad = 20 + (t * 131 + b * 17 + i * 29) % 300;
    len += (size_t)snprintf(buf + len, cap - len, "{\"coll_perf\":{\"tag\":\"%d %d %d\",\"pad\":\"%0*d\"}}\n",
                            t, b, i, pad, 0);
  }
  return len;
}

static void *appender(void *arg) {
  int t = (int)(intptr_t)arg;
  char *buf = malloc(BATCH_CAP);
  if (!buf) return NULL;
  pthread_barrier_wait(&g_start);
  for (int b = 0; b < BATCHES; b++) ins_writer_append_records(buf, batch(buf, BATCH_CAP, t, b), LINES);
  free(buf);
  return NULL;
}

/* The appending process: THREADS threads, then the file closed. Exits 0 when no record was
 * counted unwritten. */
static int append_all(const char *dir) {
  ins_writer_configure(dir, "host");
  pthread_t th[THREADS];
  pthread_barrier_init(&g_start, NULL, THREADS);
  for (int t = 0; t < THREADS; t++)
    if (pthread_create(&th[t], NULL, appender, (void *)(intptr_t)t) != 0) return 2;
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  uint64_t lost = ins_writer_unwritten();
  ins_writer_close();
  if (lost) fprintf(stderr, "%llu records counted unwritten\n", (unsigned long long)lost);
  return lost ? 1 : 0;
}

int main(void) {
  char dir[] = "/tmp/inspector-writer-threads-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[4200], cmd[4400];
  /* the appending in a child (forked before any thread), so that the directory is removed
   * here whatever becomes of it (without the lock, two threads growing the layout buffer at
   * once may crash it) */
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(append_all(dir));
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  snprintf(path, sizeof path, "%s/host-pid%ld.log", dir, (long)pid);

  /* every line: a record of a known tag, whole (trailing pad spaces aside), once */
  static unsigned char seen[THREADS][BATCHES][LINES];
  int last_batch[THREADS];
  for (int t = 0; t < THREADS; t++) last_batch[t] = -1;
  unsigned long records = 0, torn = 0, twice = 0, out_of_order = 0;
  FILE *f = fopen(path, "r");
  CHECK(f != NULL);
  static char line[1 << 16];
  while (f && fgets(line, sizeof line, f)) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == ' ')) line[--n] = '\0';
    if (!n) continue; /* a page's padding line is never empty: none expected, none harmful */
    int t, b, i, used = 0;
    if (sscanf(line, "{\"coll_perf\":{\"tag\":\"%d %d %d\",\"pad\":\"%*[0]\"}}%n", &t, &b, &i, &used) != 3 ||
        (size_t)used != n || t < 0 || t >= THREADS || b < 0 || b >= BATCHES || i < 0 || i >= LINES) {
      if (torn++ < 3) fprintf(stderr, "not a whole record line: '%.120s'\n", line);
      continue;
    }
    records++;
    twice += seen[t][b][i]++ > 0;
    if (b < last_batch[t]) out_of_order++;
    last_batch[t] = b;
  }
  if (f) fclose(f);
  unsigned long missing = 0;
  for (int t = 0; t < THREADS; t++)
    for (int b = 0; b < BATCHES; b++)
      for (int i = 0; i < LINES; i++) missing += !seen[t][b][i];
  CHECK_EQ_U(records, (unsigned long)THREADS * BATCHES * LINES);
  CHECK_EQ_U(missing, 0);
  CHECK_EQ_U(twice, 0);
  CHECK_EQ_U(torn, 0);
  CHECK_EQ_U(out_of_order, 0);

  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return check_report("writer_threads");
}
