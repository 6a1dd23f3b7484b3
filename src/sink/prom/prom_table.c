/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom_table.c - a device's series table (see prom_table.h).
 */
#include "sink/prom/prom_table.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fnv1a(int kind, const char *s) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)kind;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int grow_index(struct ins_prom_table *d) {
  size_t cap = d->idx_cap ? d->idx_cap * 2 : 64;
  uint32_t *idx = calloc(cap, sizeof *idx);
  if (!idx) return -1;
  for (size_t i = 0; i < d->ns; i++) {
    size_t h = (size_t)d->s[i].hash & (cap - 1);
    while (idx[h]) h = (h + 1) & (cap - 1);
    idx[h] = (uint32_t)i + 1;
  }
  free(d->idx);
  d->idx = idx;
  d->idx_cap = cap;
  assert((cap & (cap - 1)) == 0);
  return 0;
}

static struct ins_prom_series *find_or_add(struct ins_prom_table *d, int kind, const char *labels) {
  uint64_t hash = fnv1a(kind, labels);
  if (d->idx_cap) {
    for (size_t h = (size_t)hash & (d->idx_cap - 1); d->idx[h]; h = (h + 1) & (d->idx_cap - 1)) {
      struct ins_prom_series *s = &d->s[d->idx[h] - 1];
      if (s->hash == hash && s->kind == kind && !strcmp(s->labels, labels)) return s;
    }
  }
  /* Keep the table at most half full (and its size a power of two: the masks below). */
  if ((d->ns + 1) * 2 > d->idx_cap && grow_index(d) != 0) return NULL;
  if (d->ns == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 32;
    struct ins_prom_series *p = realloc(d->s, cap * sizeof *p);
    if (!p) return NULL;
    d->s = p;
    d->cap = cap;
  }
  char *copy = strdup(labels);
  if (!copy) return NULL;
  struct ins_prom_series *s = &d->s[d->ns];
  *s = (struct ins_prom_series){.hash = hash, .kind = kind, .labels = copy};
  size_t h = (size_t)hash & (d->idx_cap - 1);
  while (d->idx[h]) h = (h + 1) & (d->idx_cap - 1);
  d->idx[h] = (uint32_t)++d->ns;
  return s;
}

int ins_prom_table_add(struct ins_prom_table *t, int kind, const char *labels, double exec_us,
                       double busbw) {
  struct ins_prom_series *s = find_or_add(t, kind, labels);
  if (!s) return -1;
  s->n++;
  s->sum_us += exec_us;
  if (busbw > 0) s->nbw++, s->sum_log_bw += log(busbw);
  return 0;
}

void ins_prom_table_reset(struct ins_prom_table *d) {
  for (size_t i = 0; i < d->ns; i++) free(d->s[i].labels);
  d->ns = 0;
  if (d->idx) memset(d->idx, 0, d->idx_cap * sizeof *d->idx);
}

