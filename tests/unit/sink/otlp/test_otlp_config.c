/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_config.c - the OTLP sink's configuration (src/sink/otlp/otlp_config.c): what a
 * message may show of an endpoint (ins_otlp_url_redact: net/url.c's ins_net_url_shown with
 * OTLP's path), every warning that shows an endpoint showing it redacted (the
 * configuration's, and the exporter's refusal of it), the endpoint made from a base endpoint
 * with a query, an empty port (4318, with one warning), and the reserved headers dropped from
 * OTEL_EXPORTER_OTLP_HEADERS with one warning that shows no value. The variables are set
 * and read in this process; no network.
 *
 *   inspector-unit-otlp_config --list | --case NAME   (main: otlp_cases.h)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp_cases.h"
#include "net/http.h"
#include "net/url.h"
#include "sink/otlp/otlp_config.h"

/* ins_otlp_url_redact (net/url.h's ins_net_url_shown with OTLP's path): by structure, whatever
 * the parts hold. Nothing between "//" and the last '@' survives, nor a path but "/" and
 * "/v1/metrics", a query, a fragment, a host shaped like a credential, or anything beyond
 * the scheme of a URL that does not parse. */
static void case_url_redact(void) {
  char out[INS_OTLP_URL_SHOWN];
  const char *cases[][2] = {
      /* userinfo, whatever the password holds: '/', '?', '#', '@', ':' (base64 tokens) */
      {"http://user:PASSWORD@host:4318/v1/metrics", "http://***@host:4318/v1/metrics"},
      {"https://TOKEN@collector/v1/metrics", "https://***@collector/v1/metrics"},
      {"http://u:SE/CR?ET#x@host:4318/v1/metrics", "http://***@host:4318/v1/metrics"},
      {"https://u:SE@CR:ET@host/v1/metrics", "https://***@host/v1/metrics"},
      {"http://u:80/SECRET@host:4318", "http://***@host:4318"},
      {"http://u:p@SE/C?R#E+T=@[::1]:4318/v1/metrics", "http://***@[::1]:4318/v1/metrics"},
      {"http://a@b@h/x", "http://***@h/***"},
      {"http://h/path@not-userinfo", "http://***@not-userinfo"}, /* the last '@': shows less */
      {"http://SECRET@", "http://***@***"},
      /* hosts and ports as given */
      {"http://localhost:4318/v1/metrics", "http://localhost:4318/v1/metrics"},
      {"HTTPS://Collector:443/v1/metrics", "HTTPS://Collector:443/v1/metrics"},
      {"http://collector", "http://collector"},
      {"http://collector:/", "http://collector:/"},
      {"http://[::1]:4318/v1/metrics", "http://[::1]:4318/v1/metrics"},
      {"https://[2001:db8::7]/", "https://[2001:db8::7]/"},
      {"http://[2001:0db8:85a3:0000:0000:8a2e:0370:7334]:9/v1/metrics",
       "http://[2001:0db8:85a3:0000:0000:8a2e:0370:7334]:9/v1/metrics"},
      {"http://[fe80::1%25eth0]:9/", "http://[fe80::1%eth0]:9/"},
      {"http://otel-collector.monitoring.svc.cluster.local:4318/v1/metrics",
       "http://otel-collector.monitoring.svc.cluster.local:4318/v1/metrics"},
      /* a host that is a credential ("https://TOKEN@collector" without its "@collector") */
      {"https://ghp_16C7e42F292c6912E7710c838347Ae178B4a/v1/metrics", "https://***/v1/metrics"},
      {"http://0123456789abcdef0123456789abcdef:4318", "http://***:4318"},
      {"http://123e4567-e89b-12d3-a456-426614174000/v1/metrics", "http://***/v1/metrics"},
      {"http://secret-token.example/v1/metrics", "http://***/v1/metrics"},
      /* paths, queries, fragments */
      {"http://c:4318/SECRET/v1/metrics", "http://c:4318/***"},
      {"http://c:4318/v1/metrics/SECRET", "http://c:4318/***"},
      {"https://c/v1/metrics?token=SECRET&tenant=a", "https://c/v1/metrics?***"},
      {"http://c:4318?SECRET", "http://c:4318?***"},
      {"http://c/p?a=SECRET;b=SECRET&&c#SECRET", "http://c/***?***#***"},
      {"http://c/#SECRET", "http://c/#***"},
      {"http://h/a\nFORGED", "http://h/***"}, /* no new log line */
      /* malformed: nothing beyond the scheme */
      {"http://token=SECRET/v1/metrics", "http://***"},
      {"http://user:SECRET/v1/metrics", "http://***"},  /* "SECRET" would be a port */
      {"http://c:99999/", "http://***"},
      {"http://[::1/SECRET", "http://***"},
      {"http://h o/SECRET", "http://***"},
      {"http://", "http://***"},
      {"grpc://u:SECRET@h:4317?key=SECRET", "grpc://***@h:4317?***"},
      /* no scheme: nothing */
      {"u:SECRET@h:4318/v1", "***"},
      {"localhost:4318", "***"},
      {"SECRET", "***"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    CHECK_STR(ins_otlp_url_redact(cases[i][0], out, sizeof out), cases[i][1]);
  CHECK_STR(ins_otlp_url_redact(NULL, out, sizeof out), "");
  CHECK_STR(ins_net_url_shown("http://c/v1/metrics", NULL, out, sizeof out), "http://c/***"); /* no safe path */
  /* very long: cut to the buffer, and says so; what is cut never shows a secret either */
  static char longurl[9000];
  snprintf(longurl, sizeof longurl, "http://u:SECRET/%04000d@", 0);
  size_t n = strlen(longurl);
  for (int i = 0; i < 25; i++) n += (size_t)snprintf(longurl + n, sizeof longurl - n, "abcdefgh.");
  snprintf(longurl + n, sizeof longurl - n, "x:4318/SECRET%04000d?token=SECRET#SECRET", 0);
  CHECK_STR(ins_otlp_url_redact(longurl, out, sizeof out) + 7 + 4 + 225, "x:4318/***?***#***");
  char small[64];
  const char *r = ins_otlp_url_redact(longurl, small, sizeof small);
  CHECK_EQ_U(strlen(r), sizeof small - 1);
  CHECK(!strcmp(r + strlen(r) - 3, "..."));
  CHECK(!strncmp(r, "http://***@abcdefgh.abcdefgh.", 29));
  CHECK(strstr(r, "SECRET") == NULL);
  snprintf(longurl, sizeof longurl, "http://collector:4318/%08000d?token=SECRET", 0); /* a path too long to send */
  CHECK_STR(ins_otlp_url_redact(longurl, out, sizeof out), "http://collector:4318/***?***");
}

/* Every warning that shows an endpoint shows it redacted: the configuration's (a wrong
 * scheme, a URL too long) and the exporter's (a URL it cannot use). */
static void case_endpoint_warnings_redacted(void) {
  struct ins_otlp_config c;
  setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ftp://user:PASSWORD@h:21/v1/metrics?token=TOKEN", 1);
  ins_otlp_config_load(&c);
  ins_otlp_config_free(&c);
  unsetenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT");
  static char longbase[2200];
  snprintf(longbase, sizeof longbase, "http://collector/%02100d?token=TOKEN", 0);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", longbase, 1);
  ins_otlp_config_load(&c);
  ins_otlp_config_free(&c);
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  endpoint(NULL, NULL);
  snprintf(g_ep.url, sizeof g_ep.url, "http://user:PASSWORD@collector:4318/v1/metrics?token=TOKEN");
  CHECK(start(4) == NULL);
  CHECK_EQ_U(count_all_msgs(), 3);
  CHECK_EQ_U(count_msgs("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT='ftp://***@h:21/v1/metrics?***'", NULL), 1);
  CHECK_EQ_U(count_msgs("OTEL_EXPORTER_OTLP_ENDPOINT='http://collector/***?***'", NULL), 1);
  CHECK_EQ_U(count_msgs("the endpoint http://***@collector:4318/v1/metrics?***", "user:password@", NULL), 1);
  CHECK_EQ_U(count_msgs("PASSWORD", NULL), 0);
  CHECK_EQ_U(count_msgs("TOKEN", NULL), 0);
}

/* A base endpoint with a query: /v1/metrics goes to the end of its path, not of the query
 * (which a warning would then show as a value, and the collector would not route). */
static void case_base_endpoint_with_query(void) {
  struct ins_otlp_config c;
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/otlp/?tenant=a#f", 1);
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://collector:4318/otlp/v1/metrics?tenant=a#f");
  ins_otlp_config_free(&c);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318?tenant=a", 1);
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://collector:4318/v1/metrics?tenant=a");
  ins_otlp_config_free(&c);
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  CHECK_EQ_U(count_all_msgs(), 0);
}

/* An endpoint with an empty port ("http://collector:/") is sent to OTLP/HTTP's port 4318, not
 * to the scheme's default (80, 443) where no collector listens, with one warning that names the
 * variable, the port used and the URL (redacted); a port that is given stays as it is. */
static void case_endpoint_empty_port(void) {
  static const struct {
    const char *var, *value, *url, *scheme_port, *shown;
  } k[] = {
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:/", "http://collector:4318/v1/metrics", "80",
       "http://collector:/"},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:", "http://collector:4318/v1/metrics", "80",
       "http://collector:"},
      {"OTEL_EXPORTER_OTLP_ENDPOINT", "https://[::1]:/otlp", "https://[::1]:4318/otlp/v1/metrics", "443",
       "https://[::1]:/***"}, /* a path other than /v1/metrics is not shown */
      {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://collector:/otlp/v1/metrics",
       "http://collector:4318/otlp/v1/metrics", "80", "http://collector:/***"},
  };
  for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
    int before = count_all_msgs();
    setenv(k[i].var, k[i].value, 1);
    struct ins_otlp_config c;
    ins_otlp_config_load(&c);
    unsetenv(k[i].var);
    CHECK_STR(c.ep.url, k[i].url);
    struct ins_net_url u;
    char why[128] = "";
    CHECK(ins_net_url_parse(&u, c.ep.url, why, sizeof why) == 0);
    CHECK_STR(u.port, "4318");
    ins_otlp_config_free(&c);
    CHECK_EQ_U(count_all_msgs() - before, 1);
    char named[160], scheme[64];
    snprintf(named, sizeof named, "%s='%s' has an empty port", k[i].var, k[i].shown);
    snprintf(scheme, sizeof scheme, "not the scheme's %s", k[i].scheme_port);
    CHECK_EQ_U(count_msgs(named, "using port 4318", scheme, NULL), 1);
  }
  /* credentials in the URL stay out of the warning; a given port is kept, without a word */
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://user:SECRET@collector:/?token=TOKEN", 1);
  struct ins_otlp_config c;
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.url, "http://user:SECRET@collector:4318/v1/metrics?token=TOKEN");
  ins_otlp_config_free(&c);
  CHECK_EQ_U(count_msgs("'http://***@collector:/?***' has an empty port", "'http://***@collector:4318/?***'",
                        NULL), 1);
  CHECK_EQ_U(count_msgs("SECRET", NULL) + count_msgs("TOKEN", NULL), 0);
  int before = count_all_msgs();
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:80/", 1);
  ins_otlp_config_load(&c);
  unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
  CHECK_STR(c.ep.url, "http://collector:80/v1/metrics");
  ins_otlp_config_free(&c);
  CHECK_EQ_U(count_all_msgs() - before, 0);
}

