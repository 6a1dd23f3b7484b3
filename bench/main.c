/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - inspector-bench: the CPU benchmark of the profiler plugin.
 *
 * Owns: the command line, loading and compiling the fixtures (before any
 * clock runs), and `quick`, the smoke run that CI registers as a test: every
 * mode once, small, each in a child process with its own environment (the
 * plugin reads its configuration once per process). bench/run.sh runs the
 * full benchmark, callgrind included, and prints the table.
 *
 *   inspector-bench MODE --plugin PATH [--null PATH] [options] [FIXTURE...]
 *   MODE: calls | threads | scale | rate | mem | churn | quick
 *   inspector-bench --help | --version     (exit 0; a usage error exits 2, naming the option)
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../tools/replay/log.h"
#include "../tools/replay/trace.h"
#include "../tools/replay/trace_load.h"
#include "modes.h"
#include "outdir.h"

static const char k_usage[] =
    "usage: inspector-bench MODE --plugin PATH [--null PATH] [options] [FIXTURE.jsonl.gz...]\n"
    "       inspector-bench --help | --version\n"
    "MODE: calls | threads | scale | rate | mem | churn | quick\n";

static const char k_help[] =
    "\n"
    "The CPU benchmark of the Inspector profiler plugin: what the plugin costs the threads\n"
    "NCCL calls it on, with no GPU. Recorded NCCL traffic (FIXTURE files, compiled into call\n"
    "programs before any clock runs) or synthetic operations go straight to the plugin's\n"
    "ncclProfiler table, and to a do-nothing plugin (--null) that asks for the same events, runs\n"
    "interleaved; figures are medians over --runs runs, printed as \"key value\" lines.\n"
    "`make bench` (bench/run.sh) runs every mode and prints the table of docs/BENCHMARKS.md.\n"
    "The plugin reads its configuration from the environment, as in a job: set\n"
    "NCCL_INSPECTOR_ENABLE=1 (quick sets it itself).\n"
    "modes:\n"
    "  calls    ns per callback on one thread: the fixtures' mix, and synthetic ops\n"
    "  threads  ns per callback, the fixtures' recorded threads running concurrently\n"
    "  scale    callbacks per second on 1 and on 2 threads, each with a communicator of its own\n"
    "  rate     records per second through the dump thread, and that thread's CPU time; fails\n"
    "           when a record is lost\n"
    "  mem      resident memory per communicator, idle and busy\n"
    "  churn    init and finalize of fresh communicators, one after another, while --busy\n"
    "           communicators complete --rate ops/s each: median and longest, in us\n"
    "  quick    every mode once, small, each in a child process: a smoke test (bench:quick)\n"
    "options:\n"
    "  --plugin PATH      the Inspector plugin to measure (required)\n"
    "  --null PATH        the do-nothing plugin to compare it with (calls, threads, scale)\n"
    "  --runs N           runs per figure, the median printed (7)\n"
    "  --reps N           passes over the fixtures per run (20)\n"
    "  --synth-ops N      synthetic ops per program (1024)\n"
    "  --synth-iters N    passes over the synthetic program per run (50)\n"
    "  --channels N       kernel channels per synthetic op, 1 to 64 (4)\n"
    "  --callgrind mix|synth  calls: one pass of the fixture mix or of the synthetic program,\n"
    "                     for callgrind to count\n"
    "  --rate N           rate, churn: records per second (churn: per busy communicator),\n"
    "                     0 as fast as possible (500000)\n"
    "  --seconds S        rate, churn: how long (10)\n"
    "  --dir DIR          rate: the plugin's dump directory, read back (default\n"
    "                     $NCCL_INSPECTOR_DUMP_DIR)\n"
    "  --comms N          mem: communicators to create, 2 or more (256)\n"
    "  --busy N           churn: busy communicators, each on a thread of its own (2)\n"
    "  -h, --help         this text\n"
    "  --version          the version and git revision, the plugin's of the same build\n"
    "exit status: 0, 1 when a check failed (records lost or missing), 2 usage error\n";

/* Prints "inspector-bench: <message>" and the usage on stderr, exits 2. */
_Noreturn static void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("inspector-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n%s(--help: the modes and options)\n", k_usage);
  exit(2);
}

