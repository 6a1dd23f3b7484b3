/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redact.c - what a message may show of text that may hold a credential
 * (src/core/redact.c), and the warnings of core that show such text:
 *
 *   looks_secret     host names and words shown; tokens (a long run with digits, 32
 *                    characters of anything, a UUID, a credential's keyword) withheld
 *   collector_text   a collector's message: prose kept word for word; what echoes the
 *                    headers we sent (their values, in any case), what follows a
 *                    credential's keyword, URLs, key=value pairs, control characters
 *                    and non-ASCII bytes withheld as one "***" a run; cut with "..."
 *   values           a variable's wrong value shown when it is a short plain word, else
 *                    its length only
 *   env_names        the misspelling check names a variable up to the first byte a name
 *                    is not made of, never its value: an entry without '=' (execve allows
 *                    it) or a name with a token glued on shows no token
 *   config_values    the configuration's warnings (a boolean, an integer) show a wrong
 *                    value, and not a credential pasted into the variable
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/config.h"
#include "core/env.h"
#include "core/log.h"
#include "core/redact.h"

#define MAX_MSGS 64
static char g_msgs[MAX_MSGS][1100];
static int g_nmsgs;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  if (g_nmsgs < MAX_MSGS) vsnprintf(g_msgs[g_nmsgs++], sizeof g_msgs[0], fmt, ap);
  va_end(ap);
}

/* Messages holding s. */
static int count_msgs(const char *s) {
  int n = 0;
  for (int i = 0; i < g_nmsgs; i++) n += strstr(g_msgs[i], s) != NULL;
  return n;
}

static bool secret(const char *w) { return ins_redact_looks_secret(w, strlen(w)); }

static void case_looks_secret(void) {
  const char *shown[] = {"collector", "otel-collector.monitoring.svc.cluster.local", "ip-10-0-0-1.ec2.internal",
                         "my-loadbalancer-1234567890.us-west-2.elb.amazonaws.com", "localhost", "10.0.0.7",
                         "metrics", "v1", "nccl.ops", "4194304", "otlp-gateway-prod-us-central-0.grafana.net"};
  for (size_t i = 0; i < sizeof shown / sizeof *shown; i++) {
    if (secret(shown[i])) fprintf(stderr, "withheld: %s\n", shown[i]);
    CHECK(!secret(shown[i]));
  }
  const char *withheld[] = {
      "ghp_16C7e42F292c6912E7710c838347Ae178B4a",       /* a GitHub token: a long part with digits */
      "0123456789abcdef0123456789abcdef",               /* 32 hex digits (an API key) */
      "abcdefghijklmnopqrstuvwxyzabcdef",               /* 32 letters */
      "123e4567-e89b-12d3-a456-426614174000",           /* a UUID */
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig",   /* a JWT */
      "1234567890123456",                               /* 16 digits */
      "auth.example.com", "TOKEN", "x-api-key", "Bearer", "basic", "my-secret-host", "password1",
  };
  for (size_t i = 0; i < sizeof withheld / sizeof *withheld; i++) {
    if (!secret(withheld[i])) fprintf(stderr, "shown: %s\n", withheld[i]);
    CHECK(secret(withheld[i]));
  }
  CHECK(!ins_redact_looks_secret("", 0));
}

static const char *text(const char *t, const char *known) {
  static char out[160];
  return ins_redact_text(out, sizeof out, t, strlen(t), known);
}

static void case_collector_text(void) {
  const char *known = "authorization: Bearer s3cr3tTok\r\nX-Scope-OrgID: tenant7\r\n";
  /* prose, word for word (blanks become one space) */
  CHECK_STR(text("the test collector rejects this body", known), "the test collector rejects this body");
  CHECK_STR(text("Bad Request:  metric name 'nccl.ops' invalid (expected [a-z])", NULL),
            "Bad Request: metric name 'nccl.ops' invalid (expected [a-z])");
  CHECK_STR(text("test rejects 5 points", known), "test rejects 5 points");
  CHECK_STR(text("", known), "");
  /* the headers we sent, echoed: their values in any case, inside words too */
  CHECK_STR(text("unknown tenant tenant7, rejected", known), "unknown tenant *** rejected");
  CHECK_STR(text("no such token S3CR3TTOK here", known), "no such ***");
  CHECK_STR(text("got (s3cr3tTok) from you", known), "got *** from you");
  CHECK_STR(text("x-scope-orgid header missing", known), "*** header missing");
  /* a keyword: nothing after it */
  CHECK_STR(text("invalid header Authorization: Bearer abc def", NULL), "invalid header ***");
  CHECK_STR(text("quota exceeded; api_key=abc", NULL), "quota exceeded; ***");
  /* shapes: JSON, URLs, key=value, base64, control and non-ASCII bytes */
  CHECK_STR(text("{\"Authorization\":\"x\"}", NULL), "***");
  CHECK_STR(text("see https://h/v1/metrics?k=v for more", NULL), "see *** for more");
  CHECK_STR(text("field a=b and c=d then ok", NULL), "field *** and *** then ok");
  CHECK_STR(text("value dGhpcyBpcyBhIHNlY3JldA== rejected", NULL), "value *** rejected");
  CHECK_STR(text("bad\x01word, caf\xc3\xa9 x", NULL), "*** x");
  CHECK_STR(text("a b\n\tc", NULL), "a b c");
  /* cut to the buffer, and says so */
  char longtext[600] = "";
  for (int i = 0; i < 100; i++) strcat(longtext, "word ");
  const char *r = text(longtext, NULL);
  CHECK(strlen(r) < 160 && strlen(r) > 140);
  CHECK(!strcmp(r + strlen(r) - 3, "..."));
  char small[8];
  CHECK_STR(ins_redact_text(small, sizeof small, "abcdefghij", 10, NULL), "...");
  CHECK_STR(ins_redact_text(small, 4, "abc", 3, NULL), ""); /* no room to say anything */
}

