/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.c - the buffer and its formatters (see buf.h).
 */
#include "io/buf.h"

#include <math.h>
#include <stdlib.h>

#include "core/utf8.h"

int ins_buf_reserve(struct ins_buf *b, size_t more) {
  if (b->len + more <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) return -1;
  b->data = d;
  b->cap = cap;
  return 0;
}

void ins_buf_free(struct ins_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* Two digits at a time from a table, written backwards into place. */
static const char k_digits2[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline int u64_len(uint64_t v) {
  int n = 1;
  for (; v >= 10000; v /= 10000) n += 4;
  return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

void ins_buf_u64(struct ins_buf *b, uint64_t v) {
  int n = u64_len(v);
  char *p = b->data + b->len + n;
  b->len += (size_t)n;
  while (v >= 100) {
    unsigned d = (unsigned)(v % 100) * 2;
    v /= 100;
    *--p = k_digits2[d + 1];
    *--p = k_digits2[d];
  }
  if (v >= 10) {
    *--p = k_digits2[v * 2 + 1];
    *--p = k_digits2[v * 2];
  } else {
    *--p = (char)('0' + v);
  }
}

void ins_buf_i64(struct ins_buf *b, int64_t v) {
  if (v < 0) {
    b->data[b->len++] = '-';
    ins_buf_u64(b, (uint64_t)0 - (uint64_t)v);
  } else {
    ins_buf_u64(b, (uint64_t)v);
  }
}

void ins_buf_hex(struct ins_buf *b, uint64_t v) {
  static const char digits[] = "0123456789abcdef";
  char tmp[16];
  int n = 0;
  do {
    tmp[n++] = digits[v & 15];
    v >>= 4;
  } while (v);
  while (n) b->data[b->len++] = tmp[--n];
}

void ins_buf_f6(struct ins_buf *b, double v) {
  if (!(v >= 0) || v > 1e12) v = 0; /* NaN, negative or absurd: never print garbage */
  uint64_t micro = (uint64_t)llround(v * 1e6);
  ins_buf_u64(b, micro / 1000000);
  b->data[b->len] = '.';
  unsigned frac = (unsigned)(micro % 1000000);
  char *p = b->data + b->len + 7; /* six digits, leading zeros kept */
  for (int i = 0; i < 3; i++, frac /= 100) {
    unsigned d = frac % 100 * 2;
    *--p = k_digits2[d + 1];
    *--p = k_digits2[d];
  }
  b->len += 7;
}

size_t ins_buf_jstr_max(const char *s) { return (s ? strlen(s) : 7) * 6 + 2; }

void ins_buf_jstr(struct ins_buf *b, const char *s) {
  if (!s) s = "unknown";
  b->data[b->len++] = '"';
  /* the common case (NCCL's names): printable ASCII, nothing to escape, one copy */
  size_t n = 0;
  while ((unsigned char)s[n] >= 0x20 && (unsigned char)s[n] < 0x80 && s[n] != '"' && s[n] != '\\')
    n++;
  ins_buf_mem(b, s, n);
  /* the rest through the one walk (core/utf8.h): the caller reserved 6 bytes a byte */
  if (s[n]) b->len += ins_utf8_escape(b->data + b->len, 6 * strlen(s + n) + 1, s + n,
                                      ins_utf8_json_escape, 0);
  b->data[b->len++] = '"';
}
