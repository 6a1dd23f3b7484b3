/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_report_out_html.c - inspector-report's HTML page and trace (tools/report/out_html.c,
 * out_trace.c) written from a job built here by hand.
 *
 * The expected values follow from the rules the outputs promise, worked out by
 * hand for this job, not from the writers' code: an op's trace time is its start
 * less its clock's offset, relative to the earliest such time, in microseconds
 * with the nanoseconds as decimals; every op with a start is one complete event;
 * the events of one track never go back in time nor overlap; a string from the
 * logs never reaches the page as markup. The trace is read back by a small JSON
 * parser below (strict: RFC 8259 grammar, UTF-8 strings), so a file a viewer
 * would reject fails here.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "out.h"

/* ------------------------------------------------------------------ a strict JSON reader */

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
  enum jt t;
  double num;
  char *str;          /* J_STR: decoded UTF-8 */
  int n;              /* J_ARR, J_OBJ: items */
  struct jv *items;
  char **keys;        /* J_OBJ */
};

struct jp {
  const char *p, *end;
  bool bad;
};

static void jv_free(struct jv *v) {
  for (int i = 0; i < v->n; i++) {
    jv_free(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
}

static void ws(struct jp *p) {
  while (p->p < p->end && (*p->p == ' ' || *p->p == '\t' || *p->p == '\n' || *p->p == '\r')) p->p++;
}

static void put_utf8(char **o, unsigned cp) {
  unsigned char *u = (unsigned char *)*o;
  if (cp < 0x80) *u++ = (unsigned char)cp;
  else if (cp < 0x800) { *u++ = (unsigned char)(0xC0 | cp >> 6); *u++ = (unsigned char)(0x80 | (cp & 63)); }
  else if (cp < 0x10000) {
    *u++ = (unsigned char)(0xE0 | cp >> 12); *u++ = (unsigned char)(0x80 | ((cp >> 6) & 63));
    *u++ = (unsigned char)(0x80 | (cp & 63));
  } else {
    *u++ = (unsigned char)(0xF0 | cp >> 18); *u++ = (unsigned char)(0x80 | ((cp >> 12) & 63));
    *u++ = (unsigned char)(0x80 | ((cp >> 6) & 63)); *u++ = (unsigned char)(0x80 | (cp & 63));
  }
  *o = (char *)u;
}

/* Length of the valid UTF-8 sequence at s (the definition, written out: RFC 3629 table 3-7). */
static int utf8_seq(const unsigned char *s, const unsigned char *end) {
  unsigned c = s[0];
  int n;
  unsigned lo = 0x80, hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) { n = 3; lo = 0xA0; }
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) { n = 3; hi = 0x9F; }
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) { n = 4; lo = 0x90; }
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) { n = 4; hi = 0x8F; }
  else return 0;
  if (end - s < n || s[1] < lo || s[1] > hi) return 0;
  for (int i = 2; i < n; i++)
    if (s[i] < 0x80 || s[i] > 0xBF) return 0;
  return n;
}

static bool valid_utf8(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s, *end = p + len;
  while (p < end) {
    int n = utf8_seq(p, end);
    if (!n) return false;
    p += n;
  }
  return true;
}

static unsigned hex4(struct jp *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->p < p->end ? *p->p++ : 0;
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else p->bad = true;
  }
  return v;
}

static char *jstring(struct jp *p) {
  if (p->p >= p->end || *p->p != '"') { p->bad = true; return NULL; }
  p->p++;
  char *out = malloc((size_t)(p->end - p->p) + 1), *o = out;
  while (!p->bad) {
    if (p->p >= p->end) { p->bad = true; break; }
    unsigned char c = (unsigned char)*p->p;
    if (c == '"') { p->p++; break; }
    if (c < 0x20) { p->bad = true; break; }
    if (c != '\\') {
      int n = utf8_seq((const unsigned char *)p->p, (const unsigned char *)p->end);
      if (!n) { p->bad = true; break; }
      memcpy(o, p->p, (size_t)n);
      o += n;
      p->p += n;
      continue;
    }
    p->p++;
    char e = p->p < p->end ? *p->p++ : 0;
    switch (e) {
    case '"': *o++ = '"'; break;
    case '\\': *o++ = '\\'; break;
    case '/': *o++ = '/'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'n': *o++ = '\n'; break;
    case 'r': *o++ = '\r'; break;
    case 't': *o++ = '\t'; break;
    case 'u': {
      unsigned cp = hex4(p);
      if (cp >= 0xD800 && cp < 0xDC00) {
        if (p->end - p->p < 6 || p->p[0] != '\\' || p->p[1] != 'u') { p->bad = true; break; }
        p->p += 2;
        unsigned lo = hex4(p);
        if (lo < 0xDC00 || lo > 0xDFFF) { p->bad = true; break; }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        p->bad = true;
        break;
      }
      put_utf8(&o, cp);
      break;
    }
    default: p->bad = true;
    }
  }
  *o = '\0';
  return out;
}

