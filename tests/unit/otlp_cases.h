/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_cases.h - what the tests of the OTLP exporter and its transport share (one file per
 * module: sink/otlp/test_otlp_export.c, test_otlp_config.c, test_otlp_rules_spec.c; net/test_url.c,
 * test_httpdate.c, test_http1_resp.c, test_http1_deadline.c, test_http.c, test_curl.c,
 * test_resolve.c):
 *
 *   - their main (otlp_cases_main): `--list` prints the cases this command line can run
 *     (cases.h list_case: a case that needs tests/lib/otlp_receiver.py only with a python),
 *     `--case NAME` runs one, no argument runs every case, each in a child of its own;
 *     `--python PY --receiver tests/lib/otlp_receiver.py` or `--no-receiver` say how to run the
 *     collector (otlp_receiver.h);
 *   - the plugin's messages, captured (count_msgs);
 *   - the exporter under test: an endpoint (g_ep) on a receiver, bodies the test hands to
 *     its collect, and bounded waits for what it does (a generous bound that only a failure
 *     reaches: nothing here judges how long something took).
 *
 * Everything is static inline: a file uses what it needs of it.
 */
#ifndef INS_TEST_OTLP_CASES_H
#define INS_TEST_OTLP_CASES_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "otlp_receiver.h"
#include "core/log.h"
#include "io/buf.h"
#include "net/curl.h"
#include "sink/otlp/otlp_export.h"

#define WAIT_S RECEIVER_WAIT_S /* the most any event is waited for: only a failure gets there */

static inline void sleep_ms(int ms) { receiver_sleep_ms(ms); }

/* ---- the plugin's messages, captured ---- */

#define MAX_MSGS 256
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_msgs[MAX_MSGS][1100];
static int g_nmsgs;

static inline void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  char text[1100];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[log %d] %s\n", level, text);
  pthread_mutex_lock(&g_log_lock);
  if (g_nmsgs < MAX_MSGS) snprintf(g_msgs[g_nmsgs++], sizeof g_msgs[0], "%s", text);
  pthread_mutex_unlock(&g_log_lock);
}

/* Messages holding every one of the (NULL-terminated) substrings. */
static inline int count_msgs(const char *s, ...) {
  int n = 0;
  pthread_mutex_lock(&g_log_lock);
  for (int i = 0; i < g_nmsgs; i++) {
    bool all = true;
    va_list ap;
    va_start(ap, s);
    for (const char *p = s; p; p = va_arg(ap, const char *))
      if (!strstr(g_msgs[i], p)) all = false;
    va_end(ap);
    n += all;
  }
  pthread_mutex_unlock(&g_log_lock);
  return n;
}

static inline int count_all_msgs(void) {
  pthread_mutex_lock(&g_log_lock);
  int n = g_nmsgs;
  pthread_mutex_unlock(&g_log_lock);
  return n;
}

/* ---- the sink's side: bodies the test hands to collect ---- */

#define SUPPLY_MAX 64
static struct {
  pthread_mutex_t lock;
  char *body[SUPPLY_MAX];
  size_t len[SUPPLY_MAX];
  int head, count;
} g_supply = {.lock = PTHREAD_MUTEX_INITIALIZER};

static inline void supply_push(const char *data, size_t len) {
  pthread_mutex_lock(&g_supply.lock);
  if (g_supply.count < SUPPLY_MAX) {
    int i = (g_supply.head + g_supply.count++) % SUPPLY_MAX;
    g_supply.body[i] = malloc(len);
    memcpy(g_supply.body[i], data, len);
    g_supply.len[i] = len;
  }
  pthread_mutex_unlock(&g_supply.lock);
}

