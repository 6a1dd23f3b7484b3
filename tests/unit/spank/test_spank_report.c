/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spank_report.c - the end-of-step report (tools/spank/spank_report.c) run over a step's
 * directory, with shell scripts standing in for inspector-report; one behaviour per case:
 * inspector-unit-spank_report --list | --case NAME.
 *
 * The job's user is "nobody" when the test runs as root (as slurmstepd would, the report
 * drops to it), else the test's own user; the cases that are about the drop itself need root
 * and exit 77 (skipped) without it. Each case works in a mkdtemp directory of its own:
 *   <base>/<script>.sh   the report command (base is 0755: the job's user reaches it)
 *   <base>/step          the step's directory, the job's user's
 * No timed assertion: the timeout case judges what was killed, and retries with a longer
 * bound where the report had not even started its child by the first one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "spank_report.h"

#define SKIP CASE_SKIP
#define EXTRA_GID 4242 /* a supplementary group the job's user is given */

static char g_base[64], g_step[96];
static struct ins_spank_report_user g_u;
static gid_t g_groups[2];
static char g_name[64], g_home[256];

static void setup(void) {
  if (geteuid() == 0) {
    struct passwd *pw = getpwnam("nobody");
    g_u.uid = pw ? pw->pw_uid : 65534;
    g_u.gid = pw ? pw->pw_gid : 65534;
    snprintf(g_name, sizeof g_name, "%s", pw ? pw->pw_name : "nobody");
    snprintf(g_home, sizeof g_home, "%s", pw ? pw->pw_dir : "/nonexistent");
    g_groups[0] = g_u.gid;
    g_groups[1] = EXTRA_GID;
    g_u.groups = g_groups;
    g_u.ngroups = 2;
  } else {
    struct passwd *pw = getpwuid(getuid());
    g_u.uid = getuid();
    g_u.gid = getgid();
    snprintf(g_name, sizeof g_name, "%s", pw ? pw->pw_name : "me");
    snprintf(g_home, sizeof g_home, "%s", pw ? pw->pw_dir : "/");
    g_u.groups = NULL;
    g_u.ngroups = 0;
  }
  g_u.name = g_name;
  g_u.home = g_home;
  snprintf(g_base, sizeof g_base, "/tmp/ins-spank-report-XXXXXX");
  if (!mkdtemp(g_base) || chmod(g_base, 0755) != 0) {
    perror("mkdtemp");
    exit(1);
  }
  snprintf(g_step, sizeof g_step, "%s/step", g_base);
  if (mkdir(g_step, 0755) != 0 || chown(g_step, g_u.uid, g_u.gid) != 0) {
    perror(g_step);
    exit(1);
  }
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_base);
  CHECK(system(cmd) == 0);
}

