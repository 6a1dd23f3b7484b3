/* SPDX-License-Identifier: Apache-2.0 */
/*
 * httpdate.h - Retry-After (RFC 9110 10.2.3): delay-seconds or an HTTP-date
 * (RFC 9110 5.6.7), as the delay it asks for. Owns the parsing only; whether and
 * how long a caller honours the delay (caps, backoff) is the caller's rule
 * (sink/otlp/otlp_rules.c for OTLP).
 *
 * Pure: the wall clock is a parameter, so that tests fix it.
 */
#ifndef INS_NET_HTTPDATE_H
#define INS_NET_HTTPDATE_H

#include <stdint.h>

#define INS_HTTP_NO_RETRY_AFTER (-1)
/* The delay it asks for in ms (0 for a date already past), or INS_HTTP_NO_RETRY_AFTER
 * when v is not a valid value. now_unix_s is the wall clock (a parameter: tests fix it).
 * The three date forms recipients must accept: IMF-fixdate, RFC 850, asctime. */
int64_t ins_http_retry_after_ms(const char *v, int64_t now_unix_s);

#endif
