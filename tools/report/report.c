/* SPDX-License-Identifier: Apache-2.0 */
/*
 * inspector-report - what a whole job's Inspector logs say: who is slow, where, since when.
 *
 * Owns: the command line and the order of the work. Reading (input.c, acc.c)
 * streams every log on every core into per-group statistics and a bounded
 * sample of ops; the analyses (analysis.h) align the GPU clocks of the
 * processes, then name late ranks, slow links and nodes, and bandwidth
 * changes; the outputs (out.h) print what the model holds. Each step only
 * reads what the steps before it produced.
 *
 * Exit: 0 with records to report, 1 when none was found or an output could not
 * be written, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "input.h"
#include "out.h"

/* The physical ceiling by default: NVLink 5 (B200, GB200, B300), 900 GB/s per direction,
 * the fastest GPU link shipping; busbw is comparable to one direction's peak. */
#define DEFAULT_MAX_BUSBW 900.0

static void usage(FILE *f) {
  fprintf(f,
          "usage: inspector-report [options] DIR_OR_LOG...\n"
          "Reads Inspector JSON logs (this plugin's, NVIDIA's or RCCL's Inspector; *.log and *.jsonl,\n"
          "plain or gzip, a directory tree read whole) and says, for the whole job:\n"
          "  - per communicator, operation and size: records, time p50/p95/p99, busbw p10/p50/p90;\n"
          "  - STRAGGLER: a rank whose kernels start late, always, in some of the steps or from\n"
          "    some moment on (GPU clocks of the processes are aligned first, from the ends of\n"
          "    the collectives they share); the others wait for it, so its own kernel times are\n"
          "    the SHORTEST, not the longest; STRAGGLER (P2P): a rank that posts its Send/Recv\n"
          "    late (its peers wait: named as the rank, not as slow links);\n"
          "    each finding says its evidence and confidence, or \"not enough data\";\n"
          "    \"latest rank\" is only the rank with the largest lateness when none is a straggler;\n"
          "  - SLOW LINK / SLOW NODE: point-to-point bandwidth persistently below the other links;\n"
          "  - CHANGE: when a group's bandwidth changed during the job;\n"
          "  - HANG: an op stuck in flight (the plugin's hang lines, NCCL_INSPECTOR_HANG_SECONDS):\n"
          "    which ranks wait inside its kernel, which are queued, which never issued it (alive\n"
          "    or dead: their log's last line), which wrote no log; HANG (resolved) once it completed.\n"
          "Records timed from only some of their channels (the others' timestamps stale), not\n"
          "timed on the GPU, or above the busbw ceiling are left out of every figure and counted.\n"
          "options:\n"
          "  --json             everything as one JSON object on stdout, instead of the tables\n"
          "  --csv DIR          also write the tables as CSV files into DIR\n"
          "  --html FILE        also write one self-contained HTML page with charts\n"
          "  --trace FILE       also write a Perfetto / chrome://tracing timeline (aligned clocks)\n"
          "  --max-busbw GBS    physical busbw ceiling (default %.0f: NVLink 5 per direction)\n"
          "  --late-us US       lateness below this is launch skew, not a straggler (default 100)\n"
          "  --late-share F     a straggler is late in at least this share of its ops since it\n"
          "                     became late (default 0.2)\n"
          "  --slow-link-ratio F  a link below F x its peers' median busbw is slow (default 0.7)\n"
          "  --change-ratio F   bandwidth changes smaller than F x are not reported (default 1.25)\n"
          "  --threads N        reading threads (default: every online CPU)\n"
          "  --memory MB        memory for the op sample of the cross-rank analyses (default 1024)\n"
          "  -h, --help         this text\n"
          "  --version          the version and git revision, the plugin's of the same build\n"
          "Exit: 0, 1 when no record was found or an output failed, 2 bad usage.\n",
          DEFAULT_MAX_BUSBW);
}

static double number(const char *opt, const char *v, double lo, double hi) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || *end || !isfinite(x) || x < lo || x > hi) {
    fprintf(stderr, "inspector-report: bad value for --%s: '%s' (want a number in [%g, %g])\n", opt, v, lo, hi);
    exit(2);
  }
  return x;
}

