/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg.c - the process's pool of ring segments (see seg.h).
 *
 * One mapping: the links of the free stacks and the cell size each free
 * segment last held (6 bytes a segment), then the segments.
 * MAP_NORESERVE: reserving the cap costs address space, not memory; a page
 * becomes resident when a ring first writes it, and stops being when a cold
 * segment's pages are handed back. The mapping stays until the plugin is
 * unloaded with no segment held (ins_seg_release), so a segment index always
 * names memory that is there: a stale one read by a losing compare-and-swap
 * is harmless.
 */
#include "core/seg.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

#define SEG_MIN_RESERVE (16u << 20) /* below this, a mapping is not worth having */
#define NONE UINT32_MAX

/* A lock-free stack of segment indices: (generation << 32) | (index + 1), 0 = empty. */
struct stack {
  _Atomic uint64_t head;
};

/* The mapping's state: made once, by the first communicator's init, without a lock (a
 * child forked while another thread held one would wait for it forever). */
enum { ST_NONE, ST_BUSY, ST_READY, ST_FAILED };
#define SETUP_WAIT_MS 1000 /* another init is making it: this long at most (a forked child
                              whose parent was making it when it forked gives up) */
static atomic_int g_state;
static unsigned char *g_map;     /* the mapping (links, then segments) */
static size_t g_map_bytes;
static _Atomic uint32_t *g_link; /* a free segment's successor on its stack (index + 1, 0: none) */
static uint16_t *g_stride;       /* a free segment's cells' size when given back; 0: all bytes 0 */
static unsigned char *g_seg0;    /* segment 0 */
static uint32_t g_nseg;          /* segments in the mapping */
static _Atomic uint64_t g_limit; /* segments that may be held at once (the cap) */
static _Atomic uint64_t g_in_use, g_fresh, g_nwarm, g_ncold, g_refused, g_refused_told;
static _Atomic uint64_t g_keep = INS_SEG_KEEP_WARM; /* free segments kept resident at most */
static struct stack g_warm, g_cold;


static uint32_t pop(struct stack *s) {
  uint64_t h = atomic_load_explicit(&s->head, memory_order_acquire);
  while ((uint32_t)h) {
    uint32_t i = (uint32_t)h - 1;
    uint64_t nh = (((h >> 32) + 1) << 32) | atomic_load_explicit(&g_link[i], memory_order_relaxed);
    if (atomic_compare_exchange_weak_explicit(&s->head, &h, nh, memory_order_acquire,
                                              memory_order_acquire))
      return i;
  }
  return NONE;
}

static void push(struct stack *s, uint32_t i) {
  uint64_t h = atomic_load_explicit(&s->head, memory_order_relaxed), nh;
  do {
    atomic_store_explicit(&g_link[i], (uint32_t)h, memory_order_relaxed);
    nh = (((h >> 32) + 1) << 32) | (uint64_t)(i + 1);
  } while (!atomic_compare_exchange_weak_explicit(&s->head, &h, nh, memory_order_release,
                                                  memory_order_relaxed));
}

/* The mapping for n segments and their links; 0, or -1 if the system refused it. */
static int reserve(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t links = (n * (sizeof *g_link + sizeof *g_stride) + page - 1) / page * page;
  size_t bytes = links + n * INS_SEG_BYTES;
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return -1;
  g_map = m;
  g_map_bytes = bytes;
  g_link = m;
  g_stride = (uint16_t *)(g_link + n);
  g_seg0 = g_map + links;
  g_nseg = (uint32_t)n;
  return 0;
}

int ins_seg_setup(size_t cap_bytes) {
  size_t want = cap_bytes / INS_SEG_BYTES;
  if (want > NONE - 1) want = NONE - 1;
  int st = atomic_load_explicit(&g_state, memory_order_acquire);
  if (st == ST_NONE && want && atomic_compare_exchange_strong(&g_state, &st, ST_BUSY)) {
    size_t n = want;
    while (reserve(n) != 0 && n * INS_SEG_BYTES > SEG_MIN_RESERVE) n /= 2;
    if (!g_map)
      ins_warn("cannot reserve %zu MiB of address space for the records waiting to be written: "
               "every record will be dropped (and counted)", cap_bytes >> 20);
    else if (n < want)
      ins_warn("could reserve only %zu MiB of address space for the records waiting to be "
               "written, not NCCL_INSPECTOR_RING_MEMORY_MAX_MB=%zu: records beyond it are dropped "
               "(and counted)", n * INS_SEG_BYTES >> 20, cap_bytes >> 20);
    st = g_map ? ST_READY : ST_FAILED;
    atomic_store_explicit(&g_state, st, memory_order_release);
  }
  for (int ms = 0; st == ST_BUSY && ms < SETUP_WAIT_MS; ms++) {
    nanosleep(&(struct timespec){0, 1000000}, NULL);
    st = atomic_load_explicit(&g_state, memory_order_acquire);
  }
  if (st != ST_READY) return -1;
  /* release: a producer that finds room under the limit finds the mapping too */
  atomic_store_explicit(&g_limit, want < g_nseg ? want : g_nseg, memory_order_release);
  return 0;
}

