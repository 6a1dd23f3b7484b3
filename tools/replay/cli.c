/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.c - option parsing (see cli.h). getopt_long (glibc) accepts both
 * "--opt value" and "--opt=value" and lets TRACE files sit anywhere.
 */
#include "schedule.h"
#include "cli.h"
#include "replay.h"
#include "vclock.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char k_usage[] =
    "usage: inspector-replay [--plugin PATH] [--preload LIB]... [--abi 4|5|6|trace] [--threads|--threads-free]\n"
    "               [--procs [--max-procs N]] [--repeat N] [--pace-us F] [--pace-recorded] [--recorded-clock]\n"
    "               [--mask-log FILE] [--no-finalize] [--logger-dies] [--quiet] TRACE...\n"
    "       inspector-replay [--plugin PATH] [--preload LIB]... [--abi 4|5|6] --synthetic [--ranks N] [--nodes N] [--comms N]\n"
    "               [--iters N] [--colls LIST] [--p2p] [--sizes MIN:MAX] [--factor F] [--bw-gbs F]\n"
    "               [--lat-us F] [--channels N] [--late-rank R] [--late-us F] [--late-jitter-us F]\n"
    "               [--late-fraction F] [--late-from F] [--late-in all|coll|p2p] [--p2p-wait] [--p2p-comm]\n"
    "               [--clock-offset-ms F] [--clock-drift-ppm F] [--op-gap-ms F]\n"
    "               [--p2p-pattern ring|nodes|all] [--slow-link A:B] [--slow-factor F]\n"
    "               [--degrade AT:FACTOR] [--order sizes|iters] [--procs [--max-procs N]]\n"
    "               [--comm-name NAME] [--seed N] [--truth FILE]\n"
    "               [--hang-rank R [--hang-op K] [--hang-kind coll|p2p] [--hang-comm C] [--hang-queued-rank Q]\n"
    "               [--hang-group N] [--hang-hold-s S] [--hang-ready-dir DIR]]\n"
    "\n"
    "Drives an NCCL/RCCL profiler plugin through recorded traces (gzip or plain JSON lines)\n"
    "or through synthetic traffic, with no GPU. The plugin's log lines are printed as NCCL\n"
    "would: only with NCCL_DEBUG, for the subsystems of NCCL_DEBUG_SUBSYS (the plugin's:\n"
    "PROFILE; e.g. NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=PROFILE).\n"
    "  --plugin PATH   plugin .so (default $INSPECTOR_PLUGIN, else $NCCL_PROFILER_PLUGIN as\n"
    "                  NCCL reads it, else <bindir>/../lib/libnccl-profiler-inspector.so)\n"
    "  --preload LIB   dlopen LIB (RTLD_NOW | RTLD_GLOBAL) before the plugin, e.g. a stand-in\n"
    "                  runtime the plugin looks for (repeatable; --procs children inherit it)\n"
    "  --abi V         ncclProfiler_vV table to drive (default: newest exported;\n"
    "                  'trace': the version each trace was recorded through)\n"
    "  --threads       replay each recorded thread on its own thread, concurrently; a\n"
    "                  communicator's lines keep their recorded order across threads\n"
    "  --threads-free  the same without that order: any interleaving per communicator\n"
    "  --procs         one child process per trace file (or per rank with --synthetic)\n"
    "  --max-procs N   at most N of those children at once (2 x the online CPUs)\n"
    "  --repeat N      replay each trace N times, init to finalize (1)\n"
    "  --quiet         no INFO/TRACE log lines from the plugin, no summary\n"
    "  --no-finalize   skip every finalize, as a host that exits without destroying its\n"
    "                  communicators\n"
    "  --logger-dies   the logger given to the plugin aborts the process if called with no\n"
    "                  communicator alive or during exit (a host that tears it down)\n"
    "  --pace-us F     wait F us before each Coll/P2p start (spreads a replay over wall time)\n"
    "  --pace-recorded deliver each line at its recorded host time (\"t\", relative to the\n"
    "                  trace's first line); traces only\n"
    "  --recorded-clock CLOCK_MONOTONIC, as the plugin reads it, is the recorded time of\n"
    "                  the line being delivered (deterministic host times); traces only\n"
    "  --mask-log FILE for each Coll/P2p start, write the activation mask it was judged\n"
    "                  with (as NCCL tags ops): index tag delivered realtime_ns path\n"
    "  -h, --help      this text\n"
    "  --version       the version and git revision, the plugin's of the same build\n"
    "synthetic traffic (defaults in parentheses):\n"
    "  --ranks N (8)  --nodes N (1)  --comms N (1)  --iters N (20)\n"
    "                 rank r is on node floor(r x nodes / ranks); with --procs and --nodes > 1\n"
    "                 its process runs as host node-NNN (without --procs: the real host)\n"
    "  --colls LIST   of AllReduce,AllGather,ReduceScatter,Broadcast,Reduce\n"
    "                 (AllReduce,AllGather,ReduceScatter,Broadcast)\n"
    "  --p2p          also an exchange: every rank Sends to one peer and Recvs from another\n"
    "  --p2p-pattern ring|nodes|all  whom: rank+1 / rank-1 (ring), or the same local rank on\n"
    "                 the next / previous node (nodes; needs --nodes > 1 dividing --ranks),\n"
    "                 or rank+k / rank-k with k moving on by one at every exchange (all:\n"
    "                 all-pairs, every pair once in ranks-1 exchanges: --iters ranks-1)\n"
    "  --sizes MIN:MAX  bytes, K/M/G suffixes (1K:64M), stepped by --factor F (4)\n"
    "  --order sizes|iters  all iterations of a size back to back (sizes), or the iteration\n"
    "                 loop outermost, as a training loop (iters)\n"
    "  --bw-gbs F (100)  --lat-us F (10)  --channels N (8)\n"
    "  --late-rank R  --late-us F (100): rank R arrives F us late to every op\n"
    "  --late-jitter-us F (0)  the late rank's lateness + U[0,F] us per op, every other\n"
    "                 rank's arrival + U[0,F/10] us\n"
    "  --late-fraction F (1)  the late rank is late only in a seeded share F of the\n"
    "                 iterations (a draw per iteration: every op of it), 0 < F <= 1\n"
    "  --late-from F (0)  ... only in ops from running index ceil(F x total ops) on, 0 <= F < 1\n"
    "  --late-in all|coll|p2p (all)  ... only in its collectives, or only in its P2P\n"
    "                 (a pipeline stage posting its Send/Recv late)\n"
    "  --p2p-wait     a P2P task waits for its peer: it ends at the later of the two ranks'\n"
    "                 arrivals + its transfer (NCCL's rendezvous; default: its own arrival)\n"
    "  --p2p-comm     the exchange runs on a communicator of its own, after the --comms\n"
    "                 ones (pipeline traffic apart from the collectives)\n"
    "  --clock-offset-ms F (0)  node n's GPU timestamps shifted by a seeded U[-F,F] ms\n"
    "  --clock-drift-ppm F (0)  node n's GPU clock runs at a seeded rate 1 + U[-F,F] x 1e-6\n"
    "                 (<= 1000), from the run's first op on: true time t reads\n"
    "                 t0 + (t - t0) x (1 + ppm x 1e-6) + offset (t0: the first op's start)\n"
    "  --op-gap-ms F (0)  each op starts F ms (+ 3..5 us) after the previous one ends: a long\n"
    "                 run in few ops (host time; the replay itself does not wait)\n"
    "  --slow-link A:B  P2P transfers between nodes A and B (either way; repeatable, 8) take\n"
    "                 lat + F x bytes/bw, F = --slow-factor (4)\n"
    "  --degrade AT:FACTOR  ops from running index AT x (total ops) on (0 <= AT <= 1) transfer\n"
    "                 FACTOR x slower (the bytes/bw part), to the end\n"
    "  --comm-name NAME (synthetic)  --seed N (1)\n"
    "  --truth FILE   write what a correct plugin must report (one JSON line per op and rank;\n"
    "                 with --hang-rank per completed op and rank, then a line {\"hang\":{...}})\n"
    "a job that hangs (synthetic traffic; with --procs its processes run on while it hangs):\n"
    "  --hang-rank R  rank R never issues the stuck op, nor anything after it; every other rank\n"
    "                 issues it and nothing more: its kernel channels all start, none stops\n"
    "  --hang-op K    the stuck op: the first of its kind (and communicator) at running index K\n"
    "                 or later (default: the middle op of the run)\n"
    "  --hang-kind coll|p2p (coll)  p2p: an exchange (needs --p2p), in which the Recv from\n"
    "                 rank R waits and every other task completes\n"
    "  --hang-comm C  the stuck op is on communicator C (default: any)\n"
    "  --hang-queued-rank Q  rank Q issues the stuck op, but none of its channels start\n"
    "  --hang-group N (1)  the stuck op is the last of N ops issued in one group; the others\n"
    "                 complete\n"
    "  --hang-hold-s S (0)  at the stuck point each process sleeps S s (SIGUSR1 ends it at once),\n"
    "                 then finalizes (unless --no-finalize) and exits 0\n"
    "  --hang-ready-dir DIR  at the stuck point each process writes DIR/rank-R (its pid) for\n"
    "                 each of its ranks, before the hold\n"
    "                 (these two without --hang-rank: a quiet job, every op completed, holds\n"
    "                 before its finalizes: a control)\n"
    "exit status: 0 success, 1 runtime error, 2 usage error\n";

