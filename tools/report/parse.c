/*
 * parse.c - checking one log line (see parse.h).
 *
 * jansson parses the JSON; this file only decides whether what it holds can
 * have come from the plugin. Each check writes its reason and returns -1,
 * and rpt_parse_line turns that into RPT_REJECTED: the first impossible
 * value decides, because one is enough to distrust the whole line (a field
 * garbled by a torn write rarely comes alone).
 *
 * Optional fields stay optional where other writers of this format omit
 * them (the vendor Inspector plugins have no *_exec_time_ns, *_start_ts_ns,
 * *_stale_channels); what the report cannot do without is required.
 */
#include "parse.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/*
 * An integer member `key` of o in [lo, hi]. 1: *v set; 0: absent (and
 * !required); -1: rejected. `where` names the object in messages.
 */
static int get_int(struct rpt_line *out, json_t *o, const char *where, const char *key,
                   long long lo, long long hi, bool required, long long *v) {
  json_t *j = json_object_get(o, key);
  if (!j) return required ? reject(out, "no %s%s", where, key) : 0;
  if (!json_is_integer(j)) return reject(out, "%s%s is not an integer", where, key);
  long long x = json_integer_value(j);
  if (x < lo || x > hi)
    return reject(out, "%s%s %lld out of range [%lld, %lld]", where, key, x, lo, hi);
  *v = x;
  return 1;
}

/* "0x1f", "1f": 1 to 16 hex digits. */
static bool parse_hex_id(const char *s, uint64_t *v) {
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s += 2;
  size_t n = strlen(s);
  if (n == 0 || n > 16) return false;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    x = x << 4 | (uint64_t)d;
  }
  *v = x;
  return true;
}

static int parse_header(struct rpt_line *out, json_t *h) {
  struct rpt_header *hd = &out->hdr;
  if (!json_is_object(h)) return reject(out, "no \"header\" object");
  json_t *id = json_object_get(h, "id");
  if (!id) return reject(out, "no header.id");
  if (!json_is_string(id) || !parse_hex_id(json_string_value(id), &hd->comm))
    return reject(out, "header.id is not a hex communicator id");
  long long v;
  if (get_int(out, h, "header.", "n_ranks", 1, RPT_MAX_RANKS, true, &v) < 0) return -1;
  hd->nranks = (int)v;
  if (get_int(out, h, "header.", "rank", 0, hd->nranks - 1, true, &v) < 0) return -1;
  hd->rank = (int)v;
  if (get_int(out, h, "header.", "nnodes", 1, hd->nranks, true, &v) < 0) return -1;
  hd->nnodes = (int)v;
  const char *nm = json_string_value(json_object_get(h, "comm_name"));
  snprintf(hd->name, sizeof hd->name, "%s", nm ? nm : "unknown");
  return 0;
}

static int parse_sampling(struct rpt_line *out, json_t *smp) {
  struct rpt_sampling *s = &out->stats.sampling;
  const char *w = "dump_stats.sampling.";
  if (!json_is_object(smp)) return reject(out, "dump_stats.sampling is not an object");
  const char *mode = json_string_value(json_object_get(smp, "mode"));
  if (!mode || (strcmp(mode, "time") && strcmp(mode, "groups")))
    return reject(out, "dump_stats.sampling.mode is not \"time\" or \"groups\"");
  s->time_mode = !strcmp(mode, "time");
  long long a = 0, b = 0;
  if (get_int(out, smp, w, s->time_mode ? "window_ms" : "burst", 0, INT64_MAX, true, &a) < 0 ||
      get_int(out, smp, w, s->time_mode ? "period_ms" : "every", 0, INT64_MAX, true, &b) < 0)
    return -1;
  json_t *c = json_object_get(smp, "covered");
  if (!json_is_number(c)) return reject(out, "dump_stats.sampling.covered is not a number");
  double cv = json_number_value(c);
  if (!(cv >= 0 && cv <= 1)) return reject(out, "dump_stats.sampling.covered %g not in [0, 1]", cv);
  s->present = true;
  s->a = (uint64_t)a;
  s->b = (uint64_t)b;
  s->covered = cv;
  return 0;
}

static int parse_stats(struct rpt_line *out, json_t *st) {
  static const char *const key[2][2] = {{"coll_records_total", "coll_dropped_total"},
                                        {"p2p_records_total", "p2p_dropped_total"}};
  if (!json_is_object(st)) return reject(out, "dump_stats is not an object");
  for (int i = 0; i < 2; i++) {
    long long w = 0, d = 0;
    if (get_int(out, st, "dump_stats.", key[i][0], 0, INT64_MAX, false, &w) < 0 ||
        get_int(out, st, "dump_stats.", key[i][1], 0, INT64_MAX, false, &d) < 0)
      return -1;
    out->stats.written[i] = (uint64_t)w;
    out->stats.dropped[i] = (uint64_t)d;
  }
  json_t *smp = json_object_get(st, "sampling");
  return smp ? parse_sampling(out, smp) : 0;
}

