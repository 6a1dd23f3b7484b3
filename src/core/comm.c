/*
 * comm.c - creation and destruction of communicator contexts, and the
 * registry (a mutex-protected list) the dump thread walks; in a forked
 * child, the inherited contexts marked foreign; the process's ring segments
 * (core/seg.h) set up at the first context and unmapped at unload.
 *
 * What a context costs (docs/reference.md, Memory): its struct (the in-flight
 * table is most of it) and its rings' slot tables at init; its op pool from
 * its first op; segments while records wait in its rings.
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

struct ins_comm *ins_comm_create(const struct ins_config *cfg, uint64_t id, const char *name,
                                 int nnodes, int nranks, int rank) {
  struct ins_comm *c = calloc(1, sizeof *c);
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
  ins_pool_init(&c->pool);
  pthread_mutex_init(&c->drain_lock, NULL);
  atomic_fetch_add(&g_contexts, 1);
  /* the first context reserves the process's ring memory (failing, it warns once: the
   * records are then dropped and counted, the job goes on); 0: a config made by hand */
  ins_seg_setup((size_t)(cfg->ring_memory_max_mb ? cfg->ring_memory_max_mb : INS_SEG_DEFAULT_MAX_MB)
                << 20);
  int rc = ins_ring_init(&c->ring[INS_KIND_COLL], cfg->coll_ring_size, INS_RECORD_MAX(c->verbose));
  if (!rc) rc = ins_ring_init(&c->ring[INS_KIND_P2P], cfg->p2p_ring_size, INS_RECORD_MAX(c->verbose));
  if (rc == -2) {
    static atomic_int warned;
    ins_warn_once(&warned, "this process has made over 4 billion rings of records (2 per "
                  "communicator): communicator 0x%llx rank %d and later ones are not tracked",
                  (unsigned long long)id, rank);
    ins_comm_destroy(c);
    return NULL;
  }
  if (rc) goto fail;
  /* the pool keeps resident what this context's rings hold full: bursts one context can
   * hold at all cost no page faults once they were seen */
  ins_seg_keep_warm((c->ring[0].slot_mask + 1 + c->ring[1].slot_mask + 1) / 2);
  return c;
fail:
  ins_warn("out of memory creating the context of communicator 0x%llx rank %d: not tracked",
           (unsigned long long)id, rank);
  if (c) ins_comm_destroy(c);
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

/* Unload (or exit): with no context left, no callback can come, so no ring takes a
 * segment again: the mapping goes (at exit with contexts alive it stays, as they do). */
__attribute__((destructor)) static void comm_unload(void) {
  if (atomic_load(&g_contexts) == 0) ins_seg_release();
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
