/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.c - checking one log line (see parse.h), and reading it with jansson.
 *
 * A line goes through two steps. Extraction puts its raw fields in a flat table (fields.h):
 * the scanner (scan.c) reads the lines plugins write, in one pass and without allocating;
 * jansson, here, reads whatever the scanner is unsure of, and is the reference the scanner is
 * tested against. Then one check (check()) decides whether the table can have come from a
 * plugin and builds the struct rpt_line. The check alone knows the rules, so a line means the
 * same whichever extractor read it.
 *
 * Each rule writes its reason and returns -1, and the line is RPT_REJECTED: the first
 * impossible value decides, because one is enough to distrust the whole line (a field
 * garbled by a torn write rarely comes alone).
 *
 * Optional fields stay optional where other writers of this format omit them (the vendor
 * Inspector plugins have no *_exec_time_ns, *_start_ts_ns, *_stale_channels); what the report
 * cannot do without is required. The fields read for context only (metadata, channels,
 * timing source, algorithm bandwidth, algo and proto) came after the rules and never reject a
 * line, so that adding them changed nothing inspector-report accepts: an ill-formed one
 * reads as absent.
 */
#include "parse.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fields.h"

/* Every key read, by field (fields.h). A perf field has one key in coll_perf, one in p2p_perf. */
#define KEY(f, k, obj, child) [f] = {k, sizeof k - 1, obj, child}
#define NOKEY(f, obj) [f] = {NULL, 0, obj, RPT_O_NONE}
#define COLL(p) (RPT_F_PERF + (p))
#define P2P(p) (RPT_F_PERF + RPT_NPERF + (p))
#define PERF(p, k) \
  KEY(COLL(p), "coll_" k, RPT_O_COLL, RPT_O_NONE), KEY(P2P(p), "p2p_" k, RPT_O_P2P, RPT_O_NONE)

