/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_curl.c - the libcurl client (src/net/curl.c, loaded with dlopen only for it), driven
 * through the exporter against tests/lib/otlp_receiver.py: https:// without libcurl (one warning
 * naming the scheme, the library and the package; no exporter); http:// never loads it; the
 * libcurl transport over http:// (keep-alive, gzip, a 503 with Retry-After honoured, a 400 not
 * retried, a timeout); stop() cutting a libcurl transfer short; https:// end to end with a
 * self-signed certificate. Without libcurl, or the openssl tool, a case says SKIP and passes.
 *
 * The one coarse time check cannot be failed by a slow machine: stop() with a collector that
 * never answers returns long before the request's own 60 s timeout. Retry-After is checked as
 * "not earlier than", on the receiver's clock. The certificate's directory is removed.
 *
 *   inspector-unit-curl --list | --case NAME [--python PY --receiver tests/lib/otlp_receiver.py]
 *   (main: otlp_cases.h)
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "otlp_cases.h"
#include "core/clock.h"
#include "net/curl.h"
#include "net/net.h"
#include "sink/otlp/otlp_export.h"

/* https:// without libcurl: one warning naming the scheme, the library and the package;
 * no exporter. */
static void case_https_without_libcurl(void) {
  ins_net_test_hooks.curl_lib = "libcurl-missing-for-a-test.so.4";
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "https://127.0.0.1:4318/v1/metrics");
  g_ep.timeout_ms = 1000;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e == NULL);
  CHECK_EQ_U(count_all_msgs(), 1);
  CHECK_EQ_U(count_msgs("https://", "libcurl4", "libcurl-missing-for-a-test.so.4", "is off", NULL), 1);
  ins_otlp_exporter_stop(e, 0); /* NULL: nothing */
}

/* http:// never loads libcurl (nor does anything else in this process). */
static void case_http_does_not_load_libcurl(void) {
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  endpoint(&r, NULL);
  g_ep.gzip = true;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("plain");
  CHECK(wait_requests(&r, 1));
  ins_otlp_exporter_stop(e, 5000);
  CHECK(dlopen(INS_NET_CURL_LIB, RTLD_NOW | RTLD_NOLOAD) == NULL);
  CHECK(dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL); /* while zlib was, for gzip */
  receiver_stop(&r);
}

/* The libcurl client (what https:// uses), over http:// (no TLS server here): keep-alive,
 * gzip, a 503 with Retry-After honoured, a 400 not retried, a timeout. */
static void case_libcurl_transport(void) {
  if (!libcurl_here()) {
    printf("SKIP: %s is not installed\n", INS_NET_CURL_LIB);
    return;
  }
  struct receiver r;
  CHECK(receiver_start(&r, "{\"actions\": [\"200\", \"503:1\", \"200\", \"400\", \"slow:3\"],"
                           " \"default\": \"200\"}"));
  endpoint(&r, "/prefix/v1/metrics?x=1");
  g_ep.gzip = true;
  g_ep.timeout_ms = 1000;
  g_ep.headers = "X-Tenant: a=b,c=d\r\n";
  ins_otlp_test_hooks.curl_for_http = true;
  ins_otlp_test_hooks.random = zero_random;
  fast_backoff();
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("curl 0");
  CHECK(wait_requests(&r, 1));
  supply_pushf("curl 1"); /* 503, Retry-After 1, then 200 */
  CHECK(wait_requests(&r, 3));
  supply_pushf("curl 2"); /* 400 */
  CHECK(wait_dropped(e, 1));
  supply_pushf("curl 3"); /* slow: a timeout, then 200 */
  CHECK(wait_requests(&r, 6));
  CHECK_EQ_U(ins_otlp_exporter_dropped(e), 1);
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[16];
  int n = receiver_requests(&r, q, 16);
  CHECK_EQ_U(n, 6);
  const char *want[] = {"curl 0", "curl 1", "curl 1", "curl 2", "curl 3", "curl 3"};
  for (int i = 0; i < n && i < 6; i++) {
    CHECK(body_is_str(&r, q[i].seq, want[i]));
    CHECK_STR(q[i].enc, "gzip");
    CHECK_STR(q[i].path, "/prefix/v1/metrics?x=1");
  }
  CHECK(n == 6 && q[2].t - q[1].t >= 1.0);
  CHECK(n == 6 && q[1].conn == q[0].conn && q[2].conn == q[0].conn); /* keep-alive */
  char *h = receiver_file(&r, q[0].seq, "headers", NULL);
  CHECK(h && strstr(h, "\nX-Tenant: a=b,c=d\n") && strstr(h, "Content-Type: application/x-protobuf\n"));
  CHECK(h && !strstr(h, "Expect:"));
  free(h);
  CHECK_EQ_U(count_msgs("with status 400", NULL), 1);
  /* two runs of failures, each ended by a delivery: the 503, then the timeout */
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 2);
  CHECK_EQ_U(count_msgs("cannot deliver", "answered 503, Retry-After 1", NULL), 1);
  CHECK_EQ_U(count_msgs("delivering to", NULL), 2);
  receiver_stop(&r);
}