static int parse_perf(struct rpt_line *out, json_t *perf, int p2p) {
  struct rpt_record *r = &out->rec;
  const char *pfx = p2p ? "p2p_" : "coll_";
  const char *where = p2p ? "p2p_perf." : "coll_perf.";
  char key[64];
#define K(name) (snprintf(key, sizeof key, "%s%s", pfx, name), key)
  if (!json_is_object(perf)) return reject(out, "%s is not an object", p2p ? "p2p_perf" : "coll_perf");
  const char *op = json_string_value(json_object_get(perf, p2p ? "p2p" : "coll"));
  if (!op || !op[0]) return reject(out, "no %s%s name", where, p2p ? "p2p" : "coll");
  snprintf(r->op, sizeof r->op, "%s", op);
  r->comm = out->hdr.comm;
  r->rank = out->hdr.rank;
  r->p2p = p2p;
  r->peer = -1;
  long long v = 0;
  if (get_int(out, perf, where, K("sn"), 0, RPT_MAX_SN, true, &v) < 0) return -1;
  r->sn = (uint64_t)v;
  if (get_int(out, perf, where, K("msg_size_bytes"), 0, RPT_MAX_BYTES, true, &v) < 0) return -1;
  r->bytes = (uint64_t)v;
  /* ns when the writer has it (and timed the op); else the us every writer has */
  long long ns = 0, us = 0;
  int has_ns = get_int(out, perf, where, K("exec_time_ns"), 0, RPT_MAX_EXEC_NS, false, &ns);
  if (has_ns < 0) return -1;
  int has_us = get_int(out, perf, where, K("exec_time_us"), 0, RPT_MAX_EXEC_NS / 1000, !has_ns, &us);
  if (has_us < 0) return -1;
  r->exec_ns = (uint64_t)(ns ? ns : us * 1000);
  v = 0;
  if (get_int(out, perf, where, K("start_ts_ns"), 0, RPT_MAX_TS_NS, false, &v) < 0) return -1;
  r->start_ns = (uint64_t)v;
  json_t *bw = json_object_get(perf, K("busbw_gbs"));
  if (!bw) return reject(out, "no %s%s", where, key);
  if (!json_is_number(bw)) return reject(out, "%s%s is not a number", where, key);
  r->busbw = json_number_value(bw);
  if (!isfinite(r->busbw) || r->busbw < 0)
    return reject(out, "%s%s %g is negative or not finite", where, key, r->busbw);
  v = 0;
  if (get_int(out, perf, where, K("stale_channels"), 0, INT64_MAX, false, &v) < 0) return -1;
  r->stale = v > 0;
  if (p2p) {
    int has = get_int(out, perf, where, "p2p_peer", 0, out->hdr.nranks - 1, false, &v);
    if (has < 0) return -1;
    if (has) r->peer = (int)v;
  }
#undef K
  return 0;
}

/* The line's shape: which of the Inspector objects it has. */
static enum rpt_kind classify(struct rpt_line *out, json_t *o) {
  json_t *h = json_object_get(o, "header");
  json_t *coll = json_object_get(o, "coll_perf");
  json_t *p2p = json_object_get(o, "p2p_perf");
  json_t *st = json_object_get(o, "dump_stats");
  int body = !!coll + !!p2p + !!st;
  if (body == 0) {
    reject(out, h ? "an Inspector header with no coll_perf, p2p_perf or dump_stats"
                  : "not an Inspector record (no header, coll_perf, p2p_perf or dump_stats)");
    return RPT_NOT_RECORD;
  }
  if (body > 1) {
    reject(out, "more than one of coll_perf, p2p_perf, dump_stats");
    return RPT_REJECTED;
  }
  if (parse_header(out, h) < 0) return RPT_REJECTED;
  if (st) return parse_stats(out, st) < 0 ? RPT_REJECTED : RPT_STATS;
  return parse_perf(out, coll ? coll : p2p, !coll) < 0 ? RPT_REJECTED : RPT_RECORD;
}

enum rpt_kind rpt_parse_line(const char *line, size_t len, struct rpt_line *out) {
  memset(out, 0, sizeof *out);
  while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ' ||
                 line[len - 1] == '\t'))
    len--;
  size_t i = 0;
  while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
  if (i == len) return out->kind = RPT_BLANK;
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
  out->kind = classify(out, o);
  json_decref(o);
  return out->kind;
}
