/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_writer_renamed.c - the log file renamed while the job runs (logrotate's default:
 * rename, then a new empty file at the name; src/sink/json/writer.c, io/files.h
 * ins_files_gone), driven through the writer as the writer thread drives it. A renamed
 * file is not a deleted one: the plugin keeps writing to it under its new name (it still
 * reaches the disk, and whoever renamed it reads it there); no batch is written twice (in
 * the renamed file and again in a new one), none is lost, nothing is said of a deletion,
 * and the file made at the old name is left as it was.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/log.h"
#include "sink/json/writer.h"
#include "writer_lines.h"

static int g_deleted;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line;
  char msg[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (strstr(msg, "deleted")) g_deleted++;
}

int main(void) {
  char dir[] = "/tmp/inspector-renamed-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[4200], rotated[4300], cmd[4400];
  snprintf(path, sizeof path, "%s/host-pid%ld.log", dir, (long)getpid());
  snprintf(rotated, sizeof rotated, "%s.1", path);
  ins_log_set_logger(logger);
  ins_writer_configure(dir, "host");

  CHECK_EQ_U(append("a", 2), 0);
  CHECK_STR(tags(path), "a 0|a 1");

  /* renamed; nothing at the name yet */
  CHECK(rename(path, rotated) == 0);
  CHECK_EQ_U(append("b", 2), 0);
  CHECK_STR(tags(rotated), "a 0|a 1|b 0|b 1");
  struct stat st;
  CHECK(stat(path, &st) != 0); /* no new file: the batch went once, to the renamed one */

  /* logrotate's `create`: a new empty file at the name, someone else's */
  FILE *f = fopen(path, "w");
  CHECK(f != NULL && fclose(f) == 0);
  CHECK_EQ_U(append("c", 1), 0);
  CHECK_STR(tags(rotated), "a 0|a 1|b 0|b 1|c 0");
  CHECK(stat(path, &st) == 0 && st.st_size == 0);

  CHECK_EQ_U(g_deleted, 0);
  CHECK_EQ_U(ins_writer_unwritten(), 0);
  ins_writer_close();
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
  return check_report("writer_renamed");
}