const struct rpt_key rpt_keys[RPT_NFIELD] = {
  KEY(RPT_F_HEADER, "header", RPT_O_TOP, RPT_O_HEADER),
  KEY(RPT_F_META, "metadata", RPT_O_TOP, RPT_O_META),
  KEY(RPT_F_COLL, "coll_perf", RPT_O_TOP, RPT_O_COLL),
  KEY(RPT_F_P2P, "p2p_perf", RPT_O_TOP, RPT_O_P2P),
  KEY(RPT_F_STATS, "dump_stats", RPT_O_TOP, RPT_O_STATS),
  KEY(RPT_F_HANG, "hang", RPT_O_TOP, RPT_O_HANG),
  KEY(RPT_F_RESOLVED, "hang_resolved", RPT_O_TOP, RPT_O_HANG),
  KEY(RPT_F_IDLE, "comm_idle", RPT_O_TOP, RPT_O_IDLE),
  KEY(RPT_F_BOUND_COLL, "coll_bound", RPT_O_TOP, RPT_O_NONE),
  KEY(RPT_F_BOUND_P2P, "p2p_bound", RPT_O_TOP, RPT_O_NONE),
  KEY(RPT_F_ID, "id", RPT_O_HEADER, RPT_O_NONE),
  KEY(RPT_F_COMM_NAME, "comm_name", RPT_O_HEADER, RPT_O_NONE),
  KEY(RPT_F_RANK, "rank", RPT_O_HEADER, RPT_O_NONE),
  KEY(RPT_F_NRANKS, "n_ranks", RPT_O_HEADER, RPT_O_NONE),
  KEY(RPT_F_NNODES, "nnodes", RPT_O_HEADER, RPT_O_NONE),
  KEY(RPT_F_DUMP_US, "dump_timestamp_us", RPT_O_META, RPT_O_NONE),
  KEY(RPT_F_HOST, "hostname", RPT_O_META, RPT_O_NONE),
  KEY(RPT_F_PID, "pid", RPT_O_META, RPT_O_NONE),
  KEY(COLL(RPT_P_OP), "coll", RPT_O_COLL, RPT_O_NONE),
  KEY(P2P(RPT_P_OP), "p2p", RPT_O_P2P, RPT_O_NONE),
  PERF(RPT_P_SN, "sn"),
  PERF(RPT_P_BYTES, "msg_size_bytes"),
  PERF(RPT_P_EXEC_US, "exec_time_us"),
  PERF(RPT_P_TIMING, "timing_source"),
  PERF(RPT_P_ALGBW, "algobw_gbs"),
  PERF(RPT_P_BUSBW, "busbw_gbs"),
  PERF(RPT_P_EXEC_NS, "exec_time_ns"),
  PERF(RPT_P_START, "start_ts_ns"),
  PERF(RPT_P_NCH, "nchannels"),
  PERF(RPT_P_STALE, "stale_channels"),
  KEY(COLL(RPT_P_ALGO), "coll_algo", RPT_O_COLL, RPT_O_NONE),
  NOKEY(P2P(RPT_P_ALGO), RPT_O_P2P),
  KEY(COLL(RPT_P_PROTO), "coll_proto", RPT_O_COLL, RPT_O_NONE),
  NOKEY(P2P(RPT_P_PROTO), RPT_O_P2P),
  NOKEY(COLL(RPT_P_PEER), RPT_O_COLL),
  KEY(P2P(RPT_P_PEER), "p2p_peer", RPT_O_P2P, RPT_O_NONE),
  KEY(RPT_F_COLL_WRITTEN, "coll_records_total", RPT_O_STATS, RPT_O_NONE),
  KEY(RPT_F_COLL_DROPPED, "coll_dropped_total", RPT_O_STATS, RPT_O_NONE),
  KEY(RPT_F_P2P_WRITTEN, "p2p_records_total", RPT_O_STATS, RPT_O_NONE),
  KEY(RPT_F_P2P_DROPPED, "p2p_dropped_total", RPT_O_STATS, RPT_O_NONE),
  KEY(RPT_F_SAMPLING, "sampling", RPT_O_STATS, RPT_O_SAMPLING),
  KEY(RPT_F_MODE, "mode", RPT_O_SAMPLING, RPT_O_NONE),
  KEY(RPT_F_WINDOW, "window_ms", RPT_O_SAMPLING, RPT_O_NONE),
  KEY(RPT_F_PERIOD, "period_ms", RPT_O_SAMPLING, RPT_O_NONE),
  KEY(RPT_F_EVERY, "every", RPT_O_SAMPLING, RPT_O_NONE),
  KEY(RPT_F_BURST, "burst", RPT_O_SAMPLING, RPT_O_NONE),
  KEY(RPT_F_COVERED, "covered", RPT_O_SAMPLING, RPT_O_NONE),
  KEY(RPT_F_H_COLL, "coll", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_COLL_SN, "coll_sn", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_COLL_BYTES, "coll_msg_size_bytes", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_P2P, "p2p", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_P2P_SN, "p2p_sn", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_PEER, "p2p_peer", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_P2P_BYTES, "p2p_msg_size_bytes", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_IN_FLIGHT, "in_flight_s", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_FIRST_SEEN, "first_seen_us", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_KERNEL, "kernel_started", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_CH_STARTED, "channels_started", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_CH_STOPPED, "channels_stopped", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_OPS, "ops_in_flight", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_REPEAT, "repeat", RPT_O_HANG, RPT_O_NONE),
  KEY(RPT_F_H_LAST, "last_completed", RPT_O_HANG, RPT_O_LAST),
  KEY(RPT_F_I_IDLE, "idle_s", RPT_O_IDLE, RPT_O_NONE),
  KEY(RPT_F_I_LAST, "last_completed", RPT_O_IDLE, RPT_O_LAST),
  KEY(RPT_F_L_COLL, "coll", RPT_O_LAST, RPT_O_NONE),
  KEY(RPT_F_L_COLL_SN, "coll_sn", RPT_O_LAST, RPT_O_NONE),
  KEY(RPT_F_L_P2P, "p2p", RPT_O_LAST, RPT_O_NONE),
  KEY(RPT_F_L_P2P_SN, "p2p_sn", RPT_O_LAST, RPT_O_NONE),
  KEY(RPT_F_L_END, "end_ts_ns", RPT_O_LAST, RPT_O_NONE),
};