static void jvalue(struct jp *p, struct jv *v, int depth);

static void jnumber(struct jp *p, struct jv *v) {
  const char *s = p->p;
  if (p->p < p->end && *p->p == '-') p->p++;
  if (p->p < p->end && *p->p == '0') p->p++;
  else if (p->p < p->end && *p->p >= '1' && *p->p <= '9') while (p->p < p->end && *p->p >= '0' && *p->p <= '9') p->p++;
  else { p->bad = true; return; }
  if (p->p < p->end && *p->p == '.') {
    p->p++;
    if (p->p >= p->end || *p->p < '0' || *p->p > '9') { p->bad = true; return; }
    while (p->p < p->end && *p->p >= '0' && *p->p <= '9') p->p++;
  }
  if (p->p < p->end && (*p->p == 'e' || *p->p == 'E')) {
    p->p++;
    if (p->p < p->end && (*p->p == '+' || *p->p == '-')) p->p++;
    if (p->p >= p->end || *p->p < '0' || *p->p > '9') { p->bad = true; return; }
    while (p->p < p->end && *p->p >= '0' && *p->p <= '9') p->p++;
  }
  char buf[64];
  size_t n = (size_t)(p->p - s);
  if (n >= sizeof buf) { p->bad = true; return; }
  memcpy(buf, s, n);
  buf[n] = '\0';
  v->t = J_NUM;
  v->num = strtod(buf, NULL);
}

static void jpush(struct jv *v, int *cap) {
  if (v->n == *cap) {
    *cap = *cap ? 2 * *cap : 8;
    v->items = realloc(v->items, (size_t)*cap * sizeof *v->items);
    if (v->t == J_OBJ) v->keys = realloc(v->keys, (size_t)*cap * sizeof *v->keys);
  }
  memset(&v->items[v->n], 0, sizeof *v->items);
}

static void jvalue(struct jp *p, struct jv *v, int depth) {
  memset(v, 0, sizeof *v);
  ws(p);
  if (p->p >= p->end || depth > 64) { p->bad = true; return; }
  char c = *p->p;
  int cap = 0;
  if (c == '{' || c == '[') {
    v->t = c == '{' ? J_OBJ : J_ARR;
    p->p++;
    ws(p);
    if (p->p < p->end && *p->p == (c == '{' ? '}' : ']')) { p->p++; return; }
    while (!p->bad) {
      jpush(v, &cap);
      if (v->t == J_OBJ) {
        ws(p);
        v->keys[v->n] = jstring(p);
        ws(p);
        if (p->bad || p->p >= p->end || *p->p != ':') { p->bad = true; v->n++; return; }
        p->p++;
      }
      jvalue(p, &v->items[v->n], depth + 1);
      v->n++;
      ws(p);
      if (p->p < p->end && *p->p == ',') { p->p++; continue; }
      if (p->p < p->end && *p->p == (c == '{' ? '}' : ']')) { p->p++; return; }
      p->bad = true;
    }
  } else if (c == '"') {
    v->t = J_STR;
    v->str = jstring(p);
  } else if (!strncmp(p->p, "true", 4) || !strncmp(p->p, "null", 4)) {
    v->t = c == 't' ? J_BOOL : J_NULL;
    v->num = c == 't';
    p->p += 4;
  } else if (!strncmp(p->p, "false", 5)) {
    v->t = J_BOOL;
    p->p += 5;
  } else {
    jnumber(p, v);
  }
}

/* The whole text as one JSON value; false when it is not JSON. */
static bool jparse(const char *s, size_t len, struct jv *out) {
  struct jp p = {s, s + len, false};
  jvalue(&p, out, 0);
  ws(&p);
  return !p.bad && p.p == p.end;
}

static const struct jv *jget(const struct jv *o, const char *key) {
  if (!o || o->t != J_OBJ) return NULL;
  for (int i = 0; i < o->n; i++)
    if (o->keys[i] && !strcmp(o->keys[i], key)) return &o->items[i];
  return NULL;
}