static const char *value(const char *v) {
  static char out[INS_REDACT_VALUE_SHOWN];
  return ins_redact_value(out, sizeof out, v, strlen(v));
}

static void case_values(void) {
  const char *plain[] = {"abc", "-5x", "1e3", "maybe", " 0 ", "grpc", "zstd", "12abc", "perhaps loud"};
  for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
    char want[64];
    snprintf(want, sizeof want, "'%s'", plain[i]);
    CHECK_STR(value(plain[i]), want);
  }
  CHECK_STR(value("Bearer abc123"), "(13 bytes, not shown)");
  CHECK_STR(value("0123456789abcdef0123"), "(20 bytes, not shown)");
  CHECK_STR(value("dGhpcyBpcyBhIHNlY3JldA=="), "(24 bytes, not shown)");
  CHECK_STR(value("k=v"), "(3 bytes, not shown)");
  CHECK_STR(value("a\nb"), "(3 bytes, not shown)");
  CHECK_STR(value("abcdefghij abcdefghij abcdefghij x"), "(34 bytes, not shown)"); /* longer than 32 */
  CHECK_STR(value(""), "''");
}

static void case_env_names(void) {
  ins_log_set_logger(logger);
  char *envp[] = {
      "NCCL_INSPECTOR_OTLP_HEADERS:Authorization:Bearer:S3CRET", /* an entry without '=' */
      "NCCL_INSPECTOR_ENABLED S3CRET=1",                          /* a name with a token glued on */
      "OTEL_EXPORTER_OTLP_HEADER=Authorization=Bearer S3CRET",    /* misspelled: the value is a secret */
      "NCCL_INSPECTOR_PROM_DUMPS=1",
      "NCCL_INSPECTOR_ENABLE=1", /* known: nothing said */
      NULL,
  };
  CHECK_EQ_U(ins_env_check(envp), 4);
  CHECK_EQ_U(g_nmsgs, 4);
  CHECK_EQ_U(count_msgs("NCCL_INSPECTOR_OTLP_HEADERS... is not a setting Inspector knows"), 1);
  CHECK_EQ_U(count_msgs("NCCL_INSPECTOR_ENABLED... is not a setting Inspector knows"), 1);
  CHECK_EQ_U(count_msgs("OTEL_EXPORTER_OTLP_HEADER is not a setting Inspector knows, and is ignored: "
                        "did you mean OTEL_EXPORTER_OTLP_HEADERS?"), 1);
  CHECK_EQ_U(count_msgs("NCCL_INSPECTOR_PROM_DUMPS is not a setting"), 1);
  CHECK_EQ_U(count_msgs("S3CRET"), 0);
  CHECK_EQ_U(count_msgs("Bearer"), 0);
  /* a long name: 64 bytes of it */
  char name[200] = "NCCL_INSPECTOR_";
  while (strlen(name) < 150) strcat(name, "ABCDEFGHIJ");
  strcat(name, "=1");
  char *one[] = {name, NULL};
  g_nmsgs = 0;
  CHECK_EQ_U(ins_env_check(one), 1);
  char want[128];
  snprintf(want, sizeof want, "%.64s... is not a setting", name);
  CHECK_EQ_U(count_msgs(want), 1);
}

static void case_config_values(void) {
  ins_log_set_logger(logger);
  setenv("NCCL_INSPECTOR_DUMP_VERBOSE", "S3CRET0123456789abcdef", 1);
  setenv("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES", "Bearer S3CRET", 1);
  setenv("NCCL_INSPECTOR_ENABLE_P2P", "maybe", 1);
  struct ins_config cfg;
  ins_config_load(&cfg);
  CHECK_EQ_U(count_msgs("NCCL_INSPECTOR_DUMP_VERBOSE=(22 bytes, not shown) is not 0 or 1; using 0"), 1);
  CHECK_EQ_U(count_msgs("NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=(13 bytes, not shown) is not an integer"), 1);
  CHECK_EQ_U(count_msgs("NCCL_INSPECTOR_ENABLE_P2P='maybe' is not 0 or 1; using 1"), 1);
  CHECK_EQ_U(count_msgs("S3CRET"), 0);
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {{"looks_secret", case_looks_secret}, {"collector_text", case_collector_text},
               {"values", case_values},             {"env_names", case_env_names},
               {"config_values", case_config_values}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    bool run = argc < 2;
    for (int a = 1; a < argc; a++) run |= !strcmp(argv[a], cases[i].name);
    if (run) {
      g_nmsgs = 0;
      cases[i].fn();
    }
  }
  return check_report("redact");
}
