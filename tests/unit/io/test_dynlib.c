/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dynlib.c - loading an optional library at run time (src/io/dynlib.c),
 * and the reasons its two users give when the library is not the one they
 * need (net/curl.c for libcurl, sink/otlp/otlp_export.c for zlib), one
 * behaviour per case:
 *
 *   inspector-unit-dynlib --list | --case NAME
 *
 * libc.so.6 stands in for a library that is there: every process has it, it
 * has strlen and getpid, and it has neither curl's functions nor zlib's, which
 * makes it the "wrong library" of the users' cases. No network, no clock, no
 * files.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "core/log.h"
#include "io/dynlib.h"
#if INSPECTOR_OTLP
#include "net/curl.h"
#include "net/net.h"
#include "sink/otlp/otlp_export.h"
#endif

#define MISSING_LIB "libinspector-missing-for-a-test.so.1"

/* ---- the helper ---- */

static struct {
  __typeof__(strlen) *strlen_fn;
  __typeof__(getpid) *getpid_fn;
} g_c;

static const struct ins_dynlib_sym g_c_syms[] = {
    INS_DYNLIB_SYM(strlen, g_c.strlen_fn),
    INS_DYNLIB_SYM(getpid, g_c.getpid_fn),
};
#define NSYMS (sizeof g_c_syms / sizeof *g_c_syms)

/* Every slot filled with the library's function, under its own name. */
static void case_loads_and_fills(void) {
  static struct ins_dynlib d = INS_DYNLIB_INIT;
  char why[200] = "";
  CHECK_STR(g_c_syms[0].name, "strlen");
  CHECK_STR(g_c_syms[1].name, "getpid");
  CHECK_EQ_U(ins_dynlib_load(&d, "libc.so.6", g_c_syms, NSYMS, why, sizeof why), INS_DYNLIB_LOADED);
  CHECK_STR(why, "");
  CHECK(g_c.strlen_fn && g_c.getpid_fn);
  if (g_c.strlen_fn) CHECK_EQ_U(g_c.strlen_fn("dynlib"), 6);
  if (g_c.getpid_fn) CHECK_EQ_U(g_c.getpid_fn(), getpid());
}

/* Once loaded, later calls neither load again nor touch the slots: any name, even one
 * that cannot be loaded, is answered from the first success. */
static void case_loaded_once(void) {
  static struct ins_dynlib d = INS_DYNLIB_INIT;
  char why[200] = "";
  CHECK_EQ_U(ins_dynlib_load(&d, "libc.so.6", g_c_syms, NSYMS, why, sizeof why), INS_DYNLIB_LOADED);
  __typeof__(strlen) *first = g_c.strlen_fn;
  g_c.strlen_fn = NULL; /* a reload would fill it again */
  CHECK_EQ_U(ins_dynlib_load(&d, MISSING_LIB, g_c_syms, NSYMS, why, sizeof why), INS_DYNLIB_LOADED);
  CHECK(g_c.strlen_fn == NULL);
  CHECK_STR(why, "");
  CHECK(first != NULL);
}

/* A library dlopen cannot find: named in the reason; the failure is not remembered, so a
 * later call with a library that is there loads it. */
static void case_missing_library(void) {
  static struct ins_dynlib d = INS_DYNLIB_INIT;
  char why[200] = "";
  CHECK_EQ_U(ins_dynlib_load(&d, MISSING_LIB, g_c_syms, NSYMS, why, sizeof why), INS_DYNLIB_NO_LIBRARY);
  CHECK_STR(why, MISSING_LIB " cannot be loaded");
  CHECK(!d.ok);
  why[0] = '\0';
  CHECK_EQ_U(ins_dynlib_load(&d, "libc.so.6", g_c_syms, NSYMS, why, sizeof why), INS_DYNLIB_LOADED);
  CHECK_STR(why, "");
}

/* A library without one of the functions: the library and the first missing name in the
 * reason, and not loaded (a later call tries again, and fails the same way). */
