/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_httpdate.c - Retry-After (src/net/httpdate.c): delay-seconds or an HTTP-date in its
 * three forms (RFC 9110 10.2.3, 5.6.7: IMF-fixdate, RFC 850, asctime) against a fixed "now",
 * a date past (at once), a leap day, and the values refused. A pure function: no clock.
 * (An RFC 850 year's century is test_otlp_rules.c's.)
 *
 *   inspector-unit-httpdate --list | --case NAME   (main: otlp_cases.h)
 */
#include <stdint.h>

#include "otlp_cases.h"
#include "net/httpdate.h"
#include "sink/otlp/otlp_rules.h"

/* Retry-After: delay-seconds or an HTTP-date (RFC 9110 10.2.3, 5.6.7), against a fixed now. */
static void case_retry_after_parse(void) {
  const int64_t now = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT, RFC 9110's example date */
  CHECK_EQ_U(ins_http_retry_after_ms("120", now), 120000);
  CHECK_EQ_U(ins_http_retry_after_ms(" 0 ", now), 0);
  CHECK(ins_http_retry_after_ms("99999999999999999999999", now) >= INS_OTLP_RETRY_AFTER_MAX_MS);
  CHECK(ins_http_retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT", now) == 0);
  CHECK(ins_http_retry_after_ms("Sun, 06 Nov 1994 08:50:07 GMT", now) == 30000);
  CHECK(ins_http_retry_after_ms("Sunday, 06-Nov-94 08:50:07 GMT", now) == 30000); /* RFC 850 */
  CHECK(ins_http_retry_after_ms("Sun Nov  6 08:50:07 1994", now) == 30000);       /* asctime */
  CHECK(ins_http_retry_after_ms("Mon, 07 Nov 1994 08:49:37 GMT", now) == 86400000);
  CHECK(ins_http_retry_after_ms("Sat, 05 Nov 1994 08:49:37 GMT", now) == 0); /* past: at once */
  CHECK(ins_http_retry_after_ms("Thu, 01 Jan 1970 00:00:00 GMT", 0) == 0);
  CHECK(ins_http_retry_after_ms("Fri, 29 Feb 2036 00:00:10 GMT", 2087856000) == 10000); /* leap day */
  const char *bad[] = {"", "-1", "1.5", "12s", "soon", "Sun, 06 Nov 1994 08:49:37 PST",
                       "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
                       "Sun, 06 Nov 1994 25:00:00 GMT"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK(ins_http_retry_after_ms(bad[i], now) == INS_HTTP_NO_RETRY_AFTER);
  CHECK(ins_http_retry_after_ms(NULL, now) == INS_HTTP_NO_RETRY_AFTER);
}

static const struct otlp_case k_cases[] = {
    {"retry_after_parse", case_retry_after_parse, false},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "httpdate");
}
