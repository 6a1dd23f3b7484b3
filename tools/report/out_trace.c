/* SPDX-License-Identifier: Apache-2.0 */
/*
 * out_trace.c - the op sample as a Chrome / Perfetto trace (--trace FILE).
 *
 * Owns: the trace-event JSON of job.ops on one aligned timeline. A process
 * track per clock (one process: "node-003 pid 1234"), a thread track per
 * communicator rank in it ("comm <name> rank N"), one complete event ("X")
 * per op, named "AllReduce 64 MiB". Not here: any figure of the analysis; the
 * offsets come from align.c through job.clocks.
 *
 * Time: each start is aligned (less its clock's offset then: rpt_aligned_ns) and written
 * relative to the earliest aligned start, in microseconds with three decimals
 * (the format's unit is the microsecond; the decimals keep the nanoseconds),
 * so that numbers stay short and exact. An unaligned clock keeps its own time
 * base and its process says so (process_labels).
 *
 * Overlap: a trace viewer nests the slices of one thread and drops slices that
 * overlap without nesting, which P2P ops do (a Send and a Recv of one group run
 * together; an all-to-all runs a send per peer). So a rank's ops are laid out
 * on lanes: an op goes to the first lane free at its start, and a lane beyond
 * the first is a thread of its own ("comm <name> rank N (2)"). Collectives of
 * one communicator never overlap, so they need one lane.
 *
 * Size: the events are written as they are produced (the file can hold
 * millions); the only memory is an index of the ops, sorted by track and start
 * (8 bytes an op, against the 56 of the op itself), and the lanes of one rank.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"

/* qsort has no context argument: the sort reads these (the writer runs on one thread). */
static const struct rpt_opent *g_ops;
static const struct rpt_job *g_job; /* its clocks align the starts */
static int g_nclocks;

/* Ops of an unknown clock (-1, or out of range) get a process of their own, after the others. */
static int clock_key(int c) { return c >= 0 && c < g_nclocks ? c : g_nclocks; }

static int64_t aligned_start(const struct rpt_opent *e) {
  return rpt_aligned_ns(g_job, clock_key(e->clock) < g_nclocks ? e->clock : -1, e->start_ns);
}

/* Track order (clock, communicator, rank), then start; a longer op first at one start. */
static int cmp_op(const void *pa, const void *pb) {
  const struct rpt_opent *a = &g_ops[*(const size_t *)pa], *b = &g_ops[*(const size_t *)pb];
  int ca = clock_key(a->clock), cb = clock_key(b->clock);
  if (ca != cb) return ca < cb ? -1 : 1;
  if (a->comm != b->comm) return a->comm < b->comm ? -1 : 1;
  if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
  int64_t sa = aligned_start(a), sb = aligned_start(b);
  if (sa != sb) return sa < sb ? -1 : 1;
  if (a->exec_ns != b->exec_ns) return a->exec_ns > b->exec_ns ? -1 : 1;
  if (a->sn != b->sn) return a->sn < b->sn ? -1 : 1;
  return a->op < b->op ? -1 : a->op > b->op;
}

static void put_jstr(FILE *f, const char *s) { rpt_put_json_string(f, s); }

/* Nanoseconds as microseconds with three decimals: 1234567 -> 1234.567. */
static void put_us(FILE *f, uint64_t ns) {
  fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

struct trace_state {
  FILE *f;
  bool first;     /* no event written yet: no comma before the next */
  int pid;        /* the process being written, 0 before the first */
  int next_tid;   /* tids are numbered per process in track order */
  uint64_t *lane_end; /* the current rank's lanes: aligned end of the last op on each */
  int *lane_tid;
  int nlanes, cap_lanes;
};

static void event_sep(struct trace_state *st) {
  fputs(st->first ? "\n" : ",\n", st->f);
  st->first = false;
}

static void put_process(struct trace_state *st, const struct rpt_job *j, int key) {
  FILE *f = st->f;
  char name[160];
  const struct rpt_clock *c = key < j->nclocks ? &j->clocks[key] : NULL;
  if (c) snprintf(name, sizeof name, "%s pid %lld", rpt_str(c->host), c->pid);
  else snprintf(name, sizeof name, "unknown process");
  event_sep(st);
  fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":", st->pid);
  put_jstr(f, name);
  fputs("}}", f);
  event_sep(st);
  fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
          st->pid, st->pid);
  char label[96] = "";
  if (!c) snprintf(label, sizeof label, "clock unknown: not aligned");
  else if (!c->aligned) snprintf(label, sizeof label, "clock not aligned (shares no op with another process)");
  else if (j->ncomponents > 1)
    snprintf(label, sizeof label, "clock group %d of %d (groups share no op: not aligned to each other)",
             c->component + 1, j->ncomponents);
  if (label[0]) {
    event_sep(st);
    fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":\"process_labels\",\"args\":{\"labels\":", st->pid);
    put_jstr(f, label);
    fputs("}}", f);
  }
}

static void put_thread(struct trace_state *st, const struct rpt_job *j, const struct rpt_opent *e, int tid,
                       int lane) {
  FILE *f = st->f;
  char name[200];
  const char *comm = e->comm < (uint32_t)j->ncomms ? j->comms[e->comm].name : "?";
  if (lane == 0) snprintf(name, sizeof name, "comm %s rank %d", comm, (int)e->rank);
  else snprintf(name, sizeof name, "comm %s rank %d (%d)", comm, (int)e->rank, lane + 1);
  event_sep(st);
  fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":", st->pid, tid);
  put_jstr(f, name);
  fputs("}}", f);
  event_sep(st);
  fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%d}}",
          st->pid, tid, tid);
}

