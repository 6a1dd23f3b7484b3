/* SPDX-License-Identifier: Apache-2.0 */
/*
 * writer.c - trace mode's lines and file (see internal.h): an event, as the trace thread
 * hands it over in time order, formatted into the write buffer, and the buffer written to
 * <dir>/<host>-pid<pid>.trace.jsonl. Owned by the trace thread (after it stops: by the
 * exiting thread).
 *
 * Our own write(), not stdio, so that a failed write is seen and the file cut back to its
 * last whole line (a trace with a torn last line does not load). After a failure nothing
 * more is written; lines are counted. A trace file that cannot be made or written, and
 * lines lost, are notices (core/log.h): the user asked for a trace and must hear, whatever
 * NCCL_DEBUG says, that there is none.
 *
 * A file deleted while the job runs is made again (io/files.h's rules) and starts with the
 * init lines of the live contexts (the replay needs a context's init before its events):
 * so they are kept, each until its finalize line is in the file.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "io/files.h"
#include "trace/internal.h"
#include "trace/tracefmt.h"

#define TRACE_BUF (1u << 20) /* the write buffer */

static int g_fd = -1;
static char *g_buf;
static size_t g_len;
static off_t g_off;
static bool g_failed;
static char g_path[PATH_MAX + 320];
static struct ins_files_dir g_dir; /* as first made: to make the file again if it is deleted */
static char g_stem[300];
static atomic_int g_warned, g_warned_gone;
/* The init lines of the contexts not yet finalized, so that a file made again after the
 * first was deleted starts with them (the replay needs a context's init before its
 * events). `written`: in a file already (the rest are in the buffer being written). */
struct init_line {
  int ctx;
  bool written, finalized; /* finalized: forgotten once its finalize line is written */
  char *line;
};
static struct init_line *g_inits;    /* changed under ins_trace_mem_lock */
static size_t g_ninits, g_inits_cap;
static uint64_t g_last_t; /* lines' t never go back */
/* The finalize events written to the file so far (a finalize waits for its own), and
 * those formatted (the trace thread's): published by flush_buf, once in the file. */
static _Atomic uint64_t g_finalized;
static uint64_t g_finalized_formatted;

static uint64_t count_lines(const char *p, size_t n) {
  uint64_t k = 0;
  for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))); p++) k++;
  return k;
}

/* write() all of p, n bytes, at the file's end: what was written (short on an error,
 * *err set). */
static size_t write_all(const char *p, size_t n, int *err) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(g_fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      *err = w < 0 ? errno : ENOSPC;
      break;
    }
    done += (size_t)w;
  }
  return done;
}

/* The file was deleted (or its directory) while the job ran: make it again (same rules:
 * io/files.h) and start it with the init lines of the live contexts. 0, or -1 (the
 * trace then ends, as on a failed write). */
static int reopen(void) {
  bool renamed = false;
  close(g_fd);
  g_fd = ins_files_create(&g_dir, g_stem, ".trace.jsonl", g_path, sizeof g_path, &renamed);
  g_off = 0;
  if (g_fd < 0) return -1;
  if (!ins_warn_once(&g_warned_gone, "trace mode: the trace file was deleted while the job ran: "
                     "the trace goes on in %s (starting with the live communicators' init lines)",
                     g_path))
    ins_info("trace mode: the trace file was deleted again: the trace goes on in %s", g_path);
  for (size_t i = 0; i < g_ninits; i++) {
    if (!g_inits[i].written) continue; /* in the buffer rewritten next */
    size_t n = strlen(g_inits[i].line);
    int err = 0;
    char nl = '\n';
    if (write_all(g_inits[i].line, n, &err) != n || write_all(&nl, 1, &err) != 1) return -1;
    g_off += (off_t)n + 1;
  }
  return 0;
}

/* Write the buffer out. */
static void flush_buf(void) {
  int err = 0;
  size_t done = g_failed ? 0 : write_all(g_buf, g_len, &err);
  /* Deleted before or while this was written: it reached no one. Again, to a new file. */
  bool lost_file = false;
  if (!g_failed && done == g_len && g_len && ins_files_gone(g_fd, g_path)) {
    if (reopen() == 0) done = write_all(g_buf, g_len, &err);
    else err = errno, done = 0, lost_file = g_fd < 0;
  }
  if (!g_failed && done < g_len) {
    const char *nl = done ? memrchr(g_buf, '\n', done) : NULL;
    done = nl ? (size_t)(nl - g_buf) + 1 : 0;
    if (g_fd >= 0) (void)!ftruncate(g_fd, g_off + (off_t)done); /* no torn last line */
    g_failed = true;
  }
  g_off += (off_t)done;
  if (done < g_len) {
    atomic_fetch_add(&ins_trace_lines_lost, count_lines(g_buf + done, g_len - done));
    char why[INS_FILES_WHY_MAX];
    if (lost_file) /* the directory could not be made again, or is refused (io/files.h) */
      ins_notice(&g_warned, NULL, "trace mode: the trace file %s was deleted while the job ran "
                 "and cannot be made again: %s; the trace ends there and later callbacks are not "
                 "written (counted)", g_path, ins_files_why(&g_dir, err, why, sizeof why));
    else if (err)
      ins_notice(&g_warned, NULL, "trace mode: writing %s failed: %s; the trace ends there and "
                 "later callbacks are not written", g_path, strerror(err));
  }
  g_len = 0;
  if (g_ninits) {
    pthread_mutex_lock(&ins_trace_mem_lock);
    for (size_t i = 0; i < g_ninits;) {
      if (g_inits[i].finalized) { /* its finalize line too is in the file */
        free(g_inits[i].line);
        g_inits[i] = g_inits[--g_ninits];
        continue;
      }
      g_inits[i++].written = true;
    }
    pthread_mutex_unlock(&ins_trace_mem_lock);
  }
  atomic_store_explicit(&g_finalized, g_finalized_formatted, memory_order_release);
}

