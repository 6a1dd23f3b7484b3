/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.h - a minimal assertion harness for the C unit tests: each CHECK
 * counts, failures print file:line and the expression, and the program
 * ends with the plain "N passed, N failed" line.
 */
#ifndef INS_CHECK_H
#define INS_CHECK_H

#include <stdio.h>

static int g_pass, g_fail;

#define CHECK(cond)                                                              \
  do {                                                                           \
    if (cond) g_pass++;                                                          \
    else { g_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
  } while (0)

#define CHECK_EQ_U(a, b)                                                         \
  do {                                                                           \
    unsigned long long _a = (unsigned long long)(a), _b = (unsigned long long)(b); \
    if (_a == _b) g_pass++;                                                      \
    else { g_fail++; fprintf(stderr, "%s:%d: %s == %s failed: %llu != %llu\n", __FILE__, __LINE__, #a, #b, _a, _b); } \
  } while (0)

#define CHECK_STR(a, b)                                                          \
  do {                                                                           \
    const char *_a = (a), *_b = (b);                                             \
    if (_a && _b && !strcmp(_a, _b)) g_pass++;                                   \
    else { g_fail++; fprintf(stderr, "%s:%d: %s == %s failed: '%s' != '%s'\n", __FILE__, __LINE__, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); } \
  } while (0)

static inline int check_report(const char *name) {
  printf("%s: %d passed, %d failed\n", name, g_pass, g_fail);
  return g_fail ? 1 : 0;
}

#endif
