/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intern.c - the string pool (see intern.h): an open-addressing hash set of
 * heap copies. A handful of distinct strings exist per trace, so the table
 * stays tiny; lookups happen only at load time.
 */
#include "intern.h"
#include "../common/xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **g_tab;   /* power-of-two sized, NULL = empty */
static size_t g_cap;
static size_t g_n;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static void grow(void) {
  size_t ncap = g_cap ? g_cap * 2 : 64;
  char **ntab = xcalloc(ncap, sizeof *ntab);
  for (size_t i = 0; i < g_cap; i++) {
    if (!g_tab[i]) continue;
    size_t j = hash_str(g_tab[i]) & (ncap - 1);
    while (ntab[j]) j = (j + 1) & (ncap - 1);
    ntab[j] = g_tab[i];
  }
  free(g_tab);
  g_tab = ntab;
  g_cap = ncap;
}

const char *rp_intern(const char *s) {
  if (!s) return NULL;
  if ((g_n + 1) * 2 > g_cap) grow();
  size_t j = hash_str(s) & (g_cap - 1);
  while (g_tab[j]) {
    if (strcmp(g_tab[j], s) == 0) return g_tab[j];
    j = (j + 1) & (g_cap - 1);
  }
  size_t len = strlen(s) + 1;
  char *copy = xcalloc(len, 1);
  memcpy(copy, s, len);
  g_tab[j] = copy;
  g_n++;
  return copy;
}
