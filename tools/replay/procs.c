/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procs.c - forking the --procs children (see procs.h).
 */
#include "procs.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The default bound: 2 x the online CPUs (at least 2). */
static int default_max(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) cpus = 1;
  if (cpus > 4096) cpus = 4096;
  return (int)(2 * cpus);
}

/* Waits for one child; false when there is none left to wait for. Sets *failed on a failure. */
static bool reap_one(int *failed) {
  int status;
  pid_t pid;
  while ((pid = wait(&status)) < 0 && errno == EINTR) {
  }
  if (pid < 0) return false;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (WIFSIGNALED(status))
      fprintf(stderr, "inspector-replay: child %d killed by signal %d\n", (int)pid, WTERMSIG(status));
    else
      fprintf(stderr, "inspector-replay: child %d exited with %d\n", (int)pid, WEXITSTATUS(status));
    *failed = 1;
  }
  return true;
}

int rp_run_procs(int n, int max_running, rp_child_fn fn, void *arg) {
  int failed = 0, running = 0;
  if (max_running <= 0) max_running = default_max();
  for (int i = 0; i < n; i++) {
    if (running >= max_running) {
      if (!reap_one(&failed)) break; /* NEVER: a child is running */
      running--;
    }
    fflush(NULL); /* nothing buffered may be written twice */
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "inspector-replay: fork: %s\n", strerror(errno));
      failed = 1;
      break;
    }
    if (pid == 0) exit(fn(arg, i));
    running++;
  }
  while (running > 0 && reap_one(&failed)) running--;
  return failed;
}