const struct rpt_objdef rpt_objs[RPT_NOBJ] = {
  [RPT_O_TOP] = {"", RPT_F_HEADER, RPT_F_ID},
  [RPT_O_HEADER] = {"header.", RPT_F_ID, RPT_F_DUMP_US},
  [RPT_O_META] = {"metadata.", RPT_F_DUMP_US, RPT_F_PERF},
  [RPT_O_COLL] = {"coll_perf.", COLL(0), P2P(0)},
  [RPT_O_P2P] = {"p2p_perf.", P2P(0), RPT_F_COLL_WRITTEN},
  [RPT_O_STATS] = {"dump_stats.", RPT_F_COLL_WRITTEN, RPT_F_MODE},
  [RPT_O_SAMPLING] = {"dump_stats.sampling.", RPT_F_MODE, RPT_F_H_COLL},
  [RPT_O_HANG] = {"hang.", RPT_F_H_COLL, RPT_F_I_IDLE},
  [RPT_O_IDLE] = {"comm_idle.", RPT_F_I_IDLE, RPT_F_L_COLL},
  [RPT_O_LAST] = {"last_completed.", RPT_F_L_COLL, RPT_NFIELD},
};
_Static_assert(RPT_NFIELD <= UINT8_MAX, "rpt_objdef holds field numbers in a byte");

/* ---- the reference extractor: jansson's tree into the table ---- */

static void take(struct rpt_fields *f, int k, json_t *j);

static void take_object(struct rpt_fields *f, int obj, json_t *o) {
  for (int k = rpt_objs[obj].first; k < rpt_objs[obj].end; k++) {
    json_t *j = rpt_keys[k].key ? json_object_get(o, rpt_keys[k].key) : NULL;
    if (j) take(f, k, j);
  }
}

static void take(struct rpt_fields *f, int k, json_t *j) {
  struct rpt_val *v = &f->v[k];
  switch (json_typeof(j)) {
  case JSON_OBJECT:
    f->type[k] = RPT_T_OBJECT;
    if (rpt_keys[k].child != RPT_O_NONE) take_object(f, rpt_keys[k].child, j);
    break;
  case JSON_ARRAY:
    f->type[k] = RPT_T_ARRAY;
    break;
  case JSON_STRING:
    f->type[k] = RPT_T_STRING;
    v->s = json_string_value(j);
    v->len = json_string_length(j);
    break;
  case JSON_INTEGER:
    f->type[k] = RPT_T_INT;
    v->i = json_integer_value(j);
    break;
  case JSON_REAL:
    f->type[k] = RPT_T_REAL;
    v->d = json_real_value(j);
    break;
  case JSON_TRUE:
    f->type[k] = RPT_T_TRUE;
    break;
  case JSON_FALSE:
    f->type[k] = RPT_T_FALSE;
    break;
  case JSON_NULL:
    f->type[k] = RPT_T_NULL;
    break;
  }
}

/* ---- the check: the table into a struct rpt_line ---- */

static int reject(struct rpt_line *out, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->why, sizeof out->why, fmt, ap);
  va_end(ap);
  /* jansson quotes the input near an error: keep control bytes and broken
   * UTF-8 of a binary file off the user's terminal */
  for (char *p = out->why; *p; p++)
    if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) *p = '?';
  return -1;
}

/* "coll_perf.", "coll_sn": a field's name in messages, for "%s%s" */
#define NAME(k) rpt_objs[rpt_keys[k].obj].path, rpt_keys[k].key

/*
 * An integer field k in [lo, hi]. 1: *v set; 0: absent (and !required); -1: rejected.
 */
static int get_int(struct rpt_line *out, const struct rpt_fields *f, int k, long long lo,
                   long long hi, bool required, long long *v) {
  if (!f->type[k]) return required ? reject(out, "no %s%s", NAME(k)) : 0;
  if (f->type[k] != RPT_T_INT) return reject(out, "%s%s is not an integer", NAME(k));
  long long x = f->v[k].i;
  if (x < lo || x > hi)
    return reject(out, "%s%s %lld out of range [%lld, %lld]", NAME(k), x, lo, hi);
  *v = x;
  return 1;
}

