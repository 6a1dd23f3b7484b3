/*
 * comm.c - creation and destruction of communicator contexts, and the
 * registry (a mutex-protected list) the dump thread walks; in a forked
 * child, the inherited contexts marked foreign; the process's ring segments
 * (core/seg.h) set up at the first context and unmapped at unload.
 *
 * What a context costs (docs/reference.md, Memory): its struct (the in-flight
 * table is most of it) and its rings' slot tables at init; its op pool from
 * its first op; segments while records wait in its rings. A finalized one is
 * kept for reuse (comm.h, "Finalized contexts"; the end of this file).
 */
#include "core/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "core/seg.h"
#include "core/utf8.h"

static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ins_comm *g_registry;
static atomic_int g_contexts; /* created and not destroyed, in the registry or not */

static struct ins_comm *retired_take(void);

struct ins_comm *ins_comm_create(const struct ins_config *cfg, uint64_t id, const char *name,
                                 int nnodes, int nranks, int rank) {
  struct ins_comm *c = retired_take(); /* zeroed, its pool renewed with its spare chunks */
  if (!c && (c = calloc(1, sizeof *c))) ins_pool_init(&c->pool);
  if (!c) goto fail;
  c->id = id;
  c->rank = rank;
  c->nranks = nranks;
  c->nnodes = nnodes;
  /* as UTF-8, cut between characters: the name goes into JSON and label values */
  ins_utf8_clean(c->name, sizeof c->name, name && *name ? name : "unknown");
  c->verbose = cfg->verbose;
  c->track_p2p = cfg->enable_p2p;
  c->keep_cpu_timing = !cfg->require_kernel_timing;
  c->min_bytes = cfg->min_size_bytes;
  pthread_mutex_init(&c->drain_lock, NULL);
  atomic_fetch_add(&g_contexts, 1);
  /* the first context reserves the process's ring memory (failing, it warns once: the
   * records are then dropped and counted, the job goes on); 0: a config made by hand */
  ins_seg_setup((size_t)(cfg->ring_memory_max_mb ? cfg->ring_memory_max_mb : INS_SEG_DEFAULT_MAX_MB)
                << 20);
  if (ins_ring_init(&c->ring[INS_KIND_COLL], cfg->coll_ring_size, INS_RECORD_MAX(c->verbose)) ||
      ins_ring_init(&c->ring[INS_KIND_P2P], cfg->p2p_ring_size, INS_RECORD_MAX(c->verbose)))
    goto fail;
  /* the pool keeps resident what this context's rings hold full: bursts one context can
   * hold at all cost no page faults once they were seen */
  ins_seg_keep_warm((c->ring[0].slot_mask + 1 + c->ring[1].slot_mask + 1) / 2);
  return c;
fail:
  ins_warn("out of memory creating the context of communicator 0x%llx rank %d: not tracked",
           (unsigned long long)id, rank);
  if (c) ins_comm_retire(c); /* it may have been another's: not freed (comm.h) */
  return NULL;
}

void ins_comm_destroy(struct ins_comm *c) {
  ins_ring_free(&c->ring[0]);
  ins_ring_free(&c->ring[1]);
  ins_pool_destroy(&c->pool);
  pthread_mutex_destroy(&c->drain_lock);
  free(c);
  atomic_fetch_sub(&g_contexts, 1);
}

size_t ins_comm_memory(struct ins_comm *c) {
  return sizeof *c + ins_ring_bytes(&c->ring[0]) + ins_ring_bytes(&c->ring[1]) +
         ins_pool_bytes(&c->pool);
}

static void retired_free_all(void);

/* Unload (or exit): with no context left, no callback can come, so no ring takes a
 * segment again: the mapping goes (at exit with contexts alive it stays, as they do),
 * and so do the retired contexts. */
__attribute__((destructor)) static void comm_unload(void) {
  if (atomic_load(&g_contexts) == 0) {
    ins_seg_release();
    retired_free_all();
  }
}

