/*
 * inspector-report - summarise Inspector JSON logs and name straggling ranks.
 *
 * Reads every *.log under the given directories (or the given files), one
 * JSON record per line, and prints per communicator and per operation and
 * message size: how many records, median and p95 execution time, median
 * bus bandwidth; the dump_stats totals (records written and dropped); and,
 * for communicators seen from more than one rank, which rank starts its
 * kernels last most often and by how much (the GPU start timestamps of the
 * same op, matched by sequence number across ranks).
 *
 * jansson parses the lines: a well-kept library rather than our own parser.
 * Which lines count is parse.c's decision: a line that is not JSON or holds an
 * impossible value is rejected (the first few are named with FILE:LINE on
 * stderr), a JSON object of another shape is "not a record"; both are counted.
 * Exit: 0 with records to report, 1 when none was found, 2 on bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zlib.h>

#include "parse.h"

/* Lateness below this is launch skew, not a straggler. */
#define LATE_NS 100000ull

/* Rejected or unrecognised lines named on stderr; past this only counted. */
#define SHOW_BAD_LINES 10

struct comm_info {
  uint64_t id;
  char name[128];
  int nranks, nnodes;
  uint64_t dropped[2];
  uint64_t written[2];
};

static struct rpt_record *g_recs;
static size_t g_nrecs, g_cap;
static struct comm_info g_comms[1024];
static int g_ncomms;
static long g_rejected, g_not_records, g_files;

static struct comm_info *comm_get(uint64_t id) {
  for (int i = 0; i < g_ncomms; i++)
    if (g_comms[i].id == id) return &g_comms[i];
  if (g_ncomms == (int)(sizeof g_comms / sizeof *g_comms)) return NULL;
  struct comm_info *c = &g_comms[g_ncomms++];
  memset(c, 0, sizeof *c);
  c->id = id;
  return c;
}

/* Per (comm, rank) totals from the last dump_stats seen of that context. */
struct ctx_stats { uint64_t comm; int rank; uint64_t written[2], dropped[2]; };
static struct ctx_stats g_ctx[4096];
static int g_nctx;

/* Sampled timing (dump_stats "sampling"): the description and the range of "covered". */
static char g_sampling[128];
static double g_covered_lo = 2, g_covered_hi = -1;
static uint64_t g_stale_records; /* records timed without their stale channels */

static void note_sampling(const struct rpt_sampling *smp) {
  if (!g_sampling[0]) {
    if (smp->time_mode)
      snprintf(g_sampling, sizeof g_sampling, "%llu ms of every %llu ms",
               (unsigned long long)smp->a, (unsigned long long)smp->b);
    else
      snprintf(g_sampling, sizeof g_sampling, "runs of %llu group(s), one run in %llu",
               (unsigned long long)smp->a, (unsigned long long)smp->b);
  }
  if (smp->covered < g_covered_lo) g_covered_lo = smp->covered;
  if (smp->covered > g_covered_hi) g_covered_hi = smp->covered;
}

static void note_bad_line(const char *path, size_t lineno, const struct rpt_line *l) {
  long seen = g_rejected + g_not_records;
  if (l->kind == RPT_REJECTED) g_rejected++; else g_not_records++;
  if (seen < SHOW_BAD_LINES)
    fprintf(stderr, "inspector-report: %s:%zu: %s%s\n", path, lineno,
            l->kind == RPT_REJECTED ? "rejected: " : "", l->why);
}

static void note_stats(const struct rpt_line *l) {
  uint64_t comm = l->hdr.comm;
  int rank = l->hdr.rank;
  struct ctx_stats *cs = NULL;
  for (int i = 0; i < g_nctx; i++)
    if (g_ctx[i].comm == comm && g_ctx[i].rank == rank) cs = &g_ctx[i];
  if (!cs && g_nctx < (int)(sizeof g_ctx / sizeof *g_ctx)) {
    cs = &g_ctx[g_nctx++];
    memset(cs, 0, sizeof *cs);
    cs->comm = comm;
    cs->rank = rank;
  }
  if (cs)
    for (int i = 0; i < 2; i++) {
      if (l->stats.written[i] > cs->written[i]) cs->written[i] = l->stats.written[i];
      if (l->stats.dropped[i] > cs->dropped[i]) cs->dropped[i] = l->stats.dropped[i];
    }
  if (l->stats.sampling.present) note_sampling(&l->stats.sampling);
}

