/*
 * trace.c - trace mode: one line per NCCL callback (see trace.h).
 */
#include "abi/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "abi/tracefmt.h"
#include "sink/files.h"

#define TAG_WRAPPER 0xA3

struct wrapper {
  uint8_t tag;
  uint64_t id;
  void *inner;
  struct wrapper *next; /* all wrappers, kept until exit */
};

#define TRACE_BUF (1u << 20)

atomic_int g_ins_trace_on;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wrapper *g_all;
static uint64_t g_next_id = 1;
static int g_next_ctx;

/* The file: our own buffer and write(), not stdio, so that a failed write is seen
 * and the file cut back to its last whole line (a trace with a torn last line
 * does not load). After a failure nothing more is written; lines are counted. */
static int g_fd = -1;
static char *g_buf;
static size_t g_len;
static off_t g_off;
static bool g_failed;
static uint64_t g_lines_lost;
static char g_path[PATH_MAX + 320];
static atomic_int g_warned;

static uint64_t count_lines(const char *p, size_t n) {
  uint64_t k = 0;
  for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))); p++) k++;
  return k;
}

/* Write the buffer out (g_lock held). */
static void flush_locked(void) {
  size_t done = 0;
  int err = 0;
  while (!g_failed && done < g_len) {
    ssize_t w = write(g_fd, g_buf + done, g_len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : ENOSPC;
      const char *nl = done ? memrchr(g_buf, '\n', done) : NULL;
      done = nl ? (size_t)(nl - g_buf) + 1 : 0;
      (void)!ftruncate(g_fd, g_off + (off_t)done); /* no torn last line */
      g_failed = true;
      break;
    }
    done += (size_t)w;
  }
  g_off += (off_t)done;
  if (done < g_len) {
    g_lines_lost += count_lines(g_buf + done, g_len - done);
    if (err)
      ins_warn_once(&g_warned, "trace mode: writing %s failed: %s; the trace ends there and "
                    "later callbacks are not written", g_path, strerror(err));
  }
  g_len = 0;
}

void ins_trace_open(const char *dir, const char *hostname) {
  char stem[300];
  snprintf(stem, sizeof stem, "%s-pid%ld", hostname, (long)getpid());
  bool renamed = false;
  g_buf = malloc(TRACE_BUF);
  if (g_buf) g_fd = ins_files_create(dir, stem, ".trace.jsonl", g_path, sizeof g_path, &renamed);
  if (g_fd < 0) {
    ins_warn("NCCL_INSPECTOR_TRACE_DIR: cannot create a trace file in '%s': %s; trace mode off",
             dir, g_buf ? strerror(errno) : "out of memory");
    free(g_buf);
    g_buf = NULL;
    return;
  }
  if (renamed)
    ins_warn("'%s/%s.trace.jsonl' already exists (an earlier process with this pid, or a link "
             "planted there): it is left alone, and the trace goes to %s", dir, stem, g_path);
  ins_info("trace mode: writing every callback to %s (this slows the job)", g_path);
  atomic_store(&g_ins_trace_on, 1);
}

/* Write one line: prefix, body, closing brace. Caller holds g_lock. */
static void emit(const char *body) {
  char pre[64];
  int np = ins_tracefmt_prefix(pre, sizeof pre);
  size_t nb = strlen(body);
  if (np < 0 || (size_t)np >= sizeof pre) np = 0;
  if (g_failed) {
    g_lines_lost++;
    return;
  }
  size_t need = (size_t)np + nb + 2;
  if (g_len + need > TRACE_BUF) flush_locked();
  if (g_failed || need > TRACE_BUF) {
    g_lines_lost++;
    return;
  }
  memcpy(g_buf + g_len, pre, (size_t)np);
  memcpy(g_buf + g_len + np, body, nb);
  memcpy(g_buf + g_len + np + nb, "}\n", 2);
  g_len += need;
}

int ins_trace_init(uint64_t comm_id, const char *name, int nnodes, int nranks, int rank,
                   int mask, int abi_version) {
  char body[640];
  pthread_mutex_lock(&g_lock);
  int ctx = ++g_next_ctx;
  char clean[256]; /* as a JSON string's content (any bytes NCCL gave) */
  ins_tracefmt_str(clean, sizeof clean, name);
  snprintf(body, sizeof body, "\"cb\":\"init\",\"ver\":%d,\"ctx\":%d,\"comm\":\"0x%" PRIx64
           "\",\"name\":\"%s\",\"nnodes\":%d,\"nranks\":%d,\"rank\":%d,\"mask\":%d",
           abi_version, ctx, comm_id, clean, nnodes, nranks, rank, mask);
  emit(body);
  pthread_mutex_unlock(&g_lock);
  return ctx;
}

void ins_trace_finalize(int ctx) {
  char body[64];
  snprintf(body, sizeof body, "\"cb\":\"finalize\",\"ctx\":%d", ctx);
  pthread_mutex_lock(&g_lock);
  emit(body);
  flush_locked();
  pthread_mutex_unlock(&g_lock);
}

static uint64_t id_of(void *h) {
  struct wrapper *w = h;
  return w && w->tag == TAG_WRAPPER ? w->id : 0;
}

void *ins_trace_unwrap(void *h) {
  struct wrapper *w = h; /* else one of the tracker's handles (no memory for a wrapper) */
  return w && w->tag == TAG_WRAPPER ? w->inner : h;
}

void *ins_trace_start(int ctx, uint64_t type, void *parent, int rank, const void *u,
                      void *pgroup, void *inner) {
  struct wrapper *w = malloc(sizeof *w);
  char body[2048];
  pthread_mutex_lock(&g_lock);
  uint64_t id = ++g_next_id;
  if (w) {
    *w = (struct wrapper){TAG_WRAPPER, id, inner, g_all};
    g_all = w;
  }
  ins_tracefmt_start(body, sizeof body, ctx, id, type, id_of(parent), rank, u, id_of(pgroup));
  emit(body);
  pthread_mutex_unlock(&g_lock);
  return w ? (void *)w : inner;
}

void *ins_trace_stop(void *h) {
  char body[64];
  snprintf(body, sizeof body, "\"cb\":\"stop\",\"id\":%" PRIu64, id_of(h));
  pthread_mutex_lock(&g_lock);
  emit(body);
  pthread_mutex_unlock(&g_lock);
  return ins_trace_unwrap(h);
}

void *ins_trace_record(void *h, int state, const union prof_state_args *args) {
  char body[128];
  if (state == PROF_STATE_KERNEL_CH_STOP && args)
    snprintf(body, sizeof body, "\"cb\":\"record\",\"id\":%" PRIu64 ",\"state\":%d,\"ptimer\":%" PRIu64,
             id_of(h), state, args->kernelCh.pTimer);
  else
    snprintf(body, sizeof body, "\"cb\":\"record\",\"id\":%" PRIu64 ",\"state\":%d", id_of(h), state);
  pthread_mutex_lock(&g_lock);
  emit(body);
  pthread_mutex_unlock(&g_lock);
  return ins_trace_unwrap(h);
}

void ins_trace_flush(void) {
  pthread_mutex_lock(&g_lock);
  uint64_t lost = 0;
  if (g_fd >= 0) {
    flush_locked();
    lost = g_lines_lost;
  }
  pthread_mutex_unlock(&g_lock);
  if (lost)
    ins_warn("trace mode: %llu callback lines could not be written to %s (see the earlier "
             "warning): the trace is incomplete", (unsigned long long)lost, g_path);
}