/* Headers the exporter writes itself are dropped from OTEL_EXPORTER_OTLP_HEADERS with
 * one warning that names them and shows no value; the others are kept as given. */
static void case_reserved_headers_dropped(void) {
  setenv("OTEL_EXPORTER_OTLP_HEADERS",
         "Host=evil.example,content-length=5,Transfer-Encoding=chunked,x-ok=fine%3Dyes,"
         "CONNECTION=close,User-Agent=mine,authorization=Bearer%20tok",
         1);
  struct ins_otlp_config c;
  ins_otlp_config_load(&c);
  CHECK_STR(c.ep.headers, "x-ok: fine=yes\r\nauthorization: Bearer tok\r\n");
  ins_otlp_config_free(&c);
  unsetenv("OTEL_EXPORTER_OTLP_HEADERS");
  CHECK_EQ_U(count_all_msgs(), 1);
  CHECK_EQ_U(count_msgs("OTEL_EXPORTER_OTLP_HEADERS", "Host, content-length, Transfer-Encoding, CONNECTION, "
                        "User-Agent", "dropped", NULL), 1);
  CHECK_EQ_U(count_msgs("evil", NULL) + count_msgs("chunked", NULL) + count_msgs("mine", NULL), 0);
  CHECK_EQ_U(count_msgs("tok", NULL), 0);
  /* the rule itself: any case, whole names only */
  CHECK(ins_http_header_reserved("HOST", 4) && ins_http_header_reserved("te", 2));
  CHECK(ins_http_header_reserved("Content-Encoding", 16) && ins_http_header_reserved("expect", 6));
  CHECK(!ins_http_header_reserved("Hostname", 8) && !ins_http_header_reserved("X-Host", 6));
  CHECK(!ins_http_header_reserved("Authorization", 13));
}

static const struct otlp_case k_cases[] = {
    {"url_redact", case_url_redact, false},
    {"endpoint_warnings_redacted", case_endpoint_warnings_redacted, false},
    {"reserved_headers_dropped", case_reserved_headers_dropped, false},
    {"base_endpoint_with_query", case_base_endpoint_with_query, false},
    {"endpoint_empty_port", case_endpoint_empty_port, false},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "otlp_config");
}
