/* SPDX-License-Identifier: Apache-2.0 */
/*
 * env.h - the environment variables the plugin reads, by name, and the check that
 * catches a misspelled one (env.c).
 */
#ifndef INS_ENV_H
#define INS_ENV_H

#include <stddef.h>

/* Every NCCL_INSPECTOR_* variable the plugin reads (core/config.c), and the OTEL_* ones
 * its OTLP exporter reads (sink/otlp/otlp_config.c): NULL-terminated. tests/test_bad_env.py (names.env-lists)
 * holds these lists equal to the names the sources read. */
extern const char *const ins_env_inspector_names[];
extern const char *const ins_env_otel_names[];

/* Process init: one warning (a notice: core/log.h) per variable of envp (NULL-terminated,
 * as environ) that looks like a setting of ours but is not one: any NCCL_INSPECTOR_* name
 * not in the list, and any OTEL_* name one or two edits away from one we read (the other
 * OTEL_* variables belong to other SDKs). Each warning names the closest known setting. At
 * most INS_ENV_MAX_WARNINGS, then one line with the count of the rest. Returns how many
 * names were unknown. */
#define INS_ENV_MAX_WARNINGS 8
int ins_env_check(char *const *envp);

/* Edit distance (Levenshtein: insertions, deletions, substitutions, and a swap of two
 * neighbours counts one) between a and b, up to cap (cap + 1 when larger). */
size_t ins_env_distance(const char *a, const char *b, size_t cap);

#endif