static double jnum(const struct jv *o, const char *key) {
  const struct jv *v = jget(o, key);
  return v && v->t == J_NUM ? v->num : NAN;
}

static const char *jstr(const struct jv *o, const char *key) {
  const struct jv *v = jget(o, key);
  return v && v->t == J_STR ? v->str : NULL;
}

/* ------------------------------------------------------------------ files */

static char g_dir[64];

static char *path_in_dir(const char *name) {
  static char buf[4][128];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", g_dir, name);
  return b;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  *len = fread(s, 1, (size_t)n, f);
  s[*len] = '\0';
  fclose(f);
  return s;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* ------------------------------------------------------------------ the job */

/* A name with markup, quotes, an ampersand, non-ASCII (é, a snowman) and a byte that is not UTF-8. */
#define HOSTILE "<script>alert(1)</script> \"q\" 'a' & caf\xC3\xA9 \xE2\x98\x83 \xFF"
/* ... as it must read once cleaned: the stray byte is U+FFFD. */
#define HOSTILE_CLEAN "<script>alert(1)</script> \"q\" 'a' & caf\xC3\xA9 \xE2\x98\x83 \xEF\xBF\xBD"

#define T0 1700000000000000000ULL /* GPU clocks read like ns since the epoch */
#define OFFSET2 1000000           /* clock 2 runs 1 ms ahead */
#define LATE3 50000               /* rank 3 (unaligned clock) starts 50 us later */

struct fake {
  struct rpt_job j;
  int ar, send, recv, h0, h1;
};

static void add_group(struct rpt_job *j, int comm, int p2p, int op, uint64_t bytes, double t_ns, double bw) {
  struct rpt_group *g = &j->groups[j->ngroups++];
  memset(g, 0, sizeof *g);
  g->comm = comm;
  g->p2p = p2p;
  g->op = op;
  g->bytes = bytes;
  g->records = 40;
  g->timing[RPT_TIMING_KERNEL_GPU] = 40;
  for (int i = 0; i < 40; i++) {
    rpt_qs_add(&g->time_ns, t_ns * (1 + 0.01 * i));
    rpt_qs_add(&g->busbw, bw * (1 - 0.005 * i));
  }
}

static void add_op(struct rpt_job *j, int comm, int p2p, int op, uint64_t sn, int rank, int peer, int clock,
                   uint64_t start, uint64_t exec) {
  struct rpt_opent *e = &j->ops[j->nops++];
  memset(e, 0, sizeof *e);
  e->comm = (uint32_t)comm;
  e->p2p = (uint8_t)p2p;
  e->op = (uint16_t)op;
  e->sn = sn;
  e->rank = rank;
  e->peer = peer;
  e->clock = clock;
  e->start_ns = start;
  e->exec_ns = exec;
  e->bytes = 1 << 20;
  e->busbw = 100.5f;
}

/* The aligned start of AllReduce `sn` on comm 0's rank r, relative to sn 1 on rank 0 (ns). */
static uint64_t want_rel(uint64_t sn, int r) { return (sn - 1) * 100000 + (r == 1 ? 7 : 0) + (r == 3 ? LATE3 : 0); }

/*
 * Comm 0 (HOSTILE, 4 ranks on 2 nodes, one process each): AllReduce 1 MiB sn 1..5 on every rank;
 * rank 0 also a Send and a Recv that overlap. Comm 1 ("tp", 2 ranks): one AllReduce. One op
 * has no start time. Clock 2 is 1 ms ahead (aligned), clock 3 is not aligned.
 */
static void fake_job(struct fake *fk) {
  memset(fk, 0, sizeof *fk);
  struct rpt_job *j = &fk->j;
  fk->ar = rpt_intern("AllReduce");
  fk->send = rpt_intern("Send");
  fk->recv = rpt_intern("Recv");
  fk->h0 = rpt_intern("node-000");
  fk->h1 = rpt_intern("node-001");
  j->opt = (struct rpt_options){.max_busbw_gbs = 1000, .late_ns = 20000, .late_share = 0.5,
                                .slow_link_ratio = 0.7, .change_ratio = 1.5};
  j->files = 4;
  j->lines = 200;
  j->bytes_read = 65536;
  j->records = 168;
  j->records_kind[0] = 160;
  j->records_kind[1] = 8;
  j->excluded[RPT_EXCL_STALE] = 3;
  j->covered_lo = 2;
  j->covered_hi = -1;

  j->ncomms = 2;
  j->comms = calloc(2, sizeof *j->comms);
  struct rpt_comm *c0 = &j->comms[0], *c1 = &j->comms[1];
  c0->id = 0xc0ffee;
  snprintf(c0->name, sizeof c0->name, "%s", HOSTILE);
  c0->nranks = 4;
  c0->nnodes = 2;
  c0->kind = RPT_KIND_MIXED;
  c0->ranks_seen = 4;
  c0->rank = calloc(4, sizeof *c0->rank);
  for (int r = 0; r < 4; r++) c0->rank[r] = (struct rpt_rank_info){r < 2 ? fk->h0 : fk->h1, r, 100 + r};
  c0->dropped[0] = 2;
  c0->covered_lo = 2;
  c0->covered_hi = -1;
  c1->id = 0x2;
  snprintf(c1->name, sizeof c1->name, "tp");
  c1->nranks = 2;
  c1->nnodes = 1;
  c1->kind = RPT_KIND_NVLINK;
  c1->ranks_seen = 2;
  c1->rank = calloc(2, sizeof *c1->rank);
  for (int r = 0; r < 2; r++) c1->rank[r] = (struct rpt_rank_info){fk->h0, r, 100 + r};
  c1->covered_lo = 2;
  c1->covered_hi = -1;

  j->nclocks = 4;
  j->clocks = calloc(4, sizeof *j->clocks);
  for (int c = 0; c < 4; c++)
    j->clocks[c] = (struct rpt_clock){.host = c < 2 ? fk->h0 : fk->h1, .pid = 100 + c, .component = 0,
                                      .offset_ns = c == 2 ? OFFSET2 : 0, .aligned = c != 3, .ops = 5};
  j->have_starts = true;
  j->ncomponents = 1;
  j->resid_p50_ns = 800;
  j->resid_p95_ns = 2500;
  j->offset_min_ns = 0;
  j->offset_max_ns = OFFSET2;
  j->align_ops = 5;

  j->groups = calloc(8, sizeof *j->groups);
  add_group(j, 0, 0, fk->ar, 1024, 20e3, 0.5);
  add_group(j, 0, 0, fk->ar, 65536, 30e3, 20);
  add_group(j, 0, 0, fk->ar, 1 << 20, 60e3, 150);
  add_group(j, 0, 1, fk->send, 1 << 20, 40e3, 30);
  add_group(j, 1, 0, fk->ar, 4096, 15e3, 2);
  struct rpt_series *s = &j->groups[2].series;
  s->t0_ns = T0;
  s->width_ns = 1000000000;
  s->nbins = 8;
  s->count = calloc(8, sizeof *s->count);
  s->sum_mbs = calloc(8, sizeof *s->sum_mbs);
  for (int i = 0; i < 8; i++) {
    s->count[i] = 5;
    s->sum_mbs[i] = 5 * (i < 4 ? 150000 : 60000);
  }
  j->nchanges = 1;
  j->changes = calloc(1, sizeof *j->changes);
  j->changes[0] = (struct rpt_change){2, T0 + 4000000000ULL, 150, 60};

  j->ops = calloc(32, sizeof *j->ops);
  for (uint64_t sn = 1; sn <= 5; sn++)
    for (int r = 0; r < 4; r++)
      add_op(j, 0, 0, fk->ar, sn, r, -1, r, T0 + 100000 + 123 + want_rel(sn, r) + (r == 2 ? OFFSET2 : 0),
             20000 + (uint64_t)r);
  /* a Send and a Recv of one group, running together on rank 0 */
  add_op(j, 0, 1, fk->send, 1, 0, 1, 0, T0 + 100000 + 123 + 30000, 5000);
  add_op(j, 0, 1, fk->recv, 1, 0, 3, 0, T0 + 100000 + 123 + 31000, 5000);
  add_op(j, 1, 0, fk->ar, 1, 0, -1, 0, T0 + 100000 + 123 + 60000, 9000);
  add_op(j, 1, 0, fk->ar, 1, 1, -1, 1, T0 + 100000 + 123 + 60100, 9000);
  add_op(j, 1, 0, fk->ar, 2, 1, -1, 1, 0, 9000); /* no start time: not drawn */

  j->nrstats = 4;
  j->rstats = calloc(4, sizeof *j->rstats);
  for (int r = 0; r < 4; r++)
    j->rstats[r] = (struct rpt_rank_stat){.comm = 0, .rank = r, .ops = 5, .late_ops = r == 3 ? 5 : 0,
                                          .last_ops = r == 3 ? 5 : 0, .med_late_ns = r == 3 ? LATE3 : -10.0 * r,
                                          .mean_late_ns = r == 3 ? LATE3 : 0, .med_exec_ns = 20000,
                                          .others_med_exec_ns = 20000, .busbw_ratio = r == 2 ? 0.5 : 1.0,
                                          .top_op = r == 3 ? fk->ar : -1, .top_op_share = r == 3 ? 1.0 : 0};
  j->nstragglers = 1;
  j->stragglers = calloc(1, sizeof *j->stragglers);
  j->stragglers[0] = (struct rpt_straggler){0, 3, fk->h1, 103, &j->rstats[3]};
  j->nlinks = 1;
  j->links = calloc(1, sizeof *j->links);
  j->links[0].a = fk->h0;
  j->links[0].b = fk->h1;
  j->links[0].host = -1;
  j->links[0].comm = 0;
  j->links[0].nfind = 1;
  j->links[0].worst_ratio = 0.4;
  j->links[0].find = calloc(1, sizeof *j->links[0].find);
  j->links[0].find[0] = (struct rpt_link_finding){0, fk->send, 1 << 20, 12.0, 30.0, 40, 2};
  j->nslow_nodes = 1;
  j->slow_nodes = calloc(1, sizeof *j->slow_nodes);
  j->slow_nodes[0] = (struct rpt_slow_node){fk->h1, 2, 0.4};
}

static void free_job(struct rpt_job *j) {
  for (int c = 0; c < j->ncomms; c++) free(j->comms[c].rank);
  for (int g = 0; g < j->ngroups; g++) {
    rpt_qs_free(&j->groups[g].time_ns);
    rpt_qs_free(&j->groups[g].busbw);
    free(j->groups[g].series.count);
    free(j->groups[g].series.sum_mbs);
  }
  for (int l = 0; l < j->nlinks; l++) free(j->links[l].find);
  free(j->comms);
  free(j->groups);
  free(j->clocks);
  free(j->ops);
  free(j->rstats);
  free(j->stragglers);
  free(j->links);
  free(j->slow_nodes);
  free(j->changes);
}

/* ------------------------------------------------------------------ trace */

/* Writes the job's trace and parses it; false (and a failed check) when it is not JSON. */
static bool read_trace(struct rpt_job *j, struct jv *root) {
  const char *path = path_in_dir("trace.json");
  CHECK(rpt_write_trace(j, path) == 0);
  size_t len = 0;
  char *s = slurp(path, &len);
  CHECK(s != NULL);
  bool ok = s && jparse(s, len, root);
  CHECK(ok);
  free(s);
  unlink(path);
  return ok;
}

static const struct jv *events(const struct jv *root) {
  const struct jv *ev = jget(root, "traceEvents");
  return ev && ev->t == J_ARR ? ev : NULL;
}

static bool is_ph(const struct jv *e, const char *ph) {
  const char *p = jstr(e, "ph");
  return p && !strcmp(p, ph);
}

static void test_trace_is_json(void) {
  struct fake fk;
  fake_job(&fk);
  struct jv root;
  if (read_trace(&fk.j, &root)) {
    CHECK(root.t == J_OBJ);
    CHECK(events(&root) != NULL);
    CHECK_STR(jstr(&root, "displayTimeUnit"), "ns");
    jv_free(&root);
  }
  free_job(&fk.j);
}

/* Every op with a start time is one X event, found by (comm, rank, sn, name). */
static void test_trace_every_op_once(void) {
  struct fake fk;
  fake_job(&fk);
  struct jv root;
  if (!read_trace(&fk.j, &root)) goto out;
  const struct jv *ev = events(&root);
  int nx = 0;
  for (int i = 0; ev && i < ev->n; i++) nx += is_ph(&ev->items[i], "X");
  CHECK_EQ_U(nx, fk.j.nops - 1); /* one op has no start */
  for (size_t k = 0; k < fk.j.nops; k++) {
    const struct rpt_opent *o = &fk.j.ops[k];
    char name[64], comm[32], sz[32];
    /* the size as every output writes it (out.h) */
    snprintf(name, sizeof name, "%s %s", rpt_str(o->op), rpt_human_bytes(o->bytes, sz, sizeof sz));
    snprintf(comm, sizeof comm, "0x%llx", (unsigned long long)fk.j.comms[o->comm].id);
    int found = 0;
    for (int i = 0; ev && i < ev->n; i++) {
      const struct jv *e = &ev->items[i], *args = jget(e, "args");
      if (!is_ph(e, "X") || !jstr(e, "name") || strcmp(jstr(e, "name"), name)) continue;
      if (!jstr(args, "comm") || strcmp(jstr(args, "comm"), comm)) continue;
      if (jnum(args, "rank") != o->rank || jnum(args, "sn") != (double)o->sn) continue;
      found++;
      CHECK(jnum(args, "bytes") == 1 << 20);
      CHECK(fabs(jnum(args, "busbw_gbs") - 100.5) < 1e-3);
      CHECK(o->p2p ? jnum(args, "peer") == o->peer : jget(args, "peer") == NULL);
      CHECK(jnum(e, "pid") >= 0 && jnum(e, "tid") >= 0);
    }
    CHECK_EQ_U(found, o->start_ns ? 1 : 0);
  }
  jv_free(&root);
out:
  free_job(&fk.j);
}

/* ts = (start - offset of its clock) - earliest such, in us with ns decimals; dur = exec. */
static void test_trace_offsets_applied(void) {
  struct fake fk;
  fake_job(&fk);
  struct jv root;
  if (!read_trace(&fk.j, &root)) goto out;
  const struct jv *ev = events(&root);
  int seen = 0;
  for (int i = 0; ev && i < ev->n; i++) {
    const struct jv *e = &ev->items[i], *args = jget(e, "args");
    const char *name = jstr(e, "name");
    if (!is_ph(e, "X") || strncmp(name, "AllReduce ", 10) || strcmp(jstr(args, "comm"), "0xc0ffee")) continue;
    int r = (int)jnum(args, "rank");
    uint64_t sn = (uint64_t)jnum(args, "sn");
    CHECK_EQ_U(llround(jnum(e, "ts") * 1000), want_rel(sn, r));
    CHECK_EQ_U(llround(jnum(e, "dur") * 1000), 20000 + r);
    seen++;
  }
  CHECK_EQ_U(seen, 20);
  jv_free(&root);
out:
  free_job(&fk.j);
}

struct xev {
  double pid, tid, ts, dur;
};

static int cmp_track(const void *a, const void *b) {
  const struct xev *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Per track (pid, tid) in file order: ts never goes back, an op ends before the next starts. */
static void test_trace_tracks_monotonic(void) {
  struct fake fk;
  fake_job(&fk);
  struct jv root;
  if (!read_trace(&fk.j, &root)) goto out;
  const struct jv *ev = events(&root);
  struct xev *x = calloc((size_t)ev->n, sizeof *x);
  int n = 0;
  for (int i = 0; i < ev->n; i++)
    if (is_ph(&ev->items[i], "X"))
      x[n++] = (struct xev){jnum(&ev->items[i], "pid"), jnum(&ev->items[i], "tid"), jnum(&ev->items[i], "ts"),
                            jnum(&ev->items[i], "dur")};
  /* a stable sort by track keeps file order within a track */
  for (int i = 1; i < n; i++)
    for (int k = i; k > 0 && cmp_track(&x[k - 1], &x[k]) > 0; k--) {
      struct xev t = x[k];
      x[k] = x[k - 1];
      x[k - 1] = t;
    }
  int bad = 0;
  for (int i = 1; i < n; i++)
    if (!cmp_track(&x[i - 1], &x[i]) && x[i].ts < x[i - 1].ts + x[i - 1].dur - 1e-9) bad++;
  CHECK_EQ_U(bad, 0);
  /* the overlapping Send and Recv of rank 0 are on two threads of one process */
  double send_tid = -1, recv_tid = -2, send_pid = -1, recv_pid = -2;
  for (int i = 0; i < ev->n; i++) {
    const struct jv *e = &ev->items[i];
    const char *name = jstr(e, "name");
    if (!is_ph(e, "X")) continue;
    if (!strncmp(name, "Send ", 5)) send_tid = jnum(e, "tid"), send_pid = jnum(e, "pid");
    if (!strncmp(name, "Recv ", 5)) recv_tid = jnum(e, "tid"), recv_pid = jnum(e, "pid");
  }
  CHECK(send_pid == recv_pid);
  CHECK(send_tid != recv_tid);
  free(x);
  jv_free(&root);
out:
  free_job(&fk.j);
}

/* A process per clock named "host pid N", a thread per rank named after its communicator. */
static void test_trace_names(void) {
  struct fake fk;
  fake_job(&fk);
  struct jv root;
  if (!read_trace(&fk.j, &root)) goto out;
  const struct jv *ev = events(&root);
  int procs = 0, hostile_threads = 0, unaligned_label = 0;
  for (int i = 0; i < ev->n; i++) {
    const struct jv *e = &ev->items[i];
    const char *what = jstr(e, "name"), *name = jstr(jget(e, "args"), "name");
    if (!is_ph(e, "M") || !what) continue;
    if (!strcmp(what, "process_name")) { /* pids are the writer's to number: a name per clock */
      char want[64];
      for (int k = 0; k < 4; k++) {
        snprintf(want, sizeof want, "%s pid %d", k < 2 ? "node-000" : "node-001", 100 + k);
        procs += name && !strcmp(name, want);
      }
    }
    const char *want_thread = "comm " HOSTILE_CLEAN " rank ";
    if (!strcmp(what, "thread_name") && name && !strncmp(name, want_thread, strlen(want_thread))) hostile_threads++;
    const char *labels = jstr(jget(e, "args"), "labels");
    if (!strcmp(what, "process_labels") && labels) unaligned_label += strstr(labels, "not aligned") != NULL;
  }
  CHECK_EQ_U(procs, 4);
  CHECK(hostile_threads >= 4); /* ranks 0..3, and a second lane for rank 0's P2P */
  CHECK_EQ_U(unaligned_label, 1);
  jv_free(&root);
out:
  free_job(&fk.j);
}

static void test_trace_empty_job(void) {
  struct rpt_job j;
  memset(&j, 0, sizeof j);
  struct jv root;
  if (read_trace(&j, &root)) {
    CHECK(events(&root) && events(&root)->n == 0);
    jv_free(&root);
  }
}

static void test_unwritable_path(void) {
  struct rpt_job j;
  memset(&j, 0, sizeof j);
  fprintf(stderr, "(two 'cannot write' messages expected)\n");
  CHECK(rpt_write_trace(&j, path_in_dir("no-such-dir/t.json")) == -1);
  CHECK(rpt_write_html(&j, path_in_dir("no-such-dir/r.html")) == -1);
}

/* ------------------------------------------------------------------ HTML */

static char *write_html(struct rpt_job *j, size_t *len) {
  const char *path = path_in_dir("report.html");
  CHECK(rpt_write_html(j, path) == 0);
  char *s = slurp(path, len);
  CHECK(s != NULL);
  unlink(path);
  return s;
}

static void test_html_escapes_log_strings(void) {
  struct fake fk;
  fake_job(&fk);
  size_t len = 0;
  char *h = write_html(&fk.j, &len);
  if (h) {
    CHECK(strstr(h, "<script>alert") == NULL);
    CHECK(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt; &quot;q&quot; &#39;a&#39; &amp; caf\xC3\xA9 \xE2\x98\x83 "
                    "\xEF\xBF\xBD") != NULL);
    CHECK_EQ_U(count_of(h, "<script"), 1); /* the page's own */
    CHECK(valid_utf8(h, len));
    CHECK(strstr(h, "://") == NULL); /* nothing fetched from anywhere */
    CHECK(strstr(h, "node-001") != NULL);
  }
  free(h);
  free_job(&fk.j);
}

static void test_html_has_charts(void) {
  struct fake fk;
  fake_job(&fk);
  size_t len = 0;
  char *h = write_html(&fk.j, &len);
  if (h) {
    CHECK_EQ_U(count_of(h, "<title>Bus bandwidth (GB/s) against message size</title>"), 2); /* per comm */
    CHECK_EQ_U(count_of(h, "<title>Time per operation (us, log scale) against message size</title>"), 2);
    CHECK_EQ_U(count_of(h, "<title>Median lateness per rank</title>"), 1); /* comm 1 has no rank stats */
    CHECK_EQ_U(count_of(h, "<title>Bus bandwidth per rank</title>"), 1);
    CHECK_EQ_U(count_of(h, "<title>Bus bandwidth (GB/s) over time (s)</title>"), 1);
    CHECK_EQ_U(count_of(h, "class=\"chg\""), 1); /* the change point */
    CHECK_EQ_U(count_of(h, "class=\"strag\""), 2); /* rank 3 outlined on both maps */
    CHECK(count_of(h, "<svg") == count_of(h, "</svg>"));
    CHECK(strstr(h, "id=\"stragglers\"") && strstr(h, "id=\"links\"") && strstr(h, "id=\"nodes\""));
    CHECK(strstr(h, "</html>") != NULL);
  }
  free(h);
  free_job(&fk.j);
}

/* Heat maps stay about 500 px whatever the rank count, one cell per rank. */
static void test_html_heat_map_sizes(void) {
  static const int sizes[] = {2, 8, 64, 1024};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    int n = sizes[k];
    struct rpt_job j;
    memset(&j, 0, sizeof j);
    struct rpt_comm c = {.id = 7, .nranks = n, .nnodes = n >= 8 ? n / 8 : 1, .ranks_seen = n};
    snprintf(c.name, sizeof c.name, "world");
    j.comms = &c;
    j.ncomms = 1;
    j.have_starts = true;
    j.rstats = calloc((size_t)n, sizeof *j.rstats);
    j.nrstats = n;
    for (int r = 0; r < n; r++)
      j.rstats[r] = (struct rpt_rank_stat){.comm = 0, .rank = r, .ops = 10, .med_late_ns = r * 10.0,
                                           .busbw_ratio = 1, .top_op = -1};
    size_t len = 0;
    char *h = write_html(&j, &len);
    if (h) {
      CHECK_EQ_U(count_of(h, "data-tip=\"rank "), 2 * (unsigned)n);
      int maps = 0;
      for (const char *p = h; (p = strstr(p, "<svg class=\"chart heat")); p++) {
        int w = 0, hh = 0;
        const char *wp = strstr(p, " width=\"");
        CHECK(wp && sscanf(wp, " width=\"%d\" height=\"%d\"", &w, &hh) == 2);
        CHECK(w >= 150 && w <= 700);
        CHECK(hh >= 40 && hh <= 760);
        maps++;
      }
      CHECK_EQ_U(maps, 2);
    }
    free(h);
    free(j.rstats);
  }
}