static void add_line(const char *path, size_t lineno, const char *line, size_t len) {
  struct rpt_line l;
  switch (rpt_parse_line(line, len, &l)) {
  case RPT_BLANK:
    return;
  case RPT_NOT_RECORD:
  case RPT_REJECTED:
    note_bad_line(path, lineno, &l);
    return;
  case RPT_STATS:
  case RPT_RECORD:
    break;
  }
  struct comm_info *ci = comm_get(l.hdr.comm);
  if (ci) {
    memcpy(ci->name, l.hdr.name, sizeof ci->name);
    ci->nranks = l.hdr.nranks;
    ci->nnodes = l.hdr.nnodes;
  }
  if (l.kind == RPT_STATS) {
    note_stats(&l);
    return;
  }
  if (g_nrecs == g_cap) {
    g_cap = g_cap ? 2 * g_cap : 4096;
    g_recs = realloc(g_recs, g_cap * sizeof *g_recs);
    if (!g_recs) { perror("inspector-report"); exit(1); }
  }
  g_recs[g_nrecs++] = l.rec;
  if (l.rec.stale) g_stale_records++;
}

/* Progress on stderr for inputs that take more than a second: a line a second. */
static double g_t0, g_next_progress = 1.0;
static uint64_t g_bytes;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress(bool last) {
  double t = now_s() - g_t0;
  if (!last && t < g_next_progress) return;
  if (last && g_next_progress == 1.0) return; /* done within the first second: say nothing */
  g_next_progress = t + 1.0;
  fprintf(stderr, "inspector-report: %s %ld files, %.1f MB, %zu records in %.1f s\n",
          last ? "read" : "reading:", g_files, (double)g_bytes / 1e6, g_nrecs, t);
}

/* One log, plain or gzip-compressed (zlib reads both), a line at a time whatever its length. */
static void read_file(const char *path) {
  errno = 0;
  gzFile f = gzopen(path, "rb");
  if (!f) {
    fprintf(stderr, "inspector-report: cannot open %s: %s\n", path, errno ? strerror(errno) : "out of memory");
    return;
  }
  gzbuffer(f, 1 << 17);
  g_files++;
  size_t cap = 1 << 16, lineno = 0;
  char *buf = malloc(cap);
  if (!buf) { perror("inspector-report"); exit(1); }
  for (;;) {
    size_t len = 0;
    bool got = false;
    while (gzgets(f, buf + len, (int)(cap - len))) {
      got = true;
      len += strlen(buf + len);
      if (len && buf[len - 1] == '\n') break;
      if (len + 1 < cap) break; /* the end of the file without a newline */
      char *nb = realloc(buf, cap *= 2);
      if (!nb) { perror("inspector-report"); exit(1); }
      buf = nb;
    }
    if (!got) break;
    g_bytes += len;
    add_line(path, ++lineno, buf, len);
    if ((lineno & 4095) == 0) progress(false);
  }
  int zerr = 0;
  const char *zmsg = gzerror(f, &zerr);
  if (zerr != Z_OK && zerr != Z_STREAM_END) /* a truncated .gz: what was read counts */
    fprintf(stderr, "inspector-report: %s: %s after line %zu\n", path, zmsg, lineno);
  gzclose(f);
  free(buf);
}

/* Logs are *.log (this plugin, the NVIDIA and RCCL Inspectors) or *.jsonl, maybe gzipped. */
static bool is_log_name(const char *name) {
  static const char *const ends[] = {".log", ".jsonl", ".log.gz", ".jsonl.gz"};
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
    size_t k = strlen(ends[i]);
    if (n > k && !strcmp(name + n - k, ends[i])) return true;
  }
  return false;
}

/* A file, or every log under a directory tree (a multi-node job's logs are laid out in
 * per-node or per-job folders). Links to directories are not followed: no cycles. */
static void read_tree(const char *path, int depth) {
  DIR *d = opendir(path);
  if (!d) { fprintf(stderr, "inspector-report: %s: %s\n", path, strerror(errno)); return; }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p) continue;
    struct stat st;
    if (lstat(p, &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && depth < 64)
      read_tree(p, depth + 1);
    else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && is_log_name(e->d_name))
      read_file(p);
  }
  closedir(d);
}

static void read_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) { fprintf(stderr, "inspector-report: %s: %s\n", path, strerror(errno)); return; }
  if (!S_ISDIR(st.st_mode)) { read_file(path); return; }
  long before = g_files;
  read_tree(path, 0);
  if (g_files == before)
    fprintf(stderr, "inspector-report: %s: no .log or .jsonl files (plain or .gz) under this "
            "directory\n", path);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}
static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
/* group records: comm, p2p, op, bytes */
static int cmp_group(const void *a, const void *b) {
  const struct rpt_record *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->p2p != y->p2p) return x->p2p - y->p2p;
  int s = strcmp(x->op, y->op);
  if (s) return s;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? -1 : 1;
  return 0;
}
/* match ops across ranks: comm, p2p, op name, sn (NCCL 2.28 counts coll_sn per
 * collective function, so the sequence number alone does not identify an op) */
