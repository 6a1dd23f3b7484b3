/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log_notice.c - what reaches a user who set no NCCL_DEBUG (core/log.h, "Who sees what").
 * NCCL prints a plugin's messages only under NCCL_DEBUG=WARN (or more) with
 * NCCL_DEBUG_SUBSYS naming PROFILE; the problems a user must hear of anyway (a setting not
 * used as given, a misspelled one, no output possible, a plugin loaded but inactive, a
 * collector that took nothing, records lost) are notices: one "Inspector: <message>" line
 * on stderr, unless NCCL prints the WARN itself; never both, at most INS_NOTICE_MAX lines
 * and one more saying how to see the rest; and a clean run prints nothing at all.
 *
 * Each case is a process of its own (the plugin reads its configuration and NCCL_DEBUG once
 * per process), forked from this one, which never starts the plugin: its environment
 * cleared of ours and NCCL's debug settings and set as the case says, its stderr in a
 * file, the logger it gives the plugin (NCCL's stand-in) writing every message to another
 * file and printing nothing. It inits a communicator through the v5 table, completes some
 * AllReduces (one_op.h), finalizes (or not) and exits, so that what the plugin says at
 * exit is in the file too. Then this process counts, for each message the case names, the
 * copies the user sees: the logger's WARNs if NCCL would print them (judged here, from the
 * case's NCCL_DEBUG by NCCL's rules, not by the plugin's ins_log_shown_level), plus the
 * lines on stderr. Exactly one, each time.
 *
 *   inspector-unit-log_notice [--case NAME]
 */
#pragma GCC diagnostic ignored "-Wunused-function" /* fork_util.h's helpers */
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "closed_port.h"
#include "core/log.h"
#include "fork_util.h"

#define MAX_ENV 16
#define MAX_SAID 4

struct spec {
  const char *name;
  const char *env[MAX_ENV]; /* NAME=VALUE; %DIR% is the case's directory, %PORT% a closed port */
  int ops;                  /* AllReduces completed on the communicator */
  bool no_finalize;         /* exit with the communicator alive (the exit flush writes) */
  bool no_logger;           /* a host that gives no logger */
  bool two_comms;           /* a second communicator, finalized last (the first's finalize then
                               writes its GPU's Prometheus file rather than removing it) */
  bool shows;               /* NCCL prints the plugin's WARNs: NCCL_DEBUG >= WARN and PROFILE in
                               NCCL_DEBUG_SUBSYS (NCCL's default leaves PROFILE out) */
  const char *said[MAX_SAID]; /* each must reach the user exactly once */
  int lines;                /* lines on stderr in all; -1: not counted */
  const char *absent;       /* never on stderr (a credential) */
};

/* Writable dump directory, and one that cannot be made (under a regular file, even as root). */
#define DIR_OK "NCCL_INSPECTOR_DUMP_DIR=%DIR%/d"
#define DIR_BAD "NCCL_INSPECTOR_DUMP_DIR=%DIR%/file/d"
#define ON "NCCL_INSPECTOR_ENABLE=1"
#define BAD_VALUE "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES=abc"
#define BAD_VALUE_SAID "NCCL_INSPECTOR_DUMP_MIN_SIZE_BYTES='abc' is not an integer"
#define DEBUG_SHOWN "NCCL_DEBUG=WARN", "NCCL_DEBUG_SUBSYS=PROFILE"

static const struct spec k_specs[] = {
    /* a clean run: nothing on stderr, finalized or flushed at exit */
    {"clean", {ON, DIR_OK}, 3, .lines = 0},
    {"clean.no_finalize", {ON, DIR_OK}, 3, .no_finalize = true, .lines = 0},
    {"clean.prom_no_finalize", {ON, DIR_OK, "NCCL_INSPECTOR_PROM_DUMP=1"}, 3, .no_finalize = true,
     .lines = 0},
    /* (1) a value not used as given, as each NCCL_DEBUG decides */
    {"config.value", {ON, DIR_OK, BAD_VALUE}, 1, .said = {BAD_VALUE_SAID}, .lines = 1},
    {"config.value.debug_warn", {ON, DIR_OK, BAD_VALUE, "NCCL_DEBUG=WARN"}, 1,
     .said = {BAD_VALUE_SAID}, .lines = 1},
    {"config.value.debug_version", {ON, DIR_OK, BAD_VALUE, "NCCL_DEBUG=VERSION", "NCCL_DEBUG_SUBSYS=ALL"},
     1, .said = {BAD_VALUE_SAID}, .lines = 1},
    {"config.value.debug_profile", {ON, DIR_OK, BAD_VALUE, DEBUG_SHOWN}, 1, .shows = true,
     .said = {BAD_VALUE_SAID}, .lines = 0},
    {"config.value.debug_inverted", {ON, DIR_OK, BAD_VALUE, "NCCL_DEBUG=info", "NCCL_DEBUG_SUBSYS=^INIT,ENV"},
     1, .shows = true, .said = {BAD_VALUE_SAID}, .lines = 0},
    {"config.value.debug_not_profile", {ON, DIR_OK, BAD_VALUE, "NCCL_DEBUG=INFO", "NCCL_DEBUG_SUBSYS=^PROFILE"},
     1, .said = {BAD_VALUE_SAID}, .lines = 1},
    /* (1) a misspelled variable, named with the one meant */
    {"config.unknown", {ON, DIR_OK, "NCCL_INSPECTOR_ENABLED=1"}, 1,
     .said = {"NCCL_INSPECTOR_ENABLED is not a setting Inspector knows", "did you mean NCCL_INSPECTOR_ENABLE?"},
     .lines = 1},
    /* the bound: 9 unknown names (8 warnings and one for the rest) and 3 bad values, 12
     * notices: 8 lines, then one saying how to see them all */
    {"bound",
     {ON, DIR_OK, "NCCL_INSPECTOR_X1=1", "NCCL_INSPECTOR_X2=1", "NCCL_INSPECTOR_X3=1",
      "NCCL_INSPECTOR_X4=1", "NCCL_INSPECTOR_X5=1", "NCCL_INSPECTOR_X6=1", "NCCL_INSPECTOR_X7=1",
      "NCCL_INSPECTOR_X8=1", "NCCL_INSPECTOR_X9=1", BAD_VALUE, "NCCL_INSPECTOR_ENABLE_P2P=maybe",
      "NCCL_INSPECTOR_HANG_SECONDS=soon"},
     0, .said = {"NCCL_INSPECTOR_X1 is not a setting", "more warnings than these; NCCL_DEBUG=WARN "
                 "NCCL_DEBUG_SUBSYS=PROFILE shows every one"}, .lines = INS_NOTICE_MAX + 1},
    /* (2) no output possible: one line, whoever meets it (the start's check, the log, the
     * Prometheus files; their WARNs still go to NCCL's logger) */
    {"output.dir", {ON, DIR_BAD}, 0, .said = {"cannot write to '%DIR%/file/d'"}, .lines = 1},
    {"output.dir.prom", {ON, DIR_BAD, "NCCL_INSPECTOR_PROM_DUMP=1"}, 2, .two_comms = true,
     .said = {"cannot write to '%DIR%/file/d'"}, .lines = 1},
    {"output.trace", {ON, DIR_OK, "NCCL_INSPECTOR_TRACE_DIR=%DIR%/file/t"}, 1,
     .said = {"NCCL_INSPECTOR_TRACE_DIR: cannot create a trace file in '%DIR%/file/t'"}, .lines = 1},
    /* (3) loaded by NCCL, not enabled; off on purpose: nothing */
    {"disabled", {DIR_OK}, 0, .said = {"NCCL_INSPECTOR_ENABLE is not set"}, .lines = 1},
    {"disabled.off", {"NCCL_INSPECTOR_ENABLE=0", DIR_OK}, 0, .lines = 0},
    /* (5) records lost: not written (their number at exit), dropped (the first time, with
     * why, and the total at exit): the ring of 2 keeps 2 of 10 with the dump thread off */
    {"records.unwritten", {ON, DIR_BAD}, 3,
     .said = {"cannot write to '%DIR%/file/d'", "3 records could not be written to %DIR%/file/d"},
     .lines = 2},
    {"records.unwritten.debug_profile", {ON, DIR_BAD, DEBUG_SHOWN}, 3, .shows = true,
     .said = {"cannot write to '%DIR%/file/d'", "3 records could not be written to %DIR%/file/d"},
     .lines = -1},
    {"records.dropped",
     {ON, DIR_OK, "NCCL_INSPECTOR_DUMP_THREAD_ENABLE=0", "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=2"}, 10,
     .said = {"is dropping records", "8 records were dropped in all"}, .lines = 2},
    /* a host with no logger: the plugin prints on stderr as NCCL would, and the notice once */
    {"no_logger", {ON, DIR_OK, BAD_VALUE}, 1, .no_logger = true, .said = {BAD_VALUE_SAID}, .lines = 1},
    {"no_logger.debug_profile", {ON, DIR_OK, BAD_VALUE, DEBUG_SHOWN}, 1, .no_logger = true,
     .shows = true, .said = {BAD_VALUE_SAID}, .lines = -1},
#if INSPECTOR_OTLP
    /* (4) a collector that never took anything: at exit, the endpoint shown redacted */
    {"otlp.none_accepted",
     {ON, DIR_OK, "NCCL_INSPECTOR_OTLP_EXPORT=1",
      "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=http://127.0.0.1:%PORT%/v1/metrics?api_key=S3CRETS3CRET",
      "OTEL_EXPORTER_OTLP_TIMEOUT=200", "OTEL_METRIC_EXPORT_INTERVAL=3600000"},
     1, .said = {"OTLP exporter for http://127.0.0.1:%PORT%/v1/metrics?*** stopped, and the "
                 "collector accepted nothing"}, .lines = 1, .absent = "S3CRET"},
#endif
};

/* ---- the child: the plugin as a job runs it ---- */

static int g_log_fd = -1; /* the logger's file (NCCL's output, as it would be without filter) */

static void file_logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  char text[1200];
  int n = snprintf(text, sizeof text, "%d\t", level);
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(text + n, sizeof text - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m < sizeof text - (size_t)n - 1 ? (size_t)m : sizeof text - (size_t)n - 2);
  text[len++] = '\n';
  (void)!write(g_log_fd, text, len); /* O_APPEND: one line at a time, whichever thread */
}