static bool is_number(const struct rpt_fields *f, int k) {
  return f->type[k] == RPT_T_INT || f->type[k] == RPT_T_REAL;
}

static double number(const struct rpt_fields *f, int k) {
  return f->type[k] == RPT_T_INT ? (double)f->v[k].i : f->v[k].d;
}

static bool str_is(const struct rpt_fields *f, int k, const char *s) {
  size_t n = strlen(s);
  return f->type[k] == RPT_T_STRING && f->v[k].len == n && memcmp(f->v[k].s, s, n) == 0;
}

/* A context field (never rejects): its value when an integer in [lo, hi], else dflt. */
static long long ctx_int(const struct rpt_fields *f, int k, long long lo, long long hi,
                         long long dflt) {
  return f->type[k] == RPT_T_INT && f->v[k].i >= lo && f->v[k].i <= hi ? f->v[k].i : dflt;
}

/*
 * A string field into dst[size] (zeroed by the caller): cut at size - 1 bytes, and with
 * whole_chars, before a UTF-8 character that would not fit whole (the strings are valid
 * UTF-8: both extractors check). Absent or not a string: left "".
 */
static void copy_str(char *dst, size_t size, const struct rpt_fields *f, int k, bool whole_chars) {
  if (f->type[k] != RPT_T_STRING) return;
  const char *s = f->v[k].s;
  size_t n = f->v[k].len < size - 1 ? f->v[k].len : size - 1;
  if (whole_chars && n < f->v[k].len)
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
  memcpy(dst, s, n);
}

/* "0x1f", "1f": 1 to 16 hex digits. */
static bool parse_hex_id(const struct rpt_val *id, uint64_t *v) {
  const char *s = id->s, *end = s + id->len;
  if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  if (s == end || end - s > 16) return false;
  uint64_t x = 0;
  for (; s < end; s++) {
    char c = *s;
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    x = x << 4 | (uint64_t)d;
  }
  *v = x;
  return true;
}

static int check_header(struct rpt_line *out, const struct rpt_fields *f) {
  struct rpt_header *hd = &out->hdr;
  if (f->type[RPT_F_HEADER] != RPT_T_OBJECT) return reject(out, "no \"header\" object");
  if (!f->type[RPT_F_ID]) return reject(out, "no header.id");
  if (f->type[RPT_F_ID] != RPT_T_STRING || !parse_hex_id(&f->v[RPT_F_ID], &hd->comm))
    return reject(out, "header.id is not a hex communicator id");
  long long v;
  if (get_int(out, f, RPT_F_NRANKS, 1, RPT_MAX_RANKS, true, &v) < 0) return -1;
  hd->nranks = (int)v;
  if (get_int(out, f, RPT_F_RANK, 0, hd->nranks - 1, true, &v) < 0) return -1;
  hd->rank = (int)v;
  if (get_int(out, f, RPT_F_NNODES, 1, hd->nranks, true, &v) < 0) return -1;
  hd->nnodes = (int)v;
  if (f->type[RPT_F_COMM_NAME] == RPT_T_STRING)
    copy_str(hd->name, sizeof hd->name, f, RPT_F_COMM_NAME, false);
  else
    memcpy(hd->name, "unknown", sizeof "unknown");
  /* metadata's fields are absent when metadata is not an object: neither extractor looks in */
  copy_str(hd->host, sizeof hd->host, f, RPT_F_HOST, true);
  hd->pid = ctx_int(f, RPT_F_PID, 0, LLONG_MAX, -1);
  hd->dump_us = (uint64_t)ctx_int(f, RPT_F_DUMP_US, 0, RPT_MAX_TS_NS / 1000, 0);
  return 0;
}

