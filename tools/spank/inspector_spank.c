/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspector_spank.c - the SPANK plugin: `srun --inspector[=json|prom|otlp|off]` turns Inspector
 * on for a job step. Slurm's side only: which callback does what; the settings are
 * spank_conf.c's, the directory's name spank_tmpl.c's, its making spank_dir.c's.
 *
 * slurm_spank_init (every context): registers --inspector, so srun --help shows it; in
 *   slurmstepd (remote) it reads the site's plugstack.conf arguments.
 * slurm_spank_user_init (remote, once per node and step, before any task starts, as the
 *   job's user): decides the step's mode (spank_conf.h), makes the step's directory and sets,
 *   in the environment every task of the step inherits:
 *     NCCL_PROFILER_PLUGIN   the installed plugin (plugin=)      always (--inspector asked)
 *     NCCL_INSPECTOR_ENABLE  1                                     always
 *     NCCL_INSPECTOR_DUMP_DIR the step's directory (dir=)          unless the user set it
 *     the mode's variable (JSON_DUMP, PROM_DUMP or OTLP_EXPORT)=1  unless the user set it
 *     the site's env=NAME=VALUE                                    unless the user set it
 *   "Unless the user set it": the user's exported NCCL_INSPECTOR_* reach the task as they
 *   are (spank_setenv without overwrite), so a user's choice beats a site default.
 *   The batch script's step and the extern step are left alone: an srun inside the script
 *   inherits the script's environment, and a DUMP_DIR set there would pin every step to one
 *   directory as if the user had set it.
 * slurm_spank_exit (remote, after every task of the node has ended; slurmstepd as root): on
 *   the step's first node (S_JOB_NODEID 0), where the site set report=on and this step wrote
 *   JSON logs into the directory made above, runs report_cmd over that directory as the
 *   job's user, bounded by report_timeout (spank_report.h): report.txt and report.html next
 *   to the logs. Not for prom/otlp (no logs to read), nor for a directory the user chose
 *   (not ours to write into). On several nodes without a shared file system the report
 *   sees node 0's logs only; with one, other nodes' last records may still be in flight.
 * Nothing here fails a job: a bad option, a refused directory, a failed call get one error
 * line (slurmd's log, and the user's srun) and the step runs without Inspector.
 */
#include <slurm/slurm.h> /* SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT */
#include <slurm/spank.h>

#include <errno.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spank_conf.h"
#include "spank_dir.h"
#include "spank_report.h"
#include "spank_tmpl.h"

SPANK_PLUGIN(inspector, 1);

#ifndef INSPECTOR_SPANK_PLUGIN
#define INSPECTOR_SPANK_PLUGIN "/usr/lib/libnccl-profiler-inspector.so"
#endif
#ifndef INSPECTOR_SPANK_REPORT
#define INSPECTOR_SPANK_REPORT "/usr/bin/inspector-report"
#endif
#define ENV_SWITCH "INSPECTOR_SLURM" /* the sbatch script's way: SPANK options do not pass */
#define STEP_DIR_MODE 0755           /* the plugin's own (src/io/files.h): exporters read it */

static struct ins_spank_conf g_conf;
static int g_conf_ok;
/* The directory user_init made for this step's JSON logs, for slurm_spank_exit: the same
 * slurmstepd calls both (one per node and step), so a static carries it; "" = no report. */
static char g_report_dir[4096];

/* --inspector's value, as srun saw it: only checked here (srun says at once what is wrong);
 * the step reads it again through spank_option_getopt. */
static int opt_cb(int val, const char *optarg, int remote) {
  (void)val;
  (void)remote;
  if (optarg && *optarg && ins_spank_mode_parse(optarg) == INS_MODE_UNSET) {
    slurm_error("inspector: --inspector=%s: the mode is json, prom, otlp or off", optarg);
    return -1;
  }
  return 0;
}

static struct spank_option g_opt = {
    "inspector", "[json|prom|otlp|off]",
    "NCCL/RCCL Inspector for this step: per-task logs (json, the default), Prometheus files "
    "(prom) or OTLP export (otlp) in a per-step directory; 'off' where the site turns it on. "
    "In an sbatch script: export " ENV_SWITCH "=MODE.",
    2, 0, opt_cb};

int slurm_spank_init(spank_t sp, int ac, char **av) {
  if (spank_option_register(sp, &g_opt) != ESPANK_SUCCESS) {
    slurm_error("inspector: could not register --inspector");
    return 0;
  }
  if (spank_context() != S_CTX_REMOTE) return 0;
  char err[INS_SPANK_ARG_MAX + 256];
  ins_spank_conf_defaults(&g_conf, INSPECTOR_SPANK_PLUGIN, INSPECTOR_SPANK_REPORT);
  g_conf_ok = ins_spank_conf_parse(&g_conf, ac, av, err, sizeof err) == 0;
  if (!g_conf_ok) slurm_error("inspector: %s; Inspector stays off", err);
  return 0;
}

/* The user's own value of var in the step's environment? */
static int user_has(spank_t sp, const char *var) {
  char v[8];
  spank_err_t e = spank_getenv(sp, var, v, sizeof v);
  return e == ESPANK_SUCCESS || e == ESPANK_NOSPACE;
}

/* The step's directory, made: 0 and its path in dir, or -1 (said). */
static int make_step_dir(spank_t sp, char *dir, size_t cap) {
  uint32_t job = 0, step = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
    slurm_error("inspector: the job's ids are not available; Inspector stays off");
    return -1;
  }
  char jobs[16], steps[16], node[256] = "", pwbuf[4096], path[4096], why[4096 + 256];
  struct passwd pw, *pwp = NULL;
  snprintf(jobs, sizeof jobs, "%u", job);
  snprintf(steps, sizeof steps, "%u", step);
  if (getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &pwp) != 0 || !pwp) {
    slurm_error("inspector: no user name for uid %u; Inspector stays off", (unsigned)uid);
    return -1;
  }
  if (gethostname(node, sizeof node - 1) != 0) snprintf(node, sizeof node, "node");
  node[strcspn(node, ".")] = '\0';
  struct ins_spank_ids ids = {jobs, steps, pw.pw_name, node};
  int fixed = 0;
  if (ins_spank_tmpl_expand(g_conf.dir, &ids, path, sizeof path, &fixed) != 0 || strlen(path) >= cap) {
    slurm_error("inspector: the directory template '%s' does not give a directory (%%j %%s %%u %%n "
                "%%%% only); Inspector stays off", g_conf.dir);
    return -1;
  }
  if (ins_spank_dir_make(path, fixed, uid, gid, STEP_DIR_MODE, why, sizeof why) != 0) {
    slurm_error("inspector: %s; Inspector stays off for step %u.%u", why, job, step);
    return -1;
  }
  snprintf(dir, cap, "%s", path);
  return 0;
}