/* An integer option's value in [lo, hi], or a usage error naming the option. */
static long long int_arg(const char *opt, const char *v, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi)
    usage_error("bad value for %s: '%s' (want an integer in [%lld, %lld])", opt, v, lo, hi);
  return x;
}

static bool is_mode(const char *m) {
  static const char *const modes[] = {"calls", "threads", "scale", "rate", "mem", "churn", "quick"};
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
    if (!strcmp(m, modes[i])) return true;
  return false;
}

static int load_fixtures(struct bp_opts *o) {
  o->fixture = calloc((size_t)o->nfixtures + 1, sizeof *o->fixture);
  for (int i = 0; i < o->nfixtures; i++) {
    struct rp_trace t;
    if (rp_trace_load(o->fixture_path[i], &t)) return -1;
    bp_compile(&t, t.ver >= 4 && t.ver <= 6 ? t.ver : 5, &o->fixture[i]);
    rp_trace_free(&t);
  }
  return 0;
}

static int open_plugins(struct bp_opts *o, const char *paths[2]) {
  o->nplugins = 0;
  for (int k = 0; k < 2; k++) {
    if (!paths[k]) continue;
    if (bp_plugin_open(paths[k], &o->plugin[o->nplugins])) return -1;
    /* labelled by the table's name: "Inspector" -> inspector, "null" -> null */
    const char *name = o->plugin[o->nplugins].name;
    o->label[o->nplugins++] = name && !strcmp(name, "Inspector") ? "inspector" : "null";
  }
  return o->nplugins ? 0 : -1;
}

static int run_mode(const char *mode, struct bp_opts *o, const char *paths[2]) {
  if (open_plugins(o, paths)) return 1;
  if ((!strcmp(mode, "calls") || !strcmp(mode, "threads")) && load_fixtures(o)) return 1;
  if (!strcmp(mode, "calls")) return bp_mode_calls(o);
  if (!strcmp(mode, "threads")) return bp_mode_threads(o);
  if (!strcmp(mode, "scale")) return bp_mode_scale(o);
  if (!strcmp(mode, "rate")) return bp_mode_rate(o);
  if (!strcmp(mode, "mem")) return bp_mode_mem(o);
  if (!strcmp(mode, "churn")) return bp_mode_churn(o);
  return 2; /* main() let only the modes above through */
}

/* quick: one child per mode, each with its own plugin configuration. */
struct quick_step {
  const char *mode;
  const char *env[6]; /* NAME=VALUE, NULL-terminated */
};

static int quick(struct bp_opts base, const char *paths[2]) {
  char dir[] = "/tmp/inspector-bench-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("inspector-bench: mkdtemp");
    return 1;
  }
  static const struct quick_step steps[] = {
    {"calls", {"NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=65536", NULL}},
    {"threads", {"NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=65536", NULL}},
    {"scale", {"NCCL_INSPECTOR_DUMP_THREAD_ENABLE=0", "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=4096", NULL}},
    /* Rings that hold the whole second (20,000 records): a sanitizer build on a loaded
     * machine must not turn this smoke test's accounting check into a timing test. */
    {"rate", {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=0",
              "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=32768", NULL}},
    {"rate", {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=1000000",
              "NCCL_INSPECTOR_DUMP_COLL_RING_SIZE=32768", NULL}},
    {"mem", {NULL}},
    {"churn", {"NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS=0", NULL}},
    {"churn", {"NCCL_INSPECTOR_PROM_DUMP=1", NULL}},
  };
  int failed = 0;
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    char sub[sizeof dir + 16];
    snprintf(sub, sizeof sub, "%s/%zu", dir, i);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
      setenv("NCCL_INSPECTOR_DUMP_DIR", sub, 1);
      for (int e = 0; steps[i].env[e]; e++) putenv((char *)steps[i].env[e]);
      struct bp_opts o = base;
      o.dir = sub;
      o.runs = 1;
      o.reps = 1;
      o.synth_ops = 256;
      o.synth_iters = 8;
      o.rate = 20000;
      o.seconds = 1;
      o.comms = 16;
      if (strcmp(steps[i].mode, "calls") && strcmp(steps[i].mode, "scale")) paths[1] = NULL;
      int rc = run_mode(steps[i].mode, &o, paths);
      fflush(NULL);
      _exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    printf("quick.%s.%zu.ok %d\n", steps[i].mode, i, ok);
    failed |= !ok;
    bp_outdir_remove(sub);
  }
  rmdir(dir);
  printf("quick.ok %d\n", !failed);
  return failed;
}

