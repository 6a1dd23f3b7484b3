/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xalloc.h - allocation for the tools (inspector-report, inspector-replay): memory or a
 * clear exit. A tool that runs out of memory cannot do its job, and a NULL carried on
 * would crash it later with no word: so it says so, naming itself, and exits 1. (The
 * plugin never does this: inside a job it degrades and counts; src/ does not include
 * this file.)
 *
 * A size of 0 asks for 1 byte: malloc(0) and realloc(p, 0) may return NULL, which is
 * not out of memory. xreallocarray refuses a count whose bytes overflow.
 */
#ifndef INS_TOOLS_XALLOC_H
#define INS_TOOLS_XALLOC_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static inline void xalloc_die(void) {
  /* program_invocation_short_name: glibc's, with _GNU_SOURCE (both tools' builds define it) */
  extern char *program_invocation_short_name;
  fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
  exit(1);
}

static inline void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) xalloc_die();
  return p;
}

static inline void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) xalloc_die();
  return p;
}

static inline void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) xalloc_die();
  return q;
}

static inline void *xreallocarray(void *p, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) xalloc_die();
  return xrealloc(p, n * size);
}

#endif
