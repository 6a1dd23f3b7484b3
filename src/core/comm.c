/* SPDX-License-Identifier: Apache-2.0 */
/*
 * comm.c - creation and destruction of communicator contexts, and the
 * registry (a mutex-protected array, and the walks over it: comm.h) the dump
 * thread walks; in a forked child, the inherited contexts marked foreign; the
 * process's ring segments (core/seg.h) set up at the first context and
 * unmapped at unload.
 *
 * What a context costs (docs/reference.md, Memory): its struct (the in-flight
 * table is most of it) and its rings' slot tables at init; its op pool from
 * its first op; segments while records wait in its rings. A finalized one is
 * kept for reuse (comm.h, "Finalized contexts"; the end of this file).
 */
#include "core/comm.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "core/seg.h"
#include "core/utf8.h"

static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_contexts; /* created and not destroyed, in the registry or not */

#define NOT_REGISTERED SIZE_MAX /* reg_idx of a context not in the array */

static void retire_rest(struct ins_comm *c);
static struct ins_comm *retired_take(void);

/* Everything below under g_registry_lock, but for the walker's own reading of `snap`. */
static struct {
  struct ins_comm **live;  /* the live contexts, live[c->reg_idx] == c */
  size_t n, cap;
  uint64_t added;          /* contexts ever added: the next one's reg_seq */
  uint64_t moves;          /* ins_registry_moves */
  /* The walk: the walker's copy of `live` (snap_cap >= cap, grown at walk_begin), since
   * the added-th context (those added later are not in it), numbered (each walk_begin
   * takes the next number, never 0). */
  struct ins_comm **snap;
  size_t snap_cap;
  bool walking;
  uint64_t walk_seq, walk_id;
  /* Walk without a snapshot (no memory for one): the walker holds the lock throughout,
   * as dump passes once did; slower for inits, never wrong. */
  bool walk_locked;
  struct ins_comm *dead;   /* removed while the walk held them: freed at its end */
  bool inert;              /* a child forked past the bound (ins_registry_fork_child) */
} g_reg;

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
  /* hang detection runs on the dump thread (sink/dump.c) */
  c->untracked_below = cfg->hang_ns && cfg->dump_thread_enable ? 0 : cfg->min_size_bytes;
  pthread_mutex_init(&c->drain_lock, NULL);
  ins_clock_step_init(&c->step);
  c->reg_idx = NOT_REGISTERED;
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
    ins_comm_retire(c);
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
  if (c) ins_comm_retire(c); /* it may have been another's: not freed (comm.h) */
  return NULL;
}

/* Whether the walk going on holds c in its snapshot (it was removed during that walk).
 * Under g_registry_lock: the walker ends its walk (g_reg.walking) on its own thread. */
static bool walk_holds_locked(const struct ins_comm *c) {
  return c->reg_walk && g_reg.walking && c->reg_walk == g_reg.walk_id;
}

/* The same, taking the lock: for assertions */
__attribute__((unused)) static bool walk_holds(const struct ins_comm *c) {
  pthread_mutex_lock(&g_registry_lock);
  bool held = walk_holds_locked(c);
  pthread_mutex_unlock(&g_registry_lock);
  return held;
}

