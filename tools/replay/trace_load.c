/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace_load.c - the trace reader (see trace_load.h).
 *
 * zlib's gzopen reads plain files transparently, so one code path serves
 * both; rp_trace_load_mem feeds the same per-line code from memory (the fuzz
 * target tests/fuzz/fuzz_trace.c). Each line is one JSON object; unknown keys
 * are ignored, missing optional keys read as 0 / NULL. An id named by a stop,
 * record or parent that has no earlier start resolves to slot 0 ("never
 * delivered"), which also keeps --threads waits pointing strictly backwards
 * (deadlock-free): a trace cut short or recorded from mid-run stays loadable.
 *
 * What is rejected instead is what NCCL cannot have sent: a line with no cb,
 * a start with no type (or not one type bit) or no id, an init, start or
 * finalize naming a ctx no earlier init defined, a negative count, channel,
 * pTimer, step or host time "t", a rank outside its communicator. Replaying such a line would
 * hand the plugin values no real job produces (a -1 count becomes 2^64-1), so
 * the replay stops at the first one, naming FILE:LINE, rather than test the
 * plugin against nonsense. Checks are per line and keep no cross-line state
 * beyond the ctx and id maps the loader already has.
 */
#include "trace_load.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "idmap.h"
#include "intern.h"

struct loader {
  struct rp_trace *t;
  struct rp_idmap ids;  /* event id -> slot */
  struct rp_idmap ctxs; /* ctx number -> ctx index */
  const char *path;
  size_t lineno;
  char why[160]; /* the first problem of the current line; "" while none */
  bool have_t0;      /* t->t0_ns is set */
  uint32_t last_t_us; /* t_us of the previous line: a line without "t" gets it */
};

/* Notes the line's first problem; the line is rejected once it is parsed. */
static void bad(struct loader *L, const char *fmt, ...) {
  if (L->why[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->why, sizeof L->why, fmt, ap);
  va_end(ap);
}

/*
 * Member k of o as an integer in [lo, hi]; dflt when absent. Booleans read as
 * 0/1 and reals are truncated, as Python writers may produce either; anything
 * else, or a value out of range, is a problem of the line (bad()) and reads as
 * dflt. The range check comes before the real's conversion: a cast of a real
 * outside long long's range is undefined behaviour.
 */
static long long jnum(struct loader *L, json_t *o, const char *k, long long lo, long long hi,
                      long long dflt) {
  json_t *v = json_object_get(o, k);
  if (!v) return dflt;
  long long x;
  if (json_is_integer(v)) {
    x = json_integer_value(v);
  } else if (json_is_boolean(v)) {
    x = json_is_true(v);
  } else if (json_is_real(v)) {
    double d = json_real_value(v);
    if (!(d >= (double)lo && d < (double)hi + 1.0)) {
      bad(L, "\"%s\" %g out of range [%lld, %lld]", k, d, lo, hi);
      return dflt;
    }
    x = (long long)d;
  } else {
    bad(L, "\"%s\" is not a number", k);
    return dflt;
  }
  if (x < lo || x > hi) {
    bad(L, "\"%s\" %lld out of range [%lld, %lld]", k, x, lo, hi);
    return dflt;
  }
  return x;
}

/* As jnum, for a member the line cannot do without. */
static long long jreq(struct loader *L, json_t *o, const char *k, long long lo, long long hi) {
  if (!json_object_get(o, k)) bad(L, "no \"%s\"", k);
  return jnum(L, o, k, lo, hi, 0);
}

static const char *jstr(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_string(v) ? rp_intern(json_string_value(v)) : NULL;
}

static uint32_t slot_of_id(struct loader *L, long long id) {
  uint32_t s;
  if (id <= 0 || !rp_idmap_get(&L->ids, (uint64_t)id, &s)) return 0;
  return s;
}

/* The ctx an event names: it must be one an earlier init line defined. */
static uint32_t ctx_of(struct loader *L, json_t *o) {
  long long ctx = jreq(L, o, "ctx", 0, INT64_MAX);
  uint32_t c;
  if (L->why[0]) return RP_NO_CTX;
  if (!rp_idmap_get(&L->ctxs, (uint64_t)ctx, &c)) {
    bad(L, "ctx %lld has no init line before it", ctx);
    return RP_NO_CTX;
  }
  return c;
}

/* Field ranges: what the C types NCCL hands the plugin can hold (int, uint8_t
 * channel ids, size_t counts), no negative count, and -1 only where NCCL uses
 * it for "none" (root, peer, rank). */
#define I_MAX INT32_MAX
#define U8 0, UINT8_MAX
#define COUNT 0, INT64_MAX
#define FLAG 0, 1

static void parse_payload(struct loader *L, json_t *o, uint32_t type, union rp_payload *u) {
  switch (type) {
  case RP_EV_COLL:
    u->coll.seq = (uint64_t)jnum(L, o, "seq", COUNT, 0);
    u->coll.func = jstr(o, "func");
    u->coll.count = (uint64_t)jnum(L, o, "count", COUNT, 0);
    u->coll.root = (int)jnum(L, o, "root", -1, I_MAX, 0);
    u->coll.dtype = jstr(o, "dtype");
    u->coll.nch = (uint8_t)jnum(L, o, "nch", U8, 0);
    u->coll.nwarps = (uint8_t)jnum(L, o, "nwarps", U8, 0);
    u->coll.algo = jstr(o, "algo");
    u->coll.proto = jstr(o, "proto");
    break;
  case RP_EV_P2P:
    u->p2p.func = jstr(o, "func");
    u->p2p.dtype = jstr(o, "dtype");
    u->p2p.count = (uint64_t)jnum(L, o, "count", COUNT, 0);
    u->p2p.peer = (int)jnum(L, o, "peer", -1, I_MAX, 0);
    u->p2p.nch = (uint8_t)jnum(L, o, "nch", U8, 0);
    break;
  case RP_EV_KERNEL_CH:
    u->kch.ch = (uint8_t)jnum(L, o, "ch", U8, 0);
    u->kch.ptimer = (uint64_t)jnum(L, o, "ptimer", COUNT, 0);
    break;
  case RP_EV_GROUP_API:
    u->gapi.graph = jnum(L, o, "graph", FLAG, 0) != 0;
    u->gapi.depth = (int)jnum(L, o, "depth", 0, I_MAX, 0);
    break;
  case RP_EV_COLL_API:
  case RP_EV_P2P_API:
    u->api.func = jstr(o, "func");
    u->api.count = (uint64_t)jnum(L, o, "count", COUNT, 0);
    u->api.dtype = jstr(o, "dtype");
    u->api.root = (int)jnum(L, o, "root", -1, I_MAX, 0);
    u->api.graph = jnum(L, o, "graph", FLAG, 0) != 0;
    break;
  case RP_EV_PROXY_OP:
    u->pop.pid = (int)jnum(L, o, "pid", 0, I_MAX, 0);
    u->pop.ch = (uint8_t)jnum(L, o, "ch", U8, 0);
    u->pop.peer = (int)jnum(L, o, "peer", -1, I_MAX, 0);
    u->pop.nsteps = (int)jnum(L, o, "nsteps", 0, I_MAX, 0);
    u->pop.chunk = (int)jnum(L, o, "chunk", 0, I_MAX, 0);
    u->pop.send = (int)jnum(L, o, "send", FLAG, 0);
    break;
  case RP_EV_PROXY_STEP:
    u->pstep.step = (int)jnum(L, o, "step", 0, I_MAX, 0);
    break;
  case RP_EV_CE_COLL:
    u->ce.seq = (uint64_t)jnum(L, o, "seq", COUNT, 0);
    u->ce.func = jstr(o, "func");
    u->ce.count = (uint64_t)jnum(L, o, "count", COUNT, 0);
    u->ce.root = (int)jnum(L, o, "root", -1, I_MAX, 0);
    u->ce.dtype = jstr(o, "dtype");
    u->ce.sync = jstr(o, "sync");
    u->ce.ceseq = (uint32_t)jnum(L, o, "ceseq", 0, UINT32_MAX, 0);
    break;
  case RP_EV_CE_SYNC:
    u->cesync.complete = jnum(L, o, "complete", FLAG, 0) != 0;
    u->cesync.nranks = (int)jnum(L, o, "nranks", 0, I_MAX, 0);
    break;
  case RP_EV_CE_BATCH:
    u->cebatch.nops = (int)jnum(L, o, "nops", 0, I_MAX, 0);
    u->cebatch.bytes = (uint64_t)jnum(L, o, "bytes", COUNT, 0);
    break;
  default: /* Group, ProxyCtrl, KernelLaunch, NetPlugin: nothing beyond the header */
    break;
  }
}

static void add_init(struct loader *L, json_t *o, uint32_t thread) {
  struct rp_trace *t = L->t;
  struct rp_ctx_info c = {0};
  json_t *comm = json_object_get(o, "comm");
  if (json_is_string(comm)) {
    const char *s = json_string_value(comm);
    char *end = NULL;
    errno = 0;
    c.comm_id = strtoull(s, &end, 16);
    if (end == s || *end || errno) bad(L, "\"comm\" \"%.40s\" is not a hex id", s);
  } else {
    c.comm_id = (uint64_t)jnum(L, o, "comm", COUNT, 0);
  }
  c.name = jstr(o, "name");
  c.nranks = (int)jnum(L, o, "nranks", 1, I_MAX, 1);
  c.nnodes = (int)jnum(L, o, "nnodes", 1, c.nranks, 1);
  c.rank = (int)jnum(L, o, "rank", 0, c.nranks - 1, 0);
  c.ver = (int)jnum(L, o, "ver", 0, I_MAX, 0);
  c.mask = (int)jnum(L, o, "mask", INT32_MIN, I_MAX, 0);
  long long ctx = jreq(L, o, "ctx", 0, INT64_MAX);
  if (L->why[0]) return;
  uint32_t ci = rp_trace_add_ctx(t, &c);
  rp_idmap_put(&L->ctxs, (uint64_t)ctx, ci);
  struct rp_event *e = rp_trace_append(t);
  e->cb = RP_CB_INIT;
  e->thread = (uint16_t)thread;
  e->ctx = ci;
}

static void add_start(struct loader *L, json_t *o, uint32_t thread) {
  struct rp_trace *t = L->t;
  uint32_t ctx = ctx_of(L, o);
  /* one event-type bit, as NCCL's types are; unknown bits are kept (the
   * replay skips types its ABI lacks) */
  long long ty = jreq(L, o, "type", 1, UINT32_MAX);
  if (ty & (ty - 1)) bad(L, "\"type\" %lld is not one event-type bit", ty);
  long long id = jreq(L, o, "id", 0, INT64_MAX);
  /* parent/pgroup resolve before this id is (re)bound */
  uint32_t parent = slot_of_id(L, jnum(L, o, "parent", COUNT, 0));
  uint32_t group = slot_of_id(L, jnum(L, o, "pgroup", COUNT, 0));
  int32_t rank = (int32_t)jnum(L, o, "rank", -1, I_MAX, 0);
  union rp_payload u = {0};
  parse_payload(L, o, (uint32_t)ty, &u);
  if (L->why[0]) return;
  struct rp_event *e = rp_trace_append_start(t, thread, (uint32_t)ty, ctx, parent, rank);
  rp_idmap_put(&L->ids, (uint64_t)id, e->slot);
  e->group = group;
  e->u = u;
}

static void add_stop_or_record(struct loader *L, json_t *o, uint32_t thread, bool is_stop) {
  struct rp_trace *t = L->t;
  uint32_t slot = slot_of_id(L, jreq(L, o, "id", 0, INT64_MAX));
  int state = 0;
  uint64_t value = 0;
  if (!is_stop) {
    state = (int)jnum(L, o, "state", 0, I_MAX, 0);
    value = (uint64_t)(json_object_get(o, "ptimer") ? jnum(L, o, "ptimer", COUNT, 0)
                                                    : jnum(L, o, "trans", COUNT, 0));
  }
  if (L->why[0]) return;
  struct rp_event *e = rp_trace_append(t);
  e->cb = is_stop ? RP_CB_STOP : RP_CB_RECORD;
  e->thread = (uint16_t)thread;
  e->slot = slot;
  e->type = t->slot[slot].type;
  e->ctx = t->slot[slot].ctx;
  if (!is_stop) {
    e->u.rec.state = state;
    e->u.rec.value = value;
  }
}

/* The thread index of a tid; UINT32_MAX (and a problem) past what a line's uint16_t holds. */
static uint32_t thread_of(struct loader *L, json_t *o) {
  struct rp_trace *t = L->t;
  uint64_t tid = (uint64_t)jnum(L, o, "tid", COUNT, 0);
  if (L->why[0]) return UINT32_MAX;
  if (t->nthread >= UINT16_MAX - 1) { /* rp_trace_thread would exit: reject the line instead */
    for (uint32_t i = 0; i < t->nthread; i++)
      if (t->tid[i] == tid) return i;
    bad(L, "more than %d threads", UINT16_MAX - 1);
    return UINT32_MAX;
  }
  return rp_trace_thread(t, tid);
}

/*
 * The line's recorded host time as us after the trace's first "t" (what
 * --pace-recorded waits for). A line without "t" gets the previous line's;
 * one recorded before the first line (another thread's callback, written a
 * little later) gets 0; past what 32 bits of us hold (71 minutes) the value
 * saturates and the trace says so (t_saturated), for the replay to refuse to
 * pace it rather than squeeze its end together.
 */
static uint32_t host_time_us(struct loader *L, json_t *o) {
  long long ns = jnum(L, o, "t", 0, INT64_MAX, -1);
  if (ns < 0) return L->last_t_us; /* absent, or rejected (then the line is dropped anyway) */
  struct rp_trace *t = L->t;
  if (!L->have_t0) {
    t->t0_ns = (uint64_t)ns;
    L->have_t0 = true;
  }
  if ((uint64_t)ns <= t->t0_ns) return 0;
  uint64_t us = ((uint64_t)ns - t->t0_ns) / 1000u;
  if (us > UINT32_MAX) {
    t->t_saturated = true;
    return UINT32_MAX;
  }
  return (uint32_t)us;
}

/* One parsed JSON line -> one trace line. Returns 0, or -1 with a message. */
static int add_line(struct loader *L, json_t *o) {
  L->why[0] = '\0';
  size_t nev = L->t->nev;
  const char *cb = json_string_value(json_object_get(o, "cb"));
  uint32_t t_us = host_time_us(L, o);
  if (!cb) {
    bad(L, "no \"cb\"");
  } else {
    uint32_t thread = thread_of(L, o);
    if (L->why[0])
      ;
    else if (strcmp(cb, "init") == 0)
      add_init(L, o, thread);
    else if (strcmp(cb, "start") == 0)
      add_start(L, o, thread);
    else if (strcmp(cb, "stop") == 0 || strcmp(cb, "record") == 0)
      add_stop_or_record(L, o, thread, cb[1] == 't');
    else if (strcmp(cb, "finalize") == 0) {
      uint32_t ctx = ctx_of(L, o);
      if (!L->why[0]) {
        struct rp_event *e = rp_trace_append(L->t);
        e->cb = RP_CB_FINALIZE;
        e->thread = (uint16_t)thread;
        e->ctx = ctx;
      }
    } else
      bad(L, "unknown cb \"%.40s\"", cb);
  }
  if (!L->why[0]) {
    if (L->t->nev > nev) L->t->ev[nev].t_us = t_us;
    L->last_t_us = t_us;
    return 0;
  }
  fprintf(stderr, "inspector-replay: %s:%zu: %s\n", L->path, L->lineno, L->why);
  return -1;
}

/* One raw line (no newline needed; blank lines are skipped). 0, or -1 with a message. */
static int load_line(struct loader *L, const char *buf, size_t len) {
  L->lineno++;
  while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) len--;
  if (len == 0) return 0;
  json_error_t jerr;
  json_t *o = json_loadb(buf, len, 0, &jerr);
  if (!json_is_object(o)) {
    fprintf(stderr, "inspector-replay: %s:%zu: bad JSON: %s\n", L->path, L->lineno,
            o ? "not an object" : jerr.text);
    json_decref(o);
    return -1;
  }
  int rc = add_line(L, o);
  json_decref(o);
  return rc;
}

/* Ends a load begun by rp_trace_init: frees the maps, checks and finishes or frees the trace. */
static int load_end(struct loader *L, int rc) {
  struct rp_trace *out = L->t;
  rp_idmap_free(&L->ids);
  rp_idmap_free(&L->ctxs);
  if (rc == 0 && out->nev == 0) {
    fprintf(stderr, "inspector-replay: %s: empty trace\n", L->path);
    rc = -1;
  }
  if (rc) {
    rp_trace_free(out);
    return -1;
  }
  rp_trace_finish(out);
  return 0;
}

int rp_trace_load_mem(const char *name, const char *buf, size_t len, struct rp_trace *out) {
  rp_trace_init(out, name);
  struct loader L = {.t = out, .path = name};
  int rc = 0;
  for (size_t pos = 0; pos < len && rc == 0;) {
    const char *nl = memchr(buf + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - buf) : len;
    rc = load_line(&L, buf + pos, end - pos);
    pos = end + 1;
  }
  return load_end(&L, rc);
}

int rp_trace_load(const char *path, struct rp_trace *out) {
  errno = 0;
  gzFile f = gzopen(path, "rb");
  if (!f) {
    fprintf(stderr, "inspector-replay: %s: %s\n", path, errno ? strerror(errno) : "cannot open");
    return -1;
  }
  gzbuffer(f, 1 << 17);
  rp_trace_init(out, path);
  struct loader L = {.t = out, .path = path};
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  int rc = 0;
  if (!buf) {
    fprintf(stderr, "inspector-replay: out of memory\n");
    exit(1);
  }
  for (;;) {
    /* read one whole line, however long */
    len = 0;
    bool got = false;
    while (gzgets(f, buf + len, (int)(cap - len))) {
      got = true;
      len += strlen(buf + len);
      if (len && buf[len - 1] == '\n') break;
      if (len + 1 < cap) break; /* EOF without newline */
      cap *= 2;
      char *nb = realloc(buf, cap);
      if (!nb) {
        fprintf(stderr, "inspector-replay: out of memory\n");
        exit(1);
      }
      buf = nb;
    }
    if (!got) break;
    rc = load_line(&L, buf, len);
    if (rc) break;
  }
  int zerr = 0;
  const char *zmsg = gzerror(f, &zerr);
  if (rc == 0 && zerr != Z_OK) { /* Z_BUF_ERROR: truncated gzip */
    fprintf(stderr, "inspector-replay: %s: %s\n", path, zmsg);
    rc = -1;
  }
  gzclose(f);
  free(buf);
  return load_end(&L, rc);
}