/* Words a reader can act on: a communicator named like another shows its id; separately
 * aligned sets of processes said plainly; a straggler (busbw x2: the others wait for it)
 * not drawn as fast on the bandwidth map. */
static void test_html_wording(void) {
  struct fake fk;
  fake_job(&fk);
  size_t len = 0;
  char *h = write_html(&fk.j, &len);
  if (h) CHECK(strstr(h, "(0xc0ffee)</span></span>") == NULL); /* names differ: the id in a tooltip */
  free(h);
  snprintf(fk.j.comms[0].name, sizeof fk.j.comms[0].name, "unknown");
  snprintf(fk.j.comms[1].name, sizeof fk.j.comms[1].name, "unknown");
  fk.j.ncomponents = 3;
  fk.j.rstats[3].busbw_ratio = 2.0;
  h = write_html(&fk.j, &len);
  if (h) {
    CHECK(strstr(h, "<span data-tip=\"0xc0ffee\">unknown <span class=\"mut\">(0xc0ffee)</span></span>") != NULL);
    CHECK(strstr(h, "not aligned to each other") == NULL);
    CHECK(strstr(h, "clocks are aligned within each group, not between groups") != NULL);
    /* on the busbw map rank 3 is grey, with the reason; on the lateness map it is coloured */
    CHECK(strstr(h, "fill=\"#c8ced6\" class=\"strag\" data-tip=\"rank 3") != NULL);
    CHECK_EQ_U(count_of(h, "its kernels are short because the others wait for it, not fast"), 1);
    CHECK_EQ_U(count_of(h, "class=\"strag\""), 2);
  }
  free(h);
  free_job(&fk.j);
}

static void test_html_empty_job(void) {
  struct rpt_job j;
  memset(&j, 0, sizeof j);
  size_t len = 0;
  char *h = write_html(&j, &len);
  CHECK(h && strstr(h, "</html>"));
  free(h);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/ins-report-out-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_trace_is_json();
  test_trace_every_op_once();
  test_trace_offsets_applied();
  test_trace_tracks_monotonic();
  test_trace_names();
  test_trace_empty_job();
  test_unwritable_path();
  test_html_escapes_log_strings();
  test_html_wording();
  test_html_has_charts();
  test_html_heat_map_sizes();
  test_html_empty_job();
  rmdir(g_dir);
  return check_report("report_out");
}
