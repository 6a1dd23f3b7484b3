/* SPDX-License-Identifier: Apache-2.0 */
/*
 * asan_fork.h - fork only once this process's other threads are asleep, under
 * AddressSanitizer (a no-op in every other build).
 *
 * Why: GCC 12's AddressSanitizer does not take its allocator's locks around fork()
 * (LLVM added that in December 2023, llvm/llvm-project#75290; Debian 12's libasan is
 * older). A thread inside malloc or free at the fork leaves the lock of a size class held
 * in the child, and the child's first allocation of that class waits forever. A thread
 * that has just been created is exactly that: ASan's thread start frees (from
 * pthread_getattr_np), and the first free of a thread allocates its quarantine batch. So
 * a test that creates a communicator (the plugin starts its threads) and forks at once
 * saw its child hang, once in many runs (every thread of the child in
 * SizeClassAllocator64::GetFromAllocator, gdb). glibc's own malloc is safe here (its
 * fork takes the arena locks), and so is the plugin: this waits out the sanitizer's limit,
 * not ours.
 *
 * How: until, in two samples in a row, every other thread of the process is asleep (state
 * S in /proc/self/task/<tid>/stat): a thread holding an allocator lock is running, or
 * runnable. Bounded (2 s): past it the fork goes ahead. Not for a test whose threads are
 * busy on purpose (they never all sleep).
 */
#ifndef INS_ASAN_FORK_H
#define INS_ASAN_FORK_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
/* true if every thread of this process but the caller is asleep now */
static inline bool af_others_asleep(void) {
  long self = (long)syscall(SYS_gettid);
  bool asleep = true;
  DIR *d = opendir("/proc/self/task");
  if (!d) return true; /* no /proc: nothing to wait for */
  for (struct dirent *e; asleep && (e = readdir(d));) {
    if (e->d_name[0] == '.' || atol(e->d_name) == self) continue;
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* it has exited */
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    asleep = !p || (p[1] == ' ' && p[2] == 'S');
  }
  closedir(d);
  return asleep;
}
#endif

static inline void af_settle_threads(void) {
#if defined(__SANITIZE_ADDRESS__)
  int in_a_row = 0;
  for (int i = 0; i < 2000 && in_a_row < 2; i++) {
    in_a_row = af_others_asleep() ? in_a_row + 1 : 0;
    if (in_a_row < 2) {
      struct timespec ts = {0, 1000000L};
      nanosleep(&ts, NULL);
    }
  }
#endif
}

#endif
