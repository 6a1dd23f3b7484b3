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
 *   MODE: calls | threads | scale | rate | mem | quick
 */
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

static void usage(void) {
  fprintf(stderr,
          "usage: inspector-bench calls|threads|scale|rate|mem|quick --plugin PATH [--null PATH]\n"
          "         [--runs N] [--reps N] [--synth-ops N] [--synth-iters N] [--channels N]\n"
          "         [--callgrind mix|synth] [--rate N] [--seconds S] [--dir DIR] [--comms N]\n"
          "         [FIXTURE.jsonl.gz...]\n");
  exit(2);
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
  usage();
  return 2;
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
  if (argc < 2) usage();
  const char *mode = argv[1];
  const char *paths[2] = {NULL, NULL};
  struct bp_opts o = {.runs = 7, .reps = 20, .synth_ops = 1024, .synth_iters = 50, .channels = 4,
                      .rate = 500000, .seconds = 10, .dir = NULL, .comms = 256};
  o.fixture_path = calloc((size_t)argc, sizeof *o.fixture_path);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (a[0] != '-') {
      o.fixture_path[o.nfixtures++] = a;
      continue;
    }
    if (!v) usage();
    i++;
    if (!strcmp(a, "--plugin")) paths[0] = v;
    else if (!strcmp(a, "--null")) paths[1] = v;
    else if (!strcmp(a, "--runs")) o.runs = atoi(v);
    else if (!strcmp(a, "--reps")) o.reps = atoi(v);
    else if (!strcmp(a, "--synth-ops")) o.synth_ops = atoi(v);
    else if (!strcmp(a, "--synth-iters")) o.synth_iters = atoi(v);
    else if (!strcmp(a, "--channels")) o.channels = atoi(v);
    else if (!strcmp(a, "--callgrind")) o.callgrind = v;
    else if (!strcmp(a, "--rate")) o.rate = atol(v);
    else if (!strcmp(a, "--seconds")) o.seconds = atof(v);
    else if (!strcmp(a, "--dir")) o.dir = v;
    else if (!strcmp(a, "--comms")) o.comms = atoi(v);
    else usage();
  }
  if (!paths[0] || o.runs < 1 || o.reps < 1 || o.synth_ops < 1 || o.synth_iters < 1 ||
      o.channels < 1 || o.channels > 64 || o.comms < 2)
    usage();
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