static int cmp_match(const void *a, const void *b) {
  const struct rpt_record *x = a, *y = b;
  if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
  if (x->p2p != y->p2p) return x->p2p - y->p2p;
  int s = strcmp(x->op, y->op);
  if (s) return s;
  if (x->sn != y->sn) return x->sn < y->sn ? -1 : 1;
  return x->rank - y->rank;
}
static int same_op(const struct rpt_record *x, const struct rpt_record *y) {
  return x->comm == y->comm && x->p2p == y->p2p && x->sn == y->sn && !strcmp(x->op, y->op);
}

static const char *human(uint64_t b, char *out, size_t n) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int i = 0;
  while (v >= 1024 && i < 4) v /= 1024, i++;
  snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
  return out;
}

static void stragglers(const struct rpt_record *recs, size_t nrecs, struct comm_info *ci, int p2p) {
  /* For each op seen on every rank that wrote it, lateness of each rank = its
   * kernel start minus the earliest rank's. Report the rank most often last. */
  int nr = ci->nranks > 0 && ci->nranks <= 65536 ? ci->nranks : 0;
  if (nr < 2) return;
  uint64_t *last_count = calloc((size_t)nr, sizeof *last_count);
  uint64_t **late = calloc((size_t)nr, sizeof *late);
  size_t *nlate = calloc((size_t)nr, sizeof *nlate), ops = 0;
  for (size_t i = 0; i < nrecs;) {
    size_t j = i;
    while (j < nrecs && same_op(&recs[i], &recs[j])) j++;
    if (recs[i].comm == ci->id && recs[i].p2p == p2p && j - i >= 2 && !p2p) {
      uint64_t first = UINT64_MAX, lastv = 0;
      int lastr = -1;
      for (size_t k = i; k < j; k++) {
        if (recs[k].start_ns < first) first = recs[k].start_ns;
        if (recs[k].start_ns >= lastv) lastv = recs[k].start_ns, lastr = recs[k].rank;
      }
      ops++;
      if (lastr >= 0 && lastr < nr) last_count[lastr]++;
      for (size_t k = i; k < j; k++) {
        int r = recs[k].rank;
        if (r < 0 || r >= nr) continue;
        late[r] = realloc(late[r], (nlate[r] + 1) * sizeof **late);
        late[r][nlate[r]++] = recs[k].start_ns - first;
      }
    }
    i = j;
  }
  if (ops) {
    int worst = 0;
    for (int r = 1; r < nr; r++)
      if (last_count[r] > last_count[worst]) worst = r;
    uint64_t med_worst = 0, med_others = 0;
    if (nlate[worst]) {
      qsort(late[worst], nlate[worst], sizeof **late, cmp_u64);
      med_worst = late[worst][nlate[worst] / 2];
    }
    uint64_t *all = NULL;
    size_t nall = 0;
    for (int r = 0; r < nr; r++)
      if (r != worst)
        for (size_t k = 0; k < nlate[r]; k++) {
          all = realloc(all, (nall + 1) * sizeof *all);
          all[nall++] = late[r][k];
        }
    if (nall) {
      qsort(all, nall, sizeof *all, cmp_u64);
      med_others = all[nall / 2];
    }
    free(all);
    double share = 100.0 * (double)last_count[worst] / (double)ops;
    /* A straggler: last most of the time, and late by more than launch skew
     * (one process driving several GPUs launches them tens of us apart). */
    int flagged = share >= 75 && med_worst >= LATE_NS && med_worst > 2 * med_others;
    printf("  %s: rank %d starts last in %.0f%% of the %zu collectives seen on several ranks, "
           "median %.1f us after the first rank (other ranks: %.1f us)\n",
           flagged ? "STRAGGLER" : "latest rank", worst, share, ops, med_worst / 1e3,
           med_others / 1e3);
  }
  for (int r = 0; r < nr; r++) free(late[r]);
  free(late);
  free(nlate);
  free(last_count);
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fprintf(stderr, "usage: inspector-report DIR_OR_LOG...\n"
                    "Summarises Inspector JSON logs: per communicator, operation and size the\n"
                    "record count, median/p95 time and median bus bandwidth; drops; late ranks.\n"
                    "A directory is read whole, subdirectories included: every *.log and *.jsonl,\n"
                    "plain or gzip-compressed. Exit: 0, 1 when no record was found, 2 bad usage.\n");
    return argc < 2 ? 2 : 0;
  }
  g_t0 = now_s();
  for (int i = 1; i < argc; i++) read_path(argv[i]);
  progress(true);
  uint64_t ncoll = 0, np2p = 0, dropped = 0;
  for (size_t i = 0; i < g_nrecs; i++) g_recs[i].p2p ? np2p++ : ncoll++;
  for (int i = 0; i < g_nctx; i++) dropped += g_ctx[i].dropped[0] + g_ctx[i].dropped[1];
  printf("Inspector report: %ld file%s, %zu records (%llu collective, %llu P2P), %llu dropped%s\n",
         g_files, g_files == 1 ? "" : "s", g_nrecs, (unsigned long long)ncoll,
         (unsigned long long)np2p, (unsigned long long)dropped,
         g_rejected || g_not_records ? " -- some lines were left out" : "");
  if (g_rejected || g_not_records)
    printf("  %ld lines rejected, %ld lines not Inspector records (stderr names the first %d)\n",
           g_rejected, g_not_records, SHOW_BAD_LINES);
  if (g_rejected) fprintf(stderr, "inspector-report: %ld lines rejected\n", g_rejected);
  if (g_not_records)
    fprintf(stderr, "inspector-report: %ld lines not Inspector records\n", g_not_records);
  if (g_sampling[0])
    printf("  sampled timing: %s; timed share %.1f%% to %.1f%% per process; figures cover timed ops only\n",
           g_sampling, 100 * g_covered_lo, 100 * g_covered_hi);
  if (g_stale_records)
    printf("  %llu records timed without channels whose GPU timestamps were stale (*_stale_channels)\n",
           (unsigned long long)g_stale_records);
  if (!g_nrecs) {
    /* Nothing to summarise is a failure: a script that runs the report on the
     * wrong directory or on something that is no log must notice. */
    if (!g_files)
      fprintf(stderr, "inspector-report: no log files found\n");
    else
      fprintf(stderr, "inspector-report: no Inspector records in %ld file%s (%ld lines rejected, "
              "%ld lines not Inspector records)\n", g_files, g_files == 1 ? "" : "s",
              g_rejected, g_not_records);
    return 1;
  }
  struct rpt_record *matched = malloc(g_nrecs * sizeof *matched);
  if (!matched) { perror("inspector-report"); return 1; }
  memcpy(matched, g_recs, g_nrecs * sizeof *matched);
  qsort(matched, g_nrecs, sizeof *matched, cmp_match);
  qsort(g_recs, g_nrecs, sizeof *g_recs, cmp_group);
  uint64_t *times = malloc(g_nrecs * sizeof *times);
  double *bws = malloc(g_nrecs * sizeof *bws);
  uint64_t cur_comm = ~0ull;
  for (size_t i = 0; i < g_nrecs;) {
    size_t j = i;
    while (j < g_nrecs && !cmp_group(&g_recs[i], &g_recs[j])) j++;
    if (g_recs[i].comm != cur_comm) {
      struct comm_info *prev = cur_comm != ~0ull ? comm_get(cur_comm) : NULL;
      if (prev) stragglers(matched, g_nrecs, prev, 0);
      cur_comm = g_recs[i].comm;
      struct comm_info *ci = comm_get(cur_comm);
      int ranks = 0;
      for (int k = 0; k < g_nctx; k++) ranks += g_ctx[k].comm == cur_comm;
      printf("\ncommunicator 0x%llx \"%s\": %d ranks on %d node%s\n", (unsigned long long)cur_comm,
             ci ? ci->name : "?", ci ? ci->nranks : 0, ci ? ci->nnodes : 0,
             ci && ci->nnodes == 1 ? "" : "s");
      printf("  %-14s %10s %7s %12s %12s %14s\n", "op", "size", "records", "time p50 us",
             "time p95 us", "busbw p50 GB/s");
    }
    size_t n = j - i;
    for (size_t k = 0; k < n; k++) {
      times[k] = g_recs[i + k].exec_ns;
      bws[k] = g_recs[i + k].busbw;
    }
    qsort(times, n, sizeof *times, cmp_u64);
    qsort(bws, n, sizeof *bws, cmp_dbl);
    char sz[32];
    printf("  %-14s %10s %7zu %12.3f %12.3f %14.2f\n", g_recs[i].op,
           human(g_recs[i].bytes, sz, sizeof sz), n, times[n / 2] / 1e3,
           times[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1] / 1e3, bws[n / 2]);
    i = j;
  }
  struct comm_info *last = comm_get(cur_comm);
  if (last) stragglers(matched, g_nrecs, last, 0);
  free(times);
  free(bws);
  free(matched);
  free(g_recs);
  return 0;
}
