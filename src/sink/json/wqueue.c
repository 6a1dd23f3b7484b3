/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wqueue.c - the writer thread and its queue of batches (see wqueue.h), and
 * their state across fork().
 */
#include "sink/json/wqueue.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/log.h"
#include "sink/json/writer.h"

struct batch {
  struct ins_buf buf;
  uint64_t records;
  const void *owner; /* whose lines (ins_wqueue_push) */
};

/* A finalize's lines (ins_wqueue_write_now), written before any batch still queued: its
 * owner's batches taken out of the queue, then its own. On the finalizing thread's stack
 * until `done`. */
struct now {
  struct batch taken[INS_WQUEUE_DEPTH];
  int ntaken;
  const char *data;
  size_t len;
  uint64_t records;
  bool done;
  struct now *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_more = PTHREAD_COND_INITIALIZER;  /* a batch was queued, or stop */
static pthread_cond_t g_room = PTHREAD_COND_INITIALIZER;  /* a slot or a spare freed */
static pthread_cond_t g_idle = PTHREAD_COND_INITIALIZER;  /* a finalize's lines written */
static struct batch g_q[INS_WQUEUE_DEPTH];
static int g_head, g_count;
static bool g_writing, g_stop, g_running;
static bool g_gone; /* the writer thread has left its loop (stopping): no one takes g_now */
static struct now *g_now, *g_now_last; /* finalizes' lines waiting, first to last */
/* The batch in writing (g_writing): here, not on the writer thread's stack, so that a
 * child forked meanwhile can free it (its copy of that stack belongs to no thread). */
static struct batch g_inflight;
static bool g_forked; /* a forked child: the queue holds the parent's batches */
static struct ins_buf g_spare[INS_WQUEUE_SPARES]; /* written batches' memory, for reuse */
static int g_nspare;
static pthread_t g_thread;
void (*ins_wqueue_test_hook)(void);

/* A finalize's lines to the file (g_lock held, g_writing set; let go while writing). */
static void write_lines(struct now *n) {
  pthread_mutex_unlock(&g_lock);
  for (int i = 0; i < n->ntaken; i++)
    ins_writer_append_records(n->taken[i].buf.data, n->taken[i].buf.len, n->taken[i].records);
  ins_writer_append_records(n->data, n->len, n->records);
  pthread_mutex_lock(&g_lock);
  g_writing = false;
  n->done = true;
  pthread_cond_signal(&g_more); /* the writer thread may have waited for the file */
  pthread_cond_broadcast(&g_room);
  pthread_cond_broadcast(&g_idle);
}

/* The first finalize's lines waiting (g_lock held). */
static void write_now(void) {
  struct now *n = g_now;
  g_now = n->next;
  if (!g_now) g_now_last = NULL;
  g_writing = true;
  write_lines(n);
}

static void *writer_thread(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  for (;;) {
    /* g_writing here: a finalizing thread writes its lines itself (the file was idle) */
    while (g_writing || (!g_count && !g_now && !g_stop)) pthread_cond_wait(&g_more, &g_lock);
    if (g_now) {
      write_now();
      continue;
    }
    if (!g_count) break; /* stopping, and everything is written */
    g_inflight = g_q[g_head];
    g_head = (g_head + 1) % INS_WQUEUE_DEPTH;
    g_count--;
    g_writing = true;
    pthread_mutex_unlock(&g_lock);
    ins_writer_append_records(g_inflight.buf.data, g_inflight.buf.len, g_inflight.records);
    pthread_mutex_lock(&g_lock);
    struct batch b = g_inflight;
    g_inflight = (struct batch){0};
    b.buf.len = 0;
    if (g_nspare < INS_WQUEUE_SPARES)
      g_spare[g_nspare++] = b.buf;
    else
      ins_buf_free(&b.buf);
    g_writing = false;
    pthread_cond_broadcast(&g_room);
    pthread_cond_broadcast(&g_idle);
  }
  g_gone = true;
  pthread_mutex_unlock(&g_lock);
  return NULL;
}

bool ins_wqueue_start(void) {
  if (g_forked) { /* the parent's batches: written by the parent */
    for (; g_count; g_count--, g_head = (g_head + 1) % INS_WQUEUE_DEPTH)
      ins_buf_free(&g_q[g_head].buf);
    ins_buf_free(&g_inflight.buf);
    g_inflight = (struct batch){0};
    /* finalizes of the parent's threads, whose lines the parent writes */
    for (struct now *n = g_now; n; n = n->next)
      for (int i = 0; i < n->ntaken; i++) ins_buf_free(&n->taken[i].buf);
    g_now = g_now_last = NULL;
    g_head = 0;
    g_writing = g_forked = false;
  }
  g_stop = g_gone = false;
  if (pthread_create(&g_thread, NULL, writer_thread, NULL) != 0) {
    ins_warn("cannot start the writer thread: the dump thread writes itself");
    return false;
  }
  g_running = true;
  return true;
}

void ins_wqueue_push(struct ins_buf *b, uint64_t records, const void *owner) {
  if (!b->len) return;
  pthread_mutex_lock(&g_lock);
  while (g_count == INS_WQUEUE_DEPTH) pthread_cond_wait(&g_room, &g_lock);
  g_q[(g_head + g_count) % INS_WQUEUE_DEPTH] = (struct batch){*b, records, owner};
  g_count++;
  /* b continues with a written batch's memory, or empty (it grows on demand) */
  *b = g_nspare ? g_spare[--g_nspare] : (struct ins_buf){0};
  pthread_cond_signal(&g_more);
  pthread_mutex_unlock(&g_lock);
}

void ins_wqueue_write_now(const void *owner, const char *data, size_t len, uint64_t records) {
  if (!g_running) { /* no writer thread (or stopped: it wrote everything) */
    ins_writer_append_records(data, len, records);
    return;
  }
  struct now n = {.data = data, .len = len, .records = records};
  pthread_mutex_lock(&g_lock);
  int kept = 0;
  for (int i = 0; i < g_count; i++) {
    struct batch *b = &g_q[(g_head + i) % INS_WQUEUE_DEPTH];
    if (b->owner == owner)
      n.taken[n.ntaken++] = *b;
    else
      g_q[(g_head + kept++) % INS_WQUEUE_DEPTH] = *b; /* the others keep their order */
  }
  g_count = kept;
  if (n.ntaken) pthread_cond_broadcast(&g_room);
  if ((n.ntaken || len) && ((!g_writing && !g_now) || g_gone)) {
    /* The file is idle: written here and now (a hand-off to the writer thread would cost
     * two thread switches); the writer thread waits meanwhile. Or that thread has left
     * (stopping: it leaves only with nothing queued, nothing next): once the file is. */
    while (g_writing) pthread_cond_wait(&g_room, &g_lock);
    g_writing = true;
    write_lines(&n);
  } else if (n.ntaken || len) {
    /* next, after the batch in writing (if owner's, its lines come first, as they must) */
    if (g_now_last) g_now_last->next = &n;
    else g_now = &n;
    g_now_last = &n;
    pthread_cond_signal(&g_more);
    if (ins_wqueue_test_hook) ins_wqueue_test_hook();
    while (!n.done) pthread_cond_wait(&g_idle, &g_lock);
  } else {
    /* nothing to write: only a batch of owner's in writing to wait for */
    while (g_writing && g_inflight.owner == owner) pthread_cond_wait(&g_idle, &g_lock);
  }
  pthread_mutex_unlock(&g_lock);
  for (int i = 0; i < n.ntaken; i++) ins_buf_free(&n.taken[i].buf);
}

void ins_wqueue_stop(void) {
  if (!g_running) return;
  pthread_mutex_lock(&g_lock);
  g_stop = true;
  pthread_cond_signal(&g_more);
  pthread_mutex_unlock(&g_lock);
  pthread_join(g_thread, NULL);
  g_running = false;
  for (int i = 0; i < g_nspare; i++) ins_buf_free(&g_spare[i]);
  g_nspare = 0;
}

int ins_wqueue_fork_prepare(const struct timespec *deadline) {
  pthread_mutex_lock(&g_lock);
  /* the writer thread sets g_writing and clears it (with g_room broadcast) under g_lock */
  while (g_writing)
    if (pthread_cond_timedwait(&g_room, &g_lock, deadline) == ETIMEDOUT) break;
  return g_writing ? -1 : 0;
}

void ins_wqueue_fork_parent(void) { pthread_mutex_unlock(&g_lock); }

void ins_wqueue_fork_child(bool locked) {
  if (locked)
    pthread_mutex_unlock(&g_lock);
  else
    pthread_mutex_init(&g_lock, NULL);
  /* The parent's threads may have been waiting on them: in the child such waiters
   * would never leave, and a signal could wait for them. */
  pthread_cond_init(&g_more, NULL);
  pthread_cond_init(&g_room, NULL);
  pthread_cond_init(&g_idle, NULL);
  g_running = false;
  g_forked = true;
}
