/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dir_relinked.c - a dump directory, or a parent of it, deleted while the job runs and
 * a symbolic link planted in its place (src/io/files.c; the JSON log, sink/json/writer.c;
 * trace mode's file, trace/writer.c; the Prometheus files, sink/prom/prom_file.c). Making the
 * directory again must not follow the link: nothing is created (or removed) in the link's
 * target, one warning names the link, and what cannot be written is counted, as for an
 * unwritable directory. A link the user had set up when the job started is used, at the
 * start and when the directory is made again below it, as long as it leads where it did.
 *
 * One case per process (the writers' state is the process's): inspector-unit-dir_relinked
 * --list | --case NAME. Each builds its tree in a directory of its own under /tmp:
 *   <base>/top/dir      the dump (or trace) directory, made by the plugin at the start
 *   <base>/elsewhere    the link's target, where nothing may appear
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cases.h"
#include "check.h"
#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "one_op.h"
#include "sink/json/writer.h"
#include "sink/prom/prom.h"
#include "trace/trace.h"
#include "writer_lines.h" /* append */

/* ---- the plugin's warnings ---- */

#define MAX_WARNS 32
static char g_warn[MAX_WARNS][2048];
static int g_nwarn;

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)flags, (void)file, (void)line;
  if (level != PROF_LOG_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  if (g_nwarn < MAX_WARNS) vsnprintf(g_warn[g_nwarn], sizeof g_warn[0], fmt, ap);
  g_nwarn++;
  va_end(ap);
}

/* Warnings since the `from`th that contain s. */
static int warns_with(int from, const char *s) {
  int n = 0;
  for (int i = from; i < g_nwarn && i < MAX_WARNS; i++) n += strstr(g_warn[i], s) != NULL;
  return n;
}

static void show_warns(int from) {
  for (int i = from; i < g_nwarn && i < MAX_WARNS; i++) fprintf(stderr, "  [warn] %s\n", g_warn[i]);
}

/* ---- the tree ---- */

static char g_base[64], g_top[128], g_dir[192], g_else[128];

static void tree(void) {
  snprintf(g_base, sizeof g_base, "/tmp/inspector-relinked-XXXXXX");
  if (!mkdtemp(g_base)) {
    perror("mkdtemp");
    exit(1);
  }
  snprintf(g_top, sizeof g_top, "%s/top", g_base);
  snprintf(g_dir, sizeof g_dir, "%s/dir", g_top);
  snprintf(g_else, sizeof g_else, "%s/elsewhere", g_base);
  CHECK(mkdir(g_else, 0755) == 0);
}

static void rm_rf(const char *path) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  CHECK(system(cmd) == 0);
}

/* Entries in dir, "." and ".." aside, and below it (its subdirectories' too). */
static int entries(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    n++;
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) n += entries(sub);
  }
  if (d) closedir(d);
  return n;
}

/* Where the link goes: the dump directory itself (`parent` false) or its parent. In the
 * parent's case the link's target holds a "dir" already, so that one made there, or one
 * found there, would both show. */
static void plant(bool parent) {
  rm_rf(parent ? g_top : g_dir);
  if (parent) {
    char d[256];
    snprintf(d, sizeof d, "%s/dir", g_else);
    CHECK(mkdir(d, 0755) == 0);
  }
  CHECK(symlink(g_else, parent ? g_top : g_dir) == 0);
}

/* Entries under the link's target that the plugin made: none may be there. */
static int planted_target_entries(bool parent) { return entries(g_else) - (parent ? 1 : 0); }

/* ---- the JSON log, through the writer as the writer thread drives it ---- */

/* Record lines in the one .log of dir; -1 if there is not exactly one. */
static long log_records(const char *dir) {
  long n = -1;
  int logs = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 4 || strcmp(e->d_name + l - 4, ".log")) continue;
    logs++;
    char path[1024], line[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    n = 0;
    while (f && fgets(line, sizeof line, f)) n += strstr(line, "coll_perf") != NULL;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return logs == 1 ? n : -1;
}

/* The dump directory (parent false) or its parent deleted, a link planted: the next batch is
 * counted, not written, with one warning naming the link; later batches are counted too,
 * with no more warnings. */
