/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_trace_reload.c - the plugin loaded and unloaded again and again in trace mode
 * (NCCL_INSPECTOR_TRACE_DIR), as NCCL does (it unloads the profiler with its last
 * communicator and loads it again at the next), with callbacks from several threads
 * that live through every cycle, as an application's and NCCL's threads do.
 *
 *   inspector-unit-trace_reload PLUGIN [CYCLES]
 *
 * Each cycle: dlopen; one communicator per worker thread (WORKERS), made and finalized
 * here; each worker records OPS ops on its own (its thread's trace buffer, its wrappers);
 * dlclose. What a cycle must leave behind, judged after each cycle or the last:
 *  - its trace: exactly the cycle's lines (WORKERS inits and finalizes, 3 starts an op),
 *    so every worker's callbacks after a reload went to the new load's buffers, never
 *    to a buffer a thread-local pointer kept from the load before (freed at its unload);
 *  - the library gone (dlopen RTLD_NOLOAD), the descriptors open before (the trace file
 *    closed);
 *  - memory: the bytes malloc holds (mallinfo2: in use in the arenas, and mapped for
 *    large blocks, such as the trace's 1 MiB segments) after the last cycle exactly
 *    those after the second (the first makes what a process makes once), with malloc's
 *    per-thread caches off (their freed blocks count as in use, and vary). Before trace
 *    mode freed its memory at unload a cycle kept about 5 MiB (a segment per thread,
 *    wrapper chunks, the write buffer).
 *    In an ASan build, whose allocator mallinfo2 does not see, LeakSanitizer checks at
 *    exit instead (memory only the unloaded library pointed to is reported there).
 * Temporary files live in a directory removed at the end.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <ftw.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl/profiler_abi.h"
#include "check.h"

static const struct prof_table_v5 *g_tbl; /* this cycle's, set before the workers run */
#define OO_TABLE (*g_tbl)
#include "one_op.h"

#define WORKERS 3
#define OPS 50
#define WARMUP 2
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MALLINFO_MEANINGFUL 0
#else
#define MALLINFO_MEANINGFUL 1
#endif

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...) {
  (void)level, (void)flags, (void)file, (void)line, (void)fmt;
}

/* ---- the workers: alive through every cycle ------------------------------------------ */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_round, g_done, g_quit;
static void *g_ctx[WORKERS];

static void *worker(void *arg) {
  int i = (int)(intptr_t)arg, seen = 0;
  uint64_t gpu_ns = 1000000; /* each op later than the last on the GPU */
  for (;;) {
    pthread_mutex_lock(&g_mu);
    while (g_round == seen && !g_quit) pthread_cond_wait(&g_cv, &g_mu);
    void *ctx = g_ctx[i];
    int quit = g_quit;
    seen = g_round;
    pthread_mutex_unlock(&g_mu);
    if (quit) return NULL;
    for (int k = 0; k < OPS && ctx; k++, gpu_ns += 20000) {
      oo_group(ctx);
      oo_allreduce(ctx, (uint64_t)k, (struct oo_span[]){{gpu_ns, gpu_ns + 12000}}, 1);
    }
    pthread_mutex_lock(&g_mu);
    g_done++;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
  }
}

/* ---- what a cycle leaves ------------------------------------------------------------ */

static long open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  long n = 0;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

static size_t malloc_held(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f) {
  (void)st, (void)flag, (void)f;
  return remove(p);
}

/* Lines of the trace files in dir containing a, and files found; then every file in dir
 * is removed (the next cycle's have the same names). */
static long trace_lines(const char *dir, const char *a, int *files) {
  char path[4200], line[16384];
  long n = 0;
  *files = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (!strstr(e->d_name, ".trace.jsonl")) continue;
    ++*files;
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) n += strstr(line, a) != NULL;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return n;
}

static void clear_dir(const char *dir) {
  char path[4200];
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  if (d) closedir(d);
}

/* One cycle: load, a communicator per worker, OPS ops on each by its worker, finalize,
 * unload; its trace checked. 0 or -1 (could not load). */