void *ins_seg_get(uint32_t stride) {
  uint32_t i;
  if (atomic_fetch_add_explicit(&g_in_use, 1, memory_order_relaxed) >=
      atomic_load_explicit(&g_limit, memory_order_acquire))
    goto refuse;
  if ((i = pop(&g_warm)) != NONE) {
    atomic_fetch_sub_explicit(&g_nwarm, 1, memory_order_relaxed);
  } else if ((i = pop(&g_cold)) != NONE) {
    atomic_fetch_sub_explicit(&g_ncold, 1, memory_order_relaxed);
  } else {
    /* never used yet: while the cap holds, there is one (every segment handed out is
     * held or free, and those held are fewer than the cap) */
    uint64_t f = atomic_fetch_add_explicit(&g_fresh, 1, memory_order_relaxed);
    if (f >= g_nseg) goto refuse;
    i = (uint32_t)f;
  }
  unsigned char *seg = g_seg0 + (size_t)i * INS_SEG_BYTES;
  /* cleared for cells of another size: a sequence word would lie in an old record's
   * bytes (only a process whose rings differ in record size, verbose or not: the unit
   * tests) */
  if (g_stride[i] && g_stride[i] != stride) memset(seg, 0, INS_SEG_BYTES);
  g_stride[i] = (uint16_t)stride; /* kept if it comes back unused (ins_seg_unget) */
  return seg;
refuse:
  atomic_fetch_sub_explicit(&g_in_use, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_refused, 1, memory_order_relaxed);
  return NULL;
}

static uint32_t index_of(void *seg) {
  return (uint32_t)(((unsigned char *)seg - g_seg0) / INS_SEG_BYTES);
}

void ins_seg_unget(void *seg) {
  /* never written: as ins_seg_get made it for its stride; counted warm (a cold one
   * put back here is not resident after all: the count is what to keep, not exact) */
  atomic_fetch_add_explicit(&g_nwarm, 1, memory_order_relaxed);
  push(&g_warm, index_of(seg));
  atomic_fetch_sub_explicit(&g_in_use, 1, memory_order_release);
}

void ins_seg_put(void *seg, uint32_t stride) {
  uint32_t i = index_of(seg);
  /* counted before it is on a stack: a get that pops it finds the count to take it from */
  if (atomic_load_explicit(&g_nwarm, memory_order_relaxed) <
      atomic_load_explicit(&g_keep, memory_order_relaxed)) {
    g_stride[i] = (uint16_t)stride;
    atomic_fetch_add_explicit(&g_nwarm, 1, memory_order_relaxed);
    push(&g_warm, i);
  } else {
    /* the pages go back to the system; they read 0 when touched again (seg.h) */
    g_stride[i] = madvise(seg, INS_SEG_BYTES, MADV_DONTNEED) == 0 ? 0 : (uint16_t)stride;
    atomic_fetch_add_explicit(&g_ncold, 1, memory_order_relaxed);
    push(&g_cold, i);
  }
  atomic_fetch_sub_explicit(&g_in_use, 1, memory_order_release);
}

void ins_seg_keep_warm(uint64_t segs) {
  uint64_t k = atomic_load(&g_keep);
  while (segs > k && !atomic_compare_exchange_weak(&g_keep, &k, segs)) {
  }
}

bool ins_seg_pressed(void) {
  return 2 * atomic_load_explicit(&g_in_use, memory_order_relaxed) >=
         atomic_load_explicit(&g_limit, memory_order_relaxed);
}

void ins_seg_stats(struct ins_seg_stats *st) {
  st->cap = atomic_load(&g_limit);
  st->in_use = atomic_load(&g_in_use);
  st->warm = atomic_load(&g_nwarm);
  st->cold = atomic_load(&g_ncold);
  st->refused = atomic_load(&g_refused);
  st->reserved = atomic_load(&g_state) == ST_READY ? g_map_bytes : 0;
}

bool ins_seg_take_refusals(uint64_t *total) {
  uint64_t r = atomic_load_explicit(&g_refused, memory_order_relaxed);
  *total = r;
  return atomic_load_explicit(&g_refused_told, memory_order_relaxed) != r &&
         atomic_exchange_explicit(&g_refused_told, r, memory_order_relaxed) != r;
}

void ins_seg_release(void) {
  int st = ST_READY;
  if (!atomic_compare_exchange_strong(&g_state, &st, ST_BUSY)) return;
  if (atomic_load(&g_in_use) != 0) {
    atomic_store(&g_state, ST_READY);
    return;
  }
  atomic_store(&g_limit, 0);
  munmap(g_map, g_map_bytes);
  g_map = g_seg0 = NULL;
  g_link = NULL;
  g_stride = NULL;
  g_map_bytes = 0;
  g_nseg = 0;
  atomic_store(&g_fresh, 0);
  atomic_store(&g_nwarm, 0);
  atomic_store(&g_ncold, 0);
  atomic_store(&g_keep, INS_SEG_KEEP_WARM);
  atomic_store(&g_warm.head, 0);
  atomic_store(&g_cold.head, 0);
  atomic_store(&g_state, ST_NONE);
}