/* Prints "inspector-replay: <message>" and the usage on stderr, exits 2. */
_Noreturn static void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "inspector-replay: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n%s", k_usage);
  va_end(ap);
  exit(2);
}

static long long parse_ll(const char *opt, const char *v, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi) usage_error("bad value for --%s: '%s'", opt, v);
  return x;
}

static double parse_dbl(const char *opt, const char *v, double lo, bool lo_open) {
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || end == v || *end || !isfinite(x) || x < lo || (lo_open && x == lo))
    usage_error("bad value for --%s: '%s'", opt, v);
  return x;
}

/* "A:B" -> two non-negative integers up to hi. Returns 0, or -1 on error. */
static int parse_int_pair(const char *v, int hi, int *a, int *b) {
  char *end;
  if (*v < '0' || *v > '9') return -1;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end != ':' || x > hi || end[1] < '0' || end[1] > '9') return -1;
  const char *s = end + 1;
  long y = strtol(s, &end, 10);
  if (errno || *end || y > hi) return -1;
  *a = (int)x;
  *b = (int)y;
  return 0;
}

/* "64K" -> 65536; binary suffixes K, M, G. Returns 0 on error. */
static uint64_t parse_size(const char *v, const char **end_out) {
  char *end;
  errno = 0;
  if (*v < '0' || *v > '9') return 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || end == v) return 0;
  unsigned shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  default: break;
  }
  if (x > (UINT64_MAX >> shift)) return 0;
  *end_out = end;
  return (uint64_t)x << shift;
}