static int check_sampling(struct rpt_line *out, const struct rpt_fields *f) {
  struct rpt_sampling *s = &out->stats.sampling;
  if (f->type[RPT_F_SAMPLING] != RPT_T_OBJECT)
    return reject(out, "dump_stats.sampling is not an object");
  if (!str_is(f, RPT_F_MODE, "time") && !str_is(f, RPT_F_MODE, "groups"))
    return reject(out, "dump_stats.sampling.mode is not \"time\" or \"groups\"");
  s->time_mode = str_is(f, RPT_F_MODE, "time");
  long long a = 0, b = 0;
  if (get_int(out, f, s->time_mode ? RPT_F_WINDOW : RPT_F_BURST, 0, INT64_MAX, true, &a) < 0 ||
      get_int(out, f, s->time_mode ? RPT_F_PERIOD : RPT_F_EVERY, 0, INT64_MAX, true, &b) < 0)
    return -1;
  if (!is_number(f, RPT_F_COVERED))
    return reject(out, "dump_stats.sampling.covered is not a number");
  double cv = number(f, RPT_F_COVERED);
  if (!(cv >= 0 && cv <= 1)) return reject(out, "dump_stats.sampling.covered %g not in [0, 1]", cv);
  s->present = true;
  s->a = (uint64_t)a;
  s->b = (uint64_t)b;
  s->covered = cv;
  return 0;
}

static int check_stats(struct rpt_line *out, const struct rpt_fields *f) {
  static const int key[2][2] = {{RPT_F_COLL_WRITTEN, RPT_F_COLL_DROPPED},
                                {RPT_F_P2P_WRITTEN, RPT_F_P2P_DROPPED}};
  if (f->type[RPT_F_STATS] != RPT_T_OBJECT) return reject(out, "dump_stats is not an object");
  for (int i = 0; i < 2; i++) {
    long long w = 0, d = 0;
    if (get_int(out, f, key[i][0], 0, INT64_MAX, false, &w) < 0 ||
        get_int(out, f, key[i][1], 0, INT64_MAX, false, &d) < 0)
      return -1;
    out->stats.written[i] = (uint64_t)w;
    out->stats.dropped[i] = (uint64_t)d;
  }
  return f->type[RPT_F_SAMPLING] ? check_sampling(out, f) : 0;
}

static enum rpt_timing timing(const struct rpt_fields *f, int k) {
  if (!f->type[k]) return RPT_TIMING_ABSENT;
  if (str_is(f, k, "kernel_gpu")) return RPT_TIMING_KERNEL_GPU;
  if (str_is(f, k, "kernel_cpu")) return RPT_TIMING_KERNEL_CPU;
  if (str_is(f, k, "collective_cpu")) return RPT_TIMING_COLLECTIVE_CPU;
  return RPT_TIMING_OTHER;
}

