/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_trace.c - libFuzzer target for inspector-replay's trace reader.
 *
 * Owns: driving tools/replay/trace_load.c (rp_trace_load_mem) on arbitrary
 * bytes. The input is a trace file's text (JSON lines, as in
 * tests/data/README.md); a load either succeeds, and the trace is then
 * checked against the invariants the replay engine indexes by, or fails with
 * its "FILE:LINE: why" message. Either way nothing may crash, leak or hit
 * undefined behaviour (built with -fsanitize=fuzzer,address,undefined).
 *
 * It replaces tools/replay/intern.c with a pool freed after every input:
 * the real pool never frees (the plugin may keep the strings), which over
 * millions of inputs would read as a leak and grow without bound.
 *
 * Build and run: `make fuzz` (tests/fuzz/run.sh); seeds are cut from
 * tests/data traces at run time.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "intern.h"
#include "trace_load.h"

/* ---- a per-input string pool standing in for intern.c ---- */
static char **g_pool;
static size_t g_npool, g_cappool;

const char *rp_intern(const char *s) {
  if (!s) return NULL;
  for (size_t i = 0; i < g_npool; i++) /* equal strings share one pointer, as in intern.c */
    if (!strcmp(g_pool[i], s)) return g_pool[i];
  if (g_npool == g_cappool) {
    g_cappool = g_cappool ? 2 * g_cappool : 64;
    g_pool = realloc(g_pool, g_cappool * sizeof *g_pool);
    if (!g_pool) abort();
  }
  char *c = strdup(s);
  if (!c) abort();
  return g_pool[g_npool++] = c;
}

static void pool_free(void) {
  for (size_t i = 0; i < g_npool; i++) free(g_pool[i]);
  free(g_pool);
  g_pool = NULL;
  g_npool = g_cappool = 0;
}

/* What replay.c and schedule.c rely on when they index by a line's numbers. */
static void check_trace(const struct rp_trace *t) {
  assert(t->nslot >= 1 && t->nslot <= t->slotcap);
  for (size_t i = 0; i < t->nev; i++) {
    const struct rp_event *e = &t->ev[i];
    assert(e->thread < t->nthread);
    assert(e->slot < t->nslot && e->parent < t->nslot && e->group < t->nslot);
    assert(e->ctx == RP_NO_CTX || e->ctx < t->nctx);
    if (e->cb == RP_CB_START || e->cb == RP_CB_INIT) assert(e->ctx < t->nctx);
    if (e->cb == RP_CB_START) assert(e->type && !(e->type & (e->type - 1)));
  }
  for (uint32_t c = 0; c < t->nctx; c++) {
    const struct rp_ctx_info *ci = &t->ctx[c];
    assert(ci->nranks >= 1 && ci->rank >= 0 && ci->rank < ci->nranks);
    assert(ci->nnodes >= 1 && ci->nnodes <= ci->nranks);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct rp_trace t;
  if (rp_trace_load_mem("fuzz", (const char *)data, size, &t) == 0) {
    check_trace(&t);
    rp_trace_free(&t);
  }
  pool_free();
  return 0;
}
