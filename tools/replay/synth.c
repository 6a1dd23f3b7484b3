/*
 * synth.c - the synthetic traffic generator (see synth.h).
 *
 * Timing model (docs/CONTRACTS.md section 1): ops run one after another.
 * For op k, on-time ranks arrive at t0; the late rank at t0 + late. Each
 * rank's kernel starts on arrival (channel 0 exactly then, the others a few
 * hundred ns later, as blocks launch), and every channel of every rank stops
 * at (latest arrival + exec), exec = lat + busbytes / bw. So a correct
 * plugin reports the late rank's start late by --late-us and every on-time
 * rank's exec longer by as much. The next op starts a few us after.
 *
 * Callback order per op, as NCCL issues it from one application thread that
 * drives all of its ranks (nccl-tests style): GroupApi start, its state 23,
 * the CollApi (or two P2pApi) per rank, state 24, then per rank KernelLaunch,
 * Group start, Coll (or Send and Recv P2p) start and stop, Group stop;
 * GroupApi stop; then, on each rank's progress thread, per channel: KernelCh
 * start (start pTimer), recordEventState(22, stop pTimer), KernelCh stop.
 * The replay engine applies the activation mask and the ABI version.
 */
#include "synth.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "abi/profiler_abi.h"
#include "intern.h"

static const char *const k_func_name[SYN_NFUNC] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                                   "Reduce",    "Send",      "Recv"};
#define P2P_CHANNEL 16
#define DTYPE "ncclFloat32"
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
      if (strlen(k_func_name[f]) == len && strncasecmp(s, k_func_name[f], len) == 0) found = f;
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

static uint64_t comm_id(const struct syn_params *p, int comm) {
  uint64_t id = rnd(p->seed, 0xc0ffee, (uint64_t)comm, 0);
  return id ? id : 1;
}

/* ---- the op walk shared by the truth writer and the stream builder ------ */

struct syn_op {
  uint64_t index; /* running op number: the key of its random choices */
  int comm;
  enum syn_func func; /* a collective, or SYN_SEND for one ring exchange (a Send and a Recv per rank) */
  uint64_t count, bytes;
  uint64_t sn; /* coll: its seqNumber; ring exchange: the p2p sn of the Send (the Recv's is sn + 1) */
  uint64_t t0, t_stop;
};

typedef void (*syn_visit)(void *arg, const struct syn_params *p, const struct syn_op *op);

static uint64_t late_ns(const struct syn_params *p) {
  return p->late_rank >= 0 && p->late_rank < p->ranks ? (uint64_t)llround(p->late_us * 1000.0) : 0;
}

static uint64_t arrival(const struct syn_params *p, const struct syn_op *op, int rank) {
  return op->t0 + (rank == p->late_rank ? late_ns(p) : 0);
}