static void set(spank_t sp, const char *var, const char *val, int overwrite) {
  if (spank_setenv(sp, var, val, overwrite) != ESPANK_SUCCESS && overwrite)
    slurm_error("inspector: could not set %s", var);
}

int slurm_spank_user_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  uint32_t step = 0;
  if (!g_conf_ok || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) return 0;
  if (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT) return 0;

  char *arg = NULL, envv[64] = "";
  int used = spank_option_getopt(sp, &g_opt, &arg) == ESPANK_SUCCESS;
  int has_env = spank_getenv(sp, ENV_SWITCH, envv, sizeof envv) == ESPANK_SUCCESS;
  enum ins_spank_mode m = ins_spank_mode_for_step(&g_conf, used, arg, has_env ? envv : NULL);
  if (m == INS_MODE_UNSET) {
    slurm_error("inspector: %s%s: the mode is json, prom, otlp or off; Inspector stays off",
                used ? "--inspector=" : ENV_SWITCH "=", used ? arg : envv);
    return 0;
  }
  if (m == INS_MODE_OFF) return 0;

  char dir[4096];
  int ours = !user_has(sp, "NCCL_INSPECTOR_DUMP_DIR");
  if (ours) {
    if (make_step_dir(sp, dir, sizeof dir) != 0) return 0;
    set(sp, "NCCL_INSPECTOR_DUMP_DIR", dir, 1);
  }
  set(sp, "NCCL_PROFILER_PLUGIN", g_conf.plugin, 1);
  set(sp, "NCCL_INSPECTOR_ENABLE", "1", 1);
  static const char *const mode_var[] = {
      [INS_MODE_JSON] = "NCCL_INSPECTOR_JSON_DUMP",
      [INS_MODE_PROM] = "NCCL_INSPECTOR_PROM_DUMP",
      [INS_MODE_OTLP] = "NCCL_INSPECTOR_OTLP_EXPORT",
  };
  set(sp, mode_var[m], "1", 0);
  for (int i = 0; i < g_conf.nenv; i++) {
    char name[INS_SPANK_ARG_MAX];
    const char *eq = strchr(g_conf.env[i], '=');
    snprintf(name, sizeof name, "%.*s", (int)(eq - g_conf.env[i]), g_conf.env[i]);
    set(sp, name, eq + 1, 0);
  }
  if (ours && m == INS_MODE_JSON && g_conf.report)
    snprintf(g_report_dir, sizeof g_report_dir, "%s", dir);
  return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_REMOTE || !g_report_dir[0]) return 0;
  uint32_t node = 1, job = 0, step = 0;
  uid_t uid = 0;
  gid_t gid = 0, *groups = NULL;
  int ngroups = 0;
  if (spank_get_item(sp, S_JOB_NODEID, &node) != ESPANK_SUCCESS || node != 0) return 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
    slurm_error("inspector: report: the job's ids are not available; no report");
    return 0;
  }
  if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &ngroups) != ESPANK_SUCCESS) groups = NULL;
  char pwbuf[4096], msg[8192 + 1024];
  struct passwd pw, *pwp = NULL;
  if (getpwuid_r(uid, &pw, pwbuf, sizeof pwbuf, &pwp) != 0 || !pwp) {
    slurm_error("inspector: report for step %u.%u: no user for uid %u; no report", job, step, (unsigned)uid);
    return 0;
  }
  struct ins_spank_report_user u = {uid, gid, groups, groups ? ngroups : 0, pw.pw_name, pw.pw_dir};
  enum ins_spank_report_result r =
      ins_spank_report_run(g_conf.report_cmd, g_report_dir, &u, g_conf.report_timeout, msg, sizeof msg);
  if (r == INS_REPORT_OK)
    slurm_verbose("inspector: report for step %u.%u: %s", job, step, msg);
  else
    slurm_error("inspector: report for step %u.%u: %s", job, step, msg);
  g_report_dir[0] = '\0';
  return 0; /* whatever happened: a report never fails the step */
}
