/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spank_conf.h - the SPANK plugin's settings: the site's defaults from its plugstack.conf
 * line, and the mode a step asks for (srun --inspector[=MODE], or INSPECTOR_SLURM in the
 * step's environment, as an sbatch script exports it). Parsing only: no Slurm call, so the
 * unit test drives it without a Slurm (tests/unit/spank/test_spank_conf.c).
 *
 * What a step gets, first match wins:
 *   1. srun --inspector[=MODE]   (no MODE: the site's mode=, else json)
 *   2. INSPECTOR_SLURM=MODE      in the environment srun was started with
 *   3. the site's default=on     (with its mode=)
 * MODE is json, prom, otlp or off ("off" turns off a site's default=on). Which variables a
 * mode sets, and that the user's own NCCL_INSPECTOR_* win, is inspector_spank.c's.
 */
#ifndef INS_SPANK_CONF_H
#define INS_SPANK_CONF_H

#include <stdbool.h>
#include <stddef.h>

enum ins_spank_mode { INS_MODE_UNSET = 0, INS_MODE_OFF, INS_MODE_JSON, INS_MODE_PROM, INS_MODE_OTLP };

#define INS_SPANK_MAX_ENV 32   /* env=NAME=VALUE arguments kept */
#define INS_SPANK_ARG_MAX 1024 /* one argument's length, at most */

struct ins_spank_conf {
  char plugin[INS_SPANK_ARG_MAX];   /* plugin=PATH: NCCL_PROFILER_PLUGIN */
  char dir[INS_SPANK_ARG_MAX];      /* dir=TEMPLATE: %j %s %u %n %% */
  enum ins_spank_mode mode;         /* mode=: what a bare --inspector means */
  bool on_by_default;               /* default=on */
  bool report;                      /* report=on: inspector-report at the step's end */
  char report_cmd[INS_SPANK_ARG_MAX]; /* report_cmd=PATH of inspector-report */
  unsigned report_timeout;          /* report_timeout=SECONDS */
  int nenv;
  char env[INS_SPANK_MAX_ENV][INS_SPANK_ARG_MAX]; /* env=NAME=VALUE, as given */
};

/* The built-in defaults (plugin and report_cmd from the install prefix). */
void ins_spank_conf_defaults(struct ins_spank_conf *c, const char *plugin, const char *report_cmd);

/* Apply plugstack.conf's arguments. 0, or -1 with a message in err (cap bytes) naming the
 * first bad argument; the arguments before it stay applied. */
int ins_spank_conf_parse(struct ins_spank_conf *c, int argc, char **argv, char *err, size_t cap);

/* "json", "prom", "otlp", "off" -> the mode; INS_MODE_UNSET for anything else. */
enum ins_spank_mode ins_spank_mode_parse(const char *s);
const char *ins_spank_mode_name(enum ins_spank_mode m);

/* The mode a step runs with (the order at the top): opt_used says srun was given
 * --inspector (opt_arg its value or NULL/""), env its INSPECTOR_SLURM or NULL. A bad value
 * is INS_MODE_UNSET, and the caller says so. */
enum ins_spank_mode ins_spank_mode_for_step(const struct ins_spank_conf *c, bool opt_used,
                                            const char *opt_arg, const char *env);

#endif