void ins_registry_lock(void) { pthread_mutex_lock(&g_registry_lock); }
void ins_registry_unlock(void) { pthread_mutex_unlock(&g_registry_lock); }
struct ins_comm *ins_registry_first(void) { return g_registry; }

void ins_registry_add(struct ins_comm *c) {
  ins_registry_lock();
  c->next = g_registry;
  g_registry = c;
  ins_registry_unlock();
}

void ins_registry_fork_child(bool locked) {
  for (struct ins_comm *c = g_registry; c; c = c->next) c->foreign = true;
  if (locked)
    pthread_mutex_unlock(&g_registry_lock);
  else
    pthread_mutex_init(&g_registry_lock, NULL);
}

void ins_registry_remove(struct ins_comm *c) {
  ins_registry_lock();
  for (struct ins_comm **p = &g_registry; *p; p = &(*p)->next)
    if (*p == c) { *p = c->next; break; }
  ins_registry_unlock();
}

/* ---- finalized contexts (comm.h) ----------------------------------------------------- */

/* The queue, oldest first. Its lock is taken by init and finalize only, for a few stores,
 * and never with another held; fork takes it in its prepare handler, so a child never
 * inherits it held (retired_fork_*, registered at the first context). */
static pthread_mutex_t g_retired_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ins_comm *g_retired_head, *g_retired_tail;
static int g_retired_n;
static pthread_once_t g_retired_once = PTHREAD_ONCE_INIT;

static void retired_fork_prepare(void) { pthread_mutex_lock(&g_retired_lock); }
static void retired_fork_after(void) { pthread_mutex_unlock(&g_retired_lock); }
static void retired_register(void) {
  pthread_atfork(retired_fork_prepare, retired_fork_after, retired_fork_after);
}

void ins_comm_retire(struct ins_comm *c) {
  ins_ring_free(&c->ring[0]);
  ins_ring_free(&c->ring[1]);
  ins_pool_retire(&c->pool);
  pthread_mutex_destroy(&c->drain_lock);
  atomic_store(&c->retired, true);
  c->retired_next = NULL;
  pthread_once(&g_retired_once, retired_register);
  pthread_mutex_lock(&g_retired_lock);
  if (g_retired_tail)
    g_retired_tail->retired_next = c;
  else
    g_retired_head = c;
  g_retired_tail = c;
  g_retired_n++;
  pthread_mutex_unlock(&g_retired_lock);
  atomic_fetch_sub(&g_contexts, 1);
}

/* The oldest retired context, made as calloc makes one but for its pool's spare chunks;
 * NULL when there is none. */
static struct ins_comm *retired_take(void) {
  pthread_once(&g_retired_once, retired_register);
  pthread_mutex_lock(&g_retired_lock);
  struct ins_comm *c = g_retired_head;
  if (c) {
    g_retired_head = c->retired_next;
    if (!g_retired_head) g_retired_tail = NULL;
    g_retired_n--;
  }
  pthread_mutex_unlock(&g_retired_lock);
  if (!c) return NULL;
  struct ins_pool pool = c->pool; /* its chunks: spares for the new communicator's ops */
  memset(c, 0, sizeof *c);
  c->pool = pool;
  ins_pool_renew(&c->pool);
  return c;
}

int ins_comm_retired_count(void) {
  pthread_mutex_lock(&g_retired_lock);
  int n = g_retired_n;
  pthread_mutex_unlock(&g_retired_lock);
  return n;
}

static void retired_free_all(void) {
  pthread_mutex_lock(&g_retired_lock);
  for (struct ins_comm *c = g_retired_head, *next; c; c = next) {
    next = c->retired_next;
    ins_pool_destroy(&c->pool);
    free(c);
  }
  g_retired_head = g_retired_tail = NULL;
  g_retired_n = 0;
  pthread_mutex_unlock(&g_retired_lock);
}