static int cycle(const char *plugin, const char *dir, int n) {
  void *dl = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return -1;
  }
  g_tbl = dlsym(dl, "ncclProfiler_v5");
  if (!g_tbl) {
    dlclose(dl);
    return -1;
  }
  static int mask;
  for (int i = 0; i < WORKERS; i++) {
    g_ctx[i] = NULL;
    CHECK(g_tbl->init(&g_ctx[i], 0x100 + (uint64_t)i, &mask, "reload", 1, 2, 0, logger) == 0 &&
          g_ctx[i]);
  }
  pthread_mutex_lock(&g_mu);
  g_done = 0;
  g_round++;
  pthread_cond_broadcast(&g_cv);
  while (g_done < WORKERS) pthread_cond_wait(&g_cv, &g_mu);
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < WORKERS; i++)
    if (g_ctx[i]) CHECK(g_tbl->finalize(g_ctx[i]) == 0);
  /* a finalize returns once its line is in the file: every line of the cycle is */
  int files = 0;
  long starts = trace_lines(dir, "\"cb\":\"start\"", &files);
  long inits = trace_lines(dir, "\"cb\":\"init\"", &files);
  long finals = trace_lines(dir, "\"cb\":\"finalize\"", &files);
  if (files != 1 || starts != 3 * OPS * WORKERS || inits != WORKERS || finals != WORKERS) {
    fprintf(stderr, "cycle %d: %d trace files, %ld starts, %ld inits, %ld finalizes\n", n, files,
            starts, inits, finals);
    CHECK(!"the cycle's trace holds every callback of its threads, once");
  }
  g_tbl = NULL;
  int rc = dlclose(dl) == 0 ? 0 : -1;
  clear_dir(dir);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PLUGIN [CYCLES]\n", argv[0]);
    return 2;
  }
  const char *plugin = argv[1];
  /* malloc's per-thread caches hold freed blocks that mallinfo2 counts as in use, more or
   * fewer from one cycle to the next: off, for this process (an exec of itself) */
  const char *tun = getenv("GLIBC_TUNABLES");
  if (MALLINFO_MEANINGFUL && (!tun || !strstr(tun, "glibc.malloc.tcache_count=0"))) {
    char t[1024];
    snprintf(t, sizeof t, "%s%sglibc.malloc.tcache_count=0", tun ? tun : "", tun ? ":" : "");
    setenv("GLIBC_TUNABLES", t, 1);
    execv("/proc/self/exe", argv);
    perror("exec");
    return 1;
  }
  int cycles = argc > 2 ? atoi(argv[2]) : 20;
  if (cycles <= WARMUP) cycles = WARMUP + 1;
  char dir[] = "/tmp/ins-tracereload-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  setenv("NCCL_INSPECTOR_ENABLE", "1", 1);
  setenv("NCCL_INSPECTOR_DUMP_DIR", dir, 1);
  setenv("NCCL_INSPECTOR_TRACE_DIR", dir, 1);

  pthread_t th[WORKERS];
  for (int i = 0; i < WORKERS; i++)
    CHECK(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) == 0);
  long fds0 = open_fds();
  size_t warm = 0;
  int failed_cycles = 0, still_loaded = 0;
  for (int i = 0; i < cycles; i++) {
    if (cycle(plugin, dir, i) != 0) failed_cycles++;
    void *h = dlopen(plugin, RTLD_NOW | RTLD_NOLOAD);
    if (h) {
      still_loaded++;
      dlclose(h);
    }
    if (i + 1 == WARMUP) warm = malloc_held();
  }
  size_t end = malloc_held();
  long fds_end = open_fds();
  pthread_mutex_lock(&g_mu);
  g_quit = 1;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < WORKERS; i++) pthread_join(th[i], NULL);
  printf("%d cycles, %d threads: malloc holds %zu bytes after %d, %zu after %d; fds %ld -> %ld\n",
         cycles, WORKERS, warm, WARMUP, end, cycles, fds0, fds_end);
  CHECK_EQ_U(failed_cycles, 0);
  CHECK_EQ_U(still_loaded, 0);
  CHECK_EQ_U(fds_end, fds0);
  if (MALLINFO_MEANINGFUL) CHECK_EQ_U(end, warm);

  nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  return check_report("trace_reload");
}
