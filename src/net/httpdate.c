/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httpdate.c - Retry-After and the three HTTP-date forms (see httpdate.h).
 */
#include "net/httpdate.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static bool take_num(const char **p, int min_digits, int max_digits, int *v) {
  int n = 0, x = 0;
  while (n < max_digits && isdigit((unsigned char)(*p)[n])) x = x * 10 + ((*p)[n++] - '0');
  if (n < min_digits) return false;
  *p += n;
  *v = x;
  return true;
}

static bool take_lit(const char **p, const char *lit) {
  size_t n = strlen(lit);
  if (strncmp(*p, lit, n)) return false;
  *p += n;
  return true;
}

static bool take_month(const char **p, int *m) {
  static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  for (int i = 0; i < 12; i++)
    if (!strncmp(*p, months + 3 * i, 3)) {
      *p += 3;
      *m = i + 1;
      return true;
    }
  return false;
}

static bool take_time(const char **p, int *h, int *mi, int *s) {
  return take_num(p, 2, 2, h) && take_lit(p, ":") && take_num(p, 2, 2, mi) && take_lit(p, ":") &&
         take_num(p, 2, 2, s);
}

/* An HTTP-date (RFC 9110 5.6.7) as Unix seconds; false if it is none. */
static bool parse_http_date(const char *p, int64_t *out) {
  int y = 0, m = 0, d = 0, h = 0, mi = 0, s = 0;
  size_t wlen = 0;
  while (isalpha((unsigned char)p[wlen])) wlen++;
  if (wlen < 3) return false;
  p += wlen;
  if (take_lit(&p, ", ")) {
    if (!take_num(&p, 2, 2, &d)) return false;
    if (take_lit(&p, " ")) { /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
      if (!take_month(&p, &m) || !take_lit(&p, " ") || !take_num(&p, 4, 4, &y) || !take_lit(&p, " ") ||
          !take_time(&p, &h, &mi, &s) || !take_lit(&p, " GMT"))
        return false;
    } else if (take_lit(&p, "-")) { /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
      if (!take_month(&p, &m) || !take_lit(&p, "-") || !take_num(&p, 2, 2, &y) || !take_lit(&p, " ") ||
          !take_time(&p, &h, &mi, &s) || !take_lit(&p, " GMT"))
        return false;
      /* RFC 9110: a two-digit year more than 50 years ahead is in the past century;
       * with today's clocks that is 19yy for yy >= 70. */
      y += y >= 70 ? 1900 : 2000;
    } else {
      return false;
    }
  } else if (take_lit(&p, " ")) { /* asctime: Sun Nov  6 08:49:37 1994 */
    if (!take_month(&p, &m) || !take_lit(&p, " ")) return false;
    if (*p == ' ') p++;
    if (!take_num(&p, 1, 2, &d) || !take_lit(&p, " ") || !take_time(&p, &h, &mi, &s) || !take_lit(&p, " ") ||
        !take_num(&p, 4, 4, &y))
      return false;
  } else {
    return false;
  }
  while (*p == ' ' || *p == '\t') p++;
  if (*p || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return false;
  *out = days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + s;
  return true;
}

int64_t ins_http_retry_after_ms(const char *v, int64_t now_unix_s) {
  if (!v) return INS_HTTP_NO_RETRY_AFTER;
  while (*v == ' ' || *v == '\t') v++;
  if (isdigit((unsigned char)*v)) { /* delay-seconds = 1*DIGIT */
    int64_t s = 0;
    for (; isdigit((unsigned char)*v); v++)
      if (s < INT64_MAX / 10000) s = s * 10 + (*v - '0'); /* saturates far above any cap */
    while (*v == ' ' || *v == '\t') v++;
    return *v ? INS_HTTP_NO_RETRY_AFTER : s * 1000;
  }
  int64_t t;
  if (!parse_http_date(v, &t)) return INS_HTTP_NO_RETRY_AFTER;
  return t > now_unix_s ? (t - now_unix_s) * 1000 : 0;
}
