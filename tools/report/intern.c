/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intern.c - interned strings and the job model's small lookups (see job.h).
 *
 * Operation names and hostnames repeat on every line: each is stored once and
 * named by a small int. The table is shared by the reading threads under one
 * mutex; they look strings up through a per-thread cache (acc.c), so the lock is
 * taken about once per distinct string per thread, not once per line. The
 * cache is small and direct-mapped, and a job's hostnames can be thousands,
 * each looked up once per communicator and rank: the table is a hash index
 * (a scan of every string was 77% of a report on 4,096 hosts in 64
 * communicators), and counts its probes (rpt_intern_probes) for the tests.
 * Once every log is read, the merge renumbers the ids in name order
 * (rpt_intern_sort), so that no order in the report depends on which thread
 * met a string first.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char **g_strs;
static uint64_t *g_hash; /* [id]: the string's hash, for the index's growth */
static int g_n, g_cap;
static int *g_ix;        /* open addressing: id, or -1 for an empty slot */
static size_t g_ixcap;   /* a power of two, at least 2 x g_n */
static uint64_t g_probes;

static uint64_t str_hash(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a, then splitmix64's finaliser for the low bits */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

static void oom(void) {
  fprintf(stderr, "inspector-report: out of memory\n");
  exit(1);
}

/* Builds the index anew with cap slots (every id placed from its hash). */
static void index_build(size_t cap) {
  int *ix = malloc(cap * sizeof *ix);
  if (!ix) oom();
  memset(ix, -1, cap * sizeof *ix);
  for (int id = 0; id < g_n; id++) {
    size_t k = g_hash[id] & (cap - 1);
    while (ix[k] >= 0) k = (k + 1) & (cap - 1);
    ix[k] = id;
  }
  free(g_ix);
  g_ix = ix;
  g_ixcap = cap;
}

int rpt_intern(const char *s) {
  pthread_mutex_lock(&g_lock);
  uint64_t h = str_hash(s);
  size_t k = g_ixcap ? h & (g_ixcap - 1) : 0;
  int id = -1;
  for (; g_ixcap && (g_probes++, g_ix[k] >= 0); k = (k + 1) & (g_ixcap - 1))
    if (g_hash[g_ix[k]] == h && !strcmp(g_strs[g_ix[k]], s)) {
      id = g_ix[k];
      break;
    }
  if (id < 0) {
    if (g_n == g_cap) {
      int cap = g_cap ? 2 * g_cap : 64;
      char **strs = realloc(g_strs, (size_t)cap * sizeof *strs);
      if (strs) g_strs = strs;
      uint64_t *hash = strs ? realloc(g_hash, (size_t)cap * sizeof *hash) : NULL;
      if (!hash) oom();
      g_hash = hash;
      g_cap = cap;
    }
    char *d = strdup(s);
    if (!d) oom();
    g_strs[g_n] = d;
    g_hash[g_n] = h;
    id = g_n++;
    if (2 * (size_t)g_n > g_ixcap) { /* grown: the new string goes in with the rest */
      index_build(g_ixcap ? 2 * g_ixcap : 128);
    } else {
      g_ix[k] = id; /* k: the empty slot the lookup ended on */
    }
  }
  pthread_mutex_unlock(&g_lock);
  return id;
}

static int cmp_str_id(const void *x, const void *y) {
  return strcmp(g_strs[*(const int *)x], g_strs[*(const int *)y]);
}

/*
 * Ids are given in the order the reading threads first meet the strings, which depends on
 * which thread read which log first; every sort or tie-break by id (pairs by op, links by
 * host, a rank's top op) then orders the output by that race. Renumbered here, once, after
 * the last line is read: ids in name order make an id comparison a name comparison, so the
 * analyses and outputs keep comparing ints and their order depends only on the data.
 */
int *rpt_intern_sort(void) {
  pthread_mutex_lock(&g_lock);
  int *order = malloc(((size_t)g_n + 1) * sizeof *order), *map = malloc(((size_t)g_n + 1) * sizeof *map);
  char **strs = malloc(((size_t)g_cap + 1) * sizeof *strs);
  uint64_t *hash = malloc(((size_t)g_cap + 1) * sizeof *hash);
  if (!order || !map || !strs || !hash) oom();
  for (int id = 0; id < g_n; id++) order[id] = id;
  qsort(order, (size_t)g_n, sizeof *order, cmp_str_id); /* names are distinct: a total order */
  for (int id = 0; id < g_n; id++) {
    map[order[id]] = id;
    strs[id] = g_strs[order[id]];
    hash[id] = g_hash[order[id]];
  }
  free(g_strs);
  free(g_hash);
  free(order);
  g_strs = strs;
  g_hash = hash;
  if (g_ixcap) index_build(g_ixcap);
  pthread_mutex_unlock(&g_lock);
  return map;
}

uint64_t rpt_intern_probes(void) {
  pthread_mutex_lock(&g_lock);
  uint64_t n = g_probes;
  pthread_mutex_unlock(&g_lock);
  return n;
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
  free(g_hash);
  free(g_ix);
  g_strs = NULL;
  g_hash = NULL;
  g_ix = NULL;
  g_ixcap = 0;
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
