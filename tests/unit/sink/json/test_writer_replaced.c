/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_writer_replaced.c - the log file deleted and another file made at its name while the
 * job runs (src/sink/json/writer.c, io/files.h ins_files_gone): the plugin's file is gone even
 * though its path names a file again, so the next batch goes to a new file of the
 * plugin's own (beside the other one: its name is taken), with a warning for each; the
 * other file is left as it was. Through the v5 ABI, in a process of its own (fork_util.h).
 *   A records 2 ops and is finalized (the log holds them); the log is deleted and a file
 *   of someone else's made at its path; B records 3 ops and is finalized: B's 3 records
 *   are in a .log file of the directory, the other file holds only its own text.
 */
#pragma GCC diagnostic ignored "-Wunused-function" /* fork_util.h's fork helpers */
#include <sys/stat.h>

#include "fork_util.h"

static const char k_theirs[] = "someone else's file\n";

/* Record lines of communicator id in every *.log file of dir. */
static long records_in_dir(const char *dir, uint64_t id) {
  char idpat[48], path[4096], line[16384];
  snprintf(idpat, sizeof idpat, "\"id\":\"0x%llx\"", (unsigned long long)id);
  long n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 4, ".log")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) n += strstr(line, "\"coll_perf\":{") && strstr(line, idpat);
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

static int case_replaced(const char *dir) {
  void *keep = fu_init(0x1ee); /* live to the end: NCCL's logger stays (warnings counted) */
  void *a = fu_init(0xa1);
  fu_op(a);
  fu_op(a);
  CHECK(ncclProfiler_v5.finalize(a) == 0);
  char path[4096];
  snprintf(path, sizeof path, "%s/", dir);
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    char suffix[48];
    snprintf(suffix, sizeof suffix, "-pid%ld.log", (long)getpid());
    size_t l = strlen(e->d_name), sl = strlen(suffix);
    if (l > sl && !strcmp(e->d_name + l - sl, suffix)) snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
  }
  if (d) closedir(d);
  CHECK_EQ_U(records_in_dir(dir, 0xa1), 2);
  struct stat st0;
  CHECK(stat(path, &st0) == 0 && S_ISREG(st0.st_mode));
  CHECK(unlink(path) == 0);
  FILE *f = fopen(path, "w"); /* someone else's file at the name */
  CHECK(f && fputs(k_theirs, f) >= 0 && fclose(f) == 0);
  int warns = atomic_load(&fu_warns);
  void *b = fu_init(0xb2);
  for (int k = 0; k < 3; k++) fu_op(b);
  CHECK(ncclProfiler_v5.finalize(b) == 0);
  CHECK_EQ_U(records_in_dir(dir, 0xb2), 3);
  char buf[256] = "";
  f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  CHECK_STR(buf, k_theirs);
  /* two warnings: the file was deleted; its name is taken, so the records go to another */
  CHECK_EQ_U(atomic_load(&fu_warns) - warns, 2);
  CHECK(strstr(fu_last_warn, "already exists") != NULL);
  CHECK(ncclProfiler_v5.finalize(keep) == 0);
  return g_fail;
}

int main(void) {
  fu_case("replaced", case_replaced);
  return check_report("log_replaced");
}