enum {
  O_PLUGIN = 256, O_ABI, O_THREADS, O_THREADS_FREE, O_PROCS, O_REPEAT, O_QUIET, O_HELP, O_SYNTHETIC, O_PACE,
  O_MASK_LOG, O_LOGGER_DIES, O_NO_FINALIZE, O_PRELOAD, O_PACE_RECORDED, O_RECORDED_CLOCK, O_MAX_PROCS,
  O_VERSION,
  /* from here on: options of --synthetic only */
  O_RANKS, O_NODES, O_COMMS, O_ITERS, O_COLLS, O_P2P, O_SIZES, O_FACTOR, O_BW, O_LAT,
  O_CHANNELS, O_LATE_RANK, O_LATE_US, O_COMM_NAME, O_SEED, O_TRUTH, O_LATE_JITTER, O_CLOCK_OFFSET,
  O_P2P_PATTERN, O_SLOW_LINK, O_SLOW_FACTOR, O_DEGRADE, O_ORDER,
  O_CLOCK_DRIFT, O_OP_GAP,
  O_LATE_FRACTION, O_LATE_FROM, O_LATE_IN, O_P2P_WAIT, O_P2P_COMM,
  O_HANG_RANK, O_HANG_OP, O_HANG_KIND, O_HANG_COMM, O_HANG_QUEUED, O_HANG_GROUP, O_HANG_HOLD, O_HANG_READY
};

