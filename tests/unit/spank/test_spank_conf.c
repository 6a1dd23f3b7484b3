/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spank_conf.c - the SPANK plugin's settings (tools/spank/spank_conf.c): the built-in
 * defaults, every plugstack.conf argument and its bounds, a bad argument named and the ones
 * before it kept, and which mode a step gets (srun --inspector, then INSPECTOR_SLURM, then
 * the site's default=on). Pure functions: no Slurm, no files; one process.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "spank_conf.h"

#define PLUGIN "/usr/lib/libnccl-profiler-inspector.so"
#define REPORT "/usr/bin/inspector-report"

static struct ins_spank_conf g_c; /* 32 KiB and more: not on the stack */

static void fresh(void) { ins_spank_conf_defaults(&g_c, PLUGIN, REPORT); }

/* Parse one argument into the defaults; the result, err filled on a refusal. */
static int parse1(const char *arg, char *err, size_t cap) {
  char *argv[] = {(char *)arg};
  fresh();
  err[0] = '\0';
  return ins_spank_conf_parse(&g_c, 1, argv, err, cap);
}

static void defaults(void) {
  fresh();
  CHECK_STR(g_c.plugin, PLUGIN);
  CHECK_STR(g_c.report_cmd, REPORT);
  CHECK_STR(g_c.dir, "/tmp/inspector-%u/%j.%s"); /* per user first: see spank_conf.c */
  CHECK_EQ_U(g_c.mode, INS_MODE_JSON);
  CHECK(!g_c.on_by_default);
  CHECK(!g_c.report);
  CHECK_EQ_U(g_c.report_timeout, 60);
  CHECK_EQ_U(g_c.nenv, 0);
  /* nothing of an earlier use survives a reset */
  g_c.nenv = 3;
  g_c.report = true;
  fresh();
  CHECK_EQ_U(g_c.nenv, 0);
  CHECK(!g_c.report);
}

/* A full plugstack.conf line, every key: each lands in its field. */
static void every_key(void) {
  char *argv[] = {"plugin=/opt/inspector/lib/libnccl-profiler-inspector.so",
                  "dir=/scratch/%u/inspector/%j.%s",
                  "mode=prom",
                  "default=on",
                  "env=NCCL_INSPECTOR_DUMP_INTERVAL_USECS=5000",
                  "env=SITE_TAG=a=b c",
                  "report=on",
                  "report_cmd=/opt/inspector/bin/inspector-report",
                  "report_timeout=120"};
  char err[256] = "";
  fresh();
  CHECK_EQ_U(ins_spank_conf_parse(&g_c, 9, argv, err, sizeof err), 0);
  CHECK_STR(err, "");
  CHECK_STR(g_c.plugin, "/opt/inspector/lib/libnccl-profiler-inspector.so");
  CHECK_STR(g_c.dir, "/scratch/%u/inspector/%j.%s");
  CHECK_EQ_U(g_c.mode, INS_MODE_PROM);
  CHECK(g_c.on_by_default);
  CHECK_EQ_U(g_c.nenv, 2);
  CHECK_STR(g_c.env[0], "NCCL_INSPECTOR_DUMP_INTERVAL_USECS=5000");
  CHECK_STR(g_c.env[1], "SITE_TAG=a=b c"); /* the value is everything after the name's '=' */
  CHECK(g_c.report);
  CHECK_STR(g_c.report_cmd, "/opt/inspector/bin/inspector-report");
  CHECK_EQ_U(g_c.report_timeout, 120);
}

/* The spellings of on and off, and a later argument overriding an earlier one. */
static void on_off_and_last_wins(void) {
  static const char *const on[] = {"on", "1", "yes"}, *const off[] = {"off", "0", "no"};
  char arg[64], err[256];
  for (int i = 0; i < 3; i++) {
    snprintf(arg, sizeof arg, "default=%s", on[i]);
    CHECK_EQ_U(parse1(arg, err, sizeof err), 0);
    CHECK(g_c.on_by_default);
    snprintf(arg, sizeof arg, "report=%s", on[i]);
    CHECK_EQ_U(parse1(arg, err, sizeof err), 0);
    CHECK(g_c.report);
  }
  char *argv[] = {"default=on", "report=yes", "default=off", "report=0", "mode=otlp", "mode=json"};
  for (int i = 0; i < 3; i++) {
    fresh();
    g_c.on_by_default = g_c.report = true;
    snprintf(arg, sizeof arg, "default=%s", off[i]);
    char *one[] = {arg};
    CHECK_EQ_U(ins_spank_conf_parse(&g_c, 1, one, err, sizeof err), 0);
    CHECK(!g_c.on_by_default);
  }
  fresh();
  CHECK_EQ_U(ins_spank_conf_parse(&g_c, 6, argv, err, sizeof err), 0);
  CHECK(!g_c.on_by_default);
  CHECK(!g_c.report);
  CHECK_EQ_U(g_c.mode, INS_MODE_JSON);
}

/* report_timeout: 1..3600 whole seconds, nothing else. */
static void timeout_bounds(void) {
  char err[256];
  CHECK_EQ_U(parse1("report_timeout=1", err, sizeof err), 0);
  CHECK_EQ_U(g_c.report_timeout, 1);
  CHECK_EQ_U(parse1("report_timeout=3600", err, sizeof err), 0);
  CHECK_EQ_U(g_c.report_timeout, 3600);
  static const char *const bad[] = {"report_timeout=0",  "report_timeout=3601", "report_timeout=",
                                    "report_timeout=12s", "report_timeout=-5",  "report_timeout=1.5"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    CHECK_EQ_U(parse1(bad[i], err, sizeof err), (unsigned long long)-1);
    CHECK_EQ_U(g_c.report_timeout, 60); /* the default kept */
    if (!strstr(err, bad[i])) fprintf(stderr, "  err for %s: %s\n", bad[i], err);
    CHECK(strstr(err, bad[i]) != NULL);
  }
}

/* Refused, each named in the message: relative paths, a mode that is no output, on/off
 * misspelt, a variable name a shell would not export, an unknown key, a key's prefix or
 * extension, no '=', a value too long. */
static void refused(void) {
  static const char *const bad[] = {
      "plugin=lib/x.so",  "plugin=",          "dir=tmp/%j",      "dir=",        "report_cmd=inspector-report",
      "mode=off",         "mode=xml",         "mode=JSON",       "mode=",       "default=maybe",
      "report=ON",        "env=1X=2",         "env=NOVALUE",     "env==v",      "env=A-B=1",
      "env=A B=1",        "verbose=1",        "plugi=/x.so",     "plugins=/x.so", "debug",
      "=on",              "dir"};
  char err[256];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int r = parse1(bad[i], err, sizeof err);
    if (r != -1) fprintf(stderr, "  '%s' was accepted\n", bad[i]);
    CHECK_EQ_U(r, (unsigned long long)-1);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "'%s' not understood", bad[i]);
    CHECK(strstr(err, quoted) != NULL);
  }
  /* nothing changed by the refused ones */
  CHECK_STR(g_c.plugin, PLUGIN);
  CHECK_EQ_U(g_c.mode, INS_MODE_JSON);
  CHECK_EQ_U(g_c.nenv, 0);
  /* a value one byte too long for its field is refused; one that fits is kept whole */
  static char arg[INS_SPANK_ARG_MAX + 16];
  int k = snprintf(arg, sizeof arg, "plugin=/");
  memset(arg + k, 'p', INS_SPANK_ARG_MAX - 1 - 1); /* "/" + 1022: 1023 bytes, the most that fits */
  arg[k + INS_SPANK_ARG_MAX - 2] = '\0';
  CHECK_EQ_U(parse1(arg, err, sizeof err), 0);
  CHECK_EQ_U(strlen(g_c.plugin), INS_SPANK_ARG_MAX - 1);
  arg[k + INS_SPANK_ARG_MAX - 2] = 'p';
  arg[k + INS_SPANK_ARG_MAX - 1] = '\0';
  CHECK_EQ_U(parse1(arg, err, sizeof err), (unsigned long long)-1);
  CHECK_STR(g_c.plugin, PLUGIN);
}

