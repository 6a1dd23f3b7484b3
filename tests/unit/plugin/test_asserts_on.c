/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_asserts_on.c - the plugin's objects, as the tests link them, check their invariants:
 * every build of the tests compiles the assert()s in (CMakeLists.txt: -UNDEBUG with
 * BUILD_TESTING, not only in the sanitizer builds), so that the quick tier (`make test`, a
 * RelWithDebInfo build whose flags say -DNDEBUG) fails on a broken invariant too. Probed with
 * one: a ring whose capacity is not a power of two (core/ring.c) aborts, in a child.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/ring.h"

int main(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit no_core = {0, 0}; /* the abort is the point: no core file left behind */
    setrlimit(RLIMIT_CORE, &no_core);
    struct ins_ring r;
    (void)ins_ring_init(&r, 3, 64); /* positions map to cells by masks: 3 breaks them */
    _exit(0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT))
    fprintf(stderr, "ins_ring_init(capacity 3) did not abort (exit status %d): the plugin's assert()s are "
                    "compiled out (NDEBUG) in this build of the tests\n", status);
  return check_report("asserts_on");
}