static void json_relinked(bool parent) {
  tree();
  ins_log_set_logger(logger);
  ins_writer_configure(g_dir, "host");
  CHECK_EQ_U(append("a", 2), 0);
  CHECK_EQ_U(log_records(g_dir), 2);

  plant(parent);
  int w = g_nwarn;
  CHECK_EQ_U(append("b", 3), 3);
  CHECK_EQ_U(append("c", 1), 1);
  CHECK_EQ_U(ins_writer_unwritten(), 4);
  CHECK_EQ_U(planted_target_entries(parent), 0);
  /* one warning names the link (an unwritable directory's two: the log cannot be made,
   * records are counted), and no other says the records went anywhere */
  CHECK_EQ_U(warns_with(w, parent ? g_top : g_dir), 1);
  CHECK_EQ_U(warns_with(w, "symbolic link"), 1);
  CHECK_EQ_U(warns_with(w, "records go to"), 0);
  CHECK(g_nwarn - w <= 2);
  if (g_fail) show_warns(w);
  rm_rf(g_base);
}

static void case_json_dir(void) { json_relinked(false); }
static void case_json_parent(void) { json_relinked(true); }

/* The user's links, there at the start: <base>/scratch -> <base>/lustre (a parent of the
 * dump directory) and the dump directory <base>/scratch/dir/out. The directory below the
 * link deleted: made again through it (it leads where it did). The link then replaced by
 * one to another directory: refused. */
static void case_json_user_link(void) {
  tree();
  char lustre[256], scratch[256], dir[320], real[320];
  snprintf(lustre, sizeof lustre, "%s/lustre", g_base);
  snprintf(scratch, sizeof scratch, "%s/scratch", g_base);
  snprintf(dir, sizeof dir, "%s/dir/out", scratch);
  snprintf(real, sizeof real, "%s/dir/out", lustre);
  CHECK(mkdir(lustre, 0755) == 0 && symlink(lustre, scratch) == 0);
  ins_log_set_logger(logger);
  ins_writer_configure(dir, "host");
  CHECK_EQ_U(append("a", 2), 0);
  CHECK_EQ_U(log_records(real), 2);
  struct stat st;
  CHECK(lstat(scratch, &st) == 0 && S_ISLNK(st.st_mode)); /* used, not replaced */

  char below[320];
  snprintf(below, sizeof below, "%s/dir", lustre);
  rm_rf(below); /* through the real path: the link stays as it was */
  int w = g_nwarn;
  CHECK_EQ_U(append("b", 3), 0);
  CHECK_EQ_U(log_records(real), 3);
  CHECK_EQ_U(warns_with(w, "was deleted"), 1);
  CHECK_EQ_U(g_nwarn - w, 1);

  /* the same link deleted and made again to where it led: still the user's directory */
  rm_rf(below);
  CHECK(unlink(scratch) == 0 && symlink(lustre, scratch) == 0);
  w = g_nwarn;
  CHECK_EQ_U(append("c", 1), 0);
  CHECK_EQ_U(log_records(real), 1);
  CHECK_EQ_U(g_nwarn - w, 0); /* deleted again: said at INFO */

  /* now leading elsewhere */
  rm_rf(below);
  CHECK(unlink(scratch) == 0 && symlink(g_else, scratch) == 0);
  w = g_nwarn;
  CHECK_EQ_U(append("d", 2), 2);
  CHECK_EQ_U(entries(g_else), 0);
  CHECK_EQ_U(warns_with(w, scratch), 1);
  CHECK_EQ_U(warns_with(w, "symbolic link"), 1);
  if (g_fail) show_warns(0);
  rm_rf(g_base);
}

/* The dump directory itself a link at the start (NCCL_INSPECTOR_DUMP_DIR=/scratch): used, and
 * the log made again in it when deleted. */