/* The lane of an op starting at `start` (relative ns) and ending at `end`: the first free one. */
static int take_lane(struct trace_state *st, uint64_t start, uint64_t end, bool *is_new) {
  *is_new = false;
  for (int i = 0; i < st->nlanes; i++)
    if (st->lane_end[i] <= start) {
      st->lane_end[i] = end;
      return i;
    }
  if (st->nlanes == st->cap_lanes) {
    int cap = st->cap_lanes ? 2 * st->cap_lanes : 8;
    uint64_t *le = realloc(st->lane_end, (size_t)cap * sizeof *le);
    if (le) st->lane_end = le;
    int *lt = le ? realloc(st->lane_tid, (size_t)cap * sizeof *lt) : NULL;
    if (lt) st->lane_tid = lt;
    if (!le || !lt) return -1;
    st->cap_lanes = cap;
  }
  st->lane_end[st->nlanes] = end;
  *is_new = true;
  return st->nlanes++;
}

static void put_op(struct trace_state *st, const struct rpt_job *j, const struct rpt_opent *e, int tid,
                   uint64_t rel) {
  FILE *f = st->f;
  char sz[32];
  event_sep(st);
  fputs("{\"ph\":\"X\",\"name\":", f);
  char name[64];
  snprintf(name, sizeof name, "%s %s", rpt_str(e->op), rpt_human_bytes(e->bytes, sz, sizeof sz));
  put_jstr(f, name);
  fprintf(f, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":", e->p2p ? "p2p" : "coll", st->pid, tid);
  put_us(f, rel);
  fputs(",\"dur\":", f);
  put_us(f, e->exec_ns);
  uint64_t id = e->comm < (uint32_t)j->ncomms ? j->comms[e->comm].id : 0;
  double bw = isfinite(e->busbw) ? e->busbw : 0;
  fprintf(f, ",\"args\":{\"comm\":\"0x%" PRIx64 "\",\"rank\":%d,\"sn\":%" PRIu64 ",\"bytes\":%" PRIu64
             ",\"busbw_gbs\":%.3f",
          id, (int)e->rank, e->sn, e->bytes, bw);
  if (e->p2p) fprintf(f, ",\"peer\":%d", (int)e->peer);
  fputs("}}", f);
}

int rpt_write_trace(struct rpt_job *j, const char *path) {
  int rc = -1;
  size_t *idx = NULL, n = 0;
  struct trace_state st = {.first = true};
  struct rpt_outfile o; /* never through a link planted at path (out.h) */
  FILE *f = rpt_out_open(&o, path);
  if (!f) return -1;
  st.f = f;
  idx = malloc((j->nops ? j->nops : 1) * sizeof *idx);
  if (!idx) {
    fprintf(stderr, "inspector-report: out of memory writing %s\n", path);
    goto fail;
  }
  g_ops = j->ops;
  g_job = j;
  g_nclocks = j->nclocks;

  /* Ops without a GPU start time cannot be placed: counted in otherData, not drawn. */
  int64_t t0 = 0;
  for (size_t i = 0; i < j->nops; i++) {
    if (!j->ops[i].start_ns) continue;
    int64_t s = aligned_start(&j->ops[i]);
    if (n == 0 || s < t0) t0 = s;
    idx[n++] = i;
  }
  qsort(idx, n, sizeof *idx, cmp_op);

  fputs("{\"traceEvents\":[", f);
  int key = -1;
  uint32_t comm = 0;
  int32_t rank = 0;
  uint64_t last_rel = 0;
  for (size_t k = 0; k < n; k++) {
    const struct rpt_opent *e = &j->ops[idx[k]];
    int ck = clock_key(e->clock);
    bool new_rank = true;
    if (ck != key) { /* a new process */
      key = ck;
      st.pid = ck + 1;
      st.next_tid = 1;
      put_process(&st, j, ck);
    } else if (e->comm == comm && e->rank == rank) {
      new_rank = false;
    }
    if (new_rank) st.nlanes = 0; /* a rank's lanes start empty */
    comm = e->comm;
    rank = e->rank;
    uint64_t rel = (uint64_t)(aligned_start(e) - t0);
    /* the sort's promise, on which the lanes rely: a rank's ops come in start order */
    assert(new_rank || rel >= last_rel);
    last_rel = rel;
    (void)last_rel; /* read by the assert only */
    bool is_new;
    int lane = take_lane(&st, rel, rel + e->exec_ns, &is_new);
    if (lane < 0) {
      fprintf(stderr, "inspector-report: out of memory writing %s\n", path);
      goto fail;
    }
    if (is_new) {
      st.lane_tid[lane] = st.next_tid++;
      put_thread(&st, j, e, st.lane_tid[lane], lane);
    }
    put_op(&st, j, e, st.lane_tid[lane], rel);
  }
  fprintf(f, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"inspector-report\",\"ops\":%zu,"
             "\"ops_without_start\":%zu,\"op_sample\":\"1 in %llu\",\"t0_aligned_ns\":%" PRId64
             ",\"clock_components\":%d}}\n",
          n, j->nops - n, 1ULL << (j->sample_shift < 63 ? j->sample_shift : 63), t0, j->ncomponents);
  rc = 0;
fail:
  free(idx);
  free(st.lane_end);
  free(st.lane_tid);
  g_ops = NULL;
  g_job = NULL;
  return rpt_out_close(&o, rc); /* a full disk: the message names the path once */
}
