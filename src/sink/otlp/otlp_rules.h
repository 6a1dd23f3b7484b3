/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_rules.h - the OTLP/HTTP spec's rules for a collector's answer
 * (https://opentelemetry.io/docs/specs/otlp/): which answers are delivered,
 * retryable or rejected, how long to wait before the next attempt (backoff with
 * jitter, floored by Retry-After), and what a partial success or a failure's
 * Status says. The transport (src/net/http.h) only reports what came back; the
 * exporter (otlp_export.c) applies these rules, owns the queue and logs.
 *
 * Pure functions (time and randomness are parameters), so that tests hold them
 * to the spec without a network or a clock.
 */
#ifndef INS_OTLP_RULES_H
#define INS_OTLP_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/http.h"

enum ins_otlp_verdict {
  INS_OTLP_DELIVERED, /* 2xx, a partial success included ("Partial Success": MUST NOT retry) */
  INS_OTLP_RETRY,     /* 429, 502, 503, 504, or no answer ("Retryable Response Codes", "Failures") */
  INS_OTLP_REJECTED,  /* any other status: "MUST NOT retry"; the body is dropped */
};
enum ins_otlp_verdict ins_otlp_verdict_of(const struct ins_http_result *res);

/* The retry schedule: exponential backoff with full jitter, floored by Retry-After
 * (its value read by net/httpdate.h's ins_http_retry_after_ms).
 * After the n-th consecutive failure (n >= 1) the next attempt waits
 *   jitter = random % (min(cap, base * 2^(n-1)) + 1)   ms, and
 *   max(jitter, min(retry_after, INS_OTLP_RETRY_AFTER_MAX_MS)) when the answer had one.
 * Constants and their reasons: otlp_rules.c. */
#define INS_OTLP_BACKOFF_BASE_MS 1000u
#define INS_OTLP_BACKOFF_CAP_MS 30000u
#define INS_OTLP_RETRY_AFTER_MAX_MS 300000
struct ins_otlp_backoff {
  uint32_t base_ms, cap_ms;
};
uint64_t ins_otlp_retry_delay_ms(const struct ins_otlp_backoff *b, unsigned failures,
                                 int64_t retry_after_ms, uint64_t random);

/* A 200's body: 1 with *rejected and msg filled when it holds a populated
 * partial_success (ExportMetricsServiceResponse, protobuf or JSON), else 0. */
int ins_otlp_partial_success(const char *body, size_t len, bool json, int64_t *rejected, char *msg,
                             size_t msglen);
/* A failure's body (google.rpc.Status, protobuf or JSON): its message into msg; 0 if
 * none could be read (msg is then ""). */
int ins_otlp_status_message(const char *body, size_t len, bool json, char *msg, size_t msglen);

#endif
