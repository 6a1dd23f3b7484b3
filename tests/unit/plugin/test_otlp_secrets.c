/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_otlp_secrets.c - no credential is ever printed. The plugin runs whole, as NCCL
 * runs it (ncclProfiler_v5: init, one AllReduce, finalize, then exit(), whose handler
 * makes the last OTLP export), in a child process of its own, with a secret ("S3CRET")
 * hidden where a job can hide one; everything it printed (stderr: NCCL's logger here,
 * and the plugin's own messages after the last finalize) and everything it wrote (the
 * dump directory) is then searched for the secret, which must not be there, and for the
 * messages that prove the secret's path was taken (a warning that names the endpoint,
 * the collector's answer), which must.
 *
 *   inspector-unit-otlp_secrets --list | --case NAME [--python PY --receiver tests/lib/otlp_receiver.py]
 *
 *   userinfo_http      a password holding '/', '?', '#' (a base64 token) before the last
 *                      '@' of an http:// endpoint: the endpoint is refused (with '/' in
 *                      it, the password's first half would be taken for the host and sent
 *                      the headers), and shown with "***@" for its userinfo
 *   userinfo_https     the same over https://
 *   token_in_path      a token in the endpoint's path and query, the collector answering
 *                      400: every message shows the path as "/" and "***"
 *   host_is_token      a host that is a token (an '@' forgotten), and a malformed host
 *                      ("token=..."): shown as *** (nothing beyond the scheme for the
 *                      second)
 *   collector_echo     a collector whose 400's message, and whose partial success's, echo
 *                      the request's headers (Authorization: Bearer ...): the messages
 *                      show the collector's words without the headers' values
 *   misspelled_names   environment entries named like ours with the secret glued to the
 *                      name (an entry without '=', which execve allows), a misspelled
 *                      OTEL_EXPORTER_OTLP_HEADERS holding one, a known variable (a
 *                      protocol, a boolean) given one: each named, none shown
 *
 * The receiver is tests/lib/otlp_receiver.py (tests/unit/otlp_receiver.h); a run with no
 * collector uses a closed port. Each run is bounded (60 s: only a failure gets there);
 * its directory is removed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "closed_port.h"
#include "nccl/profiler_abi.h"
#include "one_op.h"
#include "otlp_receiver.h"

#define SECRET "S3CRET"
#define MAX_ENV 8

/* One run of the plugin: its environment ("%PORT%" is the collector's port), an entry
 * put into environ as it is (it may lack '='), the receiver's control (NULL: no
 * collector, a closed port), and what its output must hold. */
struct run {
  const char *env[MAX_ENV];
  const char *raw;
  const char *control;
  const char *expect[4];
  int requests; /* requests the collector must have got: -1 any, 0 none */
};

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[nccl log %d] ", level);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* s with every "%PORT%" replaced by port, into out. */
static const char *with_port(const char *s, int port, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = s; *p && o + 8 < cap;) {
    if (!strncmp(p, "%PORT%", 6)) {
      o += (size_t)snprintf(out + o, cap - o, "%d", port);
      p += 6;
    } else {
      out[o++] = *p++;
    }
  }
  out[o] = '\0';
  return out;
}

/* The child: the plugin as a job runs it, all output into out_fd; never returns. */
static void child(const struct run *r, int port, const char *dump, int out_fd) {
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_DIR", dump, 1);
  /* every message of the plugin printed, those after the last finalize too (core/log.h: on
   * stderr only as NCCL_DEBUG would print them) */
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "PROFILE", 1);
  setenv("NCCL_INSPECTOR_OTLP_EXPORT", "1", 1);
  setenv("OTEL_METRIC_EXPORT_INTERVAL", "3600000", 1); /* one export: the last, at exit */
  setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "2000", 1);
  char def[64];
  snprintf(def, sizeof def, "http://127.0.0.1:%d", port);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", def, 1);
  for (int i = 0; i < MAX_ENV && r->env[i]; i++) {
    char kv[512];
    with_port(r->env[i], port, kv, sizeof kv);
    char *eq = strchr(kv, '=');
    *eq = '\0';
    setenv(kv, eq + 1, 1);
  }
  if (r->raw) { /* environ with one more entry, as execve may hand a process */
    size_t n = 0;
    while (environ[n]) n++;
    char **env = calloc(n + 2, sizeof *env);
    memcpy(env, environ, n * sizeof *env);
    env[n] = (char *)r->raw;
    environ = env;
  }
  void *ctx = NULL;
  int mask = 0;
  if (ncclProfiler_v5.init(&ctx, 0x5ec, &mask, "secrets", 1, 2, 0, logger) != 0 || !ctx) _exit(3);
  oo_allreduce(ctx, 0, (struct oo_span[]){{1000000, 1012000}}, 1);
  ncclProfiler_v5.finalize(ctx);
  exit(0); /* the plugin's exit handler: the last export, its messages on stderr */
}