/* The first bad argument stops the parse: those before it applied, those after not. */
static void stops_at_first_bad(void) {
  char *argv[] = {"mode=prom", "env=A=1", "dir=relative", "default=on", "env=B=2"};
  char err[512] = "";
  fresh();
  CHECK_EQ_U(ins_spank_conf_parse(&g_c, 5, argv, err, sizeof err), (unsigned long long)-1);
  CHECK_EQ_U(g_c.mode, INS_MODE_PROM);
  CHECK_EQ_U(g_c.nenv, 1);
  CHECK_STR(g_c.env[0], "A=1");
  CHECK(!g_c.on_by_default);
  CHECK(strstr(err, "'dir=relative'") != NULL);
  /* the message lists what is understood */
  CHECK(strstr(err, "report_timeout=1..3600") != NULL);
  /* a short buffer: cut, still a string */
  char small[16];
  memset(small, 'x', sizeof small);
  fresh();
  CHECK_EQ_U(ins_spank_conf_parse(&g_c, 5, argv, small, sizeof small), (unsigned long long)-1);
  CHECK_EQ_U(strlen(small), sizeof small - 1);
}

/* INS_SPANK_MAX_ENV variables kept; one more refused, the kept ones intact. */
static void env_cap(void) {
  static char args[INS_SPANK_MAX_ENV + 1][32];
  char *argv[INS_SPANK_MAX_ENV + 1], err[256];
  for (int i = 0; i <= INS_SPANK_MAX_ENV; i++) {
    snprintf(args[i], sizeof args[i], "env=V%d=%d", i, i * 7);
    argv[i] = args[i];
  }
  fresh();
  CHECK_EQ_U(ins_spank_conf_parse(&g_c, INS_SPANK_MAX_ENV, argv, err, sizeof err), 0);
  CHECK_EQ_U(g_c.nenv, INS_SPANK_MAX_ENV);
  fresh();
  CHECK_EQ_U(ins_spank_conf_parse(&g_c, INS_SPANK_MAX_ENV + 1, argv, err, sizeof err), (unsigned long long)-1);
  CHECK_EQ_U(g_c.nenv, INS_SPANK_MAX_ENV);
  CHECK(strstr(err, args[INS_SPANK_MAX_ENV]) != NULL);
  char want[32];
  snprintf(want, sizeof want, "V%d=%d", INS_SPANK_MAX_ENV - 1, (INS_SPANK_MAX_ENV - 1) * 7);
  CHECK_STR(g_c.env[INS_SPANK_MAX_ENV - 1], want);
  CHECK_STR(g_c.env[0], "V0=0");
}

