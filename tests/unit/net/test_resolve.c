/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_resolve.c - name lookup (src/net/resolve.c): the bounded one (glibc's getaddrinfo_a)
 * is the one in use; asked for through libanl.so.1 by name (a glibc before 2.34), or with
 * libanl missing (the plain getaddrinfo fallback), each says so and "localhost" resolves
 * through it: the exporter delivers a body to tests/lib/otlp_receiver.py by that name.
 *
 *   inspector-unit-resolve --list | --case NAME [--python PY --receiver tests/lib/otlp_receiver.py]
 *   (main: otlp_cases.h)
 */
#include <stdio.h>
#include <string.h>

#include "otlp_cases.h"
#include "net/resolve.h"

/* The bounded lookup is the one in use: glibc has getaddrinfo_a (in libc since 2.34, in
 * libanl.so.1 before); a name still resolves through it. */
static void case_lookup_is_bounded(void) {
#ifdef __GLIBC__
  CHECK(strncmp(ins_net_lookup_kind(), "getaddrinfo_a", 13) == 0);
#endif
  fprintf(stderr, "lookup: %s\n", ins_net_lookup_kind());
}

/* libanl asked for by name (the path of a glibc before 2.34), or missing (the plain
 * getaddrinfo fallback): each says so, and a name resolves either way. */
static void lookup_case(const char *lib, const char *want_kind) {
  ins_net_test_hooks.anl_lib = lib;
  CHECK_STR(ins_net_lookup_kind(), want_kind);
  struct receiver r;
  CHECK(receiver_start(&r, NULL));
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "http://localhost:%d/v1/metrics", r.port);
  g_ep.timeout_ms = 5000;
  struct ins_otlp_exporter *e = start(8);
  CHECK(e != NULL);
  supply_pushf("looked up");
  CHECK(wait_requests(&r, 1));
  ins_otlp_exporter_stop(e, 5000);
  CHECK(body_is_str(&r, 1, "looked up"));
  receiver_stop(&r);
}

static void case_lookup_through_libanl(void) {
#if defined(__GLIBC__) && !defined(__SANITIZE_THREAD__) /* TSan builds use the plain lookup */
  lookup_case("libanl.so.1", "getaddrinfo_a (libanl.so.1)");
#endif
}

static void case_lookup_fallback(void) { lookup_case("libanl-missing-for-a-test.so.1", "getaddrinfo"); }

static const struct otlp_case k_cases[] = {
    {"lookup_is_bounded", case_lookup_is_bounded, false},
    {"lookup_through_libanl", case_lookup_through_libanl, true, "threads"},
    {"lookup_fallback", case_lookup_fallback, true, "threads"},
};

int main(int argc, char **argv) {
  return otlp_cases_main(argc, argv, k_cases, sizeof k_cases / sizeof *k_cases, "resolve");
}