static void case_json_dir_is_link(void) {
  tree();
  char lustre[256], dir[256];
  snprintf(lustre, sizeof lustre, "%s/lustre", g_base);
  snprintf(dir, sizeof dir, "%s/scratch", g_base);
  CHECK(mkdir(lustre, 0755) == 0 && symlink(lustre, dir) == 0);
  ins_log_set_logger(logger);
  ins_writer_configure(dir, "host");
  CHECK_EQ_U(append("a", 2), 0);
  CHECK_EQ_U(log_records(lustre), 2);
  char path[512];
  snprintf(path, sizeof path, "%s/host-pid%ld.log", lustre, (long)getpid());
  CHECK(unlink(path) == 0);
  CHECK_EQ_U(append("b", 1), 0);
  CHECK_EQ_U(log_records(lustre), 1);
  /* the directory link replaced by one elsewhere: refused */
  CHECK(unlink(path) == 0);
  CHECK(unlink(dir) == 0 && symlink(g_else, dir) == 0);
  int w = g_nwarn;
  CHECK_EQ_U(append("c", 2), 2);
  CHECK_EQ_U(entries(g_else), 0);
  CHECK_EQ_U(warns_with(w, dir), 1);
  if (g_fail) show_warns(0);
  rm_rf(g_base);
}

/* ---- trace mode's file, through the v5 ABI ---- */

static int g_mask;
static uint64_t g_gpu_ns = 1000000;

static void *comm_init(uint64_t id) {
  void *ctx = NULL;
  CHECK(ncclProfiler_v5.init(&ctx, id, &g_mask, "relinked", 1, 2, 0, logger) == 0 && ctx);
  return ctx;
}

static void comm_op(void *ctx) {
  oo_group(ctx);
  oo_allreduce(ctx, 0, (struct oo_span[]){{g_gpu_ns, g_gpu_ns + 12000}}, 1);
  g_gpu_ns += 20000;
}

/* Lines of the one *.trace.jsonl in dir; -1 if there is not exactly one. */
static long trace_lines(const char *dir) {
  long n = -1;
  int files = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t l = strlen(e->d_name);
    if (l < 12 || strcmp(e->d_name + l - 12, ".trace.jsonl")) continue;
    files++;
    char path[1024], line[16384];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    n = 0;
    while (f && fgets(line, sizeof line, f)) n++;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return files == 1 ? n : -1;
}

/* Synchronised by finalizes, which return once their own line is written (trace/trace.c).
 * B is created; E is created, makes 2 ops and is finalized: the lines E added are what B's
 * 2 ops and finalize make, plus E's init. The directory (or its parent) is deleted and the
 * link planted; B makes 2 ops and is finalized: every one of those lines is lost, and said
 * in the count at the end (ins_trace_flush), with one warning naming the link before. */
static void trace_relinked(bool parent) {
  tree();
  char dump[256];
  snprintf(dump, sizeof dump, "%s/dump", g_base);
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_DIR", dump, 1);
  setenv("NCCL_INSPECTOR_TRACE_DIR", g_dir, 1);
  void *keep = comm_init(0x1ee); /* live to the end: our logger stays */
  void *b = comm_init(0xb0b);
  void *c = comm_init(0xc0c);
  if (c) CHECK(ncclProfiler_v5.finalize(c) == 0);
  long l0 = trace_lines(g_dir);
  void *e = comm_init(0xe0e);
  for (int i = 0; i < 2 && e; i++) comm_op(e);
  if (e) CHECK(ncclProfiler_v5.finalize(e) == 0);
  long per = trace_lines(g_dir) - l0 - 1; /* E's lines, less its init */
  CHECK(l0 > 0 && per > 2);

  plant(parent);
  int w = g_nwarn;
  for (int i = 0; i < 2 && b; i++) comm_op(b);
  if (b) CHECK(ncclProfiler_v5.finalize(b) == 0);
  CHECK_EQ_U(planted_target_entries(parent), 0);
  CHECK_EQ_U(warns_with(w, parent ? g_top : g_dir), 1);
  CHECK_EQ_U(warns_with(w, "symbolic link"), 1);
  CHECK_EQ_U(warns_with(w, "the trace goes on"), 0);
  CHECK_EQ_U(g_nwarn - w, 1);
  ins_trace_flush(); /* as at exit: the count of lines lost */
  char want[128];
  snprintf(want, sizeof want, "trace mode: %ld callback lines could not be written", per);
  CHECK_EQ_U(warns_with(w, want), 1);
  CHECK_EQ_U(planted_target_entries(parent), 0);
  if (g_fail) show_warns(w);
  if (keep) CHECK(ncclProfiler_v5.finalize(keep) == 0);
  rm_rf(g_base);
}

