/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_receiver.h - tests/lib/otlp_receiver.py driven from a C unit test: started on a
 * port of 127.0.0.1 in a directory of its own (removed at stop), told how to answer
 * while it runs (receiver_control), and read back: every request it got, with its
 * body, headers and the action it answered with. Shared by the tests that talk to a
 * collector (otlp_cases.h's: sink/otlp/test_otlp_export.c, net/test_curl.c, test_http.c,
 * test_resolve.c; test_otlp_collect.c, test_otlp_secrets.c), so that what driving the
 * receiver means is written once.
 *
 * g_python and g_receiver_py say how to run it: a test's --python / --receiver, or
 * what CMake compiled in (INS_TEST_PYTHON, INS_TEST_RECEIVER).
 */
#ifndef INS_TEST_OTLP_RECEIVER_H
#define INS_TEST_OTLP_RECEIVER_H

#include <ftw.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef INS_TEST_PYTHON
#define INS_TEST_PYTHON "python3"
#endif
#ifndef INS_TEST_RECEIVER
#define INS_TEST_RECEIVER "tests/lib/otlp_receiver.py"
#endif
#define RECEIVER_WAIT_S 60 /* the most any event is waited for: only a failure gets there */

extern char **environ;
static const char *g_python = INS_TEST_PYTHON;
static const char *g_receiver_py = INS_TEST_RECEIVER;

static inline void receiver_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

struct receiver {
  pid_t pid;
  char dir[64];
  int port;
};

struct rec {
  int seq, conn;
  double t;
  char method[8], path[512], enc[32], ctype[64], action[32];
  size_t raw_len, body_len;
};

static inline int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  return remove(p);
}

static inline char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *b = malloc(cap + 1);
  size_t got;
  while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *nb = realloc(b, (cap *= 2) + 1);
      if (!nb) {
        free(b);
        b = NULL;
      } else {
        b = nb;
      }
    }
  }
  fclose(f);
  if (b) b[n] = '\0';
  if (len) *len = n;
  return b;
}

static inline void write_file(const char *path, const char *text) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
  rename(tmp, path);
}

static inline bool wait_for_file_text(const char *path, const char *want) {
  for (int i = 0; i < RECEIVER_WAIT_S * 100; i++) {
    char *t = read_file(path, NULL);
    bool ok = t && (!want || !strcmp(t, want));
    free(t);
    if (ok) return true;
    receiver_sleep_ms(10);
  }
  return false;
}

static inline bool receiver_start_tls(struct receiver *r, const char *control, const char *cert, const char *key) {
  memset(r, 0, sizeof *r);
  snprintf(r->dir, sizeof r->dir, "/tmp/ins-otlp-test-XXXXXX");
  if (!mkdtemp(r->dir)) return false;
  char *argv[16];
  int a = 0;
  argv[a++] = (char *)g_python;
  argv[a++] = (char *)g_receiver_py;
  argv[a++] = "--dir";
  argv[a++] = r->dir;
  argv[a++] = "--rm-on-orphan";
  if (control) {
    argv[a++] = "--control";
    argv[a++] = (char *)control;
  }
  if (cert) {
    argv[a++] = "--tls-cert";
    argv[a++] = (char *)cert;
    argv[a++] = "--tls-key";
    argv[a++] = (char *)key;
  }
  argv[a] = NULL;
  if (posix_spawnp(&r->pid, g_python, NULL, NULL, argv, environ) != 0) return false;
  char path[128];
  snprintf(path, sizeof path, "%s/port", r->dir);
  if (!wait_for_file_text(path, NULL)) return false;
  char *t = read_file(path, NULL);
  r->port = t ? atoi(t) : 0;
  free(t);
  return r->port > 0;
}

static inline bool receiver_start(struct receiver *r, const char *control) {
  return receiver_start_tls(r, control, NULL, NULL);
}

/* A new control, in effect when this returns (the receiver acknowledges it). */
static inline bool receiver_control(struct receiver *r, const char *json) {
  char path[128], applied[128];
  snprintf(path, sizeof path, "%s/control.json", r->dir);
  snprintf(applied, sizeof applied, "%s/applied", r->dir);
  write_file(path, json);
  return wait_for_file_text(applied, json);
}

static inline void receiver_stop(struct receiver *r) {
  if (r->pid > 0) {
    kill(r->pid, SIGTERM);
    int waited_ms = 0;
    while (waitpid(r->pid, NULL, WNOHANG) == 0) {
      if (waited_ms == RECEIVER_WAIT_S * 1000) { /* it must never hang a test: then it is killed */
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        break;
      }
      receiver_sleep_ms(10);
      waited_ms += 10;
    }
  }
  if (r->dir[0]) nftw(r->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  r->pid = 0;
}

static inline int receiver_requests(struct receiver *r, struct rec *out, int max) {
  char path[128];
  snprintf(path, sizeof path, "%s/requests.tsv", r->dir);
  char *t = read_file(path, NULL);
  if (!t) return 0;
  int n = 0;
  char *save = NULL;
  for (char *line = strtok_r(t, "\n", &save); line && n < max; line = strtok_r(NULL, "\n", &save)) {
    struct rec *q = &out[n];
    memset(q, 0, sizeof *q);
    char *f[10];
    int nf = 0;
    char *s2 = NULL;
    for (char *x = strtok_r(line, "\t", &s2); x && nf < 10; x = strtok_r(NULL, "\t", &s2)) f[nf++] = x;
    if (nf != 10) continue;
    q->seq = atoi(f[0]);
    q->conn = atoi(f[1]);
    q->t = strtod(f[2], NULL);
    snprintf(q->method, sizeof q->method, "%s", f[3]);
    snprintf(q->path, sizeof q->path, "%s", f[4]);
    q->raw_len = strtoul(f[5], NULL, 10);
    q->body_len = strtoul(f[6], NULL, 10);
    snprintf(q->enc, sizeof q->enc, "%s", f[7]);
    snprintf(q->ctype, sizeof q->ctype, "%s", f[8]);
    snprintf(q->action, sizeof q->action, "%s", f[9]);
    n++;
  }
  free(t);
  return n;
}

static inline int receiver_count(struct receiver *r) {
  static struct rec tmp[256];
  return receiver_requests(r, tmp, 256);
}

static inline bool wait_requests(struct receiver *r, int n) {
  for (int i = 0; i < RECEIVER_WAIT_S * 100; i++) {
    if (receiver_count(r) >= n) return true;
    receiver_sleep_ms(10);
  }
  return false;
}

static inline char *receiver_file(struct receiver *r, int seq, const char *what, size_t *len) {
  char path[128];
  snprintf(path, sizeof path, "%s/%d.%s", r->dir, seq, what);
  return read_file(path, len);
}

static inline bool body_is(struct receiver *r, int seq, const char *want, size_t wlen) {
  size_t len;
  char *b = receiver_file(r, seq, "body", &len);
  bool ok = b && len == wlen && !memcmp(b, want, wlen);
  free(b);
  return ok;
}

static inline bool body_is_str(struct receiver *r, int seq, const char *want) {
  return body_is(r, seq, want, strlen(want));
}

#endif