/* One line into the buffer: prefix, body, closing brace. */
static void put_line(uint64_t t, long tid, const char *body) {
  if (g_failed) {
    atomic_fetch_add(&ins_trace_lines_lost, 1);
    return;
  }
  if (t < g_last_t) t = g_last_t;
  g_last_t = t;
  char pre[64];
  int np = ins_tracefmt_prefix_at(pre, sizeof pre, t, tid);
  if (np < 0 || (size_t)np >= sizeof pre) np = 0;
  size_t nb = strlen(body), need = (size_t)np + nb + 2;
  if (g_len + need > TRACE_BUF) flush_buf();
  if (g_failed || need > TRACE_BUF) {
    atomic_fetch_add(&ins_trace_lines_lost, 1);
    return;
  }
  memcpy(g_buf + g_len, pre, (size_t)np);
  memcpy(g_buf + g_len + np, body, nb);
  memcpy(g_buf + g_len + np + nb, "}\n", 2);
  g_len += need;
}

/* ---- the common lines, formatted by hand: snprintf made the trace thread the
 * bottleneck (630 ns a line: 1.6 M lines/s, against bursts of several million
 * callbacks a second from NCCL's proxy threads); these take about a tenth of that ---- */

static char *put_u64(char *p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10));
  while (n) *p++ = tmp[--n];
  return p;
}

static char *put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return put_u64(p, (uint64_t)0 - (uint64_t)v);
  }
  return put_u64(p, (uint64_t)v);
}

#define PUT_LIT(p, s) (memcpy((p), "" s "", sizeof(s) - 1), (p) + sizeof(s) - 1)

/* stop, record and kernel-channel start lines (the others go through tracefmt), exactly
 * as tracefmt writes them: false for any other event */
static bool fast_line(const struct trace_ev *e, long tid, uint64_t t) {
  if (!(e->what == EV_STOP || e->what == EV_RECORD ||
        (e->what == EV_START && e->type == PROF_EV_KERNEL_CH)))
    return false;
  if (g_len + 256 > TRACE_BUF) flush_buf();
  if (g_failed) {
    atomic_fetch_add(&ins_trace_lines_lost, 1);
    return true;
  }
  char *p = g_buf + g_len;
  p = PUT_LIT(p, "{\"t\":");
  p = put_u64(p, t);
  p = PUT_LIT(p, ",\"tid\":");
  p = put_i64(p, tid);
  if (e->what == EV_STOP) {
    p = PUT_LIT(p, ",\"cb\":\"stop\",\"id\":");
    p = put_u64(p, e->id);
  } else if (e->what == EV_RECORD) {
    p = PUT_LIT(p, ",\"cb\":\"record\",\"id\":");
    p = put_u64(p, e->id);
    p = PUT_LIT(p, ",\"state\":");
    p = put_i64(p, e->state);
    if (e->has_ptimer) {
      p = PUT_LIT(p, ",\"ptimer\":");
      p = put_u64(p, e->ptimer);
    }
  } else {
    p = PUT_LIT(p, ",\"cb\":\"start\",\"ctx\":");
    p = put_i64(p, e->ctx);
    p = PUT_LIT(p, ",\"id\":");
    p = put_u64(p, e->id);
    p = PUT_LIT(p, ",\"type\":64,\"parent\":");
    p = put_u64(p, e->parent_id);
    p = PUT_LIT(p, ",\"rank\":");
    p = put_i64(p, e->rank);
    p = PUT_LIT(p, ",\"ch\":");
    p = put_u64(p, (uint64_t)(uint32_t)e->state);
    p = PUT_LIT(p, ",\"ptimer\":");
    p = put_u64(p, e->ptimer);
  }
  p = PUT_LIT(p, "}\n");
  g_len = (size_t)(p - g_buf);
  return true;
}

/* A context's init line, as written (prefix included), kept until its finalize. Without
 * memory the line is not kept: a file made again lacks it. */
