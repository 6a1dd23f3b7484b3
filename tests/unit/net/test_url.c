/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_url.c - the endpoint URL (src/net/url.c): ins_net_url_parse's parts (host, port, path,
 * the Host header, the origin), its defaults (the scheme's port, "/"), IPv6 literals and their
 * zones, the path sent as given (query kept, fragment not), and the URLs it refuses, with a
 * reason that holds none of the URL. A pure function: no network, no clock.
 *
 *   inspector-unit-url --list | --case NAME   (main: otlp_cases.h)
 */
#include <string.h>

#include "otlp_cases.h"
#include "net/url.h"

static void case_url_parse(void) {
  struct ins_net_url u;
  char why[200];
  CHECK(ins_net_url_parse(&u, "http://collector:4318/v1/metrics", why, sizeof why) == 0);
  CHECK(!u.https);
  CHECK_STR(u.host, "collector");
  CHECK_STR(u.port, "4318");
  CHECK_STR(u.path, "/v1/metrics");
  CHECK_STR(u.host_hdr, "collector:4318");
  CHECK_STR(u.origin, "http://collector:4318");
  /* default ports; the Host header leaves a default port out */
  CHECK(ins_net_url_parse(&u, "HTTP://10.0.0.7", why, sizeof why) == 0);
  CHECK_STR(u.port, "80");
  CHECK_STR(u.path, "/");
  CHECK_STR(u.host_hdr, "10.0.0.7");
  CHECK(ins_net_url_parse(&u, "https://otel.example.com/prefix/v1/metrics", why, sizeof why) == 0);
  CHECK(u.https);
  CHECK_STR(u.port, "443");
  CHECK_STR(u.host_hdr, "otel.example.com");
  CHECK(ins_net_url_parse(&u, "https://otel.example.com:443/", why, sizeof why) == 0);
  CHECK_STR(u.host_hdr, "otel.example.com");
  CHECK(ins_net_url_parse(&u, "http://h:/x", why, sizeof why) == 0); /* an empty port: the default */
  CHECK_STR(u.port, "80");
  /* IPv6 */
  CHECK(ins_net_url_parse(&u, "http://[::1]:4318/v1/metrics", why, sizeof why) == 0);
  CHECK_STR(u.host, "::1");
  CHECK_STR(u.host_hdr, "[::1]:4318");
  CHECK_STR(u.origin, "http://[::1]:4318");
  CHECK(ins_net_url_parse(&u, "https://[2001:db8::7]/m", why, sizeof why) == 0);
  CHECK_STR(u.host, "2001:db8::7");
  CHECK_STR(u.host_hdr, "[2001:db8::7]");
  CHECK(ins_net_url_parse(&u, "http://[fe80::1%25eth0]:9/", why, sizeof why) == 0);
  CHECK_STR(u.host, "fe80::1%eth0");
  /* the path as given: query kept, fragment not sent */
  CHECK(ins_net_url_parse(&u, "http://h:1/a/b/v1/metrics?tenant=x%20y&k=1#frag", why, sizeof why) == 0);
  CHECK_STR(u.path, "/a/b/v1/metrics?tenant=x%20y&k=1");
  CHECK(ins_net_url_parse(&u, "http://h?x=1", why, sizeof why) == 0);
  CHECK_STR(u.path, "/?x=1");
  /* refused */
  const char *bad[] = {"ftp://h/", "h:4318/v1/metrics", "http://", "http:///x", "http://user:pw@h/",
                       "http://h:65536/", "http://h:0/", "http://h:12a/", "http://[::1/", "http://[]/",
                       "http://h/a b", "http://h/a\r\nX: y", "http://h o/", "http://[::1]x/",
                       "http://[fe80::1%eth0]/", "http://[fe80::1%25]/", "http://[::g]/",
                       /* an '@' anywhere: a password with '/' in it would make "u" the host and
                        * send it the headers; one in a path is refused alike */
                       "http://u:80/pw@collector:4318/", "http://u:pw?x@collector/", "http://h/p@x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    why[0] = '\0';
    CHECK(ins_net_url_parse(&u, bad[i], why, sizeof why) != 0);
    CHECK(why[0] != '\0');
    CHECK(!strstr(why, "pw") && !strstr(why, "collector")); /* the reason holds none of the URL */
  }
  /* the scheme read alone (the OTLP configuration's question, before a port is filled in),
   * by the parser's rule */
  CHECK(ins_net_url_scheme("HTTPS://h") == INS_NET_HTTPS);
  CHECK(ins_net_url_scheme("http://h:/x") == INS_NET_HTTP);
  const char *neither[] = {"ftp://h/", "h:4318/v1/metrics", "http:/h", "httpss://h", "", "1http://h"};
  for (size_t i = 0; i < sizeof neither / sizeof *neither; i++)
    CHECK(ins_net_url_scheme(neither[i]) == INS_NET_NOT_HTTP);
}

static const struct otlp_case k_cases[] = {
    {"url_parse", case_url_parse, false},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "url");
}
