/* SPDX-License-Identifier: Apache-2.0 */
/*
 * judge_out.h - where the judge's tests (test_judge.c, test_judge_bounds.c) collect what
 * core/judge.h emits: g_out[0..g_nout), in emission order, through collect().
 */
#ifndef INS_TEST_JUDGE_OUT_H
#define INS_TEST_JUDGE_OUT_H

#include "core/record.h"

#define MAX_OUT 20000

static struct ins_record g_out[MAX_OUT];
static int g_nout;

/* an ins_judge_emit_fn: keeps a copy of each record emitted */
static void collect(void *arg, struct ins_record *r) {
  (void)arg;
  if (g_nout < MAX_OUT) g_out[g_nout++] = *r;
}

#endif