static void remember_init(int ctx, long tid, const char *body) {
  char pre[64];
  int np = ins_tracefmt_prefix_at(pre, sizeof pre, g_last_t, tid);
  char *line = NULL;
  if (np > 0 && (size_t)np < sizeof pre && (line = malloc((size_t)np + strlen(body) + 2)))
    sprintf(line, "%s%s}", pre, body);
  if (!line) return;
  pthread_mutex_lock(&ins_trace_mem_lock);
  if (g_ninits == g_inits_cap) {
    size_t cap = g_inits_cap ? 2 * g_inits_cap : 16;
    struct init_line *q = realloc(g_inits, cap * sizeof *q);
    if (!q) {
      pthread_mutex_unlock(&ins_trace_mem_lock);
      free(line);
      return;
    }
    g_inits = q, g_inits_cap = cap;
  }
  g_inits[g_ninits++] = (struct init_line){ctx, false, false, line};
  pthread_mutex_unlock(&ins_trace_mem_lock);
}

static void forget_init(int ctx) {
  for (size_t i = 0; i < g_ninits; i++)
    if (g_inits[i].ctx == ctx) g_inits[i].finalized = true;
}

static void format_ev(const struct trace_ev *e, long tid) {
  uint64_t t = e->t < g_last_t ? g_last_t : e->t;
  g_last_t = t;
  if (fast_line(e, tid, t)) return; /* every stop, record and kernel-channel start */
  char body[2048];
  switch (e->what) {
    case EV_INIT: /* its text in the cells after e */
      put_line(e->t, tid, (const char *)(e + 1));
      remember_init(e->ctx, tid, (const char *)(e + 1));
      return;
    case EV_START:
      /* the union in the cells after e (a kernel-channel start never comes here) */
      if (ins_tracefmt_start(body, sizeof body, e->ctx, e->id, e->type, e->parent_id, e->rank,
                             (const union trace_u *)(e + 1), e->pgroup_id) < 0)
        body[0] = 0;
      break;
    case EV_FINALIZE:
      snprintf(body, sizeof body, "\"cb\":\"finalize\",\"ctx\":%d", e->ctx);
      forget_init(e->ctx);
      break;
    default:
      return;
  }
  put_line(e->t, tid, body);
  if (e->what == EV_FINALIZE) g_finalized_formatted++;
}

void ins_trace_write_ev(const struct trace_ev *e, long tid) {
  format_ev(e, tid);
}

void ins_trace_writer_flush(void) {
  flush_buf();
}

uint64_t ins_trace_writer_finalized(void) {
  return atomic_load_explicit(&g_finalized, memory_order_acquire);
}

/* ---- the file: made, named, closed ---- */

int ins_trace_writer_open(const char *dir, const char *stem) {
  free(g_buf); /* a forked child's second open: the parent's, not written here */
  g_buf = NULL;
  ins_files_dir_set(&g_dir, dir); /* a forked child's: the parent's, as it was first made */
  snprintf(g_stem, sizeof g_stem, "%s", stem);
  bool renamed = false;
  g_buf = malloc(TRACE_BUF);
  if (g_buf)
    g_fd = ins_files_create(&g_dir, stem, ".trace.jsonl", g_path, sizeof g_path, &renamed);
  else
    errno = ENOMEM;
  if (g_fd < 0) {
    char why[INS_FILES_WHY_MAX];
    ins_notice(NULL, NULL, "NCCL_INSPECTOR_TRACE_DIR: cannot create a trace file in '%s': %s; trace "
               "mode off", dir, ins_files_why(&g_dir, errno, why, sizeof why));
    free(g_buf);
    g_buf = NULL;
    return -1;
  }
  if (renamed)
    ins_warn("'%s/%s.trace.jsonl' already exists (an earlier process with this pid, or a link "
             "planted there): it is left alone, and the trace goes to %s", dir, stem, g_path);
  return 0;
}

bool ins_trace_writer_has_file(void) {
  return g_fd >= 0;
}

const char *ins_trace_writer_path(void) {
  return g_path;
}

void ins_trace_writer_close(void) {
  close(g_fd);
  g_fd = -1;
}

/* ---- unload, fork() (trace.c says when and why) ---- */

void ins_trace_writer_release(void) {
  pthread_mutex_lock(&ins_trace_mem_lock);
  for (size_t i = 0; i < g_ninits; i++) free(g_inits[i].line);
  free(g_inits);
  g_inits = NULL, g_ninits = g_inits_cap = 0;
  pthread_mutex_unlock(&ins_trace_mem_lock);
  free(g_buf);
  g_buf = NULL, g_len = 0;
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
}

void ins_trace_writer_fork_child(bool whole) {
  if (!whole) g_inits = NULL, g_ninits = g_inits_cap = 0;
  if (g_fd >= 0) close(g_fd); /* the child's copy; the file stays the parent's */
  g_fd = -1;
  g_len = 0; /* formatted for the parent's file */
  g_off = 0;
  g_failed = false;
}

void ins_trace_writer_forget_inits(void) {
  for (size_t i = 0; i < g_ninits; i++) free(g_inits[i].line); /* the parent's contexts */
  g_ninits = 0;
}
