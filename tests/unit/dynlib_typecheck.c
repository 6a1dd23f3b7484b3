/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dynlib_typecheck.c - compiled, never run (tests/unit/tests.cmake): a slot of
 * the function's own type compiles, and with -DWRONG_TYPE a slot of another
 * type must not (INS_DYNLIB_SYM's _Generic has no association for it). The two
 * together show that the failure is the type and nothing else. The function is
 * only declared: nothing links it, as for libcurl and zlib.
 */
#include "io/dynlib.h"

long ins_typecheck_fn(const char *s, int n);

#ifdef WRONG_TYPE
static int (*g_slot)(const char *, int); /* the return type differs */
#else
static __typeof__(ins_typecheck_fn) *g_slot;
#endif

const struct ins_dynlib_sym ins_typecheck_syms[] = {INS_DYNLIB_SYM(ins_typecheck_fn, g_slot)};