static void mode_names(void) {
  static const char *const names[] = {"off", "json", "prom", "otlp"};
  static const enum ins_spank_mode modes[] = {INS_MODE_OFF, INS_MODE_JSON, INS_MODE_PROM, INS_MODE_OTLP};
  for (int i = 0; i < 4; i++) {
    CHECK_EQ_U(ins_spank_mode_parse(names[i]), modes[i]);
    CHECK_STR(ins_spank_mode_name(modes[i]), names[i]);
  }
  CHECK_EQ_U(ins_spank_mode_parse(NULL), INS_MODE_UNSET);
  CHECK_EQ_U(ins_spank_mode_parse(""), INS_MODE_UNSET);
  CHECK_EQ_U(ins_spank_mode_parse("Json"), INS_MODE_UNSET);
  CHECK_EQ_U(ins_spank_mode_parse("json "), INS_MODE_UNSET);
  CHECK_EQ_U(ins_spank_mode_parse("on"), INS_MODE_UNSET);
  CHECK_STR(ins_spank_mode_name(INS_MODE_UNSET), "unset");
}

/* The order of spank_conf.h: --inspector, then INSPECTOR_SLURM, then default=on. */
static void mode_for_step(void) {
  const enum ins_spank_mode U = INS_MODE_UNSET, OFF = INS_MODE_OFF, J = INS_MODE_JSON,
                            P = INS_MODE_PROM, O = INS_MODE_OTLP;
  struct {
    bool site_default; /* default=on */
    enum ins_spank_mode site_mode;
    bool used;
    const char *opt, *env;
    enum ins_spank_mode want;
  } rows[] = {
      /* srun --inspector: its value, or the site's mode= when bare */
      {false, J, true, NULL, NULL, J},
      {false, P, true, NULL, NULL, P},
      {false, O, true, "", NULL, O},
      {false, J, true, "prom", NULL, P},
      {false, J, true, "otlp", "prom", O}, /* the option beats the variable */
      {true, P, true, "off", NULL, OFF},   /* and turns off a site's default */
      {true, P, true, "off", "json", OFF},
      {false, J, true, "xml", "json", U},  /* a bad option is said, not passed over */
      /* no option: INSPECTOR_SLURM */
      {false, J, false, NULL, "prom", P},
      {false, P, false, NULL, "json", J},
      {true, P, false, NULL, "off", OFF},  /* beats the site's default */
      {false, J, false, NULL, "yes", U},
      {false, J, false, NULL, "", OFF},    /* empty: as if unset */
      /* neither: the site's default */
      {false, P, false, NULL, NULL, OFF},
      {true, P, false, NULL, NULL, P},
      {true, O, false, NULL, "", O},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    fresh();
    g_c.on_by_default = rows[i].site_default;
    g_c.mode = rows[i].site_mode;
    enum ins_spank_mode got = ins_spank_mode_for_step(&g_c, rows[i].used, rows[i].opt, rows[i].env);
    if (got != rows[i].want)
      fprintf(stderr, "  row %zu: got %s, want %s\n", i, ins_spank_mode_name(got), ins_spank_mode_name(rows[i].want));
    CHECK_EQ_U(got, rows[i].want);
  }
}

int main(void) {
  defaults();
  every_key();
  on_off_and_last_wins();
  timeout_bounds();
  refused();
  stops_at_first_bad();
  env_cap();
  mode_names();
  mode_for_step();
  return check_report("spank_conf");
}
