/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_writer_layout.c - the log's kill-safe layout pads only where it must
 * (src/sink/json/writer.h ins_writer_layout): a line that ends exactly at a page end fits and
 * is written as it is; one byte longer would straddle the boundary, so the line before
 * it is padded to the page end and the line starts the next page. (test_core.c's layout
 * test holds the other half: no line straddles a page, the text is kept.)
 */
#include <string.h>

#include "check.h"
#include "sink/json/writer.h"

#define PAGE INS_WRITER_PAGE

/* A line of n bytes, its newline included. */
static size_t line_of(char *p, size_t n, char c) {
  memset(p, c, n - 1);
  p[n - 1] = '\n';
  return n;
}

int main(void) {
  static char in[3 * PAGE], out[6 * PAGE];
  size_t pad_prev = 99;
  /* written at offset 100: 3000 bytes, then a line that ends at exactly 4096 */
  size_t len = line_of(in, 3000, 'a');
  len += line_of(in + len, PAGE - 100 - 3000, 'b');
  len += line_of(in + len, 500, 'c');
  size_t n = ins_writer_layout(in, len, 100, out, sizeof out, &pad_prev);
  CHECK_EQ_U(n, len); /* nothing added */
  CHECK_EQ_U(pad_prev, 0);
  CHECK(n == len && !memcmp(out, in, len));
  /* the same, its second line one byte longer: padded before it, at the page end */
  len = line_of(in, 3000, 'a');
  len += line_of(in + len, PAGE - 100 - 3000 + 1, 'b');
  n = ins_writer_layout(in, len, 100, out, sizeof out, &pad_prev);
  CHECK_EQ_U(pad_prev, 0);
  CHECK_EQ_U(n, (PAGE - 100) + (PAGE - 100 - 3000 + 1));
  CHECK(out[2999] == ' ' && out[PAGE - 100 - 1] == '\n' && out[PAGE - 100] == 'b');
  /* a first line that ends exactly at the page end: the file's last line is not padded */
  len = line_of(in, PAGE - 100, 'd');
  n = ins_writer_layout(in, len, 100, out, sizeof out, &pad_prev);
  CHECK_EQ_U(pad_prev, 0);
  CHECK_EQ_U(n, len);
  /* one byte longer: the caller pads the file's last line (pad_prev) to the page end */
  len = line_of(in, PAGE - 100 + 1, 'd');
  n = ins_writer_layout(in, len, 100, out, sizeof out, &pad_prev);
  CHECK_EQ_U(pad_prev, PAGE - 100);
  return check_report("writer_layout");
}