static void case_trace_dir(void) { trace_relinked(false); }
static void case_trace_parent(void) { trace_relinked(true); }

/* ---- the Prometheus files, through the sink as the dump thread drives it ---- */

static struct ins_record prom_rec(void) {
  struct ins_record r = {.kind = INS_KIND_COLL, .func = INS_FUNC_ALLREDUCE, .func_name = "AllReduce",
                         .bytes = 1 << 20, .exec_ns = 10000, .algo = "RING", .proto = "SIMPLE"};
  return r;
}

/* The first bytes of a file ("" if none). */
static const char *head_of(const char *path) {
  static char buf[64];
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  return buf;
}

/* A window written; the directory (or its parent) deleted and the link planted, with a file
 * of the device's .prom name in the link's target: the next window is not written (one
 * warning names the link), and the last communicator's detach, which removes the device's
 * file, leaves the target's alone. */
static void prom_relinked(bool parent) {
  tree();
  static struct ins_config cfg;
  ins_config_load(&cfg);
  snprintf(cfg.dump_dir, sizeof cfg.dump_dir, "%s", g_dir);
  snprintf(cfg.hostname, sizeof cfg.hostname, "host");
  cfg.prom_dump = true;
  ins_log_set_logger(logger);
  ins_prom_configure(&cfg);
  struct ins_comm *c = ins_comm_create(&cfg, 1, "p", 1, 2, 0);
  struct ins_prom_dev *d = c ? ins_prom_attach(c) : NULL;
  CHECK(d != NULL);
  if (!d) return;
  struct ins_record r = prom_rec();
  CHECK(ins_prom_add(d, c, &r) == 0);
  ins_prom_write_all();
  char name[128], path[512], theirs[512];
  snprintf(name, sizeof name, "nccl_inspector_metrics_nodev-host-pid%ld-gpu0.prom", (long)getpid());
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  CHECK(access(path, F_OK) == 0);

  plant(parent);
  snprintf(theirs, sizeof theirs, "%s/%s%s", g_else, parent ? "dir/" : "", name);
  FILE *f = fopen(theirs, "w");
  CHECK(f && fputs("theirs\n", f) >= 0 && fclose(f) == 0);
  int w = g_nwarn;
  CHECK(ins_prom_add(d, c, &r) == 0);
  ins_prom_write_all();
  CHECK_EQ_U(planted_target_entries(parent), 1); /* theirs, alone, as it was */
  CHECK_STR(head_of(theirs), "theirs\n");
  CHECK_EQ_U(warns_with(w, parent ? g_top : g_dir), 1);
  CHECK_EQ_U(warns_with(w, "symbolic link"), 1);
  CHECK_EQ_U(g_nwarn - w, 1);
  ins_prom_detach(d); /* the last communicator: the device's file is removed, not theirs */
  CHECK_STR(head_of(theirs), "theirs\n");
  CHECK_EQ_U(planted_target_entries(parent), 1);
  ins_comm_destroy(c);
  if (g_fail) show_warns(w);
  rm_rf(g_base);
}

static void case_prom_dir(void) { prom_relinked(false); }
static void case_prom_parent(void) { prom_relinked(true); }

static const struct proc_case g_cases[] = {
    {"json.dir", case_json_dir},
    {"json.parent", case_json_parent},
    {"json.user_link", case_json_user_link},
    {"json.dir_is_link", case_json_dir_is_link},
    {"trace.dir", case_trace_dir, "trace"},
    {"trace.parent", case_trace_parent, "trace"},
    {"prom.dir", case_prom_dir},
    {"prom.parent", case_prom_parent},
};

int main(int argc, char **argv) {
  return run_one_case(argc, argv, g_cases, sizeof g_cases / sizeof *g_cases);
}
