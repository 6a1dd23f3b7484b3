/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_rules_spec.c - the OTLP/HTTP spec's rules (src/sink/otlp/otlp_rules.c), held to
 * the spec as pure functions (no network, no clock): the retry schedule (exponential backoff
 * with full jitter, floored by Retry-After) with an injected random number, which answers are
 * retried, dropped or delivered, and a collector's partial success (protobuf and JSON) and
 * error message. (The rules at their edges, and a rejection restarting the backoff, are
 * test_otlp_rules.c's.)
 *
 *   inspector-unit-otlp_rules_spec --list | --case NAME   (main: otlp_cases.h)
 */
#include <stdint.h>
#include <string.h>

#include "otlp_cases.h"
#include "net/http.h"
#include "net/httpdate.h"
#include "sink/otlp/otlp_rules.h"

/* Exponential backoff with full jitter, floored by Retry-After (otlp_rules.h). */
static void case_retry_schedule(void) {
  struct ins_otlp_backoff b = {INS_OTLP_BACKOFF_BASE_MS, INS_OTLP_BACKOFF_CAP_MS};
  CHECK_EQ_U(b.base_ms, 1000);
  CHECK_EQ_U(b.cap_ms, 30000);
  /* the ceiling doubles from 1 s per failure, up to 30 s: the largest random reaches it */
  const uint64_t ceilings[] = {1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000};
  for (unsigned n = 1; n <= 8; n++) {
    uint64_t c = ceilings[n - 1];
    CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, n, INS_HTTP_NO_RETRY_AFTER, c), c);      /* random = ceiling */
    CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, n, INS_HTTP_NO_RETRY_AFTER, c + 1), 0);  /* wraps: full jitter */
    CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, n, INS_HTTP_NO_RETRY_AFTER, 0), 0);
    CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, n, INS_HTTP_NO_RETRY_AFTER, c / 2), c / 2);
  }
  /* many failures: no overflow, still the cap */
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 1000, INS_HTTP_NO_RETRY_AFTER, UINT64_MAX), UINT64_MAX % 30001);
  CHECK(ins_otlp_retry_delay_ms(&b, 4000000000u, INS_HTTP_NO_RETRY_AFTER, UINT64_MAX) <= 30000);
  /* Retry-After is a floor: never earlier, jitter may only add */
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 1, 5000, 0), 5000);
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 6, 5000, 20000), 20000);
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 1, 0, 700), 700);
  /* ... capped at 5 minutes */
  CHECK_EQ_U(ins_otlp_retry_delay_ms(&b, 1, 86400000, 0), INS_OTLP_RETRY_AFTER_MAX_MS);
  CHECK_EQ_U(INS_OTLP_RETRY_AFTER_MAX_MS, 300000);
  /* every delay lies in [floor, max(floor, ceiling)] whatever the random number */
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 10000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    unsigned n = 1 + (unsigned)(x % 12);
    int64_t ra = (x >> 20) % 3 == 0 ? (int64_t)((x >> 24) % 40000) : INS_HTTP_NO_RETRY_AFTER;
    uint64_t d = ins_otlp_retry_delay_ms(&b, n, ra, x);
    uint64_t c = n >= 6 ? 30000 : 1000ull << (n - 1);
    if (ra >= 0 && d < (uint64_t)ra) CHECK(!"below Retry-After");
    if (d > (ra > (int64_t)c ? (uint64_t)ra : c)) CHECK(!"above the ceiling");
  }
}

/* Which answers are retried (OTLP/HTTP "Failures", "Retryable Response Codes"). */
static void case_verdicts(void) {
  struct ins_http_result r;
  memset(&r, 0, sizeof r);
  const int retry[] = {0, 429, 502, 503, 504};
  const int reject[] = {400, 401, 403, 404, 405, 408, 413, 415, 500, 501, 505, 301, 302, 307};
  const int ok[] = {200, 202, 204};
  for (size_t i = 0; i < sizeof retry / sizeof *retry; i++) {
    r.status = retry[i];
    CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_RETRY);
  }
  for (size_t i = 0; i < sizeof reject / sizeof *reject; i++) {
    r.status = reject[i];
    CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_REJECTED);
  }
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    r.status = ok[i];
    CHECK(ins_otlp_verdict_of(&r) == INS_OTLP_DELIVERED);
  }
}

static void case_partial_success_parse(void) {
  int64_t rej;
  char msg[64];
  /* protobuf: partial_success { rejected_data_points: 5, error_message: "bad" } */
  const char pb[] = {0x0a, 0x07, 0x08, 0x05, 0x12, 0x03, 'b', 'a', 'd'};
  CHECK(ins_otlp_partial_success(pb, sizeof pb, false, &rej, msg, sizeof msg) == 1);
  CHECK_EQ_U(rej, 5);
  CHECK_STR(msg, "bad");
  /* empty response, empty partial_success: full success */
  CHECK(ins_otlp_partial_success("", 0, false, &rej, msg, sizeof msg) == 0);
  const char empty_ps[] = {0x0a, 0x00};
  CHECK(ins_otlp_partial_success(empty_ps, sizeof empty_ps, false, &rej, msg, sizeof msg) == 0);
  /* a warning only (0 rejected, a message): still worth the one log line */
  const char warn_only[] = {0x0a, 0x04, 0x12, 0x02, 'h', 'i'};
  CHECK(ins_otlp_partial_success(warn_only, sizeof warn_only, false, &rej, msg, sizeof msg) == 1);
  CHECK_EQ_U(rej, 0);
  /* truncated protobuf: no crash, nothing claimed */
  CHECK(ins_otlp_partial_success(pb, 3, false, &rej, msg, sizeof msg) == 0);
  /* JSON, int64 as a string (proto3 JSON) or a number */
  const char *j1 =
      "{\"partialSuccess\":{\"rejectedDataPoints\":\"12\",\"errorMessage\":\"too \\\"old\\\"\"}}";
  CHECK(ins_otlp_partial_success(j1, strlen(j1), true, &rej, msg, sizeof msg) == 1);
  CHECK_EQ_U(rej, 12);
  CHECK_STR(msg, "too \"old\"");
  const char *j2 = "{\"partialSuccess\": {\"rejectedDataPoints\": 3}}";
  CHECK(ins_otlp_partial_success(j2, strlen(j2), true, &rej, msg, sizeof msg) == 1);
  CHECK_EQ_U(rej, 3);
  CHECK(ins_otlp_partial_success("{}", 2, true, &rej, msg, sizeof msg) == 0);
  /* google.rpc.Status { code: 3, message: "no" } */
  const char st[] = {0x08, 0x03, 0x12, 0x02, 'n', 'o'};
  CHECK(ins_otlp_status_message(st, sizeof st, false, msg, sizeof msg) == 1);
  CHECK_STR(msg, "no");
  const char *js = "{\"code\":3,\"message\":\"bad metric\"}";
  CHECK(ins_otlp_status_message(js, strlen(js), true, msg, sizeof msg) == 1);
  CHECK_STR(msg, "bad metric");
  CHECK(ins_otlp_status_message("<html>", 6, false, msg, sizeof msg) == 0);
}

static const struct otlp_case k_cases[] = {
    {"retry_schedule", case_retry_schedule, false},
    {"verdicts", case_verdicts, false},
    {"partial_success_parse", case_partial_success_parse, false},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "otlp_rules_spec");
}
