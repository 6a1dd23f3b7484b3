/*
 * procs.c - forking the --procs children (see procs.h).
 */
#include "procs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int rp_run_procs(int n, rp_child_fn fn, void *arg) {
  int failed = 0, running = 0;
  fflush(NULL); /* nothing buffered may be written twice */
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      fprintf(stderr, "inspector-replay: fork: %s\n", strerror(errno));
      failed = 1;
      break;
    }
    if (pid == 0) exit(fn(arg, i));
    running++;
  }
  while (running > 0) {
    int status;
    pid_t pid = wait(&status);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    running--;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      if (WIFSIGNALED(status))
        fprintf(stderr, "inspector-replay: child %d killed by signal %d\n", (int)pid, WTERMSIG(status));
      else
        fprintf(stderr, "inspector-replay: child %d exited with %d\n", (int)pid, WEXITSTATUS(status));
      failed = 1;
    }
  }
  return failed;
}
