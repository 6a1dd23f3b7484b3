/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_body.c - one export body's metrics, laid out from the sink's state and encoded (see
 * otlp_body.h).
 *
 * A body is a request of up to 13 metrics, each an array of points, each point pointing at
 * its attributes (and a histogram's figures). Every such array is its own allocation,
 * named where it is made (struct parts: all freed together once the body is encoded), so
 * that no part's place in a shared block is computed by hand:
 *
 *   the series'      operations, bytes            a point per series not a bound
 *                    exec_time, bus_bandwidth     a point per series with values, its
 *                                                 histogram in time_h / busbw_h
 *                    bound_operations, _time      a point per bound series (only when any)
 *   the counters     records.dropped, .excluded   a point per GPU and kind, 2 / 3 attributes
 *   (a turn's first  exports_dropped              one point
 *    body)           operations.untimed           a point per GPU, kind and reason, 3
 *                    collectives.unreported       a point per GPU and function counted, 2
 *                    inflight.oldest,             hang detection's: a point per context,
 *                    last_completed_sn            and per function it completed an op of
 */
#include "sink/otlp/otlp_body.h"

#include <assert.h>
#include <stdlib.h>

#include "sink/otlp/otlp_pb.h"
#include "sink/vocab.h"

#define METRICS_MAX 13 /* 4 of the records, 2 of the bounds, 5 counters, 2 gauges */
#define PARTS_MAX 24 /* series 8, counters 9, gauges 4 */
#define GAUGE_ATTRS 5

static const char *const k_kind[2] = {"collective", "p2p"};

struct parts {
  void *mem[PARTS_MAX];
  int n;
  bool oom;
};

/* n zeroed elements of size bytes, freed with the body's other parts (NULL: out of memory,
 * said by ps->oom). */
static void *part(struct parts *ps, size_t n, size_t size) {
  assert(ps->n < PARTS_MAX);
  void *p = calloc(n + 1, size); /* + 1: never calloc(0), whose NULL would read as no memory */
  if (p) ps->mem[ps->n++] = p;
  else ps->oom = true;
  return p;
}

static void expo_of(struct ins_otlp_expo *e, const struct ins_otlp_hist *h) {
  *e = (struct ins_otlp_expo){.scale = h->scale, .count = h->count, .zero_count = h->zero_count, .sum = h->sum,
                              .min = h->min, .max = h->max, .offset = h->offset, .nbuckets = h->n,
                              .counts = h->counts};
}

/* The series' metrics into m: 4, and 2 more once there are bounds. Returns how many. */
static int series_metrics(struct ins_otlp_metric *m, struct parts *ps, const struct ins_otlp_body_in *in) {
  size_t ns = in->nseries;
  struct ins_otlp_point *ops = part(ps, ns, sizeof *ops), *bytes = part(ps, ns, sizeof *bytes);
  struct ins_otlp_point *tim = part(ps, ns, sizeof *tim), *bw = part(ps, ns, sizeof *bw);
  struct ins_otlp_point *bops = part(ps, ns, sizeof *bops), *btim = part(ps, ns, sizeof *btim);
  struct ins_otlp_expo *time_h = part(ps, ns, sizeof *time_h), *busbw_h = part(ps, ns, sizeof *busbw_h);
  if (ps->oom) return 0;
  size_t no = 0, nt = 0, nb = 0, nbo = 0, nbt = 0;
  for (size_t i = 0; i < ns; i++) {
    const struct ins_otlp_series *x = in->series[i];
    struct ins_otlp_point base = {.attrs = x->attrs, .nattrs = x->nattrs, .start_ns = x->start_ns,
                                  .time_ns = in->now};
    if (x->bound) {
      bops[nbo] = base, bops[nbo++].value = (int64_t)x->ops;
      if (x->time_s.count) {
        expo_of(&time_h[i], &x->time_s);
        btim[nbt] = base, btim[nbt++].hist = &time_h[i];
      }
      continue;
    }
    ops[no] = base, ops[no].value = (int64_t)x->ops;
    bytes[no] = base, bytes[no++].value = (int64_t)x->bytes;
    if (x->time_s.count) {
      expo_of(&time_h[i], &x->time_s);
      tim[nt] = base, tim[nt++].hist = &time_h[i];
    }
    if (x->busbw.count) {
      expo_of(&busbw_h[i], &x->busbw);
      bw[nb] = base, bw[nb++].hist = &busbw_h[i];
    }
  }
  int nm = 0;
  m[nm++] = (struct ins_otlp_metric){"nccl.operations", "Operations recorded (kept records)", "{operation}",
                                     INS_OTLP_SUM, true, ops, (int)no};
  m[nm++] = (struct ins_otlp_metric){"nccl.bytes", "Message bytes of the operations recorded", "By",
                                     INS_OTLP_SUM, true, bytes, (int)no};
  m[nm++] = (struct ins_otlp_metric){"nccl.exec_time", "GPU execution time per operation", "s",
                                     INS_OTLP_EXPO_HIST, false, tim, (int)nt};
  m[nm++] = (struct ins_otlp_metric){"nccl.bus_bandwidth", "Bus bandwidth per operation", "GBy/s",
                                     INS_OTLP_EXPO_HIST, false, bw, (int)nb};
  if (nbo) { /* once there are bounds: an export without them is as before */
    m[nm++] = (struct ins_otlp_metric){"nccl.bound_operations",
                                       "Operations whose timestamps could not be verified, bounded by their "
                                       "neighbours on the stream", "{operation}", INS_OTLP_SUM, true, bops, (int)nbo};
    m[nm++] = (struct ins_otlp_metric){"nccl.bound_time",
                                       "Time between the operations before and after such an operation on "
                                       "the stream, which it ran within (an upper bound)", "s",
                                       INS_OTLP_EXPO_HIST, false, btim, (int)nbt};
  }
  return nm;
}

/* A per-GPU counter's point. */
static struct ins_otlp_point dev_point(const struct ins_otlp_device *d, const struct ins_otlp_kv *attrs,
                                       int nattrs, uint64_t now, uint64_t value) {
  return (struct ins_otlp_point){.attrs = attrs, .nattrs = nattrs, .start_ns = d->start_ns, .time_ns = now,
                                 .value = (int64_t)value};
}

/* The per-GPU and exporter counters into m: 4, and unreported collectives once there are
 * any. Returns how many. */
static int counter_metrics(struct ins_otlp_metric *m, struct parts *ps, const struct ins_otlp_body_in *in) {
  size_t ndev = 0;
  for (const struct ins_otlp_device *d = in->devs; d; d = d->next) ndev++;
  size_t nkinds = 2 * ndev, nuntimed = nkinds * INS_UNTIMED_REASONS, nfuncs = ndev * INS_FUNC_COUNT;
  struct ins_otlp_point *drop = part(ps, nkinds, sizeof *drop), *excl = part(ps, nkinds, sizeof *excl);
  struct ins_otlp_kv *drop_kv = part(ps, 2 * nkinds, sizeof *drop_kv);
  struct ins_otlp_kv *excl_kv = part(ps, 3 * nkinds, sizeof *excl_kv);
  struct ins_otlp_point *exp_drop = part(ps, 1, sizeof *exp_drop);
  struct ins_otlp_point *unt = part(ps, nuntimed, sizeof *unt), *unrep = part(ps, nfuncs, sizeof *unrep);
  struct ins_otlp_kv *unt_kv = part(ps, 3 * nuntimed, sizeof *unt_kv);
  struct ins_otlp_kv *unrep_kv = part(ps, 2 * nfuncs, sizeof *unrep_kv);
  if (ps->oom) return 0;
  size_t k = 0, nu = 0, nr = 0;
  for (const struct ins_otlp_device *d = in->devs; d; d = d->next)
    for (int kind = 0; kind < 2; kind++, k++) {
      struct ins_otlp_kv *a = &drop_kv[2 * k], *b = &excl_kv[3 * k];
      a[0] = (struct ins_otlp_kv){.key = "gpu.uuid", .s = d->uuid};
      a[1] = (struct ins_otlp_kv){.key = "nccl.operation.kind", .s = k_kind[kind]};
      b[0] = a[0], b[1] = a[1];
      b[2] = (struct ins_otlp_kv){.key = "reason", .s = "stale_channels"};
      drop[k] = dev_point(d, a, 2, in->now, d->dropped[kind]);
      excl[k] = dev_point(d, b, 3, in->now, d->excluded[kind]);
    }
  *exp_drop = (struct ins_otlp_point){.start_ns = in->start_ns, .time_ns = in->now,
                                      .value = (int64_t)in->exports_dropped};
  for (const struct ins_otlp_device *d = in->devs; d; d = d->next) {
    for (int kind = 0; kind < 2; kind++)
      for (int r = 0; r < INS_UNTIMED_REASONS; r++, nu++) {
        struct ins_otlp_kv *a = &unt_kv[3 * nu];
        a[0] = (struct ins_otlp_kv){.key = "gpu.uuid", .s = d->uuid};
        a[1] = (struct ins_otlp_kv){.key = "nccl.operation.kind", .s = k_kind[kind]};
        a[2] = (struct ins_otlp_kv){.key = "reason", .s = ins_untimed_name[r]};
        unt[nu] = dev_point(d, a, 3, in->now, d->untimed[kind][r]);
      }
    for (int f = 0; f < INS_FUNC_COUNT; f++) {
      if (!d->unreported[f]) continue; /* a series appears with its first */
      struct ins_otlp_kv *a = &unrep_kv[2 * nr];
      a[0] = (struct ins_otlp_kv){.key = "gpu.uuid", .s = d->uuid};
      a[1] = (struct ins_otlp_kv){.key = "nccl.collective", .s = ins_func_name[f]};
      unrep[nr++] = dev_point(d, a, 2, in->now, d->unreported[f]);
    }
  }
  int nm = 0;
  m[nm++] = (struct ins_otlp_metric){"nccl.records.dropped", "Records lost: ring full or out of memory",
                                     "{record}", INS_OTLP_SUM, true, drop, (int)k};
  m[nm++] = (struct ins_otlp_metric){"nccl.records.excluded",
                                     "Records left out: timed from a subset of their channels", "{record}",
                                     INS_OTLP_SUM, true, excl, (int)k};
  m[nm++] = (struct ins_otlp_metric){"nccl.inspector.otlp.exports_dropped",
                                     "Exports this process could not deliver", "{export}", INS_OTLP_SUM, true,
                                     exp_drop, 1};
  m[nm++] = (struct ins_otlp_metric){"nccl.operations.untimed",
                                     "Operations NCCL reported that left no record, by reason", "{operation}",
                                     INS_OTLP_SUM, true, unt, (int)nu};
  if (nr)
    m[nm++] = (struct ins_otlp_metric){"nccl.collectives.unreported",
                                       "Collectives called that NCCL never reported (never timed)",
                                       "{operation}", INS_OTLP_SUM, true, unrep, (int)nr};
  return nm;
}

/* A context's gauge attributes into a (4 of them, the function's the fifth). */
static void gauge_attrs(struct ins_otlp_kv *a, const struct ins_otlp_comm *c) {
  a[0] = (struct ins_otlp_kv){.key = "nccl.comm.id", .s = c->id};
  a[1] = (struct ins_otlp_kv){.key = "nccl.comm.name", .s = c->name};
  a[2] = (struct ins_otlp_kv){.key = "nccl.rank", .s = c->rank};
  a[3] = (struct ins_otlp_kv){.key = "gpu.uuid", .s = c->dev->uuid};
}

/* Hang detection's gauges of every context attached into m: the age of each context's
 * oldest op in flight, and its newest completed op's sequence number by function. Returns
 * the metrics made (2). */
static int gauge_metrics(struct ins_otlp_metric *m, struct parts *ps, const struct ins_otlp_body_in *in) {
  size_t nctx = 0, nsn = 0;
  for (const struct ins_otlp_comm *c = in->comms; c; c = c->next)
    nctx++, nsn += (size_t)__builtin_popcount(c->have);
  struct ins_otlp_point *age = part(ps, nctx, sizeof *age), *sn = part(ps, nsn, sizeof *sn);
  struct ins_otlp_kv *age_kv = part(ps, GAUGE_ATTRS * nctx, sizeof *age_kv);
  struct ins_otlp_kv *sn_kv = part(ps, GAUGE_ATTRS * nsn, sizeof *sn_kv);
  if (ps->oom) return 0;
  size_t n = 0;
  for (const struct ins_otlp_comm *c = in->comms; c; c = c->next, n++) {
    struct ins_otlp_kv *a = &age_kv[GAUGE_ATTRS * n];
    gauge_attrs(a, c);
    age[n] = (struct ins_otlp_point){.attrs = a, .nattrs = 4, .time_ns = in->now, .is_double = true,
                                     .dvalue = c->oldest_s};
  }
  n = 0;
  for (const struct ins_otlp_comm *c = in->comms; c; c = c->next)
    for (int f = 0; f < INS_FUNC_COUNT; f++) {
      if (!(c->have & 1u << f)) continue;
      struct ins_otlp_kv *a = &sn_kv[GAUGE_ATTRS * n];
      gauge_attrs(a, c);
      a[4] = (struct ins_otlp_kv){.key = "nccl.operation", .s = ins_func_name[f]};
      sn[n++] = (struct ins_otlp_point){.attrs = a, .nattrs = 5, .time_ns = in->now,
                                        .value = (int64_t)c->last_sn[f]};
    }
  m[0] = (struct ins_otlp_metric){"nccl.inflight.oldest",
                                  "Age of the oldest operation in flight on this communicator and rank, "
                                  "as the plugin's hang checks measured it (0: none in flight)",
                                  "s", INS_OTLP_GAUGE, false, age, (int)nctx};
  m[1] = (struct ins_otlp_metric){"nccl.last_completed_sn",
                                  "Sequence number of the newest completed operation on this communicator "
                                  "and rank, by operation", "{operation}", INS_OTLP_GAUGE, false, sn, (int)n};
  return 2;
}

int ins_otlp_body_encode(struct ins_buf *body, const struct ins_otlp_body_in *in) {
  struct parts ps = {.n = 0};
  struct ins_otlp_metric m[METRICS_MAX];
  int nm = series_metrics(m, &ps, in);
  if (in->counters) {
    nm += counter_metrics(m + nm, &ps, in);
    if (in->gauges) nm += gauge_metrics(m + nm, &ps, in);
  }
  assert(nm <= METRICS_MAX);
  int rc = -1;
  if (!ps.oom) {
    struct ins_otlp_request req = {.resource = in->resource, .nresource = in->nresource,
                                   .scope_name = "nccl-inspector", .scope_version = INS_FORMAT_VERSION,
                                   .metrics = m, .nmetrics = nm};
    rc = in->json ? ins_otlp_encode_json(body, &req) : ins_otlp_encode_pb(body, &req);
  }
  for (int i = 0; i < ps.n; i++) free(ps.mem[i]);
  return rc;
}
