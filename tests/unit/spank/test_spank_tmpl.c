/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spank_tmpl.c - a step's directory from the site's template (tools/spank/spank_tmpl.c):
 * %j %s %u %n %% expanded, how many leading components are the site's (spank_dir.c follows
 * root's links there and no others), values that would leave their component refused, the
 * buffer's bound at the byte. Pure function: one process, no files.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "spank_tmpl.h"

static const struct ins_spank_ids IDS = {"4242", "7", "alice", "gpu03"};

/* Expands to want with `fixed` site components. */
static void ok(const char *tmpl, const struct ins_spank_ids *ids, const char *want, int want_fixed) {
  char out[512];
  int fixed = -7;
  memset(out, 'x', sizeof out);
  int r = ins_spank_tmpl_expand(tmpl, ids, out, sizeof out, &fixed);
  if (r != 0 || strcmp(out, want) || fixed != want_fixed)
    fprintf(stderr, "  '%s': r=%d out='%.*s' fixed=%d (want '%s', %d)\n", tmpl, r, r ? 0 : 200, out, fixed,
            want, want_fixed);
  CHECK_EQ_U(r, 0);
  CHECK_STR(out, want);
  CHECK_EQ_U(fixed, want_fixed);
}

static void refused(const char *tmpl, const struct ins_spank_ids *ids) {
  char out[512];
  int fixed = 0;
  int r = ins_spank_tmpl_expand(tmpl, ids, out, sizeof out, &fixed);
  if (r != -1) fprintf(stderr, "  '%s' was expanded to '%s'\n", tmpl, out);
  CHECK_EQ_U(r, (unsigned long long)-1);
}

static void expands(void) {
  ok("/tmp/inspector-%u/%j.%s", &IDS, "/tmp/inspector-alice/4242.7", 1); /* the default */
  ok("/scratch/inspector/%u/%j/%n", &IDS, "/scratch/inspector/alice/4242/gpu03", 2);
  ok("/lustre/%n-%j-%s-%u", &IDS, "/lustre/gpu03-4242-7-alice", 1);
  ok("/%j", &IDS, "/4242", 0);                   /* no site component at all */
  ok("/data/fixed/dir", &IDS, "/data/fixed/dir", 3); /* no expansion: the site's whole */
  ok("/data/100%%/%j", &IDS, "/data/100%/4242", 2);  /* %% is text, not an expansion */
  ok("/a/%%%j", &IDS, "/a/%4242", 1);
  ok("/x/%j/", &IDS, "/x/4242", 1);              /* a trailing '/' names nothing */
  ok("//a//%j//b", &IDS, "//a//4242//b", 1);     /* repeated '/': one component boundary */
  /* ids a template does not use may be missing */
  struct ins_spank_ids some = {"9", "0", NULL, NULL};
  ok("/tmp/%j.%s", &some, "/tmp/9.0", 1);
  /* names with dots are names */
  struct ins_spank_ids dots = {"1", "2", "..x", "a.b"};
  ok("/t/%u/%n", &dots, "/t/..x/a.b", 1);
}

static void refuses(void) {
  refused("tmp/%j", &IDS);      /* relative */
  refused("", &IDS);
  refused(NULL, &IDS);
  refused("/t/%x", &IDS);       /* unknown */
  refused("/t/%J", &IDS);
  refused("/t/%", &IDS);        /* '%' at the end */
  refused("/t/%n", &(struct ins_spank_ids){"1", "2", "u", NULL}); /* an id it needs, missing */
  refused("/t/%u", &(struct ins_spank_ids){"1", "2", "", "n"});   /* empty */
  /* a value that is no single component: '/', ".", ".." */
  refused("/t/%u/x", &(struct ins_spank_ids){"1", "2", "../root", "n"});
  refused("/t/%u", &(struct ins_spank_ids){"1", "2", "a/b", "n"});
  refused("/t/%u/x", &(struct ins_spank_ids){"1", "2", "..", "n"});
  refused("/t/%u/x", &(struct ins_spank_ids){"1", "2", ".", "n"});
  refused("/t/%n", &(struct ins_spank_ids){"1", "2", "u", "/"});
  /* ".." made of the fixed text */
  refused("/a/../%j", &IDS);
  refused("/a/%j/..", &IDS);
  refused("/a/%j/../b", &IDS);
}

/* The output's bound: the expansion and its '\0' fit exactly, or -1. */
static void bound(void) {
  const char *want = "/tmp/inspector-alice/4242.7";
  size_t n = strlen(want);
  char out[64];
  int fixed = -1;
  CHECK_EQ_U(ins_spank_tmpl_expand("/tmp/inspector-%u/%j.%s", &IDS, out, n + 1, &fixed), 0);
  CHECK_STR(out, want);
  CHECK_EQ_U(ins_spank_tmpl_expand("/tmp/inspector-%u/%j.%s", &IDS, out, n, &fixed), (unsigned long long)-1);
  /* cut inside an expansion, and inside the fixed text */
  CHECK_EQ_U(ins_spank_tmpl_expand("/tmp/inspector-%u/%j.%s", &IDS, out, 18, &fixed), (unsigned long long)-1);
  CHECK_EQ_U(ins_spank_tmpl_expand("/tmp/inspector-%u/%j.%s", &IDS, out, 3, &fixed), (unsigned long long)-1);
  CHECK_EQ_U(ins_spank_tmpl_expand("/tmp/inspector-%u/%j.%s", &IDS, out, 0, &fixed), (unsigned long long)-1);
  /* never a byte past cap: a canary right after it */
  char guard[40];
  memset(guard, '#', sizeof guard);
  ins_spank_tmpl_expand("/tmp/inspector-%u/%j.%s", &IDS, guard, 20, &fixed);
  for (size_t i = 20; i < sizeof guard; i++) CHECK(guard[i] == '#');
}

int main(void) {
  expands();
  refuses();
  bound();
  return check_report("spank_tmpl");
}
