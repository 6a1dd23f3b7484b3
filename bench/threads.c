/* SPDX-License-Identifier: Apache-2.0 */
/*
 * threads.c - concurrent drivers (see threads.h).
 */
#include "threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dep { uint32_t thread, pos; };

struct worker {
  alignas(64) _Atomic uint32_t progress; /* calls of this thread done */
  uint32_t *calls;                       /* indices into g->call */
  uint32_t ncalls;
  struct dep *dep; /* per call of this thread: what it waits for (pos UINT32_MAX: none) */
  struct dep *dep2, *dep3;
  uint64_t made;
  pthread_t pt;
  struct shared *sh;
};

struct shared {
  const struct bp_plugin *p;
  const struct bp_prog *g;
  struct bp_run *run;
  struct worker *w;
  _Atomic uint32_t ready;
  _Atomic int go;
  uint32_t nthreads;
};


static void wait_dep(struct worker *w, const struct dep *d) {
  if (d->pos == UINT32_MAX) return;
  _Atomic uint32_t *p = &w[d->thread].progress;
  unsigned spins = 0;
  while (atomic_load_explicit(p, memory_order_acquire) <= d->pos)
    if (++spins > 64) sched_yield();
}

static void start_together(struct shared *sh) {
  atomic_fetch_add(&sh->ready, 1);
  while (!atomic_load_explicit(&sh->go, memory_order_acquire)) sched_yield();
}

static void *recorded_thread(void *arg) {
  struct worker *me = arg;
  struct shared *sh = me->sh;
  start_together(sh);
  for (uint32_t k = 0; k < me->ncalls; k++) {
    wait_dep(sh->w, &me->dep[k]);
    wait_dep(sh->w, &me->dep2[k]);
    wait_dep(sh->w, &me->dep3[k]);
    me->made += (uint64_t)bp_exec_one(sh->p, sh->g, sh->run, &sh->g->call[me->calls[k]]);
    atomic_store_explicit(&me->progress, k + 1, memory_order_release);
  }
  return NULL;
}

static uint64_t run_workers(struct shared *sh, void *(*fn)(void *)) {
  atomic_store(&sh->ready, 0);
  atomic_store(&sh->go, 0);
  for (uint32_t i = 0; i < sh->nthreads; i++) {
    sh->w[i].sh = sh;
    if (pthread_create(&sh->w[i].pt, NULL, fn, &sh->w[i]) != 0) {
      fprintf(stderr, "inspector-bench: cannot create a thread\n");
      exit(1);
    }
  }
  while (atomic_load(&sh->ready) < sh->nthreads) sched_yield();
  uint64_t t0 = bp_now_ns();
  atomic_store_explicit(&sh->go, 1, memory_order_release);
  for (uint32_t i = 0; i < sh->nthreads; i++) pthread_join(sh->w[i].pt, NULL);
  return bp_now_ns() - t0;
}

