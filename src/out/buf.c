/*
 * buf.c - the buffer and its formatters (see buf.h).
 */
#include "out/buf.h"

#include <math.h>
#include <stdlib.h>

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

void ins_buf_u64(struct ins_buf *b, uint64_t v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) b->data[b->len++] = tmp[--n];
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
  b->data[b->len++] = '.';
  uint64_t frac = micro % 1000000;
  for (uint64_t d = 100000; d; d /= 10) b->data[b->len++] = (char)('0' + (frac / d) % 10);
}

size_t ins_jstr_max(const char *s) { return (s ? strlen(s) : 7) * 6 + 2; }

void ins_buf_jstr(struct ins_buf *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  if (!s) s = "unknown";
  b->data[b->len++] = '"';
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    unsigned char ch = *p;
    if (ch == '"' || ch == '\\') {
      b->data[b->len++] = '\\';
      b->data[b->len++] = (char)ch;
    } else if (ch < 0x20) {
      ins_buf_lit(b, "\\u00");
      b->data[b->len++] = hex[ch >> 4];
      b->data[b->len++] = hex[ch & 15];
    } else {
      b->data[b->len++] = (char)ch;
    }
  }
  b->data[b->len++] = '"';
}
