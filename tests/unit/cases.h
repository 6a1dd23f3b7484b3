/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cases.h - main() of a C unit test whose cases run in this process, one after another,
 * each between the test's setup and teardown: `--list` prints the case names (ctest
 * registers them one by one from that list: ins_unit_cases in tests.cmake), `--case NAME`
 * runs one. A case returns 0, or
 * CASE_SKIP (77: ctest's skip code) when the machine cannot run it (not root); a run of one
 * skipped case exits 77. Failures are check.h's.
 */
#ifndef INS_TEST_CASES_H
#define INS_TEST_CASES_H

#include <stdio.h>
#include <string.h>

#include "check.h"

#define CASE_SKIP 77

struct unit_case {
  const char *name;
  int (*fn)(void);
  const char *labels; /* ctest labels of this case beyond its binary's, comma-separated, or NULL */
};

/* One line of `--list`, which tests.cmake (ins_unit_cases) turns into a ctest: the case's name,
 * then its own labels if it has any ("moves threads"). Every C test that runs one case per
 * process lists its cases through this, so that no case name is copied by hand anywhere. */
static inline void list_case(const char *name, const char *labels) {
  if (labels && *labels) printf("%s %s\n", name, labels);
  else printf("%s\n", name);
}

/* why_skipped: what a skipped case lacks, said after its name. */
static inline int run_cases(int argc, char **argv, const struct unit_case *cases, size_t n,
                     void (*setup)(void), void (*teardown)(void), const char *suite,
                     const char *why_skipped) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--list")) {
      for (size_t c = 0; c < n; c++) list_case(cases[c].name, cases[c].labels);
      return 0;
    }
    if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
  }
  int ran = 0, skipped = 0;
  for (size_t c = 0; c < n; c++) {
    if (only && strcmp(only, cases[c].name)) continue;
    setup();
    if (cases[c].fn() == CASE_SKIP) {
      printf("%s: skipped (%s)\n", cases[c].name, why_skipped);
      skipped++;
    }
    teardown();
    ran++;
  }
  if (!ran) {
    fprintf(stderr, "no case named %s\n", only ? only : "");
    return 2;
  }
  int r = check_report(suite);
  return r ? r : (only && skipped ? CASE_SKIP : 0);
}

/* A case of a test that runs one case per process (its state is the process's: a plugin
 * loaded once, its threads, its exit): the case checks through check.h and returns nothing. */
struct proc_case {
  const char *name;
  void (*fn)(void);
  const char *labels; /* as unit_case's */
};

/* main() of such a test: `--list`, or `--case NAME` (required: one case per process). */
static inline int run_one_case(int argc, char **argv, const struct proc_case *cases, size_t n) {
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--list")) {
      for (size_t c = 0; c < n; c++) list_case(cases[c].name, cases[c].labels);
      return 0;
    }
    if (!strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
  }
  if (!only) {
    fprintf(stderr, "usage: %s --list | --case NAME (one case per process)\n", argv[0]);
    return 2;
  }
  for (size_t c = 0; c < n; c++) {
    if (strcmp(only, cases[c].name)) continue;
    cases[c].fn();
    return check_report(only);
  }
  fprintf(stderr, "no case named %s\n", only);
  return 2;
}

#endif