static int check_perf(struct rpt_line *out, const struct rpt_fields *f, int p2p) {
  struct rpt_record *r = &out->rec;
  int base = p2p ? P2P(0) : COLL(0);
#define P(x) (base + RPT_P_##x)
  if (f->type[p2p ? RPT_F_P2P : RPT_F_COLL] != RPT_T_OBJECT)
    return reject(out, "%s is not an object", p2p ? "p2p_perf" : "coll_perf");
  if (f->type[P(OP)] != RPT_T_STRING || f->v[P(OP)].len == 0)
    return reject(out, "no %s%s name", NAME(P(OP)));
  copy_str(r->op, sizeof r->op, f, P(OP), false);
  r->comm = out->hdr.comm;
  r->rank = out->hdr.rank;
  r->p2p = p2p;
  r->peer = -1;
  long long v = 0;
  if (get_int(out, f, P(SN), 0, RPT_MAX_SN, true, &v) < 0) return -1;
  r->sn = (uint64_t)v;
  if (get_int(out, f, P(BYTES), 0, RPT_MAX_BYTES, true, &v) < 0) return -1;
  r->bytes = (uint64_t)v;
  /* ns when the writer has it (and timed the op); else the us every writer has */
  long long ns = 0, us = 0;
  int has_ns = get_int(out, f, P(EXEC_NS), 0, RPT_MAX_EXEC_NS, false, &ns);
  if (has_ns < 0) return -1;
  if (get_int(out, f, P(EXEC_US), 0, RPT_MAX_EXEC_NS / 1000, !has_ns, &us) < 0) return -1;
  r->exec_ns = (uint64_t)(ns ? ns : us * 1000);
  v = 0;
  if (get_int(out, f, P(START), 0, RPT_MAX_TS_NS, false, &v) < 0) return -1;
  r->start_ns = (uint64_t)v;
  if (!f->type[P(BUSBW)]) return reject(out, "no %s%s", NAME(P(BUSBW)));
  if (!is_number(f, P(BUSBW))) return reject(out, "%s%s is not a number", NAME(P(BUSBW)));
  r->busbw = number(f, P(BUSBW));
  if (!isfinite(r->busbw) || r->busbw < 0)
    return reject(out, "%s%s %g is negative or not finite", NAME(P(BUSBW)), r->busbw);
  v = 0;
  if (get_int(out, f, P(STALE), 0, INT64_MAX, false, &v) < 0) return -1;
  r->stale = v > 0;
  r->stale_channels = v > INT_MAX ? INT_MAX : (int)v;
  if (p2p) {
    int has = get_int(out, f, P(PEER), 0, out->hdr.nranks - 1, false, &v);
    if (has < 0) return -1;
    if (has) r->peer = (int)v;
  }
  /* context: never a reason to reject */
  r->nchannels = (int)ctx_int(f, P(NCH), 0, INT_MAX, -1);
  r->timing = timing(f, P(TIMING));
  r->algbw = is_number(f, P(ALGBW)) ? number(f, P(ALGBW)) : -1;
  if (!isfinite(r->algbw) || r->algbw < 0) r->algbw = -1;
  copy_str(r->algo, sizeof r->algo, f, P(ALGO), false); /* p2p_perf has neither key */
  copy_str(r->proto, sizeof r->proto, f, P(PROTO), false);
#undef P
  return 0;
}

/* ---- hang lines ---- */

/* A number field k: finite, in [0, RPT_MAX_HANG_S]. 1: *v set; 0: absent (and !required);
 * -1: rejected. `obj`: the object's name in messages (hang and hang_resolved share fields). */
static int get_seconds(struct rpt_line *out, const struct rpt_fields *f, const char *obj, int k, bool required,
                       double *v) {
  if (!f->type[k]) return required ? reject(out, "no %s.%s", obj, rpt_keys[k].key) : 0;
  if (!is_number(f, k)) return reject(out, "%s.%s is not a number", obj, rpt_keys[k].key);
  double x = number(f, k);
  if (!(x >= 0 && x <= RPT_MAX_HANG_S))
    return reject(out, "%s.%s %g out of range [0, %g]", obj, rpt_keys[k].key, x, RPT_MAX_HANG_S);
  *v = x;
  return 1;
}

/*
 * The op a hang object (or a last_completed) names: exactly one of its coll and p2p names, and
 * that kind's sequence number. 1: *r set; 0: neither name (and !required); -1: rejected.
 */
static int get_opref(struct rpt_line *out, const struct rpt_fields *f, const char *obj, int coll, int coll_sn,
                     int p2p, int p2p_sn, bool required, struct rpt_opref *r) {
  bool c = f->type[coll] == RPT_T_STRING && f->v[coll].len, p = f->type[p2p] == RPT_T_STRING && f->v[p2p].len;
  if (c && p) return reject(out, "%s has both a coll and a p2p name", obj);
  if (!c && !p) return required ? reject(out, "no %s.coll or %s.p2p name", obj, obj) : 0;
  int sn = c ? coll_sn : p2p_sn;
  if (!f->type[sn]) return reject(out, "no %s.%s", obj, rpt_keys[sn].key);
  if (f->type[sn] != RPT_T_INT) return reject(out, "%s.%s is not an integer", obj, rpt_keys[sn].key);
  if (f->v[sn].i < 0 || f->v[sn].i > RPT_MAX_SN)
    return reject(out, "%s.%s %lld out of range [0, %lld]", obj, rpt_keys[sn].key, f->v[sn].i, RPT_MAX_SN);
  r->present = true;
  r->p2p = p;
  r->sn = (uint64_t)f->v[sn].i;
  copy_str(r->op, sizeof r->op, f, c ? coll : p2p, false);
  return 1;
}

