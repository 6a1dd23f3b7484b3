/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spank_tmpl.h - a step's directory from the site's template: %j the job id, %s the step
 * id, %u the user's name, %n the node's short host name, %% a '%'. Text only: making the
 * directory is spank_dir.c's.
 *
 * Where the fixed part ends matters to spank_dir.c: the components before the first one
 * that holds an expansion are the site's (links there are followed if root owns them),
 * the rest are the step's own (never a link, always the user's).
 */
#ifndef INS_SPANK_TMPL_H
#define INS_SPANK_TMPL_H

#include <stddef.h>

struct ins_spank_ids {
  const char *job, *step, *user, *node;
};

/* Expand tmpl into out (cap bytes). *fixed gets how many leading components of the result
 * come from the template's fixed part. 0, or -1 (an unknown %x, a value with a '/' or
 * that is "." or "..", a relative template, or too long). */
int ins_spank_tmpl_expand(const char *tmpl, const struct ins_spank_ids *ids, char *out, size_t cap,
                          int *fixed);

#endif
