/*
 * intern.c - interned strings and the job model's small lookups (see job.h).
 *
 * Operation names and hostnames repeat on every line: each is stored once and
 * named by a small int. The table is shared by the reading threads under one
 * mutex; they look strings up through a per-thread cache (acc.c), so the lock is
 * taken once per distinct string per thread, not once per line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char **g_strs;
static int g_n, g_cap;

int rpt_intern(const char *s) {
  pthread_mutex_lock(&g_lock);
  int id = -1;
  for (int i = 0; i < g_n && id < 0; i++) /* few distinct strings: ops and hosts */
    if (!strcmp(g_strs[i], s)) id = i;
  if (id < 0) {
    if (g_n == g_cap) {
      g_cap = g_cap ? 2 * g_cap : 64;
      g_strs = realloc(g_strs, (size_t)g_cap * sizeof *g_strs);
    }
    char *d = g_strs ? strdup(s) : NULL;
    if (!d) {
      fprintf(stderr, "inspector-report: out of memory\n");
      exit(1);
    }
    g_strs[g_n] = d;
    id = g_n++;
  }
  pthread_mutex_unlock(&g_lock);
  return id;
}

const char *rpt_str(int id) {
  pthread_mutex_lock(&g_lock);
  const char *s = id >= 0 && id < g_n ? g_strs[id] : "?";
  pthread_mutex_unlock(&g_lock);
  return s;
}

void rpt_intern_free(void) {
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_n; i++) free(g_strs[i]);
  free(g_strs);
  g_strs = NULL;
  g_n = g_cap = 0;
  pthread_mutex_unlock(&g_lock);
}

int rpt_nstrings(void) {
  pthread_mutex_lock(&g_lock);
  int n = g_n;
  pthread_mutex_unlock(&g_lock);
  return n;
}

bool rpt_is_straggler(const struct rpt_job *j, int comm, int rank) {
  int lo = 0, hi = j->nstragglers - 1;
  while (lo <= hi) {
    int m = (lo + hi) / 2;
    const struct rpt_straggler *s = &j->stragglers[m];
    if (s->comm == comm && s->rank == rank) return true;
    if (s->comm < comm || (s->comm == comm && s->rank < rank)) lo = m + 1;
    else hi = m - 1;
  }
  return false;
}

const char *rpt_rank_host(const struct rpt_job *j, int comm, int rank) {
  if (comm < 0 || comm >= j->ncomms) return "?";
  const struct rpt_comm *c = &j->comms[comm];
  if (!c->rank || rank < 0 || rank >= c->nranks || c->rank[rank].host < 0) return "?";
  return rpt_str(c->rank[rank].host);
}

const char *rpt_excl_name(enum rpt_excl e) {
  static const char *const n[RPT_NEXCL] = {"stale_channels", "timing_not_kernel_gpu", "busbw_above_ceiling"};
  return e < RPT_NEXCL ? n[e] : "?";
}

const char *rpt_timing_name(enum rpt_timing t) {
  static const char *const n[RPT_NTIMING] = {"absent", "kernel_gpu", "kernel_cpu", "collective_cpu", "other"};
  return t < RPT_NTIMING ? n[t] : "?";
}

const char *rpt_kind_name(enum rpt_comm_kind k) {
  static const char *const n[] = {"nvlink", "network", "mixed"};
  return k <= RPT_KIND_MIXED ? n[k] : "?";
}