static const struct option k_opts[] = {
    {"plugin", required_argument, NULL, O_PLUGIN},   {"abi", required_argument, NULL, O_ABI},
    {"threads", no_argument, NULL, O_THREADS},        {"threads-free", no_argument, NULL, O_THREADS_FREE},
    {"procs", no_argument, NULL, O_PROCS},
    {"repeat", required_argument, NULL, O_REPEAT},   {"quiet", no_argument, NULL, O_QUIET},
    {"help", no_argument, NULL, O_HELP},              {"synthetic", no_argument, NULL, O_SYNTHETIC},
    {"version", no_argument, NULL, O_VERSION},
    {"ranks", required_argument, NULL, O_RANKS},     {"nodes", required_argument, NULL, O_NODES},
    {"comms", required_argument, NULL, O_COMMS},     {"iters", required_argument, NULL, O_ITERS},
    {"colls", required_argument, NULL, O_COLLS},     {"p2p", no_argument, NULL, O_P2P},
    {"sizes", required_argument, NULL, O_SIZES},     {"factor", required_argument, NULL, O_FACTOR},
    {"bw-gbs", required_argument, NULL, O_BW},       {"lat-us", required_argument, NULL, O_LAT},
    {"channels", required_argument, NULL, O_CHANNELS}, {"late-rank", required_argument, NULL, O_LATE_RANK},
    {"logger-dies", no_argument, NULL, O_LOGGER_DIES},
    {"no-finalize", no_argument, NULL, O_NO_FINALIZE},
    {"preload", required_argument, NULL, O_PRELOAD},
    {"pace-recorded", no_argument, NULL, O_PACE_RECORDED},
    {"recorded-clock", no_argument, NULL, O_RECORDED_CLOCK},
    {"pace-us", required_argument, NULL, O_PACE},     {"mask-log", required_argument, NULL, O_MASK_LOG},
    {"late-us", required_argument, NULL, O_LATE_US}, {"comm-name", required_argument, NULL, O_COMM_NAME},
    {"seed", required_argument, NULL, O_SEED},       {"truth", required_argument, NULL, O_TRUTH},
    {"max-procs", required_argument, NULL, O_MAX_PROCS},
    {"late-jitter-us", required_argument, NULL, O_LATE_JITTER},
    {"clock-offset-ms", required_argument, NULL, O_CLOCK_OFFSET},
    {"clock-drift-ppm", required_argument, NULL, O_CLOCK_DRIFT},
    {"op-gap-ms", required_argument, NULL, O_OP_GAP},
    {"late-fraction", required_argument, NULL, O_LATE_FRACTION},
    {"late-from", required_argument, NULL, O_LATE_FROM},
    {"late-in", required_argument, NULL, O_LATE_IN},
    {"p2p-wait", no_argument, NULL, O_P2P_WAIT},
    {"p2p-comm", no_argument, NULL, O_P2P_COMM},
    {"p2p-pattern", required_argument, NULL, O_P2P_PATTERN},
    {"slow-link", required_argument, NULL, O_SLOW_LINK},
    {"slow-factor", required_argument, NULL, O_SLOW_FACTOR},
    {"degrade", required_argument, NULL, O_DEGRADE},
    {"order", required_argument, NULL, O_ORDER},
    {"hang-rank", required_argument, NULL, O_HANG_RANK},
    {"hang-op", required_argument, NULL, O_HANG_OP},
    {"hang-kind", required_argument, NULL, O_HANG_KIND},
    {"hang-comm", required_argument, NULL, O_HANG_COMM},
    {"hang-queued-rank", required_argument, NULL, O_HANG_QUEUED},
    {"hang-group", required_argument, NULL, O_HANG_GROUP},
    {"hang-hold-s", required_argument, NULL, O_HANG_HOLD},
    {"hang-ready-dir", required_argument, NULL, O_HANG_READY},
    {NULL, 0, NULL, 0}};

static const char *opt_name(int c) {
  for (const struct option *o = k_opts; o->name; o++)
    if (o->val == c) return o->name;
  return "?";
}

/* What the checks after the options need to know of them: the first of a kind given, by
 * the name or the value the user typed, so that a message can quote it. */
struct seen {
  const char *synth_only; /* the first synthetic-only option */
  const char *late_rank, *slow_link, *max_procs; /* their values, when given */
  const char *late_how;   /* the first of --late-fraction, --late-from, --late-in */
  const char *hang_rank, *hang_queued, *hang_comm; /* their values, when given */
  const char *hang_how;   /* the first option that shapes a hang: --hang-* but --hang-rank and the two below */
  const char *hold_how;   /* the first of --hang-hold-s and --hang-ready-dir (they work alone too) */
};

/* The options of any run, traces or synthetic. Returns false for any other option. --help
 * and --version exit at once, before the options after them are read or the whole line is
 * checked: asking for the usage gets it, not a complaint about the rest of the line. */
