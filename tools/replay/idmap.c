/* SPDX-License-Identifier: Apache-2.0 */
/*
 * idmap.c - open-addressing uint64 -> uint32 map (see idmap.h).
 */
#include "idmap.h"

#include <stdio.h>
#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap) {
  key ^= key >> 33; /* murmur3 finaliser: ids are small consecutive numbers */
  key *= 0xff51afd7ed558ccdULL;
  key ^= key >> 33;
  return (size_t)key & (cap - 1);
}

static void grow(struct rp_idmap *m) {
  size_t ncap = m->cap ? m->cap * 2 : 256;
  uint64_t *keys = calloc(ncap, sizeof *keys);
  uint32_t *vals = calloc(ncap, sizeof *vals);
  unsigned char *used = calloc(ncap, 1);
  if (!keys || !vals || !used) {
    fprintf(stderr, "inspector-replay: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->used[i]) continue;
    size_t j = slot_of(m->keys[i], ncap);
    while (used[j]) j = (j + 1) & (ncap - 1);
    keys[j] = m->keys[i];
    vals[j] = m->vals[i];
    used[j] = 1;
  }
  free(m->keys);
  free(m->vals);
  free(m->used);
  m->keys = keys;
  m->vals = vals;
  m->used = used;
  m->cap = ncap;
}

void rp_idmap_put(struct rp_idmap *m, uint64_t key, uint32_t val) {
  if ((m->n + 1) * 2 > m->cap) grow(m);
  size_t j = slot_of(key, m->cap);
  while (m->used[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  if (!m->used[j]) {
    m->used[j] = 1;
    m->keys[j] = key;
    m->n++;
  }
  m->vals[j] = val;
}

bool rp_idmap_get(const struct rp_idmap *m, uint64_t key, uint32_t *val) {
  if (!m->cap) return false;
  size_t j = slot_of(key, m->cap);
  while (m->used[j]) {
    if (m->keys[j] == key) {
      *val = m->vals[j];
      return true;
    }
    j = (j + 1) & (m->cap - 1);
  }
  return false;
}

void rp_idmap_free(struct rp_idmap *m) {
  free(m->keys);
  free(m->vals);
  free(m->used);
  m->keys = NULL;
  m->vals = NULL;
  m->used = NULL;
  m->cap = m->n = 0;
}
