/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scan.c - the fast extractor: one pass over a line's text into its fields (fields.h).
 *
 * Owns: reading the lines plugins write without building a tree. jansson (parse.c, the
 * reference) allocates a node per value and a copy of every key and string; this walks the
 * text once, allocates nothing, and fills the same table. On the fixtures' lines (683 bytes,
 * Release, one core of the 2-core dev VM; tests/unit/report/bench_report_parse.c): jansson 70 MB/s,
 * the scanner and the check 1230 MB/s, 550 ns a line (NVIDIA's 500-byte lines: 1220 MB/s).
 *
 * It reads a subset of JSON exactly as jansson does, value for value and bit for bit, and on
 * anything outside it answers "unsure" (false) so that the caller asks jansson: it never has
 * to agree with jansson on an error message or on a rare form. Unsure on:
 *   - anything that is not a valid JSON object (jansson words the error);
 *   - a backslash in any string, key or value: an escaped key or name would need decoding
 *     to compare, and jansson rejects some escapes (\u0000, lone surrogates). Our plugin
 *     escapes only names that hold quotes, backslashes or control characters;
 *   - a number with an exponent or more than 19 digits, an integer outside int64 (an error
 *     to jansson), a fraction whose digits exceed 2^53 (number() says why);
 *   - a known key given twice (jansson keeps the last value; rarer than worth following);
 *   - nesting deeper than SCAN_MAX_DEPTH (verbose records reach depth 5).
 * Strings are checked for UTF-8 as jansson checks them (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), so names in any script stay on the fast path.
 *
 * Keys are found by length and memcmp in their object's table (fields.h), starting after the
 * last key found: lines from one writer list their keys in one order, so the first compare
 * usually hits, and any order still works. The key expected next is first compared in place,
 * before the string is even scanned, and strings are scanned 8 bytes at a time: the two
 * together took a parse-only loop from about 940 to 1400 MB/s (strings are 34% of the time
 * without them).
 *
 * A line that starts as the previous one of its thread did (a dump's records share their
 * header and metadata, 400 of 700 bytes) takes those fields from a per-thread cache and is
 * scanned from there on: the prefix cache, before rpt_scan.
 *
 * Not here: what the values mean or whether they are plausible (parse.c).
 */
#include "core/utf8.h"
#include "fields.h"

#include <assert.h>
#include <float.h>
#include <string.h>

#define SCAN_MAX_DEPTH 16

/* number()'s fraction is one correctly rounded division: no wider intermediate format */
_Static_assert(FLT_EVAL_METHOD == 0, "double arithmetic must be evaluated in double");

#define SCAN_MAX_MEMBERS 8 /* top-level members whose ends are remembered (ours have 3) */

struct scan {
  const char *line, *end; /* the line */
  struct rpt_fields *f;
  struct rpt_val junk;    /* where a skipped value's number goes */
  /* for the prefix cache (below): the fields in the order they were set, and after each
   * top-level member how many were set, where it ended and which key was expected next */
  uint8_t order[RPT_NFIELD];
  unsigned n_set, members;
  unsigned mark_set[SCAN_MAX_MEMBERS], mark_off[SCAN_MAX_MEMBERS], mark_next[SCAN_MAX_MEMBERS];
};

static const char *object(struct scan *s, const char *p, int obj, int depth);

static const char *skip_ws(const char *p, const char *end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
  return p;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The length of the UTF-8 sequence at p (p[0] >= 0x80), or 0 where jansson finds it invalid:
 * RFC 3629, the plugin's rule (src/core/utf8.h). */
static size_t utf8_len(const unsigned char *p, const char *end) {
  return ins_utf8_char_len(p, (size_t)(end - (const char *)p));
}

/*
 * Whether any of the 8 bytes at p needs a look: a quote, a backslash, a control character or
 * a non-ASCII byte (the has-zero-byte and has-byte-less-than word tricks). No false negative;
 * a false positive can only follow a true one, and costs only a byte-by-byte look.
 */
static uint64_t needs_look8(const char *p) {
  const uint64_t ones = 0x0101010101010101u, high = ones * 0x80;
  uint64_t w, q, b;
  memcpy(&w, p, 8);
  q = w ^ (ones * '"');
  b = w ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & high;
}

/* p: just after a string's opening quote. Returns its closing quote, or NULL: unsure. */
static const char *string_end(const char *p, const char *end) {
  while (p < end) {
    if (end - p >= 8) {
      uint64_t look = needs_look8(p);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      /* the first byte flagged is the first in memory: jump to it */
      if (look) p += __builtin_ctzll(look) / 8;
#endif
      if (!look) {
        p += 8;
        continue;
      }
    }
    unsigned char c = (unsigned char)*p;
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      p++;
    } else if (c == '"') {
      return p;
    } else if (c >= 0x80) {
      size_t n = utf8_len((const unsigned char *)p, end);
      if (n == 0) return NULL;
      p += n;
    } else {
      return NULL; /* a control character (an error) or an escape */
    }
  }
  return NULL;
}

/*
 * A JSON number at p, as jansson reads it: an integer (strtoll) when it has no fraction or
 * exponent, else a double (strtod). The double comes out bit-identical without strtod when
 * the digits, read as an integer m, satisfy m <= 2^53 and the fraction has k <= 19 digits
 * (the 19-digit cap enforces that): m and 10^k (exact up to k = 22) are then doubles, and IEEE
 * division rounds m / 10^k correctly, as glibc's strtod rounds the decimal m * 10^-k
 * (Clinger's fast path). Our plugin writes %f: 6 decimals, inside the bound up to 9e9.
 * Everything else is unsure, so strtod never runs here.
 */
static const char *number(const char *p, const char *end, struct rpt_val *v, uint8_t *type) {
  static const double pow10[20] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,
                                   1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19};
  bool neg = *p == '-';
  if (neg) p++;
  if (p == end || !is_digit(*p)) return NULL;
  uint64_t m = 0;
  int digits = 0, frac = 0;
  if (*p == '0') {
    if (++p < end && is_digit(*p)) return NULL; /* a leading zero: an error */
  } else {
    for (; p < end && is_digit(*p); p++) {
      if (++digits > 19) return NULL;
      m = m * 10 + (uint64_t)(*p - '0');
    }
  }
  if (p < end && *p == '.') {
    if (++p == end || !is_digit(*p)) return NULL;
    for (; p < end && is_digit(*p); p++, frac++) {
      if (++digits > 19) return NULL;
      m = m * 10 + (uint64_t)(*p - '0');
    }
  }
  if (p < end && (*p == 'e' || *p == 'E')) return NULL;
  if (frac == 0) { /* no fraction ('.' needs a digit after it): an integer */
    /* strtoll's range: beyond it jansson reports an overflow */
    if (m > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX)) return NULL;
    v->i = neg && m ? -(long long)(m - 1) - 1 : (long long)m;
    *type = RPT_T_INT;
    return p;
  }
  if (m > (uint64_t)1 << 53) return NULL;
  assert(frac < (int)(sizeof pow10 / sizeof pow10[0]));
  double d = (double)m / pow10[frac];
  v->d = neg ? -d : d;
  *type = RPT_T_REAL;
  return p;
}