static char *at(const char *rel) {
  static char bufs[8][256];
  static int n;
  char *b = bufs[n++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", g_base, rel);
  return b;
}

/* <base>/name, executable, holding body after a #!/bin/sh line. Its path. */
static char *script(const char *name, const char *body) {
  char *path = at(name);
  FILE *f = fopen(path, "w");
  if (!f) return perror(path), path;
  fprintf(f, "#!/bin/sh\n%s", body);
  fclose(f);
  CHECK(chmod(path, 0755) == 0);
  return path;
}

/* A file's whole text ("" if it cannot be read). */
static char *slurp(const char *path) {
  static char buf[8192];
  buf[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return buf;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static enum ins_spank_report_result run(const char *cmd, unsigned timeout_s, char *msg, size_t cap) {
  msg[0] = '\0';
  return ins_spank_report_run(cmd, g_step, &g_u, timeout_s, msg, cap);
}

/* ---- cases ---- */

/* Run as root: the report is the job's user (uid, gid, exactly its groups: none of root's),
 * with the minimal environment, none of the caller's descriptors, in the step's directory;
 * report.txt and report.html are that user's. */
static int case_drops_to_user(void) {
  if (geteuid() != 0) return SKIP;
  const char *cmd = script("report.sh",
                           "id -u; id -g; id -G\n"
                           "echo \"HOME=$HOME USER=$USER LOGNAME=$LOGNAME LC_ALL=$LC_ALL PATH=$PATH\"\n"
                           "echo \"secret=${INS_TEST_SECRET-unset}\"\n"
                           "if [ -e /proc/$$/fd/37 ]; then echo fd37=open; else echo fd37=closed; fi\n"
                           "echo \"args=$1 $2 $3 cwd=$(pwd)\"\n"
                           "echo '<html>' > \"$2\"\n");
  char msg[1024], want[2048];
  int fd = open("/dev/null", O_RDONLY); /* a descriptor of the caller's, not close-on-exec */
  CHECK(fd >= 0 && dup2(fd, 37) == 37);
  setenv("INS_TEST_SECRET", "slurmstepd's", 1);
  enum ins_spank_report_result r = run(cmd, 60, msg, sizeof msg);
  unsetenv("INS_TEST_SECRET");
  close(37);
  close(fd);
  CHECK_EQ_U(r, INS_REPORT_OK);
  snprintf(want, sizeof want, "report written: %s/report.txt, %s/report.html", g_step, g_step);
  CHECK_STR(msg, want);
  snprintf(want, sizeof want,
           "%u\n%u\n%u %u\n"
           "HOME=%s USER=%s LOGNAME=%s LC_ALL=C PATH=/usr/local/bin:/usr/bin:/bin\n"
           "secret=unset\n"
           "fd37=closed\n"
           "args=--html %s/report.html %s cwd=%s\n",
           (unsigned)g_u.uid, (unsigned)g_u.gid, (unsigned)g_u.gid, (unsigned)EXTRA_GID, g_home, g_name,
           g_name, g_step, g_step, g_step);
  CHECK_STR(slurp(at("step/report.txt")), want);
  CHECK_STR(slurp(at("step/report.html")), "<html>\n");
  struct stat st;
  CHECK(lstat(at("step/report.txt"), &st) == 0 && st.st_uid == g_u.uid && S_ISREG(st.st_mode));
  CHECK(lstat(at("step/report.html"), &st) == 0 && st.st_uid == g_u.uid);
  return 0;
}

/* The user is dropped to before the directory is touched: a directory the job's user cannot
 * enter is not entered (root could have). */
static int case_closed_dir(void) {
  if (geteuid() != 0) return SKIP;
  const char *cmd = script("report.sh", "echo ran\n");
  char msg[1024], want[1024];
  CHECK(chown(g_step, 0, 0) == 0 && chmod(g_step, 0700) == 0);
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s exited 127: inspector-report not started: the step's directory is gone or closed", cmd);
  CHECK_STR(msg, want);
  CHECK(access(at("step/report.txt"), F_OK) != 0);
  return 0;
}

/* report.txt planted as a link (to a file the job's user may write): not followed. */
static int case_report_txt_link(void) {
  const char *cmd = script("report.sh", "echo written\n");
  char msg[1024], want[1024];
  int fd = open(at("victim"), O_WRONLY | O_CREAT | O_EXCL, 0666);
  CHECK(fd >= 0 && write(fd, "intact\n", 7) == 7);
  close(fd);
  CHECK(chown(at("victim"), g_u.uid, g_u.gid) == 0);
  CHECK(symlink(at("victim"), at("step/report.txt")) == 0);
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s exited 127: inspector-report not started: cannot write report.txt in the step's directory", cmd);
  CHECK_STR(msg, want);
  CHECK_STR(slurp(at("victim")), "intact\n");
  return 0;
}

/* Past the bound: the report and everything in its process group killed (a child it left
 * running, here `sleep 30 &`, dies with it: this process is a subreaper, so the orphan
 * comes back to it, and how it ended says who ended it). */
static int case_timeout_kills_group(void) {
  const char *cmd = script("hang.sh", "sleep 30 &\necho $! > child.pid.tmp && mv child.pid.tmp child.pid\nexec sleep 31\n");
  char msg[1024], want[1024];
  CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  for (unsigned bound = 1; bound <= 8; bound *= 2) {
    unlink(at("step/child.pid"));
    enum ins_spank_report_result r = run(cmd, bound, msg, sizeof msg);
    CHECK_EQ_U(r, INS_REPORT_TIMEOUT);
    snprintf(want, sizeof want, "%s did not finish in %u s (report_timeout): its process group killed; "
             "the step is not affected", cmd, bound);
    CHECK_STR(msg, want);
    pid_t child = (pid_t)atoi(slurp(at("step/child.pid")));
    if (child <= 0) { /* a machine so slow the report had not started its child: again */
      fprintf(stderr, "  the report had not started its child in %u s: again with %u s\n", bound, 2 * bound);
      continue;
    }
    int st = 0;
    pid_t w = waitpid(child, &st, 0);
    if (!(w == child && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL))
      fprintf(stderr, "  the report's child %d: waitpid %d, status 0x%x (not killed with its group)\n", (int)child,
              (int)w, st);
    CHECK(w == child && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    while (waitpid(-1, &st, WNOHANG) > 0) {
    }
    return 0;
  }
  CHECK(!"the report never started its child");
  return 0;
}

/* The job's end sends SIGTERM to the whole step: the report ignores it (its bound is
 * KillWait's SIGKILL, or report_timeout). */
static int case_sigterm_ignored(void) {
  const char *cmd = script("report.sh", "kill -TERM $$\necho survived\n");
  char msg[1024];
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_OK);
  CHECK_STR(slurp(at("step/report.txt")), "survived\n");
  return 0;
}

/* A non-zero exit: its status and the first line of its stderr (unprintable bytes shown as
 * '?'); killed by a signal: which; by SIGKILL before the bound: the job's end (KillWait). */
static int case_failures_said(void) {
  char msg[1024], want[1024];
  const char *cmd = script("fail.sh", "echo partial\nprintf 'no logs in \\033[1m%s\\nsecond line\\n' \"$3\" >&2\nexit 3\n");
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s exited 3: no logs in ?[1m%s", cmd, g_step);
  CHECK_STR(msg, want);
  CHECK_STR(slurp(at("step/report.txt")), "partial\n"); /* left as the report wrote it */
  cmd = script("quiet.sh", "exit 1\n");
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s exited 1", cmd);
  CHECK_STR(msg, want);
  cmd = script("usr1.sh", "echo going >&2\nkill -USR1 $$\nexit 0\n");
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s killed by signal %d: going", cmd, SIGUSR1);
  CHECK_STR(msg, want);
  cmd = script("kill.sh", "kill -KILL $$\nexit 0\n");
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s killed by SIGKILL before report_timeout: the job ended (a report after the "
           "job's last step has KillWait seconds, slurm.conf)", cmd);
  CHECK_STR(msg, want);
  return 0;
}

/* report_cmd missing, or not executable: said, nothing run. */
static int case_missing_cmd(void) {
  char msg[1024], want[1024];
  const char *cmd = at("no-such-report");
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s exited 127: inspector-report not started: cannot execute report_cmd", cmd);
  CHECK_STR(msg, want);
  cmd = script("report.sh", "echo ran > ran.txt\n");
  CHECK(chmod(cmd, 0644) == 0);
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s exited 127: inspector-report not started: cannot execute report_cmd", cmd);
  CHECK_STR(msg, want);
  CHECK(access(at("step/ran.txt"), F_OK) != 0);
  /* report.txt is opened before the exec: left empty (the report's output, of nothing) */
  CHECK_STR(slurp(at("step/report.txt")), "");
  /* the step's directory gone */
  cmd = script("report2.sh", "exit 0\n");
  CHECK(unlink(at("step/report.txt")) == 0 && rmdir(g_step) == 0);
  CHECK_EQ_U(run(cmd, 60, msg, sizeof msg), INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s exited 127: inspector-report not started: the step's directory is gone or closed", cmd);
  CHECK_STR(msg, want);
  CHECK(mkdir(g_step, 0755) == 0); /* for teardown's symmetry */
  return 0;
}

/* Reaped by someone else (the caller ignores SIGCHLD: the kernel reaps): its end not seen,
 * said, and its pid never killed afterwards (it may be anyone's by then). */
static int case_reaped_elsewhere(void) {
  char msg[1024], want[1024];
  const char *cmd = script("report.sh", "exit 0\n");
  signal(SIGCHLD, SIG_IGN);
  enum ins_spank_report_result r = run(cmd, 5, msg, sizeof msg);
  signal(SIGCHLD, SIG_DFL);
  CHECK_EQ_U(r, INS_REPORT_FAILED);
  snprintf(want, sizeof want, "%s: its end was not seen (reaped elsewhere); the report may be incomplete", cmd);
  CHECK_STR(msg, want);
  return 0;
}

/* A directory whose name leaves no room for report.html's: refused before anything runs. */
static int case_long_dir(void) {
  static char dir[4200];
  char msg[256];
  memset(dir, 'd', sizeof dir - 1);
  dir[0] = '/';
  dir[sizeof dir - 1] = '\0';
  CHECK_EQ_U(ins_spank_report_run("/bin/true", dir, &g_u, 5, msg, sizeof msg), INS_REPORT_FAILED);
  CHECK_STR(msg, "the step's directory's name is too long for a report");
  return 0;
}

static const struct unit_case g_cases[] = {
    {"drops_to_user", case_drops_to_user},
    {"closed_dir", case_closed_dir},
    {"report_txt_link", case_report_txt_link},
    {"timeout_kills_group", case_timeout_kills_group},
    {"sigterm_ignored", case_sigterm_ignored},
    {"failures_said", case_failures_said},
    {"missing_cmd", case_missing_cmd},
    {"reaped_elsewhere", case_reaped_elsewhere},
    {"long_dir", case_long_dir},
};

int main(int argc, char **argv) {
  return run_cases(argc, argv, g_cases, sizeof g_cases / sizeof *g_cases, setup, teardown, "spank_report",
                   "needs root: the report drops from root to the job's user");
}