/* last_completed of a hang or comm_idle line: context (an ill-formed one reads as absent). */
static void last_completed(const struct rpt_fields *f, int k, struct rpt_opref *r) {
  struct rpt_line scratch; /* where a rejection's words go: none of them reject the line */
  if (f->type[k] != RPT_T_OBJECT ||
      get_opref(&scratch, f, "last_completed", RPT_F_L_COLL, RPT_F_L_COLL_SN, RPT_F_L_P2P, RPT_F_L_P2P_SN, true,
                r) < 0) {
    memset(r, 0, sizeof *r);
    return;
  }
  r->end_ns = (uint64_t)ctx_int(f, RPT_F_L_END, 0, RPT_MAX_TS_NS, 0);
}

/* A hang or hang_resolved object (docs/CONTRACTS.md section 2). */
static int check_hang(struct rpt_line *out, const struct rpt_fields *f, bool resolved) {
  struct rpt_hang_line *h = &out->hang;
  const char *obj = resolved ? "hang_resolved" : "hang";
  if (f->type[resolved ? RPT_F_RESOLVED : RPT_F_HANG] != RPT_T_OBJECT) return reject(out, "%s is not an object", obj);
  if (get_opref(out, f, obj, RPT_F_H_COLL, RPT_F_H_COLL_SN, RPT_F_H_P2P, RPT_F_H_P2P_SN, true, &h->op) < 0) return -1;
  h->peer = -1;
  if (h->op.p2p) {
    long long v;
    int has = get_int(out, f, RPT_F_H_PEER, 0, out->hdr.nranks - 1, false, &v);
    if (has < 0) return -1;
    if (has) h->peer = (int)v;
  }
  h->in_flight_s = -1;
  if (get_seconds(out, f, obj, RPT_F_H_IN_FLIGHT, !resolved, &h->in_flight_s) < 0) return -1;
  if (!resolved) {
    if (f->type[RPT_F_H_KERNEL] != RPT_T_TRUE && f->type[RPT_F_H_KERNEL] != RPT_T_FALSE)
      return reject(out, "hang.kernel_started is not true or false");
    h->kernel_started = f->type[RPT_F_H_KERNEL] == RPT_T_TRUE;
  }
  /* context: never a reason to reject */
  h->bytes = ctx_int(f, h->op.p2p ? RPT_F_H_P2P_BYTES : RPT_F_H_COLL_BYTES, 0, RPT_MAX_BYTES, -1);
  h->first_seen_us = (uint64_t)ctx_int(f, RPT_F_H_FIRST_SEEN, 0, RPT_MAX_TS_NS / 1000, 0);
  h->channels_started = (int)ctx_int(f, RPT_F_H_CH_STARTED, 0, INT_MAX, -1);
  h->channels_stopped = (int)ctx_int(f, RPT_F_H_CH_STOPPED, 0, INT_MAX, -1);
  h->ops_in_flight = (int)ctx_int(f, RPT_F_H_OPS, 0, INT_MAX, -1);
  h->repeat = (int)ctx_int(f, RPT_F_H_REPEAT, 0, INT_MAX, -1);
  if (!resolved) last_completed(f, RPT_F_H_LAST, &h->last);
  return 0;
}

/* A comm_idle object. */
static int check_idle(struct rpt_line *out, const struct rpt_fields *f) {
  struct rpt_hang_line *h = &out->hang;
  if (f->type[RPT_F_IDLE] != RPT_T_OBJECT) return reject(out, "comm_idle is not an object");
  if (get_seconds(out, f, "comm_idle", RPT_F_I_IDLE, true, &h->idle_s) < 0) return -1;
  h->peer = -1;
  h->bytes = -1;
  h->in_flight_s = -1;
  h->channels_started = h->channels_stopped = h->ops_in_flight = h->repeat = -1;
  last_completed(f, RPT_F_I_LAST, &h->last);
  return 0;
}