/* stop() cuts a libcurl transfer short too (curl_multi_wait watches the stop descriptor). */
static void case_libcurl_stop_with_silent_collector(void) {
  if (!libcurl_here()) {
    printf("SKIP: %s is not installed\n", INS_NET_CURL_LIB);
    return;
  }
  struct receiver r;
  CHECK(receiver_start(&r, "{\"default\": \"slow:120\"}"));
  endpoint(&r, NULL);
  g_ep.timeout_ms = 60000;
  ins_otlp_test_hooks.curl_for_http = true;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("never answered, through libcurl");
  CHECK(wait_requests(&r, 1));
  uint64_t t0 = ins_mono_ns();
  ins_otlp_exporter_stop(e, 200);
  double s = (double)(ins_mono_ns() - t0) / 1e9;
  fprintf(stderr, "stop took %.3f s\n", s);
  CHECK(s < 30.0);
  CHECK_EQ_U(count_msgs("stopped", "1 dropped in all", NULL), 1);
  receiver_stop(&r);
}

static bool run_quiet(char *const argv[]) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int st = -1;
  bool ok = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) == 0 && waitpid(pid, &st, 0) == pid &&
            WIFEXITED(st) && WEXITSTATUS(st) == 0;
  posix_spawn_file_actions_destroy(&fa);
  return ok;
}

/* https:// end to end, when libcurl and the openssl tool are here: a self-signed
 * certificate for 127.0.0.1, trusted through the test hook. */
static void case_https_with_libcurl(void) {
  if (!libcurl_here()) {
    printf("SKIP: %s is not installed\n", INS_NET_CURL_LIB);
    return;
  }
  char dir[] = "/tmp/ins-otlp-tls-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char cert[64], key[64];
  snprintf(cert, sizeof cert, "%s/cert.pem", dir);
  snprintf(key, sizeof key, "%s/key.pem", dir);
  char *argv[] = {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                  "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", NULL};
  if (!run_quiet(argv)) {
    printf("SKIP: the openssl tool cannot make a certificate here\n");
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    return;
  }
  struct receiver r;
  CHECK(receiver_start_tls(&r, NULL, cert, key));
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "https://127.0.0.1:%d/v1/metrics", r.port);
  g_ep.timeout_ms = 5000;
  ins_net_test_hooks.ca_file = cert;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("over TLS 1");
  supply_pushf("over TLS 2");
  CHECK(wait_requests(&r, 2));
  ins_otlp_exporter_stop(e, 5000);
  static struct rec q[8];
  CHECK_EQ_U(receiver_requests(&r, q, 8), 2);
  CHECK(body_is_str(&r, q[0].seq, "over TLS 1") && body_is_str(&r, q[1].seq, "over TLS 2"));
  CHECK_EQ_U(q[1].conn, q[0].conn);
  CHECK_EQ_U(count_msgs("cannot deliver", NULL), 0);
  receiver_stop(&r);
  nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static const struct otlp_case k_cases[] = {
    {"https_without_libcurl", case_https_without_libcurl, false},
    {"http_does_not_load_libcurl", case_http_does_not_load_libcurl, true, "threads"},
    {"libcurl_transport", case_libcurl_transport, true, "threads"},
    {"libcurl_stop_with_silent_collector", case_libcurl_stop_with_silent_collector, true, "threads"},
    {"https_with_libcurl", case_https_with_libcurl, true, "threads"},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "curl");
}
