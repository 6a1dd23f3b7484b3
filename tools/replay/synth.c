/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth.c - the synthetic traffic generator (see synth.h).
 *
 * Timing model (docs/CONTRACTS.md section 1): ops run one after another.
 * For op k, on-time ranks arrive at t0 (+ U[0, J/10] us of jitter with
 * --late-jitter-us J); the late rank at t0 + late (+ U[0, J] us). Each
 * rank's kernel starts on arrival (channel 0 exactly then, the others a few
 * hundred ns later, as blocks launch).
 *  - A collective: every channel of every rank stops at (latest arrival +
 *    exec), exec = lat + busbytes / bw. So a correct plugin reports the late
 *    rank's start late by --late-us and every on-time rank's exec longer by
 *    as much.
 *  - A point-to-point exchange (--p2p): each task (each rank's Send and its
 *    Recv) ends at its own time, its rank's arrival + the transfer of its
 *    link, lat + bytes / bw (x --slow-factor between the nodes of
 *    --slow-link). The Recv on r from s has the transfer of the Send on s to
 *    r. A task does not wait for its peer: the lateness of a rank shows in
 *    its starts, never in anyone's exec, and a link's speed shows in exec
 *    alone (what a link-detection test needs). Whom a rank exchanges with
 *    is --p2p-pattern's: ring and nodes keep one peer; all (all-pairs
 *    traffic) moves it on by one at every exchange of the communicator
 *    (rank + k, k = 1 + (sn / 2) mod (ranks - 1)), so ranks - 1 exchanges
 *    in a row cover every pair of ranks once.
 * With --degrade AT:F, the bytes / bw part of every op from running index
 * AT x (total ops) on is F times longer. Node n's GPU clock is off by a
 * seeded offset (--clock-offset-ms): every pTimer of its ranks is shifted
 * by it, so starts move and execs do not. With --clock-drift-ppm F node n's
 * clock also runs at a seeded rate, 1 + U[-F, F] x 1e-6, counted from the
 * run's time base (base_ns, the first op's t0): a pTimer of true time t reads
 * base_ns + (t - base_ns) x (1 + ppm_n x 1e-6) + offset_n (syn_gpu_ns), so
 * starts move further as the run goes and execs stretch by the rate (a few ns).
 * The next op starts a few us (+ --op-gap-ms) after the latest end of this
 * one (on the true clock).
 *
 * The late rank is late in the ops --late-in names (all, its collectives, or
 * its P2P), in a seeded share --late-fraction of the iterations (one draw per
 * iteration, for every op of it), from op ceil(--late-from x total) on. With
 * --p2p-wait a P2P task waits for its peer, as NCCL's rendezvous does: it
 * starts on its rank's arrival and ends at the later of the two ranks'
 * arrivals + its transfer, so a late poster's peers' kernels run long. With
 * --p2p-comm the exchange runs on a communicator of its own (index --comms,
 * after the collectives' ones), as pipeline traffic does.
 *
 * Callback order per op, as NCCL issues it from one application thread that
 * drives all of its ranks (nccl-tests style): GroupApi start, its state 23,
 * the CollApi (or two P2pApi) per rank, state 24, then per rank KernelLaunch,
 * Group start, Coll (or Send and Recv P2p) start and stop, Group stop;
 * GroupApi stop; then, on each rank's progress thread, per channel: KernelCh
 * start (start pTimer), recordEventState(22, stop pTimer), KernelCh stop.
 * The replay engine applies the activation mask and the ABI version.
 *
 * A hang (--hang-rank, synth.h's struct syn_hang): the walk ends with the
 * stuck op X, so nothing after it is issued, and each task of X has a fate
 * (task_fate): it runs, waits (its KernelCh starts, never its kernel-stop
 * record or its stop), is queued (no KernelCh at all) or is never issued
 * (the missing rank's: no line of X at all). The ops of X's group (--hang-group)
 * are held back as they come and issued with X, under one GroupApi. The
 * truth file has lines for the tasks that run and then the hang's own line;
 * the stream hands the sink everything before the finalizes, then calls the
 * stuck callback (main.c: the ready files and the hold), then the finalizes.
 *
 * Cost: an op's end (a collective's latest arrival, a P2P op's latest task
 * end) is a walk over all ranks: O(ops x ranks). Every --procs child walks
 * the whole job to build its rank's stream, so at 1,024 ranks, 320 ops and
 * --late-jitter-us that came to 6.4 s of a 7.4 s run on 2 cores (the same run
 * with the plugin writing 246 MB of logs). syn_plan computes the ends once, in
 * the parent, and the children inherit the table through fork: a child's walk
 * is then O(ops), and those runs took 0.65 s and 1.95 s. (When nothing is
 * seeded per rank, a collective's latest arrival is known without the walk;
 * a P2P op's latest end still needs it.)
 */
#include "synth.h"
#include "synth_walk.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl/profiler_abi.h"
#include "intern.h"

const char *const syn_func_names[SYN_NFUNC] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                                   "Reduce",    "Send",      "Recv"};
#define DTYPE_SIZE 4

void syn_defaults(struct syn_params *p) {
  memset(p, 0, sizeof *p);
  p->ranks = 8;
  p->nodes = 1;
  p->comms = 1;
  p->iters = 20;
  p->ncolls = 4;
  p->colls[0] = SYN_ALLREDUCE;
  p->colls[1] = SYN_ALLGATHER;
  p->colls[2] = SYN_REDUCESCATTER;
  p->colls[3] = SYN_BROADCAST;
  p->min_bytes = 1024;
  p->max_bytes = 64ull << 20;
  p->factor = 4;
  p->bw_gbs = 100;
  p->lat_us = 10;
  p->channels = 8;
  p->late_rank = -1;
  p->late_us = 100;
  p->late_fraction = 1;
  p->late_from = 0;
  p->late_in = SYN_LATE_ALL;
  p->p2p_pattern = SYN_P2P_RING;
  p->nslow = 0;
  p->slow_factor = 4;
  p->degrade_at = 1;
  p->degrade_factor = 1;
  p->order = SYN_ORDER_SIZES;
  p->hang = (struct syn_hang){.rank = -1, .queued = -1, .kind = SYN_HANG_COLL, .comm = -1, .op = -1, .group = 1};
  p->host = "localhost";
  p->comm_name = "synthetic";
  p->seed = 1;
}

int syn_parse_colls(const char *list, struct syn_params *p, const char **bad) {
  p->ncolls = 0;
  const char *s = list;
  while (*s) {
    size_t len = strcspn(s, ",");
    int found = -1;
    for (int f = 0; f <= SYN_REDUCE; f++)
      if (strlen(syn_func_names[f]) == len && strncasecmp(s, syn_func_names[f], len) == 0) found = f;
    if (found < 0 || p->ncolls == SYN_MAX_COLLS) {
      *bad = s;
      return -1;
    }
    p->colls[p->ncolls++] = (enum syn_func)found;
    s += len;
    if (*s == ',') s++;
  }
  if (p->ncolls == 0) {
    *bad = list;
    return -1;
  }
  return 0;
}

/* ---- deterministic randomness: a hash of (seed, what) ------------------- */

static uint64_t mix(uint64_t x) { /* splitmix64 finaliser */
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t rnd(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return mix(mix(mix(mix(seed) ^ a) ^ b) ^ c);
}

/* Uniform in [0, 1), from 53 bits of a hash. */
static double unit(uint64_t h) { return (double)(h >> 11) * 0x1p-53; }

/* Keys of the random choices added with the multi-node faults: a 4th word no older choice uses. */
#define KEY_CLOCK 0x10001u
#define KEY_JITTER 0x10002u
#define KEY_LATE_STEP 0x1a7e5u /* --late-fraction: which iterations the late rank is late in */
#define KEY_DRIFT 0x10d71u /* --clock-drift-ppm */

uint64_t syn_comm_id(const struct syn_params *p, int comm) {
  uint64_t id = rnd(p->seed, 0xc0ffee, (uint64_t)comm, 0);
  return id ? id : 1;
}

/* ---- nodes ---------------------------------------------------------------- */

int syn_node_of(const struct syn_params *p, int rank) {
  assert(p->nodes >= 1 && p->nodes <= p->ranks && rank >= 0 && rank < p->ranks);
  return (int)((int64_t)rank * p->nodes / p->ranks);
}

void syn_node_name(const struct syn_params *p, int node, char *buf, size_t cap) {
  int width = 3;
  for (int top = p->nodes - 1; top >= 1000; top /= 10) width++;
  snprintf(buf, cap, "node-%0*d", width, node);
}

int64_t syn_clock_offset_ns(const struct syn_params *p, int node) {
  if (p->clock_offset_ms <= 0) return 0;
  double u = unit(rnd(p->seed, 0xc10c, (uint64_t)node, KEY_CLOCK));
  return (int64_t)llround((2.0 * u - 1.0) * p->clock_offset_ms * 1e6);
}

double syn_clock_drift_ppm(const struct syn_params *p, int node) {
  if (p->clock_drift_ppm <= 0) return 0;
  double u = unit(rnd(p->seed, 0xd71f, (uint64_t)node, KEY_DRIFT));
  return (2.0 * u - 1.0) * p->clock_drift_ppm;
}

uint64_t syn_gpu_ns(const struct syn_params *p, int node, uint64_t t) {
  assert(t >= p->base_ns);
  int64_t shift = syn_clock_offset_ns(p, node); /* added mod 2^64: a signed shift */
  double ppm = syn_clock_drift_ppm(p, node);
  if (ppm != 0) shift += (int64_t)llround((double)(t - p->base_ns) * ppm * 1e-6);
  return t + (uint64_t)shift;
}

/* ---- the op walk shared by the truth writer and the stream builder ------ */


static uint64_t late_ns(const struct syn_params *p) {
  return p->late_rank >= 0 && p->late_rank < p->ranks ? (uint64_t)llround(p->late_us * 1000.0) : 0;
}

/* Seeded jitter of rank's arrival at op, uniform in [0, max_us] (0 when max_us is 0). */
static uint64_t jitter_ns(const struct syn_params *p, const struct syn_op *op, int rank, double max_us) {
  if (max_us <= 0) return 0;
  return (uint64_t)llround(unit(rnd(p->seed, op->index, (uint64_t)rank, KEY_JITTER)) * max_us * 1000.0);
}

static bool is_late(const struct syn_params *p, const struct syn_op *op, int rank) {
  return rank == p->late_rank && op->late;
}

static uint64_t arrival(const struct syn_params *p, const struct syn_op *op, int rank) {
  if (is_late(p, op, rank)) return op->t0 + late_ns(p) + jitter_ns(p, op, rank, p->late_jitter_us);
  return op->t0 + jitter_ns(p, op, rank, p->late_jitter_us / 10.0);
}

static uint64_t latest_arrival(const struct syn_params *p, const struct syn_op *op) {
  if (p->late_jitter_us <= 0) return op->t0 + (op->late ? late_ns(p) : 0);
  uint64_t t = op->t0;
  for (int r = 0; r < p->ranks; r++) {
    uint64_t a = arrival(p, op, r);
    if (a > t) t = a;
  }
  return t;
}

/* ---- point-to-point: who talks to whom, and how long a transfer takes ----- */

/* op->sn / 2: the exchange's number on its communicator (a Send and a Recv sn each) */
static int p2p_stride(const struct syn_params *p, const struct syn_op *op) {
  if (p->p2p_pattern == SYN_P2P_ALL) return p->ranks > 1 ? 1 + (int)(op->sn / 2 % (uint64_t)(p->ranks - 1)) : 1;
  return p->p2p_pattern == SYN_P2P_NODES ? p->ranks / p->nodes : 1;
}
int syn_send_peer(const struct syn_params *p, const struct syn_op *op, int r) {
  return (r + p2p_stride(p, op)) % p->ranks;
}
int syn_recv_peer(const struct syn_params *p, const struct syn_op *op, int r) {
  return (r - p2p_stride(p, op) + p->ranks) % p->ranks;
}

/* The transfer from rank `from` to rank `to` (either end's task): lat + bytes / bw, the second
   term x --slow-factor over the slow link (either direction) and x the --degrade factor. */
static uint64_t xfer_ns(const struct syn_params *p, const struct syn_op *op, int from, int to) {
  double slow = 1.0;
  for (int i = 0; i < p->nslow; i++) {
    int a = syn_node_of(p, from), b = syn_node_of(p, to);
    if ((a == p->slow_a[i] && b == p->slow_b[i]) || (a == p->slow_b[i] && b == p->slow_a[i])) slow = p->slow_factor;
  }
  uint64_t ns = (uint64_t)llround(p->lat_us * 1000.0 + (double)op->bytes / p->bw_gbs * (op->slower * slow));
  return ns ? ns : 1;
}

/* When rank r's task k of a P2P op (0 its Send, 1 its Recv) can transfer: its arrival, or with
   --p2p-wait the later of its and its peer's (a rendezvous: the earlier one's kernel waits). */
static uint64_t p2p_ready(const struct syn_params *p, const struct syn_op *op, int r, int k) {
  uint64_t t = arrival(p, op, r);
  if (p->p2p_wait) {
    uint64_t u = arrival(p, op, k ? syn_recv_peer(p, op, r) : syn_send_peer(p, op, r));
    if (u > t) t = u;
  }
  return t;
}

/* End (unshifted) of rank r's task k of a P2P op: 0 its Send, 1 its Recv. */
uint64_t syn_p2p_end(const struct syn_params *p, const struct syn_op *op, int r, int k) {
  uint64_t x = k ? xfer_ns(p, op, syn_recv_peer(p, op, r), r) : xfer_ns(p, op, r, syn_send_peer(p, op, r));
  return p2p_ready(p, op, r, k) + x;
}

/* Start pTimer of the ci-th channel of `rank` in op. */
uint64_t syn_chan_start(const struct syn_params *p, const struct syn_op *op, int rank, int ci) {
  uint64_t t = arrival(p, op, rank);
  if (ci > 0) t += 1 + rnd(p->seed, op->index, (uint64_t)rank, (uint64_t)ci) % 400;
  return t;
}

static double bus_factor(enum syn_func f, int n) {
  switch (f) {
  case SYN_ALLREDUCE: return 2.0 * (n - 1) / n;
  case SYN_ALLGATHER:
  case SYN_REDUCESCATTER: return (double)(n - 1); /* (n-1)/n of n x the per-rank bytes */
  default: return 1.0;
  }
}

/* The op's end (op->t0 set): O(ranks). */
static uint64_t op_stop(const struct syn_params *p, const struct syn_op *op) {
  if (op->func == SYN_SEND) {
    uint64_t t = op->t0;
    for (int r = 0; r < p->ranks; r++)
      for (int k = 0; k < 2; k++) {
        uint64_t e = syn_p2p_end(p, op, r, k);
        if (e > t) t = e;
      }
    return t;
  }
  double busbytes = (double)op->bytes * bus_factor(op->func, p->ranks);
  uint64_t exec = (uint64_t)llround(p->lat_us * 1000.0 + busbytes / p->bw_gbs * op->slower);
  if (exec == 0) exec = 1;
  return latest_arrival(p, op) + exec;
}

static void walk_one(const struct syn_params *p, struct syn_op *op, uint64_t *t, syn_visit fn, void *arg) {
  op->t0 = *t;
  op->t_stop = p->plan ? p->plan[op->index] : op_stop(p, op);
  assert(!p->plan || op->t_stop == op_stop(p, op)); /* the table is this walk's: same options, same base */
  fn(arg, p, op);
  *t = op->t_stop + 3000 + rnd(p->seed, op->index, 0x9a9, 0) % 2000; /* host gap to the next op */
  *t += (uint64_t)llround(p->op_gap_ms * 1e6);                          /* --op-gap-ms: a long run, few ops */
  op->index++;
}

static uint64_t next_size(const struct syn_params *p, uint64_t size) {
  uint64_t next = (uint64_t)llround((double)size * p->factor);
  return next > size ? next : size + 1;
}

struct walker {
  const struct syn_params *p;
  syn_visit fn;
  void *arg;
  uint64_t *seq;         /* per (comm, func): the next sn */
  uint64_t degrade_from; /* first running index that --degrade slows down */
  uint64_t late_from;    /* first running index the late rank may be late in (--late-from) */
  uint64_t end;          /* ops from this running index on are not walked: nothing is issued after a stuck op */
  uint64_t t;
  struct syn_op op;
};

/* Communicators: --comms of them, and with --p2p-comm the exchange's own after them. */
int syn_ncomms(const struct syn_params *p) { return p->comms + (p->p2p && p->p2p_comm); }

/* Whether the late rank is late in op (its index, iteration and func set). */
static bool late_in_op(const struct syn_params *p, const struct walker *w, const struct syn_op *op) {
  if (p->late_rank < 0 || op->index < w->late_from) return false;
  if (p->late_in != SYN_LATE_ALL && (p->late_in == SYN_LATE_P2P) != (op->func == SYN_SEND)) return false;
  return p->late_fraction >= 1 || unit(rnd(p->seed, (uint64_t)op->iter, 0x57e9, KEY_LATE_STEP)) < p->late_fraction;
}

/* One op of func and size on every communicator, in communicator order (the exchange on its own
   communicator alone with --p2p-comm). */
static void walk_comms(struct walker *w, enum syn_func func, uint64_t size) {
  const struct syn_params *p = w->p;
  bool own = func == SYN_SEND && p->p2p_comm;
  for (int comm = own ? p->comms : 0; comm < (own ? p->comms + 1 : p->comms); comm++) {
    if (w->op.index >= w->end) return;
    struct syn_op *op = &w->op;
    op->comm = comm;
    op->func = func;
    op->count = size / DTYPE_SIZE ? size / DTYPE_SIZE : 1;
    op->bytes = op->count * DTYPE_SIZE;
    uint64_t *sn = &w->seq[(size_t)comm * SYN_NFUNC + func];
    op->sn = *sn;
    *sn += func == SYN_SEND ? 2 : 1; /* a ring exchange: a Send and a Recv per rank */
    op->slower = op->index >= w->degrade_from ? p->degrade_factor : 1.0;
    op->late = late_in_op(p, w, op);
    walk_one(p, op, &w->t, w->fn, w->arg);
  }
}

/* The functions of the run in order: the collectives, then the exchange (SYN_SEND) with --p2p. */
static int run_funcs(const struct syn_params *p, enum syn_func *out) {
  int n = 0;
  for (int c = 0; c < p->ncolls; c++) out[n++] = p->colls[c];
  if (p->p2p) out[n++] = SYN_SEND;
  return n;
}

/* Ops in the run: every walk visits this many. */
static uint64_t total_ops(const struct syn_params *p) {
  enum syn_func funcs[SYN_MAX_COLLS + 1];
  uint64_t nsizes = 0;
  for (uint64_t size = p->min_bytes; size <= p->max_bytes; size = next_size(p, size)) nsizes++;
  uint64_t per = (uint64_t)run_funcs(p, funcs) * (uint64_t)p->comms; /* ops per size and iteration */
  if (p->p2p && p->p2p_comm) per -= (uint64_t)p->comms - 1;          /* the exchange on one communicator */
  return per * nsizes * (uint64_t)p->iters;
}

void syn_walk(const struct syn_params *p, syn_visit fn, void *arg) {
  struct walker w = {.p = p, .fn = fn, .arg = arg, .t = p->base_ns};
  w.seq = calloc((size_t)syn_ncomms(p) * SYN_NFUNC, sizeof *w.seq);
  if (!w.seq) {
    fprintf(stderr, "inspector-replay: out of memory\n");
    exit(1);
  }
  enum syn_func funcs[SYN_MAX_COLLS + 1];
  int nf = run_funcs(p, funcs);
  uint64_t total = total_ops(p);
  /* index >= AT x total, for a whole index: index >= ceil(AT x total) */
  w.degrade_from = p->degrade_factor != 1.0 ? (uint64_t)ceil(p->degrade_at * (double)total) : UINT64_MAX;
  w.late_from = (uint64_t)ceil(p->late_from * (double)total);
  w.end = p->hang.resolved ? p->hang.index + 1 : total;
  if (p->order == SYN_ORDER_SIZES) {
    for (int f = 0; f < nf; f++)
      for (uint64_t size = p->min_bytes; size <= p->max_bytes; size = next_size(p, size))
        for (int it = 0; it < p->iters; it++) {
          w.op.iter = it;
          walk_comms(&w, funcs[f], size);
        }
  } else {
    for (int it = 0; it < p->iters; it++)
      for (int f = 0; f < nf; f++)
        for (uint64_t size = p->min_bytes; size <= p->max_bytes; size = next_size(p, size)) {
          w.op.iter = it;
          walk_comms(&w, funcs[f], size);
        }
  }
  assert(w.op.index == w.end && w.end <= total);
  free(w.seq);
}

/* ---- the plan: every op's end, once -------------------------------------- */

#define SYN_PLAN_MAX_OPS (1u << 22) /* 32 MiB of table */

static void plan_visit(void *arg, const struct syn_params *p, const struct syn_op *op) {
  (void)p;
  ((uint64_t *)arg)[op->index] = op->t_stop;
}

void syn_plan(struct syn_params *p) {
  syn_plan_free(p);
  uint64_t total = total_ops(p);
  if (total == 0 || total > SYN_PLAN_MAX_OPS) return;
  uint64_t *plan = malloc((size_t)total * sizeof *plan);
  if (!plan) return;
  syn_walk(p, plan_visit, plan); /* with p->plan NULL: computed op by op */
  p->plan = plan;
}

void syn_plan_free(struct syn_params *p) {
  free(p->plan);
  p->plan = NULL;
}

/* ---- a hang: the stuck op, and what each rank does with it -------------- */

/* Every task of every op runs, but the stuck op's (synth.h, struct syn_hang). In an exchange a
   Recv waits when the Send it needs never runs (its peer is the missing or the queued rank);
   a Send completes whatever its peer does (the model stalls no Send: as NCCL's eager sends that
   fit the receiver's buffers). */
enum task_fate syn_task_fate(const struct syn_params *p, const struct syn_op *op, int r, int k) {
  const struct syn_hang *h = &p->hang;
  if (!h->resolved || op->index != h->index) return TASK_RUNS;
  if (r == h->rank) return TASK_NONE;
  if (r == h->queued) return TASK_QUEUED;
  if (op->func != SYN_SEND) return TASK_WAITS;
  int from = syn_recv_peer(p, op, r);
  return k == 1 && (from == h->rank || from == h->queued) ? TASK_WAITS : TASK_RUNS;
}

/* Whether rank r issues op at all (the missing rank issues nothing from the stuck op on). */
bool syn_issues(const struct syn_params *p, const struct syn_op *op, int r) {
  return syn_task_fate(p, op, r, 0) != TASK_NONE;
}

struct hang_find {
  const struct syn_hang *h;
  uint64_t from;        /* the first running index X may have */
  bool any, found;
  uint64_t index, last; /* X; the last op of the kind (and communicator), for a message */
};

static void hang_find_visit(void *arg, const struct syn_params *p, const struct syn_op *op) {
  struct hang_find *f = arg;
  (void)p;
  if ((f->h->comm >= 0 && op->comm != f->h->comm) || (op->func == SYN_SEND) != (f->h->kind == SYN_HANG_P2P)) return;
  f->any = true;
  f->last = op->index;
  if (!f->found && op->index >= f->from) {
    f->found = true;
    f->index = op->index;
  }
}

int syn_hang_resolve(struct syn_params *p, char *why, size_t cap) {
  struct syn_hang *h = &p->hang;
  h->resolved = false;
  if (h->rank < 0) return 0;
  assert(h->group >= 1 && h->rank < p->ranks && h->queued != h->rank);
  uint64_t total = total_ops(p);
  if (h->op >= 0 && (uint64_t)h->op >= total) {
    snprintf(why, cap, "bad value for --hang-op: '%" PRId64 "' (the run has %" PRIu64 " ops: 0..%" PRIu64 ")", h->op,
             total, total - 1);
    return -1;
  }
  struct hang_find f = {.h = h, .from = h->op >= 0 ? (uint64_t)h->op : total / 2};
  syn_walk(p, hang_find_visit, &f); /* the whole run: h->resolved is false */
  const char *what = h->kind == SYN_HANG_P2P ? "exchange" : "collective";
  char where[48] = "";
  if (h->comm >= 0) snprintf(where, sizeof where, " on communicator %d", h->comm);
  if (!f.any) { /* only on a communicator that has none: every run has collectives, and --p2p exchanges */
    snprintf(why, cap, "bad value for --hang-comm: '%d' (no %s runs on communicator %d)", h->comm, what, h->comm);
    return -1;
  }
  if (!f.found && h->op >= 0) {
    snprintf(why, cap, "bad value for --hang-op: '%" PRIu64 "' (no %s%s at running index %" PRIu64
             " or later; the last is at %" PRIu64 ")", f.from, what, where, f.from, f.last);
    return -1;
  }
  if (!f.found) {
    snprintf(why, cap, "--hang-rank: no %s%s from the middle op on (running index %" PRIu64 "; the last is at %"
             PRIu64 "): give --hang-op", what, where, f.from, f.last);
    return -1;
  }
  if (f.index < (uint64_t)(h->group - 1)) {
    snprintf(why, cap, "bad value for --hang-group: '%d' (the stuck op, running index %" PRIu64 ", has %" PRIu64
             " ops before it)", h->group, f.index, f.index);
    return -1;
  }
  h->index = f.index;
  h->first = f.index - (uint64_t)(h->group - 1);
  h->resolved = true;
  return 0;
}

/* ---- truth file ---------------------------------------------------------- */

static void put_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

/* The host name rank r's process reports (see syn_params.node_hosts). */
static const char *host_of(const struct syn_params *p, int rank, char *buf, size_t cap) {
  if (!p->node_hosts) return p->host;
  syn_node_name(p, syn_node_of(p, rank), buf, cap);
  return buf;
}

static void truth_line(FILE *f, const struct syn_params *p, const struct syn_op *op, int rank, enum syn_func func,
                       uint64_t sn, int peer, int nch, uint64_t end) {
  uint64_t start = arrival(p, op, rank);
  int node = syn_node_of(p, rank);
  int64_t offset = syn_clock_offset_ns(p, node);
  uint64_t gpu_start = syn_gpu_ns(p, node, start), gpu_end = syn_gpu_ns(p, node, end); /* on the node's clock */
  char host[32];
  fprintf(f, "{\"comm\":\"0x%" PRIx64 "\",\"comm_name\":", syn_comm_id(p, op->comm));
  put_json_string(f, p->comm_name);
  fprintf(f,
          ",\"rank\":%d,\"nranks\":%d,\"nnodes\":%d,\"kind\":\"%s\",\"func\":\"%s\",\"sn\":%" PRIu64
          ",\"peer\":%d,\"count\":%" PRIu64 ",\"datatype\":\"" SYN_DTYPE "\",\"bytes\":%" PRIu64 ",\"start_ns\":%" PRIu64
          ",\"exec_ns\":%" PRIu64 ",\"nchannels\":%d,\"node\":%d,\"host\":",
          rank, p->ranks, p->nodes, func >= SYN_SEND ? "p2p" : "coll", syn_func_names[func], sn, peer, op->count,
          op->bytes, gpu_start, gpu_end - gpu_start, nch, node);
  put_json_string(f, host_of(p, rank, host, sizeof host));
  fprintf(f, ",\"clock_offset_ns\":%" PRId64, offset);
  if (p->clock_drift_ppm > 0) fprintf(f, ",\"clock_drift_ppm\":%.9g", syn_clock_drift_ppm(p, node));
  fputs("}\n", f);
}

struct truth_walk {
  FILE *f;
  struct syn_op stuck; /* a copy of the stuck op, for the hang's line */
};

/* A line per task that completes: a stuck op's waiting, queued and unissued tasks have none. */
static void truth_visit(void *arg, const struct syn_params *p, const struct syn_op *op) {
  struct truth_walk *tw = arg;
  FILE *f = tw->f;
  if (p->hang.resolved && op->index == p->hang.index) tw->stuck = *op;
  for (int r = 0; r < p->ranks; r++) {
    if (op->func == SYN_SEND) {
      if (syn_task_fate(p, op, r, 0) == TASK_RUNS)
        truth_line(f, p, op, r, SYN_SEND, op->sn, syn_send_peer(p, op, r), 1, syn_p2p_end(p, op, r, 0));
      if (syn_task_fate(p, op, r, 1) == TASK_RUNS)
        truth_line(f, p, op, r, SYN_RECV, op->sn + 1, syn_recv_peer(p, op, r), 1, syn_p2p_end(p, op, r, 1));
    } else if (syn_task_fate(p, op, r, 0) == TASK_RUNS) {
      truth_line(f, p, op, r, op->func, op->sn, -1, p->channels, op->t_stop);
    }
  }
}

/* "key":[the ranks whose task of the stuck op (an exchange's: its Recv) has this fate] */
static void put_ranks(FILE *f, const char *key, const struct syn_params *p, const struct syn_op *op,
                      enum task_fate fate) {
  fprintf(f, ",\"%s\":[", key);
  const char *sep = "";
  for (int r = 0; r < p->ranks; r++) {
    if (syn_task_fate(p, op, r, op->func == SYN_SEND) != fate) continue;
    fprintf(f, "%s%d", sep, r);
    sep = ",";
  }
  fputc(']', f);
}

/* The hang's line (docs/CONTRACTS.md section 3): the stuck op, and each rank's part in it. */
static void truth_hang(FILE *f, const struct syn_params *p, const struct syn_op *op) {
  bool ex = op->func == SYN_SEND; /* the stuck task: the Recv, sn + 1 */
  fprintf(f, "{\"hang\":{\"comm\":\"0x%" PRIx64 "\",\"comm_index\":%d,\"comm_name\":", syn_comm_id(p, op->comm), op->comm);
  put_json_string(f, p->comm_name);
  fprintf(f,
          ",\"kind\":\"%s\",\"func\":\"%s\",\"sn\":%" PRIu64 ",\"index\":%" PRIu64 ",\"group\":%d,\"first_index\":%" PRIu64
          ",\"count\":%" PRIu64 ",\"datatype\":\"" SYN_DTYPE "\",\"bytes\":%" PRIu64 ",\"nranks\":%d",
          ex ? "p2p" : "coll", syn_func_names[ex ? SYN_RECV : op->func], ex ? op->sn + 1 : op->sn, op->index,
          p->hang.group, p->hang.first, op->count, op->bytes, p->ranks);
  put_ranks(f, "missing", p, op, TASK_NONE);
  put_ranks(f, "queued", p, op, TASK_QUEUED);
  put_ranks(f, "waiting", p, op, TASK_WAITS);
  put_ranks(f, "completed", p, op, TASK_RUNS);
  if (ex) {
    fputs(",\"peers\":[", f);
    for (int r = 0; r < p->ranks; r++) fprintf(f, "%s%d", r ? "," : "", syn_recv_peer(p, op, r));
    fputc(']', f);
  }
  fputs("}}\n", f);
}

int syn_write_truth(const struct syn_params *p, FILE *f) {
  struct truth_walk tw = {.f = f};
  syn_walk(p, truth_visit, &tw);
  if (p->hang.resolved) truth_hang(f, p, &tw.stuck);
  return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