int main(int argc, char **argv) {
  /* Keep freed memory for reuse instead of giving it back: the analysis allocates and frees
   * arrays of megabytes per communicator and op, and glibc's default (an mmap per block
   * above 128 KiB, growing to 32 MiB, and trimming the heap's top) made each a fresh mapping
   * whose pages faulted in zeroed and were unmapped again: a fifth of the CPU time on 512
   * ranks of collectives (perf, docs/BENCHMARKS.md). The price: freed blocks wait in the
   * heap for reuse, 8% more peak memory there (134 against 124 MB). */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  struct rpt_job job;
  memset(&job, 0, sizeof job);
  struct rpt_options *o = &job.opt;
  o->max_busbw_gbs = DEFAULT_MAX_BUSBW;
  o->late_ns = 100e3;
  o->late_share = 0.2; /* judged since the rank's onset: a rank late in a third of the steps counts */
  o->slow_link_ratio = 0.7;
  o->change_ratio = 1.25;
  o->op_memory = (size_t)1024 << 20;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  o->threads = cpus > 0 ? (int)(cpus < 256 ? cpus : 256) : 1;
  bool json = false;
  const char *csv = NULL, *html = NULL, *trace = NULL;
  enum { O_JSON = 1, O_CSV, O_HTML, O_TRACE, O_BUSBW, O_LATE, O_SHARE, O_LINK, O_CHANGE, O_THREADS, O_MEM, O_HELP, O_VERSION };
  static const struct option opts[] = {
      {"json", no_argument, NULL, O_JSON},         {"csv", required_argument, NULL, O_CSV},
      {"html", required_argument, NULL, O_HTML},   {"trace", required_argument, NULL, O_TRACE},
      {"max-busbw", required_argument, NULL, O_BUSBW}, {"late-us", required_argument, NULL, O_LATE},
      {"late-share", required_argument, NULL, O_SHARE}, {"slow-link-ratio", required_argument, NULL, O_LINK},
      {"change-ratio", required_argument, NULL, O_CHANGE}, {"threads", required_argument, NULL, O_THREADS},
      {"memory", required_argument, NULL, O_MEM},   {"help", no_argument, NULL, O_HELP},
      {"version", no_argument, NULL, O_VERSION},
      {NULL, 0, NULL, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    const char *name = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    switch (c) {
    case O_JSON: json = true; break;
    case O_CSV: csv = optarg; break;
    case O_HTML: html = optarg; break;
    case O_TRACE: trace = optarg; break;
    case O_BUSBW: o->max_busbw_gbs = number("max-busbw", optarg, 1e-3, 1e9); break;
    case O_LATE: o->late_ns = number("late-us", optarg, 0, 1e9) * 1e3; break;
    case O_SHARE: o->late_share = number("late-share", optarg, 0, 1); break;
    case O_LINK: o->slow_link_ratio = number("slow-link-ratio", optarg, 0, 1); break;
    case O_CHANGE: o->change_ratio = number("change-ratio", optarg, 1, 1e9); break;
    case O_THREADS: o->threads = (int)number("threads", optarg, 1, 256); break;
    case O_MEM: o->op_memory = (size_t)number("memory", optarg, 1, 1 << 24) << 20; break;
    case 'h':
    case O_HELP: usage(stdout); return 0;
    case O_VERSION: printf("inspector-report %s (git %s)\n", INSPECTOR_VERSION, INSPECTOR_GIT_REV); return 0;
    default:
      fprintf(stderr, "inspector-report: unknown option or missing value: %s\n", name);
      usage(stderr);
      return 2;
    }
  }
  if (optind == argc) {
    usage(stderr);
    return 2;
  }
  int found = 0;
  for (int i = optind; i < argc; i++) found += rpt_input_add(argv[i]) == 0;
  if (!found) {
    fprintf(stderr, "inspector-report: no log files found\n");
    return 1;
  }
  rpt_input_read(&job);
  if (job.rejected) fprintf(stderr, "inspector-report: %ld lines rejected\n", job.rejected);
  if (job.not_records) fprintf(stderr, "inspector-report: %ld lines not Inspector records\n", job.not_records);
  if (job.nranks_mixed_comms)
    fprintf(stderr, "inspector-report: %llu lines of %d communicator%s give fewer ranks (n_ranks) than other lines "
                    "of the same communicator (e.g. 0x%llx: %d and %d; logs of different jobs mixed?): each is read "
                    "with the largest n_ranks its lines give\n",
            (unsigned long long)job.nranks_mixed_lines, job.nranks_mixed_comms,
            job.nranks_mixed_comms == 1 ? "" : "s", (unsigned long long)job.nranks_mixed_id, job.nranks_mixed_lo,
            job.nranks_mixed_hi);
  if (job.hang_rows_dropped)
    fprintf(stderr, "inspector-report: %llu hang lines left out: more than %d (communicator, rank, op) of them; "
                    "the hangs below may miss some ranks\n",
            (unsigned long long)job.hang_rows_dropped, RPT_HANG_ROWS_MAX);
  if (!job.records && !job.nhang_rows) {
    /* Nothing to summarise is a failure: a script that runs the report on the wrong
     * directory, or on something that is no log, must notice. A hung job's logs may hold
     * hang lines and no record yet: those are answered. */
    fprintf(stderr, "inspector-report: no Inspector records in %ld file%s (%ld lines rejected, %ld lines not "
                    "Inspector records)\n", job.files, job.files == 1 ? "" : "s", job.rejected, job.not_records);
    rpt_job_free(&job);
    rpt_intern_free();
    return 1;
  }
  rpt_hangs(&job);
  if (job.nhangs_unlisted)
    fprintf(stderr, "inspector-report: %d stuck ops not listed: the hangs list at most %d ranks in all\n",
            job.nhangs_unlisted, RPT_HANG_LIST_MAX);
  rpt_align(&job);
  rpt_late(&job);
  rpt_links(&job);
  rpt_changes(&job);
  int rc = json ? rpt_write_json(&job, stdout) : rpt_write_text(&job, stdout);
  if (csv) rc |= rpt_write_csv(&job, csv);
  if (html) rc |= rpt_write_html(&job, html);
  if (trace) rc |= rpt_write_trace(&job, trace);
  if (fflush(stdout) != 0) rc = -1;
  rpt_job_free(&job);
  rpt_intern_free();
  return rc ? 1 : 0;
}