static inline void supply_pushf(const char *fmt, ...) {
  char b[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  supply_push(b, (size_t)n);
}

static inline int supply_left(void) {
  pthread_mutex_lock(&g_supply.lock);
  int n = g_supply.count;
  pthread_mutex_unlock(&g_supply.lock);
  return n;
}

static inline int collect(void *arg, struct ins_otlp_body *bodies, int max, bool fresh, bool *more) {
  (void)arg, (void)fresh;
  *more = false; /* each call's bodies are an export of their own */
  int n = 0;
  pthread_mutex_lock(&g_supply.lock);
  while (n < max && g_supply.count) {
    int i = g_supply.head;
    if (ins_buf_reserve(&bodies[n].data, g_supply.len[i]) == 0) {
      memcpy(bodies[n].data.data, g_supply.body[i], g_supply.len[i]);
      bodies[n].data.len = g_supply.len[i];
      n++;
    }
    free(g_supply.body[i]);
    g_supply.head = (i + 1) % SUPPLY_MAX;
    g_supply.count--;
  }
  pthread_mutex_unlock(&g_supply.lock);
  return n;
}

/* ---- the exporter under test ---- */

static struct ins_otlp_endpoint g_ep;

static inline void endpoint(struct receiver *r, const char *path) {
  memset(&g_ep, 0, sizeof g_ep);
  snprintf(g_ep.url, sizeof g_ep.url, "http://127.0.0.1:%d%s", r ? r->port : 1, path ? path : "/v1/metrics");
  g_ep.timeout_ms = 5000;
}

static inline uint64_t zero_random(void) { return 0; }

/* A fast schedule for the tests (the rule is the same: ins_otlp_retry_delay_ms). */
static inline void fast_backoff(void) {
  ins_otlp_test_hooks.backoff_base_ms = 20;
  ins_otlp_test_hooks.backoff_cap_ms = 100;
}

static inline struct ins_otlp_exporter *start(int queue) {
  return ins_otlp_exporter_start(&g_ep, 20, queue, collect, NULL, NULL);
}

static inline bool wait_dropped(struct ins_otlp_exporter *e, uint64_t n) {
  for (int i = 0; i < WAIT_S * 100; i++) {
    if (ins_otlp_exporter_dropped(e) >= n) return true;
    sleep_ms(10);
  }
  return false;
}

static inline bool wait_msgs(const char *s, int n) {
  for (int i = 0; i < WAIT_S * 100; i++) {
    if (count_msgs(s, NULL) >= n) return true;
    sleep_ms(10);
  }
  return false;
}

static inline bool wait_supply_empty(void) {
  for (int i = 0; i < WAIT_S * 100; i++) {
    if (!supply_left()) return true;
    sleep_ms(10);
  }
  return false;
}

static inline bool libcurl_here(void) {
  void *h = dlopen(INS_NET_CURL_LIB, RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != NULL;
}

/* ---- main ---- */

struct otlp_case {
  const char *name;
  void (*fn)(void);
  bool receiver;      /* needs tests/lib/otlp_receiver.py: listed only with a --python */
  const char *labels; /* its own ctest labels (cases.h list_case): threads where it runs the
                         exporter's thread */
};

/* suite: the name of the "N passed, N failed" line when every case runs. */
static inline int otlp_cases_main(int argc, char **argv, const struct otlp_case *k_cases, size_t ncases,
                                  const char *suite) {
  const char *only = NULL;
  bool list = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--list")) list = true;
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--python") && i + 1 < argc) g_python = argv[++i];
    else if (!strcmp(argv[i], "--receiver") && i + 1 < argc) g_receiver_py = argv[++i];
    else if (!strcmp(argv[i], "--no-receiver")) g_python = ""; /* no python to run it */
  }
  if (list) { /* the cases this command line can run: a collector needs a python */
    for (size_t k = 0; k < ncases; k++)
      if (!k_cases[k].receiver || *g_python) list_case(k_cases[k].name, k_cases[k].labels);
    return 0;
  }
  ins_log_set_logger(logger);
  int ran = 0;
  for (size_t k = 0; k < ncases; k++) {
    if (only && strcmp(only, k_cases[k].name)) continue;
    ran++;
    if (only) {
      k_cases[k].fn();
      continue;
    }
    /* all cases: each in a child of its own (hooks, captured messages, loaded libraries) */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      k_cases[k].fn();
      fflush(NULL);
      _exit(g_fail ? 1 : 0);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    printf("%s: %s\n", k_cases[k].name, ok ? "ok" : "FAILED");
    if (ok) g_pass++;
    else g_fail++;
  }
  if (!ran) {
    fprintf(stderr, "no case named %s (--list)\n", only ? only : "?");
    return 2;
  }
  return check_report(only ? only : suite);
}

#endif
