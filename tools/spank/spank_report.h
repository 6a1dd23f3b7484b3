/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spank_report.h - the end-of-step report: inspector-report run over a step's directory by
 * slurmstepd (root) as the job's user, its text and HTML written next to the logs, bounded in
 * time. No Slurm call here (inspector_spank.c decides when, and logs what this says), so a
 * test can drive it without a Slurm.
 *
 * What it does, and why so:
 *  - fork; the child makes its own session and process group (setsid), so one kill(-pgid)
 *    reaches everything the report started, drops to the job's user (groups, gid, uid: in
 *    that order, the last one irreversible) BEFORE it touches the directory: the directory
 *    is the user's, so the user may have put anything there since the step began, and
 *    whatever is there is opened with the user's rights only (report.txt opened O_NOFOLLOW
 *    all the same);
 *  - the child's environment is a fixed minimal one (PATH, HOME, USER, LOGNAME, LC_ALL=C),
 *    not slurmstepd's; its descriptors are /dev/null, report.txt and a pipe for stderr,
 *    nothing else of slurmstepd's;
 *  - SIGTERM is ignored by the report: when the step is its job's last (an srun that made its
 *    own allocation, a batch script's last srun) Slurm ends the job as soon as the tasks end
 *    and signals everything of the step, the report too; the SIGKILL that follows KillWait
 *    seconds later (slurm.conf) is what ends a report then, so a site that wants long reports
 *    after such steps raises KillWait (or report_timeout is the bound, whichever is first);
 *  - the parent waits at most timeout_s; past it, SIGKILL to the whole process group. A
 *    report that ended also gets its group killed (while it is an unreaped zombie, so the
 *    group id cannot have been reused): nothing the report left behind outlives the step;
 *  - the child only makes async-signal-safe calls between fork and exec (slurmstepd has
 *    threads): everything it needs (argv, envp, paths, the fd bound) is built before fork.
 * The result is a one-line message for slurmd's log; nothing here can fail the step.
 */
#ifndef INS_SPANK_REPORT_H
#define INS_SPANK_REPORT_H

#include <stddef.h>
#include <sys/types.h>

/* Who the report runs as. groups may be NULL (then only gid). */
struct ins_spank_report_user {
  uid_t uid;
  gid_t gid;
  const gid_t *groups;
  int ngroups;
  const char *name; /* USER, LOGNAME */
  const char *home; /* HOME */
};

enum ins_spank_report_result {
  INS_REPORT_OK = 0,   /* exited 0: report.txt and report.html written */
  INS_REPORT_FAILED,   /* could not start, or exited non-zero, or killed by a signal */
  INS_REPORT_TIMEOUT,  /* still running at timeout_s: its process group killed */
};

/* Run `cmd --html DIR/report.html DIR > DIR/report.txt` as u, at most timeout_s seconds.
 * msg (cap bytes) says what happened in one line (the report's first stderr line on a
 * failure). Blocks the caller for at most timeout_s plus a kill's reaping. */
enum ins_spank_report_result ins_spank_report_run(const char *cmd, const char *dir,
                                                  const struct ins_spank_report_user *u,
                                                  unsigned timeout_s, char *msg, size_t cap);

#endif
