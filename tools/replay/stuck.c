/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stuck.c - the stuck point: ready files and the hold (see stuck.h).
 */
#include "stuck.h"

#include "vclock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void rp_stuck_prepare(void) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int rp_stuck_check_dir(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
    int e = errno;
    fprintf(stderr, "inspector-replay: --hang-ready-dir %s: %s\n", dir,
            stat(dir, &st) == 0 && !S_ISDIR(st.st_mode) ? "not a directory" : strerror(e));
    return -1;
  }
  return 0;
}

/* DIR/rank-R holding "<pid>\n", whole when it appears: written as DIR/.rank-R.<pid>.tmp, then
   renamed over the name (a ready file left by an earlier run is replaced). */
static int ready_file(const char *dir, int rank) {
  char path[PATH_MAX], tmp[PATH_MAX];
  int pid = (int)getpid();
  if ((size_t)snprintf(path, sizeof path, "%s/rank-%d", dir, rank) >= sizeof path ||
      (size_t)snprintf(tmp, sizeof tmp, "%s/.rank-%d.%d.tmp", dir, rank, pid) >= sizeof tmp) {
    fprintf(stderr, "inspector-replay: --hang-ready-dir %s: the path is too long\n", dir);
    return -1;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) goto fail;
  if (dprintf(fd, "%d\n", pid) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    goto fail_tmp;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) goto fail_tmp;
  return 0;
fail_tmp: {
  int e = errno;
  unlink(tmp);
  errno = e;
}
fail:
  fprintf(stderr, "inspector-replay: cannot write the ready file %s: %s\n", path, strerror(errno));
  return -1;
}

/* Sleeps hold_s seconds, or until SIGUSR1 (blocked: rp_stuck_prepare) is pending or comes. */
static void hold(double hold_s) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  uint64_t end = rp_real_mono_ns() + (uint64_t)(hold_s * 1e9);
  for (;;) {
    uint64_t now = rp_real_mono_ns();
    if (now >= end) return;
    uint64_t left = end - now;
    struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
    if (sigtimedwait(&set, NULL, &ts) == SIGUSR1) return;
    /* else the time is up (EAGAIN: the loop's test says so) or another signal came (EINTR) */
  }
}

int rp_stuck_hold(const char *dir, int r0, int r1, double hold_s) {
  int rc = 0;
  for (int r = r0; dir && r < r1; r++)
    if (ready_file(dir, r)) rc = -1;
  hold(hold_s);
  return rc;
}