static bool run_option(int c, const char *name, struct rp_cli *o, struct seen *sn) {
  switch (c) {
  case O_PLUGIN: o->plugin = optarg; break;
  case O_ABI:
    if (strcmp(optarg, "trace") == 0) o->abi = RP_ABI_TRACE;
    else o->abi = (int)parse_ll(name, optarg, 4, 6);
    break;
  case O_THREADS: o->threads = true; break;
  case O_THREADS_FREE: o->threads = true; rp_schedule_free = true; break;
  case O_PROCS: o->procs = true; break;
  case O_MAX_PROCS: sn->max_procs = optarg; o->max_procs = (int)parse_ll(name, optarg, 1, 1000000); break;
  case O_REPEAT: o->repeat = (int)parse_ll(name, optarg, 1, 1000000000); break;
  case O_QUIET: o->quiet = true; break;
  case 'h':
  case O_HELP: fputs(k_usage, stdout); exit(0);
  case O_VERSION: printf("inspector-replay %s (git %s)\n", INSPECTOR_VERSION, INSPECTOR_GIT_REV); exit(0);
  case O_SYNTHETIC: o->synthetic = true; break;
  case O_PACE: rp_set_pace_us(parse_dbl(name, optarg, 0.0, false)); break;
  case O_MASK_LOG: o->mask_log = optarg; break;
  case O_LOGGER_DIES: o->logger_dies = true; break;
  case O_NO_FINALIZE: rp_set_no_finalize(true); break;
  case O_PRELOAD:
    if (!*optarg) usage_error("bad value for --preload: ''");
    o->preload[o->npreload++] = optarg;
    break;
  case O_PACE_RECORDED: o->pace_recorded = true; break;
  case O_RECORDED_CLOCK: rp_vclock_enable(true); o->recorded_clock = true; break;
  default: return false;
  }
  return true;
}

/* --sizes MIN:MAX, each with an optional K, M or G. */
static void sizes_option(const char *v, struct syn_params *p) {
  const char *end = NULL;
  uint64_t lo = parse_size(v, &end), hi = 0;
  if (lo && *end == ':') hi = parse_size(end + 1, &end);
  if (!lo || !hi || *end || lo > hi) usage_error("bad value for --sizes: '%s' (want MIN:MAX)", v);
  p->min_bytes = lo;
  p->max_bytes = hi;
}

/* --seed N: any unsigned 64-bit number, in C's bases (0x..., 0...); strtoull would take
 * "-1" as 2^64 - 1, so a leading '-' is refused. */
static uint64_t seed_option(const char *name, const char *v) {
  char *end;
  errno = 0;
  uint64_t x = strtoull(v, &end, 0);
  if (errno || end == v || *end || v[0] == '-') usage_error("bad value for --%s: '%s'", name, v);
  return x;
}

/* The synthetic traffic's shape: ranks, nodes and communicators, the ops, their sizes
 * and order, the links' speed, the names, the truth file. False for any other option. */
static bool shape_option(int c, const char *name, struct rp_cli *o) {
  const char *bad;
  switch (c) {
  case O_RANKS: o->syn.ranks = (int)parse_ll(name, optarg, 1, 4096); break;
  case O_NODES: o->syn.nodes = (int)parse_ll(name, optarg, 1, 4096); break;
  case O_COMMS: o->syn.comms = (int)parse_ll(name, optarg, 1, 1024); break;
  case O_ITERS: o->syn.iters = (int)parse_ll(name, optarg, 1, 100000000); break;
  case O_COLLS:
    if (syn_parse_colls(optarg, &o->syn, &bad)) usage_error("bad value for --colls: '%s' (at '%s')", optarg, bad);
    break;
  case O_SIZES: sizes_option(optarg, &o->syn); break;
  case O_FACTOR: o->syn.factor = parse_dbl(name, optarg, 1.0, true); break;
  case O_ORDER:
    if (strcmp(optarg, "sizes") == 0) o->syn.order = SYN_ORDER_SIZES;
    else if (strcmp(optarg, "iters") == 0) o->syn.order = SYN_ORDER_ITERS;
    else usage_error("bad value for --%s: '%s' (want sizes or iters)", name, optarg);
    break;
  case O_BW: o->syn.bw_gbs = parse_dbl(name, optarg, 0.0, true); break;
  case O_LAT: o->syn.lat_us = parse_dbl(name, optarg, 0.0, false); break;
  case O_CHANNELS: o->syn.channels = (int)parse_ll(name, optarg, 1, 64); break;
  case O_COMM_NAME: o->syn.comm_name = optarg; break;
  case O_SEED: o->syn.seed = seed_option(name, optarg); break;
  case O_TRUTH: o->truth = optarg; break;
  default: return false;
  }
  return true;
}

/* The synthetic point-to-point exchange: whom each rank sends to, how a task waits, on
 * which communicator, and the slow links between nodes. False for any other option. */
