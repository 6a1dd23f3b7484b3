/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.h - an append-only text buffer with the few fast formatters the
 * writers need (integers, fixed 6-decimal floats, JSON strings). snprintf
 * would cost about a microsecond per record; these cost a few dozen ns.
 * In io/, below the sinks and trace mode alike (src/trace/): it uses only
 * core/utf8.h.
 */
#ifndef INS_BUF_H
#define INS_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct ins_buf {
  char *data;
  size_t len, cap;
};

/* Callers reserve room first (ins_buf_reserve) so appends never check. */
int ins_buf_reserve(struct ins_buf *b, size_t more);
void ins_buf_free(struct ins_buf *b);

static inline void ins_buf_mem(struct ins_buf *b, const char *s, size_t n) {
  memcpy(b->data + b->len, s, n);
  b->len += n;
}
/* s must be a string literal ("" s "" makes anything else a compile error: sizeof of a
 * pointer would copy the wrong length) */
#define ins_buf_lit(b, s) ins_buf_mem((b), "" s "", sizeof(s) - 1)

void ins_buf_u64(struct ins_buf *b, uint64_t v);
void ins_buf_i64(struct ins_buf *b, int64_t v);
void ins_buf_hex(struct ins_buf *b, uint64_t v);   /* lower-case, no padding */
void ins_buf_f6(struct ins_buf *b, double v);      /* %.6f for finite v >= 0 */
/* A JSON string with quotes; NULL -> "unknown"; bytes that are not UTF-8 become
 * U+FFFD (core/utf8.h). Needs 6*strlen+2 bytes reserved. */
void ins_buf_jstr(struct ins_buf *b, const char *s);
size_t ins_buf_jstr_max(const char *s);

#endif