static int rm_any(const char *p, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  return remove(p);
}

/* Appends every file of dir (one level) to *text. */
static void append_files(const char *dir, char **text, size_t *len) {
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    size_t n = 0;
    char *b = read_file(path, &n);
    if (!b) continue;
    char *t = realloc(*text, *len + n + 1);
    if (t) {
      memcpy(t + *len, b, n);
      *len += n;
      t[*len] = '\0';
      *text = t;
    }
    free(b);
  }
  if (d) closedir(d);
}

static bool run_one(const struct run *r) {
  char dir[] = "/tmp/ins-secrets-XXXXXX";
  if (!mkdtemp(dir)) return false;
  char dump[64], outp[64];
  snprintf(dump, sizeof dump, "%s/dump", dir);
  snprintf(outp, sizeof outp, "%s/stderr", dir);
  mkdir(dump, 0700);
  struct receiver rc = {0};
  int port = closed_port();
  if (r->control) {
    CHECK(receiver_start(&rc, r->control));
    port = rc.port;
  }
  int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) child(r, port, dump, fd);
  close(fd);
  int st = -1, waited_ms = 0;
  while (waitpid(pid, &st, WNOHANG) == 0 && waited_ms < RECEIVER_WAIT_S * 1000) {
    receiver_sleep_ms(10);
    waited_ms += 10;
  }
  if (waited_ms >= RECEIVER_WAIT_S * 1000) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  size_t len = 0;
  char *text = read_file(outp, &len);
  if (!text) text = calloc(1, 1);
  append_files(dump, &text, &len);
  bool ok = true;
  const char *leak = strstr(text, SECRET);
  if (leak) {
    const char *ls = leak;
    while (ls > text && ls[-1] != '\n') ls--;
    fprintf(stderr, "the secret was printed: %.*s\n", (int)strcspn(ls, "\n"), ls);
    ok = false;
  }
  for (int i = 0; i < 4 && r->expect[i]; i++) {
    char want[256];
    with_port(r->expect[i], port, want, sizeof want);
    if (!strstr(text, want)) {
      fprintf(stderr, "no message holds \"%s\"\n", want);
      ok = false;
    }
  }
  if (r->control && r->requests >= 0 && receiver_count(&rc) != r->requests) {
    fprintf(stderr, "the collector got %d requests, not %d\n", receiver_count(&rc), r->requests);
    ok = false;
  }
  if (r->control && r->requests > 0) { /* the secret was sent: the collector had it to echo */
    char *h = receiver_file(&rc, 1, "headers", NULL);
    struct rec q[4];
    bool sent = (h && strstr(h, SECRET)) || (receiver_requests(&rc, q, 4) > 0 && strstr(q[0].path, SECRET));
    if (!sent) fprintf(stderr, "the secret never reached the collector: the run proves nothing\n");
    ok = ok && sent;
    free(h);
  }
  if (!ok) fprintf(stderr, "---- what the plugin printed and wrote ----\n%s\n----\n", text);
  CHECK(ok);
  free(text);
  if (r->control) receiver_stop(&rc);
  nftw(dir, rm_any, 8, FTW_DEPTH | FTW_PHYS);
  return ok;
}

static void run_all(const struct run *runs, size_t n) {
  for (size_t i = 0; i < n; i++) run_one(&runs[i]);
}

static void case_userinfo_http(void) {
  const struct run runs[] = {
      {.env = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://user:" SECRET "/pa?ss#wd@127.0.0.1:%PORT%/v1/metrics"},
       .control = "{}",
       .requests = 0,
       .expect = {"the endpoint http://***@127.0.0.1:%PORT%/v1/metrics is not a URL we can use",
                  "user:password@ is not supported"}},
      /* a password of digits before its '/': the first half is a host and a port */
      {.env = {"OTEL_EXPORTER_OTLP_ENDPOINT=http://u:80/" SECRET "@127.0.0.1:%PORT%"},
       .control = "{}",
       .requests = 0,
       .expect = {"the endpoint http://***@127.0.0.1:%PORT%/v1/metrics is not a URL we can use"}},
  };
  run_all(runs, sizeof runs / sizeof *runs);
}

