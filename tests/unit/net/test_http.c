/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http.c - the connection (src/net/http.c): the header names both clients write
 * themselves or that frame the message (ins_http_header_reserved) are never sent from the
 * caller's headers, handed to the transport directly: the collector (tests/lib/otlp_receiver.py)
 * sees one Host and one Content-Length, ours, and the body; through the plain client and
 * through libcurl where it is installed. (The configuration's dropping of them from
 * OTEL_EXPORTER_OTLP_HEADERS is test_otlp_config.c's.)
 *
 *   inspector-unit-http --list | --case NAME [--python PY --receiver tests/lib/otlp_receiver.py]
 *   (main: otlp_cases.h)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "otlp_cases.h"
#include "sink/otlp/otlp_export.h"

/* Reserved headers handed to the transport directly (not through the configuration) are
 * never sent: the collector sees one Host and one Content-Length, ours, and the body;
 * through our client, and through libcurl (which would let a given Host or
 * Content-Length replace its own) where it is installed. */
static void reserved_not_sent(bool curl) {
  ins_otlp_test_hooks.curl_for_http = curl;
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  g_ep.headers = "Host: evil.example\r\nContent-Length: 99\r\nX-Ok: 1\r\ntransfer-encoding: chunked\r\n"
                 "Connection: close\r\n";
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("framed once");
  CHECK(wait_requests(&r, 1));
  ins_otlp_exporter_stop(e, 5000);
  CHECK(body_is_str(&r, 1, "framed once"));
  char *h = receiver_file(&r, 1, "headers", NULL);
  CHECK(h != NULL);
  char host[64];
  snprintf(host, sizeof host, "\nHost: 127.0.0.1:%d\n", r.port);
  int hosts = 0, lengths = 0, te = 0, conn = 0;
  for (const char *p = h; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
    hosts += !strncasecmp(p, "Host:", 5);
    lengths += !strncasecmp(p, "Content-Length:", 15);
    te += !strncasecmp(p, "Transfer-Encoding:", 18);
    conn += !strncasecmp(p, "Connection:", 11);
  }
  CHECK_EQ_U(hosts, 1);
  CHECK_EQ_U(lengths, 1);
  CHECK_EQ_U(te + conn, 0);
  CHECK(h && (strstr(h, host) || !strncmp(h, host + 1, strlen(host + 1))));
  CHECK(h && strstr(h, "\nContent-Length: 11\n"));
  CHECK(h && strstr(h, "\nX-Ok: 1\n"));
  free(h);
  receiver_stop(&r);
  ins_otlp_test_hooks.curl_for_http = false;
}

static void case_reserved_headers_not_sent(void) {
  reserved_not_sent(false);
  if (libcurl_here()) reserved_not_sent(true);
  else fprintf(stderr, "libcurl is not installed: its path is not checked\n");
}

static const struct otlp_case k_cases[] = {
    {"reserved_headers_not_sent", case_reserved_headers_not_sent, true, "threads"},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "http");
}