/* s with %DIR% and %PORT% replaced, into out. */
static const char *expand(const char *s, const char *dir, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = s; *p && o + 1 < cap;) {
    if (!strncmp(p, "%DIR%", 5)) {
      o += (size_t)snprintf(out + o, cap - o, "%s", dir);
      p += 5;
    } else if (!strncmp(p, "%PORT%", 6)) {
      o += (size_t)snprintf(out + o, cap - o, "%d", closed_port());
      p += 6;
    } else {
      out[o++] = *p++;
    }
  }
  out[o < cap ? o : cap - 1] = '\0';
  return out;
}

/* Our variables, the OpenTelemetry SDK's and NCCL's debug settings: none inherited. */
static void clear_env(void) {
  for (;;) {
    char name[256] = "";
    for (char **e = environ; *e; e++)
      if (!strncmp(*e, "NCCL_INSPECTOR_", 15) || !strncmp(*e, "OTEL_", 5) || !strncmp(*e, "NCCL_DEBUG", 10)) {
        size_t n = strcspn(*e, "=");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), *e);
        break;
      }
    if (!name[0]) return;
    unsetenv(name);
  }
}

static void child(const struct spec *s, const char *dir) {
  char path[4096], kv[1024];
  snprintf(path, sizeof path, "%s/stderr", dir);
  int err = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  snprintf(path, sizeof path, "%s/nccl.log", dir);
  g_log_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  snprintf(path, sizeof path, "%s/file", dir); /* a regular file: a directory under it cannot be */
  int f = open(path, O_WRONLY | O_CREAT, 0644);
  if (err < 0 || g_log_fd < 0 || f < 0) _exit(3);
  close(f);
  clear_env();
  for (int i = 0; i < MAX_ENV && s->env[i]; i++) {
    expand(s->env[i], dir, kv, sizeof kv);
    char *eq = strchr(kv, '=');
    *eq = '\0';
    setenv(kv, eq + 1, 1);
  }
  fflush(NULL);
  dup2(err, 2);
  close(err);
  void *ctx = NULL, *other = NULL;
  int mask = 0;
  prof_logger_t logger = s->no_logger ? NULL : file_logger;
  if (ncclProfiler_v5.init(&ctx, 0x5a1d, &mask, "notice", 1, 2, 0, logger) != 0 ||
      (s->two_comms && ncclProfiler_v5.init(&other, 0x5a1e, &mask, "other", 1, 2, 0, logger) != 0))
    _exit(4);
  for (int i = 0; ctx && i < s->ops; i++) fu_op(ctx);
  if (ctx && !s->no_finalize) ncclProfiler_v5.finalize(ctx);
  if (other && !s->no_finalize) ncclProfiler_v5.finalize(other);
  exit(0); /* the plugin's exit flush: what it says then is in the file too */
}

