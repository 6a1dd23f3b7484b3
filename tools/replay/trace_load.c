/*
 * trace_load.c - the trace reader (see trace_load.h).
 *
 * zlib's gzopen reads plain files transparently, so one code path serves
 * both. Each line is one JSON object; unknown keys are ignored, missing
 * optional keys read as 0 / NULL. An id named by a stop, record or parent
 * that has no earlier start resolves to slot 0 ("never delivered"), which
 * also keeps --threads waits pointing strictly backwards (deadlock-free).
 */
#include "trace_load.h"

#include <errno.h>
#include <jansson.h>
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
};

static long long jint(json_t *o, const char *k, long long dflt) {
  json_t *v = json_object_get(o, k);
  if (json_is_integer(v)) return json_integer_value(v);
  if (json_is_boolean(v)) return json_is_true(v);
  if (json_is_real(v)) return (long long)json_real_value(v);
  return dflt;
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

static uint32_t ctx_of(struct loader *L, long long ctx) {
  uint32_t c;
  if (!rp_idmap_get(&L->ctxs, (uint64_t)ctx, &c)) return RP_NO_CTX;
  return c;
}

static void parse_payload(json_t *o, uint32_t type, union rp_payload *u) {
  switch (type) {
  case RP_EV_COLL:
    u->coll.seq = (uint64_t)jint(o, "seq", 0);
    u->coll.func = jstr(o, "func");
    u->coll.count = (uint64_t)jint(o, "count", 0);
    u->coll.root = (int)jint(o, "root", 0);
    u->coll.dtype = jstr(o, "dtype");
    u->coll.nch = (uint8_t)jint(o, "nch", 0);
    u->coll.nwarps = (uint8_t)jint(o, "nwarps", 0);
    u->coll.algo = jstr(o, "algo");
    u->coll.proto = jstr(o, "proto");
    break;
  case RP_EV_P2P:
    u->p2p.func = jstr(o, "func");
    u->p2p.dtype = jstr(o, "dtype");
    u->p2p.count = (uint64_t)jint(o, "count", 0);
    u->p2p.peer = (int)jint(o, "peer", 0);
    u->p2p.nch = (uint8_t)jint(o, "nch", 0);
    break;
  case RP_EV_KERNEL_CH:
    u->kch.ch = (uint8_t)jint(o, "ch", 0);
    u->kch.ptimer = (uint64_t)jint(o, "ptimer", 0);
    break;
  case RP_EV_GROUP_API:
    u->gapi.graph = jint(o, "graph", 0) != 0;
    u->gapi.depth = (int)jint(o, "depth", 0);
    break;
  case RP_EV_COLL_API:
  case RP_EV_P2P_API:
    u->api.func = jstr(o, "func");
    u->api.count = (uint64_t)jint(o, "count", 0);
    u->api.dtype = jstr(o, "dtype");
    u->api.root = (int)jint(o, "root", 0);
    u->api.graph = jint(o, "graph", 0) != 0;
    break;
  case RP_EV_PROXY_OP:
    u->pop.pid = (int)jint(o, "pid", 0);
    u->pop.ch = (uint8_t)jint(o, "ch", 0);
    u->pop.peer = (int)jint(o, "peer", 0);
    u->pop.nsteps = (int)jint(o, "nsteps", 0);
    u->pop.chunk = (int)jint(o, "chunk", 0);
    u->pop.send = (int)jint(o, "send", 0);
    break;
  case RP_EV_PROXY_STEP:
    u->pstep.step = (int)jint(o, "step", 0);
    break;
  case RP_EV_CE_COLL:
    u->ce.seq = (uint64_t)jint(o, "seq", 0);
    u->ce.func = jstr(o, "func");
    u->ce.count = (uint64_t)jint(o, "count", 0);
    u->ce.root = (int)jint(o, "root", 0);
    u->ce.dtype = jstr(o, "dtype");
    u->ce.sync = jstr(o, "sync");
    u->ce.ceseq = (uint32_t)jint(o, "ceseq", 0);
    break;
  case RP_EV_CE_SYNC:
    u->cesync.complete = jint(o, "complete", 0) != 0;
    u->cesync.nranks = (int)jint(o, "nranks", 0);
    break;
  case RP_EV_CE_BATCH:
    u->cebatch.nops = (int)jint(o, "nops", 0);
    u->cebatch.bytes = (uint64_t)jint(o, "bytes", 0);
    break;
  default: /* Group, ProxyCtrl, KernelLaunch, NetPlugin: nothing beyond the header */
    break;
  }
}

/* One parsed JSON line -> one trace line. Returns 0, or -1 with a message. */
static int add_line(struct loader *L, json_t *o) {
  struct rp_trace *t = L->t;
  const char *cb = json_string_value(json_object_get(o, "cb"));
  if (!cb) {
    fprintf(stderr, "inspector-replay: %s:%zu: no \"cb\"\n", L->path, L->lineno);
    return -1;
  }
  uint32_t thread = rp_trace_thread(t, (uint64_t)jint(o, "tid", 0));

  if (strcmp(cb, "init") == 0) {
    struct rp_ctx_info c = {0};
    const char *comm = json_string_value(json_object_get(o, "comm"));
    c.comm_id = comm ? strtoull(comm, NULL, 16) : (uint64_t)jint(o, "comm", 0);
    c.name = jstr(o, "name");
    c.nnodes = (int)jint(o, "nnodes", 1);
    c.nranks = (int)jint(o, "nranks", 1);
    c.rank = (int)jint(o, "rank", 0);
    c.ver = (int)jint(o, "ver", 0);
    c.mask = (int)jint(o, "mask", 0);
    uint32_t ci = rp_trace_add_ctx(t, &c);
    rp_idmap_put(&L->ctxs, (uint64_t)jint(o, "ctx", 0), ci);
    struct rp_event *e = rp_trace_append(t);
    e->cb = RP_CB_INIT;
    e->thread = (uint16_t)thread;
    e->ctx = ci;
  } else if (strcmp(cb, "start") == 0) {
    uint32_t ctx = ctx_of(L, jint(o, "ctx", 0));
    uint32_t type = (uint32_t)jint(o, "type", 0);
    /* parent/pgroup resolve before this id is (re)bound */
    uint32_t parent = slot_of_id(L, jint(o, "parent", 0));
    uint32_t group = slot_of_id(L, jint(o, "pgroup", 0));
    uint32_t slot = rp_trace_new_slot(t, type, ctx);
    rp_idmap_put(&L->ids, (uint64_t)jint(o, "id", 0), slot);
    struct rp_event *e = rp_trace_append(t);
    e->cb = RP_CB_START;
    e->thread = (uint16_t)thread;
    e->type = type;
    e->ctx = ctx;
    e->slot = slot;
    e->parent = parent;
    e->group = group;
    e->rank = (int32_t)jint(o, "rank", 0);
    parse_payload(o, type, &e->u);
  } else if (strcmp(cb, "stop") == 0 || strcmp(cb, "record") == 0) {
    bool is_stop = cb[1] == 't';
    uint32_t slot = slot_of_id(L, jint(o, "id", 0));
    struct rp_event *e = rp_trace_append(t);
    e->cb = is_stop ? RP_CB_STOP : RP_CB_RECORD;
    e->thread = (uint16_t)thread;
    e->slot = slot;
    e->type = t->slot[slot].type;
    e->ctx = t->slot[slot].ctx;
    if (!is_stop) {
      e->u.rec.state = (int)jint(o, "state", 0);
      e->u.rec.value = (uint64_t)(json_object_get(o, "ptimer") ? jint(o, "ptimer", 0) : jint(o, "trans", 0));
    }
  } else if (strcmp(cb, "finalize") == 0) {
    struct rp_event *e = rp_trace_append(t);
    e->cb = RP_CB_FINALIZE;
    e->thread = (uint16_t)thread;
    e->ctx = ctx_of(L, jint(o, "ctx", 0));
  } else {
    fprintf(stderr, "inspector-replay: %s:%zu: unknown cb \"%s\"\n", L->path, L->lineno, cb);
    return -1;
  }
  return 0;
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
    L.lineno++;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
    if (len == 0) continue;
    json_error_t jerr;
    json_t *o = json_loadb(buf, len, 0, &jerr);
    if (!json_is_object(o)) {
      fprintf(stderr, "inspector-replay: %s:%zu: bad JSON: %s\n", path, L.lineno,
              o ? "not an object" : jerr.text);
      json_decref(o);
      rc = -1;
      break;
    }
    rc = add_line(&L, o);
    json_decref(o);
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
  rp_idmap_free(&L.ids);
  rp_idmap_free(&L.ctxs);
  if (rc == 0 && out->nev == 0) {
    fprintf(stderr, "inspector-replay: %s: empty trace\n", path);
    rc = -1;
  }
  if (rc) {
    rp_trace_free(out);
    return -1;
  }
  rp_trace_finish(out);
  return 0;
}