int main(int argc, char **argv) {
  /* --help and --version win wherever they stand */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      printf("%s%s", k_usage, k_help);
      return 0;
    }
    if (!strcmp(argv[i], "--version")) {
      printf("inspector-bench %s (git %s)\n", INSPECTOR_VERSION, INSPECTOR_GIT_REV);
      return 0;
    }
  }
  if (argc < 2) usage_error("no MODE given");
  const char *mode = argv[1];
  if (!is_mode(mode)) usage_error(mode[0] == '-' ? "no MODE given before '%s'" : "unknown MODE '%s'", mode);
  const char *paths[2] = {NULL, NULL};
  struct bp_opts o = {.runs = 7, .reps = 20, .synth_ops = 1024, .synth_iters = 50, .channels = 4,
                      .rate = 500000, .seconds = 10, .dir = NULL, .comms = 256, .busy = 2};
  o.fixture_path = calloc((size_t)argc, sizeof *o.fixture_path);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-') {
      o.fixture_path[o.nfixtures++] = a;
      continue;
    }
    static const char *const known[] = {"--plugin", "--null", "--runs", "--reps", "--synth-ops",
                                        "--synth-iters", "--channels", "--callgrind", "--rate",
                                        "--seconds", "--dir", "--comms", "--busy"};
    bool ok = false;
    for (size_t k = 0; k < sizeof known / sizeof *known; k++) ok |= !strcmp(a, known[k]);
    if (!ok) usage_error("unknown option '%s'", a);
    if (i + 1 >= argc) usage_error("option '%s' needs a value", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--plugin")) paths[0] = v;
    else if (!strcmp(a, "--null")) paths[1] = v;
    else if (!strcmp(a, "--runs")) o.runs = (int)int_arg(a, v, 1, 1000000);
    else if (!strcmp(a, "--reps")) o.reps = (int)int_arg(a, v, 1, 1000000);
    else if (!strcmp(a, "--synth-ops")) o.synth_ops = (int)int_arg(a, v, 1, 1 << 24);
    else if (!strcmp(a, "--synth-iters")) o.synth_iters = (int)int_arg(a, v, 1, 1000000);
    else if (!strcmp(a, "--channels")) o.channels = (int)int_arg(a, v, 1, 64);
    else if (!strcmp(a, "--rate")) o.rate = (long)int_arg(a, v, 0, 1000000000);
    else if (!strcmp(a, "--dir")) o.dir = v;
    else if (!strcmp(a, "--comms")) o.comms = (int)int_arg(a, v, 2, 1 << 20);
    else if (!strcmp(a, "--busy")) o.busy = (int)int_arg(a, v, 0, 64);
    else if (!strcmp(a, "--callgrind")) {
      if (strcmp(v, "mix") && strcmp(v, "synth"))
        usage_error("bad value for --callgrind: '%s' (want mix or synth)", v);
      o.callgrind = v;
    } else { /* --seconds */
      char *end;
      errno = 0;
      o.seconds = strtod(v, &end);
      if (errno || end == v || *end || !(o.seconds > 0 && o.seconds <= 86400))
        usage_error("bad value for --seconds: '%s' (want a number of seconds in (0, 86400])", v);
    }
  }
  if (!paths[0]) usage_error("--plugin PATH is required (the Inspector plugin to measure)");
  rp_log_set_quiet(true);
  int rc;
  if (!strcmp(mode, "rate") && !o.dir) o.dir = getenv("NCCL_INSPECTOR_DUMP_DIR");
  if (!strcmp(mode, "quick")) {
    rc = quick(o, paths);
  } else if (!strcmp(mode, "rate") && !o.dir) {
    fprintf(stderr, "inspector-bench: rate needs --dir (the plugin's NCCL_INSPECTOR_DUMP_DIR)\n");
    rc = 2;
  } else {
    rc = run_mode(mode, &o, paths);
  }
  for (int i = 0; o.fixture && i < o.nfixtures; i++) bp_prog_free(&o.fixture[i]);
  free(o.fixture);
  free(o.fixture_path);
  return rc;
}