static void case_userinfo_https(void) {
  const struct run runs[] = {
      {.env = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=https://tok:" SECRET "/x+y?z#w=@127.0.0.1:%PORT%/v1/metrics"},
       .expect = {"the endpoint https://***@127.0.0.1:%PORT%/v1/metrics is not a URL we can use"}},
  };
  run_all(runs, sizeof runs / sizeof *runs);
}

static void case_token_in_path(void) {
  const struct run runs[] = {
      {.env = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://127.0.0.1:%PORT%/" SECRET "/v1/metrics?k=" SECRET},
       .control = "{\"default\": \"400\"}",
       .requests = 1,
       .expect = {"exporting OTLP metrics to http://127.0.0.1:%PORT%/***?*** every",
                  "the collector at http://127.0.0.1:%PORT%/***?*** rejected a metrics body with status 400",
                  "the test collector rejects this body"}},
  };
  run_all(runs, sizeof runs / sizeof *runs);
}

static void case_host_is_token(void) {
  const struct run runs[] = {
      /* "https://TOKEN@collector" without its "@collector": the token is the host */
      {.env = {"OTEL_EXPORTER_OTLP_ENDPOINT=http://" SECRET "0123456789abcdef:%PORT%",
               "OTEL_EXPORTER_OTLP_TIMEOUT=300"},
       .expect = {"exporting OTLP metrics to http://***:%PORT%/v1/metrics every"}},
      {.env = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://token=" SECRET "/v1/metrics"},
       .expect = {"the endpoint http://*** is not a URL we can use"}},
  };
  run_all(runs, sizeof runs / sizeof *runs);
}

static void case_collector_echo(void) {
  const struct run runs[] = {
      {.env = {"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20" SECRET "tok,X-Tenant=" SECRET "2"},
       .control = "{\"default\": \"400echo\"}",
       .requests = 1,
       .expect = {"rejected a metrics body with status 400", "the test collector echoes your"}},
      {.env = {"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Basic%20" SECRET "=="},
       .control = "{\"default\": \"200echo\"}",
       .requests = 1,
       .expect = {"accepted a metrics body partially: 1 data points rejected", "the test collector echoes your"}},
  };
  run_all(runs, sizeof runs / sizeof *runs);
}

static void case_misspelled_names(void) {
  const struct run runs[] = {
      {.raw = "NCCL_INSPECTOR_OTLP_HEADERS:Authorization:Bearer:" SECRET, /* no '=' */
       .env = {"OTEL_EXPORTER_OTLP_HEADER=Authorization=Bearer " SECRET,
               "NCCL_INSPECTOR_ENABLED:" SECRET "=1",
               "OTEL_EXPORTER_OTLP_PROTOCOL=Bearer " SECRET,
               "NCCL_INSPECTOR_DUMP_VERBOSE=" SECRET "0123456789abcdef"},
       .expect = {"NCCL_INSPECTOR_OTLP_HEADERS... is not a setting Inspector knows",
                  "NCCL_INSPECTOR_ENABLED... is not a setting Inspector knows",
                  "OTEL_EXPORTER_OTLP_PROTOCOL=(13 bytes, not shown) is not http/protobuf",
                  "NCCL_INSPECTOR_DUMP_VERBOSE=(22 bytes, not shown) is not 0 or 1"}},
  };
  run_all(runs, sizeof runs / sizeof *runs);
}

static const struct {
  const char *name;
  void (*fn)(void);
  bool receiver; /* needs tests/lib/otlp_receiver.py: listed only with a --python */
} k_cases[] = {
    {"userinfo_http", case_userinfo_http, true},   {"userinfo_https", case_userinfo_https, false},
    {"token_in_path", case_token_in_path, true},   {"host_is_token", case_host_is_token, false},
    {"collector_echo", case_collector_echo, true}, {"misspelled_names", case_misspelled_names, false},
};

int main(int argc, char **argv) {
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
    for (size_t k = 0; k < sizeof k_cases / sizeof *k_cases; k++)
      if (!k_cases[k].receiver || *g_python) list_case(k_cases[k].name, NULL);
    return 0;
  }
  int ran = 0;
  for (size_t k = 0; k < sizeof k_cases / sizeof *k_cases; k++) {
    if (only && strcmp(only, k_cases[k].name)) continue;
    ran++;
    k_cases[k].fn();
  }
  if (!ran) {
    fprintf(stderr, "no case named %s (--list)\n", only);
    return 2;
  }
  return check_report(only ? only : "otlp_secrets");
}
