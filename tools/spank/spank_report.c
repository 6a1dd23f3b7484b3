/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spank_report.c - the end-of-step report (see spank_report.h).
 */
#include "spank_report.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FD_BOUND_MAX 65536 /* descriptors closed in the child: below this (a huge RLIMIT_NOFILE) */
#define ERR_KEEP 512       /* bytes of the report's stderr kept for the one-line message */

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void child_fail(const char *what) {
  ssize_t r = write(2, what, strlen(what)); /* strlen is async-signal-safe (POSIX 2016) */
  (void)r;
  _exit(127);
}

static void child(const char *cmd, char *const argv[], char *const envp[], const char *dir,
                  const struct ins_spank_report_user *u, int errw, int fd_bound) {
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL); /* slurmstepd's threads block some: the report must not */
  static const int sigs[] = {SIGPIPE, SIGINT, SIGHUP, SIGCHLD, SIGQUIT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
  /* The job's end (srun's own allocation ends with its step) signals every process of the
   * step, this one too: SIGTERM, then SIGKILL after KillWait. Ignoring the first (it stays
   * ignored across exec) gives the report KillWait seconds, not none. */
  signal(SIGTERM, SIG_IGN);
  if (dup2(errw, 2) < 0) _exit(127);
  if (setsid() < 0) child_fail("inspector-report not started: setsid failed\n");
  if (geteuid() != u->uid || getuid() != u->uid) {
    gid_t one = u->gid;
    if (setgroups(u->groups ? (size_t)u->ngroups : 1, u->groups ? u->groups : &one) != 0 ||
        setgid(u->gid) != 0 || setuid(u->uid) != 0)
      child_fail("inspector-report not started: could not become the job's user\n");
  }
  if (setuid(0) == 0 && u->uid != 0) child_fail("inspector-report not started: root could be regained\n");
  if (chdir(dir) != 0) child_fail("inspector-report not started: the step's directory is gone or closed\n");
  int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out = open("report.txt", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (in < 0 || out < 0) child_fail("inspector-report not started: cannot write report.txt in the step's directory\n");
  if (dup2(in, 0) < 0 || dup2(out, 1) < 0) _exit(127);
  for (int fd = 3; fd < fd_bound; fd++) close(fd); /* slurmstepd's sockets and files */
  execve(cmd, argv, envp);
  child_fail("inspector-report not started: cannot execute report_cmd\n");
}

/* Kill the report's process group and reap the report. Called while the report is unreaped
 * (running, or a zombie found by WNOWAIT): its pid, the group's id, cannot be anyone else's. */
static int kill_and_reap(pid_t pid) {
  int st = 0;
  kill(-pid, SIGKILL);
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return st;
}

/* The first line of the report's stderr, printable, or "". */
static void first_line(const char *buf, size_t n, char *out, size_t cap) {
  size_t j = 0;
  for (size_t i = 0; i < n && buf[i] != '\n' && j + 1 < cap; i++)
    out[j++] = buf[i] >= 0x20 && buf[i] < 0x7f ? buf[i] : '?';
  out[j] = '\0';
}

enum ins_spank_report_result ins_spank_report_run(const char *cmd, const char *dir,
                                                  const struct ins_spank_report_user *u,
                                                  unsigned timeout_s, char *msg, size_t cap) {
  assert(cmd && dir && u && timeout_s > 0);
  char html[4096 + 16], home[4096 + 8], user[256 + 8], logname[256 + 16];
  if (snprintf(html, sizeof html, "%s/report.html", dir) >= (int)sizeof html) {
    snprintf(msg, cap, "the step's directory's name is too long for a report");
    return INS_REPORT_FAILED;
  }
  snprintf(home, sizeof home, "HOME=%s", u->home ? u->home : "/");
  snprintf(user, sizeof user, "USER=%s", u->name ? u->name : "");
  snprintf(logname, sizeof logname, "LOGNAME=%s", u->name ? u->name : "");
  char *const argv[] = {(char *)cmd, "--html", html, (char *)dir, NULL};
  char *const envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", home, user, logname, "LC_ALL=C", NULL};
  long lim = sysconf(_SC_OPEN_MAX);
  int fd_bound = lim < 0 || lim > FD_BOUND_MAX ? FD_BOUND_MAX : (int)lim;

  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    snprintf(msg, cap, "inspector-report not started: pipe: %s", strerror(errno));
    return INS_REPORT_FAILED;
  }
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(msg, cap, "inspector-report not started: fork: %s", strerror(errno));
    close(p[0]);
    close(p[1]);
    return INS_REPORT_FAILED;
  }
  if (pid == 0) child(cmd, argv, envp, dir, u, p[1], fd_bound);
  close(p[1]);

  char err[ERR_KEEP];
  size_t nerr = 0;
  int rfd = p[0], st = 0, timed_out = 0;
  long long deadline = now_ms() + (long long)timeout_s * 1000;
  for (;;) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int w = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT);
    if (w == 0 && si.si_pid == pid) {
      st = kill_and_reap(pid); /* ended: what it left behind in its group goes too */
      break;
    }
    if (w < 0 && errno == ECHILD) { /* reaped by someone else: its pid is no longer ours to kill */
      snprintf(msg, cap, "%s: its end was not seen (reaped elsewhere); the report may be incomplete", cmd);
      if (rfd >= 0) close(rfd);
      return INS_REPORT_FAILED;
    }
    long long left = deadline - now_ms();
    if (left <= 0) {
      timed_out = 1;
      st = kill_and_reap(pid);
      break;
    }
    if (rfd < 0) { /* its stderr closed: sleep a bit, then look again */
      struct timespec ts = {0, 50 * 1000000L};
      nanosleep(&ts, NULL);
      continue;
    }
    struct pollfd pf = {rfd, POLLIN, 0};
    if (poll(&pf, 1, left < 100 ? (int)left : 100) > 0) {
      char tmp[1024];
      ssize_t r = read(rfd, tmp, sizeof tmp);
      if (r > 0) {
        size_t k = (size_t)r < sizeof err - nerr ? (size_t)r : sizeof err - nerr;
        memcpy(err + nerr, tmp, k);
        nerr += k;
      } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(rfd);
        rfd = -1;
      }
    }
  }
  if (rfd >= 0) { /* what is already in the pipe: the group is dead, so no writer is left */
    ssize_t r;
    while (nerr < sizeof err && (r = read(rfd, err + nerr, sizeof err - nerr)) > 0) nerr += (size_t)r;
    close(rfd);
  }
  char line[ERR_KEEP + 1];
  first_line(err, nerr, line, sizeof line);
  if (timed_out) {
    snprintf(msg, cap, "%s did not finish in %u s (report_timeout): its process group killed; "
             "the step is not affected", cmd, timeout_s);
    return INS_REPORT_TIMEOUT;
  }
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    snprintf(msg, cap, "report written: %s/report.txt, %s", dir, html);
    return INS_REPORT_OK;
  }
  if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
    snprintf(msg, cap, "%s killed by SIGKILL before report_timeout: the job ended (a report after the "
             "job's last step has KillWait seconds, slurm.conf)", cmd);
  else if (WIFSIGNALED(st))
    snprintf(msg, cap, "%s killed by signal %d%s%s", cmd, WTERMSIG(st), *line ? ": " : "", line);
  else
    snprintf(msg, cap, "%s exited %d%s%s", cmd, WEXITSTATUS(st), *line ? ": " : "", line);
  return INS_REPORT_FAILED;
}