static void case_missing_symbol(void) {
  static struct ins_dynlib d = INS_DYNLIB_INIT;
  static void (*absent)(void), (*absent2)(void);
  const struct ins_dynlib_sym syms[] = {
      INS_DYNLIB_SYM(strlen, g_c.strlen_fn),
      {"ins_no_such_function_for_a_test", &absent},
      {"ins_another_missing_function", &absent2},
  };
  char why[200] = "";
  for (int i = 0; i < 2; i++) {
    why[0] = '\0';
    CHECK_EQ_U(ins_dynlib_load(&d, "libc.so.6", syms, 3, why, sizeof why), INS_DYNLIB_NO_SYMBOL);
    CHECK_STR(why, "libc.so.6 has no ins_no_such_function_for_a_test");
    CHECK(!d.ok);
  }
}

/* A reason longer than why: cut, still a string. */
static void case_reason_cut(void) {
  static struct ins_dynlib d = INS_DYNLIB_INIT;
  char why[8];
  memset(why, 'x', sizeof why);
  CHECK_EQ_U(ins_dynlib_load(&d, MISSING_LIB, g_c_syms, NSYMS, why, sizeof why), INS_DYNLIB_NO_LIBRARY);
  CHECK_STR(why, "libinsp");
}

#if INSPECTOR_OTLP
/* ---- its users' reasons ---- */

/* libcurl.so.4 that is not libcurl (or one older than curl_multi_wait): the library, the
 * first missing function, and the version hint, as before io/dynlib.c. */
static void case_curl_without_its_functions(void) {
  ins_net_test_hooks.curl_lib = "libc.so.6";
  struct ins_curl k = {0};
  char why[200] = "";
  CHECK(ins_curl_open(&k, why, sizeof why) == -1);
  CHECK_STR(why, "libc.so.6 has no curl_easy_init (libcurl older than 7.28?)");
  CHECK(k.easy == NULL && k.multi == NULL);
  ins_curl_free(&k);
}

#define MAX_MSGS 16
static char g_msgs[MAX_MSGS][1100];
static int g_nmsgs;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  if (g_nmsgs < MAX_MSGS) vsnprintf(g_msgs[g_nmsgs++], sizeof g_msgs[0], fmt, ap);
  va_end(ap);
}

static int no_bodies(void *arg, struct ins_otlp_body *bodies, int max, bool fresh, bool *more) {
  (void)arg, (void)bodies, (void)max, (void)fresh;
  *more = false;
  return 0;
}

/* gzip asked for, and libz.so.1 is not zlib: one warning naming the library and the
 * missing function; the exporter runs, uncompressed. Nothing is sent (no bodies), so the
 * endpoint is never connected to. */
static void case_zlib_without_its_functions(void) {
  ins_log_set_logger(logger);
  ins_otlp_test_hooks.zlib_lib = "libc.so.6";
  struct ins_otlp_endpoint ep = {.gzip = true, .timeout_ms = 1000};
  snprintf(ep.url, sizeof ep.url, "http://127.0.0.1:9/v1/metrics");
  struct ins_otlp_exporter *e = ins_otlp_exporter_start(&ep, 60000, 4, no_bodies, NULL, NULL);
  CHECK(e != NULL);
  ins_otlp_exporter_stop(e, 0);
  CHECK_EQ_U(g_nmsgs, 1);
  CHECK(strstr(g_msgs[0], "gzip was asked for") != NULL);
  CHECK(strstr(g_msgs[0], "zlib cannot be used: libc.so.6 has no deflateInit2_. Metrics are sent "
                          "uncompressed") != NULL);
  for (int i = 0; i < g_nmsgs; i++) fprintf(stderr, "[log] %s\n", g_msgs[i]);
}
#endif

static const struct {
  const char *name;
  void (*fn)(void);
} g_cases[] = {
    {"loads_and_fills", case_loads_and_fills},
    {"loaded_once", case_loaded_once},
    {"missing_library", case_missing_library},
    {"missing_symbol", case_missing_symbol},
    {"reason_cut", case_reason_cut},
#if INSPECTOR_OTLP
    {"curl_without_its_functions", case_curl_without_its_functions},
    {"zlib_without_its_functions", case_zlib_without_its_functions},
#endif
};

int main(int argc, char **argv) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--list")) {
      for (size_t c = 0; c < sizeof g_cases / sizeof *g_cases; c++) list_case(g_cases[c].name, NULL);
      return 0;
    }
    if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
  }
  int ran = 0;
  for (size_t c = 0; c < sizeof g_cases / sizeof *g_cases; c++) {
    if (only && strcmp(only, g_cases[c].name)) continue;
    g_cases[c].fn();
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "no case named %s\n", only);
    return 2;
  }
  return check_report("dynlib");
}