static bool p2p_option(int c, const char *name, struct rp_cli *o, struct seen *sn) {
  switch (c) {
  case O_P2P: o->syn.p2p = true; break;
  case O_P2P_PATTERN:
    if (strcmp(optarg, "ring") == 0) o->syn.p2p_pattern = SYN_P2P_RING;
    else if (strcmp(optarg, "nodes") == 0) o->syn.p2p_pattern = SYN_P2P_NODES;
    else if (strcmp(optarg, "all") == 0) o->syn.p2p_pattern = SYN_P2P_ALL;
    else usage_error("bad value for --%s: '%s' (want ring, nodes or all)", name, optarg);
    break;
  case O_P2P_WAIT: o->syn.p2p_wait = true; break;
  case O_P2P_COMM: o->syn.p2p_comm = true; break;
  case O_SLOW_LINK:
    sn->slow_link = optarg;
    if (o->syn.nslow == SYN_MAX_SLOW) usage_error("too many --%s (at most %d)", name, SYN_MAX_SLOW);
    if (parse_int_pair(optarg, 4095, &o->syn.slow_a[o->syn.nslow], &o->syn.slow_b[o->syn.nslow]))
      usage_error("bad value for --%s: '%s' (want A:B, node indexes)", name, optarg);
    o->syn.nslow++;
    break;
  case O_SLOW_FACTOR: o->syn.slow_factor = parse_dbl(name, optarg, 0.0, true); break;
  default: return false;
  }
  return true;
}

/* The late rank: who, by how much, and in which of its ops. False for any other option. */
static bool late_option(int c, const char *name, struct rp_cli *o, struct seen *sn) {
  switch (c) {
  case O_LATE_RANK: sn->late_rank = optarg; o->syn.late_rank = (int)parse_ll(name, optarg, 0, 4095); break;
  case O_LATE_US: o->syn.late_us = parse_dbl(name, optarg, 0.0, false); break;
  case O_LATE_JITTER: o->syn.late_jitter_us = parse_dbl(name, optarg, 0.0, false); break;
  case O_LATE_FRACTION:
    sn->late_how = sn->late_how ? sn->late_how : name;
    o->syn.late_fraction = parse_dbl(name, optarg, 0.0, true);
    if (o->syn.late_fraction > 1) usage_error("bad value for --%s: '%s' (want 0 < F <= 1)", name, optarg);
    break;
  case O_LATE_FROM:
    sn->late_how = sn->late_how ? sn->late_how : name;
    o->syn.late_from = parse_dbl(name, optarg, 0.0, false);
    if (o->syn.late_from >= 1) usage_error("bad value for --%s: '%s' (want 0 <= F < 1)", name, optarg);
    break;
  case O_LATE_IN:
    sn->late_how = sn->late_how ? sn->late_how : name;
    if (strcmp(optarg, "all") == 0) o->syn.late_in = SYN_LATE_ALL;
    else if (strcmp(optarg, "coll") == 0) o->syn.late_in = SYN_LATE_COLL;
    else if (strcmp(optarg, "p2p") == 0) o->syn.late_in = SYN_LATE_P2P;
    else usage_error("bad value for --%s: '%s' (want all, coll or p2p)", name, optarg);
    break;
  default: return false;
  }
  return true;
}

/* A job that hangs: who, which op, and what the processes do at the stuck point. False for any
 * other option. */
static bool hang_option(int c, const char *name, struct rp_cli *o, struct seen *sn) {
  struct syn_hang *h = &o->syn.hang;
  if (c > O_HANG_RANK && c < O_HANG_HOLD && !sn->hang_how) sn->hang_how = name;
  if ((c == O_HANG_HOLD || c == O_HANG_READY) && !sn->hold_how) sn->hold_how = name;
  switch (c) {
  case O_HANG_RANK: sn->hang_rank = optarg; h->rank = (int)parse_ll(name, optarg, 0, 4095); break;
  case O_HANG_OP: h->op = parse_ll(name, optarg, 0, INT64_MAX); break;
  case O_HANG_KIND:
    if (strcmp(optarg, "coll") == 0) h->kind = SYN_HANG_COLL;
    else if (strcmp(optarg, "p2p") == 0) h->kind = SYN_HANG_P2P;
    else usage_error("bad value for --%s: '%s' (want coll or p2p)", name, optarg);
    break;
  case O_HANG_COMM: sn->hang_comm = optarg; h->comm = (int)parse_ll(name, optarg, 0, 1024); break;
  case O_HANG_QUEUED: sn->hang_queued = optarg; h->queued = (int)parse_ll(name, optarg, 0, 4095); break;
  case O_HANG_GROUP: h->group = (int)parse_ll(name, optarg, 1, 64); break;
  case O_HANG_HOLD:
    o->hang_hold_s = parse_dbl(name, optarg, 0.0, false);
    if (o->hang_hold_s > 86400) usage_error("bad value for --%s: '%s' (at most 86400 s)", name, optarg);
    break;
  case O_HANG_READY:
    if (!*optarg) usage_error("bad value for --%s: ''", name);
    o->hang_ready_dir = optarg;
    break;
  default: return false;
  }
  return true;
}

