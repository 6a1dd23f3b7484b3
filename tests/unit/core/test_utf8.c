/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_utf8.c - byte strings that are not UTF-8 become valid text (core/utf8.h,
 * and its users: JSON strings, Prometheus label values, log messages).
 *
 * The expected strings are written out by hand from Unicode's rule for
 * U+FFFD substitution (a valid start of a sequence cut short is one U+FFFD,
 * any other invalid byte one), not derived from the code.
 */
#include <string.h>

#include "check.h"
#include "core/log.h"
#include "core/utf8.h"
#include "io/buf.h"
#include "sink/prom/prom.h"

#define R "\xEF\xBF\xBD" /* U+FFFD */

static void clean_is(const char *in, size_t cap, const char *want) {
  char out[512];
  size_t n = ins_utf8_clean(out, cap, in);
  CHECK_STR(out, want);
  CHECK_EQ_U(n, strlen(want));
}

static void test_clean(void) {
  clean_is("plain", 64, "plain");
  clean_is("caf\xC3\xA9", 64, "caf\xC3\xA9");                  /* valid 2-byte */
  clean_is("\xF0\x9F\x98\x80!", 64, "\xF0\x9F\x98\x80!");      /* valid 4-byte */
  clean_is("a\x80z", 64, "a" R "z");                           /* stray continuation */
  clean_is("a\xE2\x82z", 64, "a" R "z");                       /* 3-byte cut short: one */
  clean_is("a\xF0\x9F\x98", 64, "a" R);                        /* 4-byte cut at the end */
  clean_is("\xC0\xAF", 64, R R);                               /* overlong: two */
  clean_is("\xE0\x80\xAF", 64, R R R);                         /* overlong 3-byte: three */
  clean_is("\xED\xA0\x80", 64, R R R);                         /* surrogate: three */
  clean_is("\xF4\x90\x80\x80", 64, R R R R);                   /* above U+10FFFF */
  clean_is("\xFF\xFE", 64, R R);
  clean_is(NULL, 8, "");
  /* cut between characters: 5 bytes of room for "ab" + U+00E9 x 2 takes "ab" + one */
  clean_is("ab\xC3\xA9\xC3\xA9", 6, "ab\xC3\xA9");
  clean_is("ab\xC3\xA9\xC3\xA9", 5, "ab\xC3\xA9");
  clean_is("ab\xC3\xA9\xC3\xA9", 4, "ab");
  clean_is("a\xFF", 4, "a");                                   /* U+FFFD needs 3 */
}

static void jstr_is(const char *in, const char *want) {
  struct ins_buf b = {0};
  CHECK(ins_buf_reserve(&b, ins_buf_jstr_max(in) + 1) == 0);
  ins_buf_jstr(&b, in);
  b.data[b.len] = '\0';
  CHECK_STR(b.data, want);
  ins_buf_free(&b);
}

static void test_json(void) {
  jstr_is("nccl", "\"nccl\"");
  jstr_is("q\"b\\", "\"q\\\"b\\\\\"");
  jstr_is("tab\t", "\"tab\\u0009\"");
  jstr_is("caf\xC3\xA9 \xFF!", "\"caf\xC3\xA9 " R "!\"");
  jstr_is("\xE2\x82", "\"" R "\"");
  jstr_is(NULL, "\"unknown\"");
}

static void test_prom(void) {
  char out[64];
  ins_prom_escape(out, sizeof out, "a\"b\\c\nd\xFF");
  CHECK_STR(out, "a\\\"b\\\\c\\nd" R);
  /* never half a character: 4 bytes of room hold "ab" and not the 2-byte U+00E9 after it
   * (and its NUL) */
  ins_prom_escape(out, 4, "ab\xC3\xA9");
  CHECK_STR(out, "ab");
  ins_prom_escape(out, 5, "ab\xC3\xA9");
  CHECK_STR(out, "ab\xC3\xA9");
}

static void test_log(void) {
  char out[64];
  ins_log_printable(out, sizeof out, "v='\xFF" "1\x1B[0m' caf\xC3\xA9");
  CHECK_STR(out, "v='\\xff1\\x1b[0m' caf\xC3\xA9");
  /* cut before an escape or a character that does not fit */
  ins_log_printable(out, 7, "ab\xFF");
  CHECK_STR(out, "ab\\xff");
  ins_log_printable(out, 6, "ab\xFF");
  CHECK_STR(out, "ab");
}

int main(void) {
  test_clean();
  test_json();
  test_prom();
  test_log();
  return check_report("utf8");
}
