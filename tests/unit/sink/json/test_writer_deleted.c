/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_writer_deleted.c - the log file deleted while the job runs (src/sink/json/writer.c,
 * files.c), driven through the writer as the writer thread drives it:
 *  - the file deleted: the next batch goes to a new file at the same path, with one
 *    warning that names it; the batches after it follow it there;
 *  - the whole directory deleted: made again, the batch in a new file (said at INFO:
 *    the warning was given once);
 *  - the directory cannot be made again (a file took its name): the batch's records are
 *    counted as not written, with a warning;
 *  - nothing is counted lost while a new file could be made;
 *  - deleted ten times more (the file, or its directory): the process holds no more
 *    descriptors than before (each file given up is closed).
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/log.h"
#include "sink/json/writer.h"
#include "writer_lines.h"

static int g_warns, g_deleted_warns, g_deleted_infos, g_create_warns;
static char g_last_deleted[8192];

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  char msg[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  bool deleted = strstr(msg, "was deleted") != NULL;
  if (level == PROF_LOG_WARN) {
    g_warns++;
    if (deleted) {
      g_deleted_warns++;
      snprintf(g_last_deleted, sizeof g_last_deleted, "%s", msg);
    }
    if (strstr(msg, "cannot create a log file")) g_create_warns++;
  } else if (deleted) {
    g_deleted_infos++;
  }
}

/* The process's open descriptors. */
static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
  if (d) closedir(d);
  return n - 1; /* the directory's own */
}

int main(void) {
  char base[] = "/tmp/inspector-deleted-XXXXXX";
  CHECK(mkdtemp(base) != NULL);
  char top[4200], dir[4300], path[4400], cmd[4500];
  snprintf(top, sizeof top, "%s/logs", base);
  snprintf(dir, sizeof dir, "%s/job", top);
  snprintf(path, sizeof path, "%s/host-pid%ld.log", dir, (long)getpid());
  ins_log_set_logger(logger);
  ins_writer_configure(dir, "host");

  CHECK_EQ_U(append("a", 2), 0);
  CHECK_STR(tags(path), "a 0|a 1");

  /* the file deleted */
  CHECK(unlink(path) == 0);
  CHECK_EQ_U(append("b", 2), 0);
  CHECK_STR(tags(path), "b 0|b 1");
  CHECK_EQ_U(g_deleted_warns, 1);
  CHECK(strstr(g_last_deleted, path) != NULL);
  CHECK_EQ_U(append("c", 1), 0);
  CHECK_STR(tags(path), "b 0|b 1|c 0");
  CHECK_EQ_U(g_deleted_warns, 1);

  /* the whole directory deleted, its parent too */
  snprintf(cmd, sizeof cmd, "rm -rf %s", top);
  CHECK(system(cmd) == 0);
  CHECK_EQ_U(append("d", 3), 0);
  CHECK_STR(tags(path), "d 0|d 1|d 2");
  CHECK_EQ_U(g_deleted_warns, 1);
  CHECK_EQ_U(g_deleted_infos, 1);
  struct stat st;
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0755);
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644);

  /* deleted ten times more, the file or the whole directory: each time a new file, and the
   * one given up closed */
  int fds = open_fds();
  CHECK(fds > 0);
  for (int k = 0; k < 10; k++) {
    if (k % 2) {
      CHECK(system(cmd) == 0);
    } else {
      CHECK(unlink(path) == 0);
    }
    char tag[16];
    snprintf(tag, sizeof tag, "r%d", k);
    CHECK_EQ_U(append(tag, 1), 0);
    char want[32];
    snprintf(want, sizeof want, "r%d 0", k);
    CHECK_STR(tags(path), want);
  }
  CHECK_EQ_U(open_fds(), fds);
  CHECK_EQ_U(g_deleted_warns, 1);
  CHECK_EQ_U(g_deleted_infos, 11);

  /* deleted, and its directory cannot be made again: a file has the name */
  CHECK(system(cmd) == 0);
  FILE *f = fopen(top, "w");
  CHECK(f != NULL);
  if (f) fclose(f);
  int warns = g_warns;
  CHECK_EQ_U(append("e", 2), 2);
  CHECK_EQ_U(g_create_warns, 1);
  CHECK(g_warns - warns >= 1);
  CHECK_EQ_U(ins_writer_unwritten(), 2);

  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  CHECK(system(cmd) == 0);
  return check_report("writer_deleted");
}