/* --degrade AT:FACTOR */
static void degrade_option(const char *name, const char *v, struct syn_params *p) {
  char *end;
  errno = 0;
  double at = strtod(v, &end), f = 0;
  if (!errno && end != v && *end == ':' && end[1]) f = strtod(end + 1, &end);
  if (errno || *end || !(at >= 0 && at <= 1) || !(f > 0) || !isfinite(f))
    usage_error("bad value for --%s: '%s' (want AT:FACTOR, 0 <= AT <= 1, FACTOR > 0)", name, v);
  p->degrade_at = at;
  p->degrade_factor = f;
}

/* Time in the synthetic job: the nodes' GPU clocks, the gaps between ops, a bandwidth that
 * drops from some op on. False for any other option. */
static bool time_option(int c, const char *name, struct rp_cli *o) {
  switch (c) {
  case O_CLOCK_OFFSET:
    o->syn.clock_offset_ms = parse_dbl(name, optarg, 0.0, false);
    if (o->syn.clock_offset_ms > 1e6) usage_error("bad value for --%s: '%s' (at most 1e6 ms)", name, optarg);
    break;
  case O_CLOCK_DRIFT:
    o->syn.clock_drift_ppm = parse_dbl(name, optarg, 0.0, false);
    if (o->syn.clock_drift_ppm > 1000) usage_error("bad value for --%s: '%s' (at most 1000 ppm)", name, optarg);
    break;
  case O_OP_GAP:
    o->syn.op_gap_ms = parse_dbl(name, optarg, 0.0, false);
    if (o->syn.op_gap_ms > 1e6) usage_error("bad value for --%s: '%s' (at most 1e6 ms)", name, optarg);
    break;
  case O_DEGRADE: degrade_option(name, optarg, &o->syn); break;
  default: return false;
  }
  return true;
}

/* getopt's ':' (an option without its value) and '?' (an unknown or ambiguous one). optopt
 * holds an unknown short option's character, 0 for a long one: then only argv names it. */
_Noreturn static void bad_option(int c, char **argv) {
  if (c == ':') usage_error("option '%s' needs a value", argv[optind - 1]);
  if (optopt > 0 && optopt < 128) usage_error("unknown option '-%c'", optopt);
  usage_error("unknown option '%s'", argv[optind - 1]);
}

/* The P2P options need --p2p, and --p2p-pattern nodes and --slow-link nodes to exist. */
static void check_p2p(const struct rp_cli *o, const struct seen *sn) {
  const struct syn_params *p = &o->syn;
  if (p->late_in == SYN_LATE_P2P && !p->p2p) usage_error("--late-in p2p needs --p2p");
  if (p->p2p_wait && !p->p2p) usage_error("--p2p-wait needs --p2p");
  if (p->p2p_comm && !p->p2p) usage_error("--p2p-comm needs --p2p");
  if (p->p2p_pattern == SYN_P2P_NODES) {
    if (!p->p2p) usage_error("--p2p-pattern needs --p2p");
    if (p->nodes < 2 || p->ranks % p->nodes)
      usage_error("--p2p-pattern nodes needs --nodes 2 or more dividing --ranks (got %d ranks on %d nodes)",
                  p->ranks, p->nodes);
  }
  if (sn->slow_link) {
    if (!p->p2p) usage_error("--slow-link slows P2P transfers: it needs --p2p");
    for (int i = 0; i < p->nslow; i++)
      if (p->slow_a[i] >= p->nodes || p->slow_b[i] >= p->nodes)
        usage_error("bad value for --slow-link: '%d:%d' (nodes are 0..%d)", p->slow_a[i], p->slow_b[i],
                    p->nodes - 1);
  }
}

/* A hang's options against the job's; syn_hang_resolve then finds the stuck op itself.
 * --hang-hold-s and --hang-ready-dir alone hold a quiet job at its end (a control run). */