static const char *literal(const char *p, const char *end, const char *word, size_t n) {
  return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/*
 * The field key[0..n) names in obj, or -1. *next: where the search starts, the field after
 * the last one found.
 */
static int lookup(int obj, const char *key, size_t n, unsigned *next) {
  const struct rpt_objdef *o = &rpt_objs[obj];
  unsigned i = *next;
  if (n == 0) return -1; /* no field has an empty key; keyless entries have len 0 */
  for (unsigned left = o->end - o->first; left; left--) {
    const struct rpt_key *k = &rpt_keys[i];
    if (k->len == n && memcmp(k->key, key, n) == 0) {
      *next = i + 1 == o->end ? o->first : i + 1;
      return (int)i;
    }
    if (++i == o->end) i = o->first;
  }
  return -1;
}

/* The value at p (p < end), stored as field k (or skipped: k < 0). Returns its end or NULL. */
static const char *value(struct scan *s, const char *p, int k, int depth) {
  struct rpt_val *v = k >= 0 ? &s->f->v[k] : &s->junk;
  uint8_t type;
  const char *q;
  switch (*p) {
  case '"':
    q = string_end(p + 1, s->end);
    if (!q) return NULL;
    v->s = p + 1;
    v->len = (size_t)(q - p - 1);
    type = RPT_T_STRING;
    p = q + 1;
    break;
  case '{':
    p = object(s, p, k >= 0 ? rpt_keys[k].child : RPT_O_NONE, depth + 1);
    type = RPT_T_OBJECT;
    break;
  case '[':
    if (depth + 1 > SCAN_MAX_DEPTH) return NULL;
    p = skip_ws(p + 1, s->end);
    type = RPT_T_ARRAY;
    if (p < s->end && *p == ']') {
      p++;
      break;
    }
    for (;;) {
      if (p == s->end || !(p = value(s, p, -1, depth + 1))) return NULL;
      p = skip_ws(p, s->end);
      if (p == s->end) return NULL;
      if (*p == ']') {
        p++;
        break;
      }
      if (*p != ',') return NULL;
      p = skip_ws(p + 1, s->end);
    }
    break;
  case 't':
    p = literal(p, s->end, "true", 4);
    type = RPT_T_TRUE;
    break;
  case 'f':
    p = literal(p, s->end, "false", 5);
    type = RPT_T_FALSE;
    break;
  case 'n':
    p = literal(p, s->end, "null", 4);
    type = RPT_T_NULL;
    break;
  default:
    p = number(p, s->end, v, &type);
    break;
  }
  if (p && k >= 0) {
    s->f->type[k] = type;
    s->order[s->n_set++] = (uint8_t)k; /* at most once each: a key given twice is unsure */
  }
  return p;
}

/* An object's members from p (a key's opening quote), looked up in obj from key `next` on;
 * returns the end of the object or NULL. The top level's member ends are marked. */
static const char *members(struct scan *s, const char *p, int obj, int depth, unsigned next) {
  const char *end = s->end;
  for (;;) {
    if (p == end || *p != '"') return NULL;
    const char *key = p + 1, *q;
    int k = -1;
    const struct rpt_key *guess = &rpt_keys[next];
    if (obj != RPT_O_NONE && guess->len && (size_t)(end - key) > guess->len &&
        memcmp(key, guess->key, guess->len) == 0 && key[guess->len] == '"') {
      /* the key expected next, compared in place: our keys need no other check */
      q = key + guess->len;
      k = (int)next;
      next = next + 1 == rpt_objs[obj].end ? rpt_objs[obj].first : next + 1;
    } else {
      if (!(q = string_end(key, end))) return NULL;
      if (obj != RPT_O_NONE) k = lookup(obj, key, (size_t)(q - key), &next);
    }
    p = skip_ws(q + 1, end);
    if (p == end || *p != ':') return NULL;
    p = skip_ws(p + 1, end);
    if (p == end) return NULL;
    if (k >= 0 && s->f->type[k]) return NULL; /* given twice */
    if (!(p = value(s, p, k, depth))) return NULL;
    p = skip_ws(p, end);
    if (p == end) return NULL;
    if (obj == RPT_O_TOP && s->members < SCAN_MAX_MEMBERS) {
      s->mark_set[s->members] = s->n_set;
      s->mark_off[s->members] = (unsigned)(p - s->line);
      s->mark_next[s->members++] = next;
    }
    if (*p == '}') return p + 1;
    if (*p != ',') return NULL;
    p = skip_ws(p + 1, end);
  }
}

/* The object at p ('{'), its keys looked up in obj (RPT_O_NONE: all skipped). */
static const char *object(struct scan *s, const char *p, int obj, int depth) {
  if (depth > SCAN_MAX_DEPTH) return NULL;
  p = skip_ws(p + 1, s->end);
  if (p < s->end && *p == '}') return p + 1;
  return members(s, p, obj, depth, obj != RPT_O_NONE ? rpt_objs[obj].first : 0);
}

/*
 * The prefix cache. A log's lines repeat most of themselves: every record of a dump starts
 * with the same header and metadata (400 of the 700 bytes of a record), and only its last
 * member (coll_perf, p2p_perf) differs. So the scanner keeps, per thread, the text of the
 * last line it read up to the end of its last-but-one top-level member, and the fields set
 * there. A line that starts with those bytes (memcmp: about 20 times faster than scanning
 * them) takes those fields, its strings pointed at the same offsets in this line, and is
 * scanned from that member's end on. The state the scanner would have there (the fields set,
 * the key expected next, the depth, the top level's object) is a function of the bytes
 * before it, so the result is the one a full scan gives: tests/unit/report/test_report_scan.c
 * compares the two, with and without the cache, and against jansson.
 */
#define PREFIX_MAX 2048
struct prefix_cache {
  unsigned len;  /* bytes of the prefix, up to and including the ',' after its members; 0: none */
  unsigned next; /* the top-level key expected next */
  unsigned n;    /* fields set in it */
  uint8_t k[RPT_NFIELD], type[RPT_NFIELD];
  struct rpt_val v[RPT_NFIELD]; /* strings: .s is an offset from the line's start */
  char text[PREFIX_MAX];
};
static _Thread_local struct prefix_cache t_prefix;
static _Thread_local bool t_prefix_off;

void rpt_scan_prefix_cache(bool on) {
  t_prefix_off = !on;
  t_prefix.len = 0;
}

/* Remember the line's prefix, if it has one (two top-level members or more). */
static void prefix_keep(const struct scan *s) {
  struct prefix_cache *c = &t_prefix;
  c->len = 0;
  if (s->members < 2 || s->members > SCAN_MAX_MEMBERS) return;
  unsigned m = s->members - 2, len = s->mark_off[m] + 1; /* the ',' after member m */
  if (len > PREFIX_MAX || s->line[len - 1] != ',') return;
  c->n = s->mark_set[m];
  c->next = s->mark_next[m];
  for (unsigned i = 0; i < c->n; i++) {
    uint8_t k = s->order[i];
    c->k[i] = k;
    c->type[i] = s->f->type[k];
    c->v[i] = s->f->v[k];
    if (c->type[i] == RPT_T_STRING) c->v[i].s = (const char *)(uintptr_t)(s->f->v[k].s - s->line);
  }
  memcpy(c->text, s->line, len);
  c->len = len;
}

bool rpt_scan(const char *line, size_t len, struct rpt_fields *f) {
  /* offsets in a line are kept in 32 bits (mark_off, the prefix cache): a longer line is
   * jansson's to judge (parse.c rejects lines of RPT_LINE_MAX or more before either) */
  if (len > UINT32_MAX) return false;
  struct scan s = {.line = line, .end = line + len, .f = f};
  memset(f->type, 0, sizeof f->type);
  const struct prefix_cache *c = &t_prefix;
  if (c->len && len > c->len && memcmp(line, c->text, c->len) == 0) {
    for (unsigned i = 0; i < c->n; i++) {
      uint8_t k = c->k[i];
      f->type[k] = c->type[i];
      f->v[k] = c->v[i];
      if (c->type[i] == RPT_T_STRING) f->v[k].s = line + (uintptr_t)c->v[i].s;
    }
    const char *p = members(&s, skip_ws(line + c->len, s.end), RPT_O_TOP, 1, c->next);
    return p && skip_ws(p, s.end) == s.end;
  }
  const char *p = skip_ws(line, s.end);
  if (p == s.end || *p != '{') return false; /* jansson says what it is */
  p = object(&s, p, RPT_O_TOP, 1);
  if (!p || skip_ws(p, s.end) != s.end) return false;
  if (!t_prefix_off) prefix_keep(&s);
  return true;
}