/* The line's shape: which of the Inspector objects it has. */
static enum rpt_kind check(struct rpt_line *out, const struct rpt_fields *f) {
  bool h = f->type[RPT_F_HEADER], coll = f->type[RPT_F_COLL], p2p = f->type[RPT_F_P2P];
  bool st = f->type[RPT_F_STATS], hang = f->type[RPT_F_HANG], res = f->type[RPT_F_RESOLVED];
  bool idle = f->type[RPT_F_IDLE];
  /* the bound of an op the plugin left out (docs/reference.md, "Whose timestamps"): not a
   * record, kept out of every figure; counted */
  bool bound = f->type[RPT_F_BOUND_COLL] || f->type[RPT_F_BOUND_P2P];
  int body = coll + p2p + st + hang + res + idle + f->type[RPT_F_BOUND_COLL] + f->type[RPT_F_BOUND_P2P] ;
  if (body == 0) {
    reject(out, h ? "an Inspector header with no coll_perf, p2p_perf, dump_stats or hang line"
                  : "not an Inspector record (no header, coll_perf, p2p_perf or dump_stats)");
    return RPT_NOT_RECORD;
  }
  if (body > 1) {
    reject(out, "more than one of coll_perf, p2p_perf, dump_stats, hang, hang_resolved, comm_idle, "
                "coll_bound, p2p_bound");
    return RPT_REJECTED;
  }
  if (check_header(out, f) < 0) return RPT_REJECTED;
  if (bound) return RPT_BOUND;
  if (st) return check_stats(out, f) < 0 ? RPT_REJECTED : RPT_STATS;
  if (hang || res) return check_hang(out, f, res) < 0 ? RPT_REJECTED : hang ? RPT_HANG : RPT_HANG_RESOLVED;
  if (idle) return check_idle(out, f) < 0 ? RPT_REJECTED : RPT_IDLE;
  return check_perf(out, f, p2p) < 0 ? RPT_REJECTED : RPT_RECORD;
}

/* ---- a line ---- */

/* The line's length without its trailing newline and blanks; 0: a blank line. */
static size_t content_len(const char *line, size_t len) {
  while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' ||
                 line[len - 1] == '\t'))
    len--;
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
  return i == len ? 0 : len;
}

enum rpt_kind rpt_parse_too_long(uint64_t len, struct rpt_line *out) {
  memset(out, 0, sizeof *out);
  reject(out, "a line of %llu bytes: longer than any Inspector line (under %d)",
         (unsigned long long)len, RPT_LINE_MAX);
  return out->kind = RPT_REJECTED;
}

static enum rpt_kind parse(const char *line, size_t len, struct rpt_line *out, bool fast) {
  struct rpt_fields f;
  if (len >= RPT_LINE_MAX && len - (line[len - 1] == '\n') >= RPT_LINE_MAX) /* its newline aside */
    return rpt_parse_too_long(len - (line[len - 1] == '\n'), out);
  memset(out, 0, sizeof *out);
  if (!(len = content_len(line, len))) return out->kind = RPT_BLANK;
  if (fast && rpt_scan(line, len, &f)) return out->kind = check(out, &f);
  json_error_t err;
  json_t *o = json_loadb(line, len, 0, &err);
  if (!o) {
    reject(out, "not JSON: %s (column %d)", err.text, err.column);
    return out->kind = RPT_REJECTED;
  }
  if (!json_is_object(o)) {
    reject(out, "not a JSON object");
    json_decref(o);
    return out->kind = RPT_REJECTED;
  }
  memset(f.type, 0, sizeof f.type);
  take_object(&f, RPT_O_TOP, o);
  out->kind = check(out, &f); /* before the decref: f's strings are the tree's */
  json_decref(o);
  return out->kind;
}

enum rpt_kind rpt_parse_line(const char *line, size_t len, struct rpt_line *out) {
  return parse(line, len, out, true);
}

enum rpt_kind rpt_parse_line_reference(const char *line, size_t len, struct rpt_line *out) {
  return parse(line, len, out, false);
}