static void check_hang(const struct rp_cli *o, const struct seen *sn) {
  const struct syn_params *p = &o->syn;
  const struct syn_hang *h = &p->hang;
  if (!sn->hang_rank && sn->hang_how) usage_error("--%s needs --hang-rank", sn->hang_how);
  if (!sn->hang_rank && !sn->hold_how) return;
  if (o->repeat > 1) {
    if (sn->hang_rank) usage_error("--hang-rank stops the job once: it takes no --repeat");
    usage_error("--%s holds the job once: it takes no --repeat", sn->hold_how);
  }
  if (o->procs && sn->max_procs && o->max_procs < p->ranks)
    usage_error("bad value for --max-procs: '%s' (a held job's %d processes hold at once: %d or more, or none)",
                sn->max_procs, p->ranks, p->ranks);
  if (!sn->hang_rank) return;
  if (p->ranks < 2) usage_error("--hang-rank needs --ranks 2 or more: a rank that waits for it");
  if (h->rank >= p->ranks)
    usage_error("bad value for --hang-rank: '%s' (ranks are 0..%d)", sn->hang_rank, p->ranks - 1);
  if (sn->hang_queued && h->queued >= p->ranks)
    usage_error("bad value for --hang-queued-rank: '%s' (ranks are 0..%d)", sn->hang_queued, p->ranks - 1);
  if (sn->hang_queued && h->queued == h->rank)
    usage_error("bad value for --hang-queued-rank: '%s' (the --hang-rank: the queued rank issues the stuck op, "
                "the hang rank never does)", sn->hang_queued);
  if (h->kind == SYN_HANG_P2P && !p->p2p) usage_error("--hang-kind p2p needs --p2p");
  int ncomms = p->comms + (p->p2p && p->p2p_comm);
  if (sn->hang_comm && h->comm >= ncomms)
    usage_error("bad value for --hang-comm: '%s' (communicators are 0..%d)", sn->hang_comm, ncomms - 1);
}

/* A synthetic job's options against each other: each option was checked alone as it came,
 * and a later one may change what an earlier one allows (--late-rank before --ranks). */
static void check_synthetic(const struct rp_cli *o, const struct seen *sn) {
  const struct syn_params *p = &o->syn;
  if (o->ntraces) usage_error("--synthetic takes no TRACE files (got '%s')", o->traces[0]);
  if (o->abi == RP_ABI_TRACE) usage_error("--abi trace needs TRACE files, not --synthetic");
  if (p->nodes > p->ranks) usage_error("bad value for --nodes: %d (more nodes than the %d ranks)", p->nodes, p->ranks);
  if (sn->late_rank && p->late_rank >= p->ranks)
    usage_error("bad value for --late-rank: '%s' (ranks are 0..%d)", sn->late_rank, p->ranks - 1);
  if (p->p2p && p->ranks < 2) usage_error("--p2p needs --ranks 2 or more");
  if (sn->late_how && !sn->late_rank) usage_error("--%s needs --late-rank", sn->late_how);
  check_p2p(o, sn);
  if (o->pace_recorded) usage_error("--pace-recorded needs TRACE files: synthetic traffic has no recorded times");
  if (o->recorded_clock) usage_error("--recorded-clock needs TRACE files: synthetic traffic has no recorded times");
  check_hang(o, sn);
}

void rp_cli_parse(int argc, char **argv, struct rp_cli *o) {
  memset(o, 0, sizeof *o);
  o->abi = RP_ABI_NEWEST;
  o->repeat = 1;
  syn_defaults(&o->syn);
  o->preload = calloc((size_t)argc + 1, sizeof *o->preload);
  if (!o->preload) {
    fprintf(stderr, "inspector-replay: out of memory\n");
    exit(1);
  }
  struct seen sn = {0};
  opterr = 0; /* our own messages */
  int c;
  while ((c = getopt_long(argc, argv, ":h", k_opts, NULL)) != -1) {
    const char *name = opt_name(c);
    if (c >= O_RANKS) sn.synth_only = sn.synth_only ? sn.synth_only : name;
    /* each option belongs to one group (the usage text's); one that none takes is an error */
    if (!run_option(c, name, o, &sn) && !shape_option(c, name, o) && !p2p_option(c, name, o, &sn) &&
        !late_option(c, name, o, &sn) && !time_option(c, name, o) && !hang_option(c, name, o, &sn))
      bad_option(c, argv);
  }
  o->traces = argv + optind;
  o->ntraces = argc - optind;
  if (o->synthetic) {
    check_synthetic(o, &sn);
    o->hold = sn.hang_rank || sn.hold_how;
    char why[256];
    if (syn_hang_resolve(&o->syn, why, sizeof why)) usage_error("%s", why);
  } else {
    if (sn.synth_only) usage_error("--%s needs --synthetic", sn.synth_only);
    if (o->ntraces == 0) usage_error("no TRACE file given");
  }
  if (o->mask_log && o->procs) usage_error("--mask-log works in one process: drop --procs");
  if (sn.max_procs && !o->procs) usage_error("--max-procs needs --procs");
}

void rp_cli_free(struct rp_cli *o) {
  free(o->preload);
  o->preload = NULL;
  o->npreload = 0;
}