/* ---- this process: what the user saw ---- */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return strdup("");
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (size_t r; buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += r;
    if (n + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(f);
  if (buf) buf[n] = '\0';
  return buf;
}

/* Lines of text that start with prefix (NULL: any) and hold sub (NULL: any). */
static int count_lines(const char *text, const char *prefix, const char *sub) {
  int n = 0;
  for (const char *l = text; *l;) {
    const char *nl = strchr(l, '\n');
    size_t len = nl ? (size_t)(nl - l) : strlen(l);
    char line[1500];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
    n += (!prefix || !strncmp(line, prefix, strlen(prefix))) && (!sub || strstr(line, sub));
    l += len + (nl != NULL);
  }
  return n;
}

static int rm_any(const char *p, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  return remove(p);
}

static void run_case(const struct spec *s) {
  char dir[] = "/tmp/inspector-notice-XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  int fails = g_fail;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) child(s, dir);
  int st = fu_wait(pid, 4 * FU_CHILD_MS);
  CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  char path[4096];
  snprintf(path, sizeof path, "%s/stderr", dir);
  char *err = slurp(path);
  snprintf(path, sizeof path, "%s/nccl.log", dir);
  char *log = slurp(path);
  /* WARN lines of the logger: "2\tInspector: ..." */
  char warn_prefix[8];
  snprintf(warn_prefix, sizeof warn_prefix, "%d\t", PROF_LOG_WARN);
  for (int i = 0; i < MAX_SAID && s->said[i]; i++) {
    char sub[1024];
    expand(s->said[i], dir, sub, sizeof sub);
    int by_nccl = count_lines(log, warn_prefix, sub), plain = count_lines(err, "Inspector: ", sub),
        fallback = count_lines(err, "NCCL WARN Inspector: ", sub);
    int seen = (s->shows ? by_nccl : 0) + plain + fallback;
    if (seen != 1)
      fprintf(stderr, "%s: '%s' seen %d times (NCCL's WARN %d, shown: %d; plain %d; stderr WARN %d)\n",
              s->name, sub, seen, by_nccl, s->shows, plain, fallback);
    CHECK_EQ_U(seen, 1);
    if (s->shows) CHECK_EQ_U(plain, 0); /* NCCL prints it: never a second copy */
  }
  if (s->lines >= 0) {
    if (count_lines(err, NULL, NULL) != s->lines) fprintf(stderr, "%s: stderr was:\n%s", s->name, err);
    CHECK_EQ_U(count_lines(err, NULL, NULL), s->lines);
    if (!s->lines) CHECK_EQ_U(strlen(err), 0);
  }
  if (!s->shows) CHECK_EQ_U(count_lines(err, "NCCL ", NULL), 0); /* nothing NCCL would not print */
  if (s->absent) CHECK(!strstr(err, s->absent) && !strstr(log, s->absent));
  /* still WARNs of NCCL's logger: what NCCL_DEBUG shows did not change */
  if (!strcmp(s->name, "bound")) /* every one of the 12 */
    CHECK_EQ_U(count_lines(log, warn_prefix, NULL), 12);
  if (!strncmp(s->name, "config.value", 12)) CHECK_EQ_U(count_lines(log, warn_prefix, BAD_VALUE_SAID), 1);
  if (!strcmp(s->name, "output.dir.prom")) /* the Prometheus files met it too: a WARN, no line */
    CHECK_EQ_U(count_lines(log, warn_prefix, "Prometheus metrics are not written"), 1);
  printf("%s: %s\n", s->name, g_fail == fails ? "ok" : "FAILED");
  if (g_fail != fails) fprintf(stderr, "%s: stderr:\n%s--\nlogger:\n%s--\n", s->name, err, log);
  free(err);
  free(log);
  CHECK(nftw(dir, rm_any, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

/* NCCL's rules for what it prints of the PROFILE subsystem, against a table written here. */
static void case_shown_level(void) {
  static const struct {
    const char *debug, *subsys;
    int level;
  } t[] = {
      {NULL, NULL, PROF_LOG_NONE},           {NULL, "PROFILE", PROF_LOG_NONE},
      {"WARN", NULL, PROF_LOG_NONE},         {"WARN", "PROFILE", PROF_LOG_WARN},
      {"warn", "init,profile", PROF_LOG_WARN}, {"INFO", "INIT,PROFILE", PROF_LOG_INFO},
      {"INFO", "^INIT", PROF_LOG_INFO},      {"INFO", "^PROFILE", PROF_LOG_NONE},
      {"INFO", "^INIT,PROFILE", PROF_LOG_NONE}, {"TRACE", "ALL", PROF_LOG_TRACE},
      {"INFO", "^ALL", PROF_LOG_NONE},       {"VERSION", "PROFILE", PROF_LOG_VERSION},
      {"ABORT", "PROFILE", PROF_LOG_ABORT},  {"bogus", "PROFILE", PROF_LOG_NONE},
      {"", "PROFILE", PROF_LOG_NONE},        {"WARN", "PROFILES", PROF_LOG_NONE},
      {"WARN", "", PROF_LOG_NONE},           {"WARN", "^", PROF_LOG_WARN},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    int got = ins_log_shown_level(t[i].debug, t[i].subsys);
    if (got != t[i].level)
      fprintf(stderr, "NCCL_DEBUG=%s NCCL_DEBUG_SUBSYS=%s: %d, expected %d\n", t[i].debug ? t[i].debug : "(unset)",
              t[i].subsys ? t[i].subsys : "(unset)", got, t[i].level);
    CHECK_EQ_U(got, t[i].level);
  }
  printf("shown_level: ok\n");
}

int main(int argc, char **argv) {
  const char *only = argc == 3 && !strcmp(argv[1], "--case") ? argv[2] : NULL;
#if INSPECTOR_OTLP
  CHECK(closed_port() > 0); /* bound here: the cases' processes inherit it */
#endif
  if (!only || !strcmp(only, "shown_level")) case_shown_level();
  for (size_t i = 0; i < sizeof k_specs / sizeof *k_specs; i++)
    if (!only || !strcmp(only, k_specs[i].name)) run_case(&k_specs[i]);
  return check_report("notice");
}
