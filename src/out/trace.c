/*
 * trace.c - trace mode: one line per NCCL callback (see trace.h).
 */
#include "out/trace.h"

#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/log.h"
#include "out/tracefmt.h"
#include "out/writer.h"

#define TAG_WRAPPER 0xA3

struct wrapper {
  uint8_t tag;
  uint64_t id;
  void *inner;
  struct wrapper *next; /* all wrappers, kept until exit */
};

atomic_int g_ins_trace_on;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *g_file;
static struct wrapper *g_all;
static uint64_t g_next_id = 1;
static int g_next_ctx;

void ins_trace_open(const char *dir, const char *hostname) {
  char path[PATH_MAX + 300];
  snprintf(path, sizeof path, "%s/%s-pid%ld.trace.jsonl", dir, hostname, (long)getpid());
  if (ins_mkdir_p(dir) != 0 || !(g_file = fopen(path, "we"))) {
    ins_warn("NCCL_INSPECTOR_TRACE_DIR: cannot write %s; trace mode off", path);
    return;
  }
  setvbuf(g_file, NULL, _IOFBF, 1 << 20);
  ins_info("trace mode: writing every callback to %s (this slows the job)", path);
  atomic_store(&g_ins_trace_on, 1);
}

/* Write one line: prefix, body, closing brace. Caller holds g_lock. */
static void emit(const char *body) {
  char pre[64];
  ins_tracefmt_prefix(pre, sizeof pre);
  fputs(pre, g_file);
  fputs(body, g_file);
  fputs("}\n", g_file);
}

int ins_trace_init(uint64_t comm_id, const char *name, int nnodes, int nranks, int rank,
                   int mask, int abi_version) {
  char body[512];
  pthread_mutex_lock(&g_lock);
  int ctx = ++g_next_ctx;
  /* names from NCCL are plain identifiers; quotes and backslashes are dropped */
  char clean[128];
  size_t j = 0;
  for (const char *p = name ? name : ""; *p && j + 1 < sizeof clean; p++)
    if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) clean[j++] = *p;
  clean[j] = '\0';
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
  fflush(g_file);
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
  char body[768];
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
  if (g_file) fflush(g_file);
  pthread_mutex_unlock(&g_lock);
}