void ins_comm_destroy(struct ins_comm *c) {
  /* out of the registry, and no walk holds it (those are retired: ins_comm_retire) */
  assert(c->reg_idx == NOT_REGISTERED && !walk_holds(c));
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

uint64_t ins_registry_moves(void) {
  pthread_mutex_lock(&g_registry_lock);
  uint64_t n = g_reg.moves;
  pthread_mutex_unlock(&g_registry_lock);
  return n;
}

int ins_registry_add(struct ins_comm *c) {
  struct ins_comm **grown = NULL, **old = NULL;
  pthread_mutex_lock(&g_registry_lock);
  while (g_reg.n == g_reg.cap && !g_reg.inert) {
    /* Full: a larger array, allocated outside the lock (the copy into it, rare and
     * amortized, inside). Another add may have grown it meanwhile: then look again. */
    size_t cap = g_reg.cap ? 2 * g_reg.cap : 64;
    pthread_mutex_unlock(&g_registry_lock);
    free(grown);
    grown = malloc(cap * sizeof *grown);
    if (!grown) {
      ins_warn("out of memory registering communicator 0x%llx rank %d: not tracked",
               (unsigned long long)c->id, c->rank);
      return -1;
    }
    pthread_mutex_lock(&g_registry_lock);
    if (g_reg.cap < cap) {
      if (g_reg.n) memcpy(grown, g_reg.live, g_reg.n * sizeof *grown);
      old = g_reg.live;
      g_reg.live = grown;
      g_reg.cap = cap;
      grown = NULL;
    }
  }
  if (!g_reg.inert) {
    c->reg_idx = g_reg.n;
    c->reg_seq = g_reg.added++;
    c->reg_walk = 0;
    g_reg.live[g_reg.n++] = c;
    g_reg.moves++;
  }
  pthread_mutex_unlock(&g_registry_lock);
  free(grown);
  free(old);
  return 0;
}

void ins_registry_remove(struct ins_comm *c) {
  pthread_mutex_lock(&g_registry_lock);
  if (c->reg_idx != NOT_REGISTERED && !g_reg.inert) {
    assert(c->reg_idx < g_reg.n && g_reg.live[c->reg_idx] == c);
    /* O(1): the last entry takes its place */
    struct ins_comm *last = g_reg.live[--g_reg.n];
    g_reg.live[c->reg_idx] = last;
    last->reg_idx = c->reg_idx;
    g_reg.moves++;
    /* in the snapshot of the walk going on (added before it began): that walk may still
     * read it, so its retiring ends at the walk's end (ins_comm_retire) */
    if (g_reg.walking && c->reg_seq < g_reg.walk_seq) c->reg_walk = g_reg.walk_id;
  }
  c->reg_idx = NOT_REGISTERED;
  pthread_mutex_unlock(&g_registry_lock);
}

size_t ins_registry_walk_begin(struct ins_comm *const **list) {
  pthread_mutex_lock(&g_registry_lock);
  assert(!g_reg.walking); /* one walker at a time */
  g_reg.walking = true;
  g_reg.walk_seq = g_reg.added;
  g_reg.walk_id++;
  size_t n = g_reg.n;
  if (g_reg.snap_cap < n) {
    /* the registry grew since the last walk: rare (at most once per doubling) */
    struct ins_comm **p = realloc(g_reg.snap, g_reg.cap * sizeof *p);
    if (!p) { /* walk the live array itself, the lock held until the walk ends */
      g_reg.walk_locked = true;
      *list = g_reg.live;
      return n;
    }
    g_reg.snap = p;
    g_reg.snap_cap = g_reg.cap;
  }
  if (n) memcpy(g_reg.snap, g_reg.live, n * sizeof *g_reg.snap);
  *list = g_reg.snap;
  pthread_mutex_unlock(&g_registry_lock);
  return n;
}

void ins_registry_walk_end(void) {
  if (!g_reg.walk_locked) pthread_mutex_lock(&g_registry_lock);
  assert(g_reg.walking);
  g_reg.walking = g_reg.walk_locked = false;
  struct ins_comm *dead = g_reg.dead;
  g_reg.dead = NULL;
  pthread_mutex_unlock(&g_registry_lock);
  while (dead) {
    struct ins_comm *next = dead->reg_dead_next;
    retire_rest(dead);
    dead = next;
  }
}

void ins_registry_release(void) {
  pthread_mutex_lock(&g_registry_lock);
  if (!g_reg.walking) {
    free(g_reg.snap);
    g_reg.snap = NULL;
    g_reg.snap_cap = 0;
  }
  if (!g_reg.n && !g_reg.inert) {
    free(g_reg.live);
    g_reg.live = NULL;
    g_reg.cap = 0;
  }
  pthread_mutex_unlock(&g_registry_lock);
}

void ins_registry_fork_child(bool locked) {
  /* the parent's walker is not here: its walk is over (what it held stays on g_reg.dead,
   * freed at the end of the child's first walk) */
  g_reg.walking = g_reg.walk_locked = false;
  if (!locked) {
    /* An add or a remove may have been half done: the array is not read again. Such a
     * child records nothing (sink/dump.c treats its every context as foreign). */
    pthread_mutex_init(&g_registry_lock, NULL);
    g_reg.inert = true;
    return;
  }
  for (size_t i = 0; i < g_reg.n; i++) g_reg.live[i]->foreign = true;
  pthread_mutex_unlock(&g_registry_lock);
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
  atomic_store(&c->retired, true); /* a second finalize does nothing */
  ins_pool_retire(&c->pool);       /* no late start gets an op (the walker never reads it) */
  pthread_mutex_lock(&g_registry_lock);
  assert(c->reg_idx == NOT_REGISTERED); /* removed first, or never added */
  /* the walk that held it when it was removed is still going: it ends this at its end */
  bool held = walk_holds_locked(c);
  if (held) {
    c->reg_dead_next = g_reg.dead;
    g_reg.dead = c;
  }
  pthread_mutex_unlock(&g_registry_lock);
  if (!held) retire_rest(c);
}

/* What a walk may still read of c (its drain_lock, its rings' memory) goes, and c joins
 * the queue, where an init may take it and clear it. */
static void retire_rest(struct ins_comm *c) {
  ins_ring_free(&c->ring[0]);
  ins_ring_free(&c->ring[1]);
  pthread_mutex_destroy(&c->drain_lock);
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