/* Start pTimer of the ci-th channel of `rank` in op. */
static uint64_t chan_start(const struct syn_params *p, const struct syn_op *op, int rank, int ci) {
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

static void walk_one(const struct syn_params *p, struct syn_op *op, uint64_t *t, syn_visit fn, void *arg) {
  double busbytes = (double)op->bytes * bus_factor(op->func, p->ranks);
  uint64_t exec = (uint64_t)llround(p->lat_us * 1000.0 + busbytes / p->bw_gbs);
  if (exec == 0) exec = 1;
  op->t0 = *t;
  op->t_stop = *t + late_ns(p) + exec;
  fn(arg, p, op);
  *t = op->t_stop + 3000 + rnd(p->seed, op->index, 0x9a9, 0) % 2000; /* host gap to the next op */
  op->index++;
}

static void walk(const struct syn_params *p, syn_visit fn, void *arg) {
  uint64_t *seq = calloc((size_t)p->comms * SYN_NFUNC, sizeof *seq);
  if (!seq) {
    fprintf(stderr, "inspector-replay: out of memory\n");
    exit(1);
  }
  uint64_t t = p->base_ns;
  struct syn_op op = {0};
  for (int c = 0; c < p->ncolls; c++) {
    for (uint64_t size = p->min_bytes; size <= p->max_bytes;) {
      for (int it = 0; it < p->iters; it++) {
        for (int comm = 0; comm < p->comms; comm++) {
          op.comm = comm;
          op.func = p->colls[c];
          op.count = size / DTYPE_SIZE ? size / DTYPE_SIZE : 1;
          op.bytes = op.count * DTYPE_SIZE;
          op.sn = seq[(size_t)comm * SYN_NFUNC + op.func]++;
          walk_one(p, &op, &t, fn, arg);
        }
      }
      uint64_t next = (uint64_t)llround((double)size * p->factor);
      size = next > size ? next : size + 1;
    }
  }
  if (p->p2p) {
    for (uint64_t size = p->min_bytes; size <= p->max_bytes;) {
      for (int it = 0; it < p->iters; it++) {
        for (int comm = 0; comm < p->comms; comm++) {
          op.comm = comm;
          op.func = SYN_SEND;
          op.count = size / DTYPE_SIZE ? size / DTYPE_SIZE : 1;
          op.bytes = op.count * DTYPE_SIZE;
          op.sn = seq[(size_t)comm * SYN_NFUNC + SYN_SEND];
          seq[(size_t)comm * SYN_NFUNC + SYN_SEND] += 2; /* a Send and a Recv per rank */
          walk_one(p, &op, &t, fn, arg);
        }
      }
      uint64_t next = (uint64_t)llround((double)size * p->factor);
      size = next > size ? next : size + 1;
    }
  }
  free(seq);
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

static void truth_line(FILE *f, const struct syn_params *p, const struct syn_op *op, int rank, enum syn_func func,
                       uint64_t sn, int peer, int nch) {
  uint64_t start = arrival(p, op, rank);
  fprintf(f, "{\"comm\":\"0x%" PRIx64 "\",\"comm_name\":", comm_id(p, op->comm));
  put_json_string(f, p->comm_name);
  fprintf(f,
          ",\"rank\":%d,\"nranks\":%d,\"nnodes\":%d,\"kind\":\"%s\",\"func\":\"%s\",\"sn\":%" PRIu64
          ",\"peer\":%d,\"count\":%" PRIu64 ",\"datatype\":\"" DTYPE "\",\"bytes\":%" PRIu64 ",\"start_ns\":%" PRIu64
          ",\"exec_ns\":%" PRIu64 ",\"nchannels\":%d}\n",
          rank, p->ranks, p->nodes, func >= SYN_SEND ? "p2p" : "coll", k_func_name[func], sn, peer, op->count,
          op->bytes, start, op->t_stop - start, nch);
}

static void truth_visit(void *arg, const struct syn_params *p, const struct syn_op *op) {
  FILE *f = arg;
  int n = p->ranks;
  for (int r = 0; r < n; r++) {
    if (op->func == SYN_SEND) {
      truth_line(f, p, op, r, SYN_SEND, op->sn, (r + 1) % n, 1);
      truth_line(f, p, op, r, SYN_RECV, op->sn + 1, (r - 1 + n) % n, 1);
    } else {
      truth_line(f, p, op, r, op->func, op->sn, -1, p->channels);
    }
  }
}

int syn_write_truth(const struct syn_params *p, FILE *f) {
  walk(p, truth_visit, f);
  return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* ---- callback stream ----------------------------------------------------- */

/* Lines per chunk handed to the sink: large enough to amortise thread start-up under --threads. */
#define SYN_CHUNK_LINES 65536

struct builder {
  struct rp_trace *t;
  syn_sink sink;
  void *sink_arg;
  int r0, r1;          /* ranks driven by this process: [r0, r1) */
  uint32_t app;        /* the application thread */
  uint32_t *kthread;   /* progress thread per (comm, rank): [comm * nr + r - r0] */
  uint32_t *api, *api2, *op, *op2; /* per rank of the current op: API and task slots (2: the Recv) */
  const char *func[SYN_NFUNC], *dtype, *algo, *ll, *simple;
};

static uint32_t ctx_of(const struct builder *b, int comm, int rank) {
  return (uint32_t)(comm * (b->r1 - b->r0) + (rank - b->r0));
}

static uint32_t ev_start(struct builder *b, uint32_t thread, uint32_t type, uint32_t ctx, uint32_t parent,
                         int rank, struct rp_event **out) {
  struct rp_event *e = rp_trace_append_start(b->t, thread, type, ctx, parent, rank);
  if (out) *out = e; /* valid until the next append */
  return e->slot;
}

static void ev_end(struct builder *b, uint32_t thread, uint32_t slot, int cb, int state, uint64_t value) {
  struct rp_event *e = rp_trace_append(b->t);
  e->cb = (uint8_t)cb;
  e->thread = (uint16_t)thread;
  e->slot = slot;
  e->type = b->t->slot[slot].type;
  e->ctx = b->t->slot[slot].ctx;
  e->u.rec.state = state;
  e->u.rec.value = value;
}

static void ev_stop(struct builder *b, uint32_t thread, uint32_t slot) { ev_end(b, thread, slot, RP_CB_STOP, 0, 0); }

static void build_visit(void *arg, const struct syn_params *p, const struct syn_op *op) {
  struct builder *b = arg;
  struct rp_event *e;
  bool ring = op->func == SYN_SEND;
  int n = p->ranks;
  uint32_t app = b->app;
  uint32_t gapi = ev_start(b, app, RP_EV_GROUP_API, ctx_of(b, op->comm, b->r0), 0, b->r0, &e);
  e->u.gapi.depth = 1;
  ev_end(b, app, gapi, RP_CB_RECORD, PROF_STATE_GROUP_START_API_STOP, 0);
  for (int r = b->r0; r < b->r1; r++) {
    int i = r - b->r0;
    uint32_t ctx = ctx_of(b, op->comm, r);
    if (!ring) {
      b->api[i] = ev_start(b, app, RP_EV_COLL_API, ctx, gapi, r, &e);
      e->u.api.func = b->func[op->func];
      e->u.api.count = op->count;
      e->u.api.dtype = b->dtype;
      ev_stop(b, app, b->api[i]);
    } else {
      for (int k = 0; k < 2; k++) {
        uint32_t s = ev_start(b, app, RP_EV_P2P_API, ctx, gapi, r, &e);
        e->u.api.func = b->func[k ? SYN_RECV : SYN_SEND];
        e->u.api.count = op->count;
        e->u.api.dtype = b->dtype;
        ev_stop(b, app, s);
        (k ? b->api2 : b->api)[i] = s;
      }
    }
  }
  ev_end(b, app, gapi, RP_CB_RECORD, PROF_STATE_GROUP_END_API_START, 0);
  for (int r = b->r0; r < b->r1; r++) {
    int i = r - b->r0;
    uint32_t ctx = ctx_of(b, op->comm, r);
    uint32_t kl = ev_start(b, app, RP_EV_KERNEL_LAUNCH, ctx, gapi, r, NULL);
    ev_stop(b, app, kl);
    uint32_t grp = ev_start(b, app, RP_EV_GROUP, ctx, 0, 0, NULL);
    if (!ring) {
      b->op[i] = ev_start(b, app, RP_EV_COLL, ctx, b->api[i], r, &e);
      e->group = grp;
      e->u.coll.seq = op->sn;
      e->u.coll.func = b->func[op->func];
      e->u.coll.count = op->count;
      e->u.coll.dtype = b->dtype;
      e->u.coll.nch = (uint8_t)p->channels;
      e->u.coll.nwarps = op->bytes < 65536 ? 8 : 16;
      e->u.coll.algo = b->algo;
      e->u.coll.proto = op->bytes < 65536 ? b->ll : b->simple;
      ev_stop(b, app, b->op[i]);
    } else {
      for (int k = 0; k < 2; k++) {
        uint32_t s = ev_start(b, app, RP_EV_P2P, ctx, (k ? b->api2 : b->api)[i], r, &e);
        e->group = grp;
        e->u.p2p.func = b->func[k ? SYN_RECV : SYN_SEND];
        e->u.p2p.count = op->count;
        e->u.p2p.dtype = b->dtype;
        e->u.p2p.peer = k ? (r - 1 + n) % n : (r + 1) % n;
        e->u.p2p.nch = 1;
        (k ? b->op2 : b->op)[i] = s;
      }
      ev_stop(b, app, b->op[i]);
      ev_stop(b, app, b->op2[i]);
    }
    ev_stop(b, app, grp);
  }
  ev_stop(b, app, gapi);

  /* kernel events, on each rank's progress thread; KernelCh descriptors carry rank 0 as NCCL's do */
  for (int r = b->r0; r < b->r1; r++) {
    int i = r - b->r0;
    uint32_t ctx = ctx_of(b, op->comm, r);
    uint32_t kt = b->kthread[(size_t)op->comm * (size_t)(b->r1 - b->r0) + (size_t)i];
    int ntask = ring ? 2 : 1, nch = ring ? 1 : p->channels;
    for (int k = 0; k < ntask; k++) {
      for (int ci = 0; ci < nch; ci++) {
        uint32_t s = ev_start(b, kt, RP_EV_KERNEL_CH, ctx, (k ? b->op2 : b->op)[i], 0, &e);
        e->u.kch.ch = (uint8_t)(ring ? P2P_CHANNEL : ci);
        e->u.kch.ptimer = chan_start(p, op, r, ci);
        ev_end(b, kt, s, RP_CB_RECORD, PROF_STATE_KERNEL_CH_STOP, op->t_stop);
        ev_stop(b, kt, s);
      }
    }
  }
  if (b->t->nev >= SYN_CHUNK_LINES) { /* only between ops: no line names an earlier chunk's event */
    b->sink(b->sink_arg, b->t);
    rp_trace_clear_lines(b->t);
  }
}

void syn_stream(const struct syn_params *p, int only_rank, syn_sink sink, void *sink_arg) {
  char label[64];
  if (only_rank >= 0) snprintf(label, sizeof label, "synthetic rank %d", only_rank);
  else snprintf(label, sizeof label, "synthetic");
  struct rp_trace chunk;
  struct rp_trace *out = &chunk;
  rp_trace_init(out, label);
  struct builder b = {.t = out, .sink = sink, .sink_arg = sink_arg};
  b.r0 = only_rank >= 0 ? only_rank : 0;
  b.r1 = only_rank >= 0 ? only_rank + 1 : p->ranks;
  size_t nr = (size_t)(b.r1 - b.r0);
  b.kthread = calloc((size_t)p->comms * nr, sizeof *b.kthread);
  b.api = calloc(nr, sizeof *b.api);
  b.api2 = calloc(nr, sizeof *b.api2);
  b.op = calloc(nr, sizeof *b.op);
  b.op2 = calloc(nr, sizeof *b.op2);
  if (!b.kthread || !b.api || !b.api2 || !b.op || !b.op2) {
    fprintf(stderr, "inspector-replay: out of memory\n");
    exit(1);
  }
  for (int f = 0; f < SYN_NFUNC; f++) b.func[f] = rp_intern(k_func_name[f]);
  b.dtype = rp_intern(DTYPE);
  b.algo = rp_intern("RING");
  b.ll = rp_intern("LL");
  b.simple = rp_intern("SIMPLE");
  /* thread ids: the application thread, then one progress thread per (comm, rank) */
  b.app = rp_trace_thread(out, 1);
  for (int comm = 0; comm < p->comms; comm++)
    for (int r = b.r0; r < b.r1; r++)
      b.kthread[(size_t)comm * nr + (size_t)(r - b.r0)] =
          rp_trace_thread(out, 1000 + (uint64_t)comm * (uint64_t)p->ranks + (uint64_t)r);

  const char *name = rp_intern(p->comm_name);
  for (int comm = 0; comm < p->comms; comm++) {
    for (int r = b.r0; r < b.r1; r++) {
      struct rp_ctx_info c = {.comm_id = comm_id(p, comm), .name = name, .nnodes = p->nodes,
                              .nranks = p->ranks, .rank = r, .ver = 0, .mask = 0};
      uint32_t ci = rp_trace_add_ctx(out, &c);
      struct rp_event *e = rp_trace_append(out);
      e->cb = RP_CB_INIT;
      e->thread = (uint16_t)b.app;
      e->ctx = ci;
    }
  }
  walk(p, build_visit, &b);
  for (int comm = 0; comm < p->comms; comm++) {
    for (int r = b.r0; r < b.r1; r++) {
      struct rp_event *e = rp_trace_append(out);
      e->cb = RP_CB_FINALIZE;
      e->thread = (uint16_t)b.app;
      e->ctx = ctx_of(&b, comm, r);
    }
  }
  /* The lines are built normalised (Coll/P2p name their API parent and their group apart) and
     nothing follows a finalize, so rp_trace_finish has nothing to do here. */
  sink(sink_arg, out);
  rp_trace_free(out);
  free(b.kthread);
  free(b.api);
  free(b.api2);
  free(b.op);
  free(b.op2);
}