void bp_exec_threads(const struct bp_plugin *p, const struct bp_prog *g, int reps,
                     struct bp_stats *s) {
  uint32_t n = g->nthread ? g->nthread : 1;
  struct worker *w = aligned_alloc(alignof(struct worker), n * sizeof *w);
  if (!w) exit(1);
  memset(w, 0, n * sizeof *w);
  /* split the event calls by thread; where each start landed */
  struct dep *where = bp_xcalloc(g->nslot, sizeof *where);
  for (uint32_t i = 0; i < g->nslot; i++) where[i].pos = UINT32_MAX; /* not started yet */
  for (uint32_t i = 0; i < n; i++) {
    w[i].calls = bp_xcalloc(g->ncall, sizeof *w[i].calls);
    w[i].dep = bp_xcalloc(g->ncall, sizeof *w[i].dep);
    w[i].dep2 = bp_xcalloc(g->ncall, sizeof *w[i].dep2);
    w[i].dep3 = bp_xcalloc(g->ncall, sizeof *w[i].dep3);
  }
  for (size_t k = 0; k < g->ncall; k++) {
    const struct bp_call *c = &g->call[k];
    if (c->op == BP_INIT || c->op == BP_FINALIZE) continue;
    uint32_t t = g->thread[k];
    struct worker *me = &w[t];
    uint32_t pos = me->ncalls++;
    me->calls[pos] = (uint32_t)k;
    uint32_t named[3] = {c->op == BP_START ? 0 : c->slot, c->op == BP_START ? c->parent : 0,
                         c->op == BP_START ? c->group : 0};
    struct dep *out[3] = {&me->dep[pos], &me->dep2[pos], &me->dep3[pos]};
    for (int j = 0; j < 3; j++) {
      *out[j] = (struct dep){0, UINT32_MAX};
      if (named[j] && where[named[j]].pos != UINT32_MAX && where[named[j]].thread != t)
        *out[j] = where[named[j]];
    }
    if (c->op == BP_START) where[c->slot] = (struct dep){t, pos};
  }
  struct bp_run run;
  bp_run_alloc(g, &run);
  struct shared sh = {.p = p, .g = g, .run = &run, .w = w, .nthreads = n};
  for (int rep = 0; rep < reps; rep++) {
    bp_open(p, g, &run);
    for (uint32_t i = 0; i < n; i++) atomic_store(&w[i].progress, 0);
    s->ns += run_workers(&sh, recorded_thread);
    bp_close(p, g, &run);
  }
  for (uint32_t i = 0; i < n; i++) {
    s->calls += w[i].made;
    free(w[i].calls);
    free(w[i].dep);
    free(w[i].dep2);
    free(w[i].dep3);
  }
  bp_run_free(&run);
  free(where);
  free(w);
}

struct par {
  const struct bp_plugin *p;
  struct bp_prog *g;
  struct bp_run run;
  int iters;
  struct bp_stats s;
  struct shared *sh;
  pthread_t pt;
  int cpu; /* pinned to this CPU; -1: not pinned */
};

/*
 * The i-th allowed CPU of the process, or -1 when there are fewer than n.
 * Unpinned, the two workers were often placed on one CPU: the main thread
 * had just initialised their contexts (touching their rings) and was still
 * running when they were created, and the kernel then left both, as cache-hot
 * tasks, on the other CPU: they ran one after the other (each thread's own
 * ns per callback 8 -> 12, scaling 1.00x) although nothing in the plugin was
 * contended (pinned: 8.1 ns per callback in each thread, 2.0x).
 */
static int nth_cpu(int i, int n) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < n) return -1;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &set) && i-- == 0) return c;
  return -1;
}

static void *par_thread(void *arg) {
  struct par *me = arg;
  if (me->cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(me->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
  }
  start_together(me->sh);
  for (int i = 0; i < me->iters; i++) {
    bp_exec(me->p, me->g, &me->run, false, &me->s);
    bp_prog_advance(me->g);
  }
  return NULL;
}

uint64_t bp_exec_parallel(const struct bp_plugin *p, struct bp_prog *progs, int nthreads, int iters,
                          struct bp_stats *s) {
  struct par *w = bp_xcalloc((size_t)nthreads, sizeof *w);
  struct shared sh = {.nthreads = (uint32_t)nthreads};
  for (int i = 0; i < nthreads; i++) {
    w[i] = (struct par){.p = p, .g = &progs[i], .iters = iters, .sh = &sh,
                        .cpu = nth_cpu(i, nthreads)};
    bp_run_alloc(&progs[i], &w[i].run);
    bp_open(p, &progs[i], &w[i].run);
  }
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&w[i].pt, NULL, par_thread, &w[i]) != 0) exit(1);
  while (atomic_load(&sh.ready) < sh.nthreads) sched_yield();
  uint64_t t0 = bp_now_ns();
  atomic_store_explicit(&sh.go, 1, memory_order_release);
  for (int i = 0; i < nthreads; i++) pthread_join(w[i].pt, NULL);
  uint64_t wall = bp_now_ns() - t0;
  for (int i = 0; i < nthreads; i++) {
    bp_close(p, &progs[i], &w[i].run);
    bp_run_free(&w[i].run);
    s->calls += w[i].s.calls;
    s->ns += w[i].s.ns;
  }
  free(w);
  return wall;
}
