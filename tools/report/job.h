/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job.h - what inspector-report knows about a whole job once every log is read.
 *
 * Owns: the report's model, the one structure between the analysis and the
 * outputs. Reading (input.c, acc.c) fills the counts, communicators, groups,
 * links and the op sample; the analyses (align.c, late.c, links.c, change.c)
 * add their findings; every output (text, JSON, CSV, HTML, trace) is a pure
 * function of a finished rpt_job and never computes a figure of its own, so
 * the formats cannot disagree.
 *
 * Data flow: input -> acc (per thread) -> merge -> analyses -> outputs.
 *
 * Names: a "group" is one (communicator, operation, message size); a "clock"
 * is one process (hostname, pid), whose GPU timestamps share a time base; a
 * "link" is the pair of endpoints of point-to-point traffic: two hosts, or
 * two ranks of one host.
 */
#ifndef RPT_JOB_H
#define RPT_JOB_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse.h"
#include "qsketch.h"

/* Why a record was left out of the statistics (it is still counted). */
enum rpt_excl { RPT_EXCL_STALE, RPT_EXCL_TIMING, RPT_EXCL_CEILING, RPT_NEXCL };

enum rpt_comm_kind { RPT_KIND_NVLINK, RPT_KIND_NETWORK, RPT_KIND_MIXED };

/* Bandwidth over time of one group, from the op sample on the aligned timeline
 * (change.c): bins of `width_ns` from `t0_ns` (bin i covers [t0 + i*width,
 * t0 + (i+1)*width)), the same axis for every group. Sums are integers (busbw in
 * MB/s) so that the figures do not depend on the order records were read in. */
struct rpt_series {
  uint64_t t0_ns, width_ns;
  int nbins;
  uint32_t *count;
  uint64_t *sum_mbs;
};

struct rpt_group {
  int comm;          /* index into job.comms */
  int p2p;
  int op;            /* interned operation name */
  uint64_t bytes;
  uint64_t records;  /* every record of the group, excluded ones too */
  uint64_t excluded[RPT_NEXCL];
  uint64_t timing[RPT_NTIMING];     /* records per *_timing_source */
  struct rpt_qs time_ns, busbw;     /* kept records only */
  struct rpt_series series;         /* kept records of the op sample (rpt_changes) */
};

struct rpt_rank_info {
  int host;          /* interned hostname, -1 unknown */
  int clock;         /* index into job.clocks, -1 unknown */
  long long pid;
};

struct rpt_comm {
  uint64_t id;
  char name[128];
  int nranks, nnodes;
  enum rpt_comm_kind kind;
  int ranks_seen;              /* ranks with at least one line */
  struct rpt_rank_info *rank;  /* [nranks], or NULL when nranks is too large to keep */
  uint64_t written[2], dropped[2]; /* dump_stats totals: [0] collectives, [1] P2P */
  double covered_lo, covered_hi;   /* sampled share range (2, -1: not sampled) */
};

/* Point-to-point bandwidth of one rank towards one peer on one op and size. */
struct rpt_pair {
  int comm, op;
  uint64_t bytes;
  int rank, peer;
  struct rpt_qs busbw; /* kept records only */
};

/* Segments of a clock's offset: one per window of its ops at most (align.c). */
#define RPT_CLOCK_SEGS 16

/* How a clock's offset was modelled (align.c): the simplest that fits. */
enum rpt_clock_model { RPT_CLOCK_CONSTANT, RPT_CLOCK_LINE, RPT_CLOCK_WINDOWS };

/* Its name in the outputs: "constant", "rate" (offset and rate), "piecewise" (an offset per window). */
static inline const char *rpt_clock_model_name(enum rpt_clock_model m) {
  return m == RPT_CLOCK_WINDOWS ? "piecewise" : m == RPT_CLOCK_LINE ? "rate" : "constant";
}

/* One process: its GPU timestamps share a time base. Its offset is a function of time
 * (clocks drift: their rates differ by ppm): a line of slope `rate` in each segment, each
 * segment with its own intercept (a clock stepped by NTP jumps between two). Read it through
 * rpt_aligned_ns, never by hand. */
struct rpt_clock {
  int host;           /* interned hostname */
  long long pid;
  uint64_t last_us;   /* its newest line's dump_timestamp_us (any communicator), 0 none */
  int component;      /* clocks joined by shared ops; offsets are relative within one */
  int64_t offset_ns;  /* its offset at job.clock_ref_ns (what rpt_clock_offset gives at 0) */
  double drift_ppm;   /* its rate against the median clock's: ns of offset per ms (rate x 1e6) */
  enum rpt_clock_model model;
  int nseg;           /* 0: the offset is offset_ns throughout (0 when not aligned) */
  double rate;        /* ns of offset per ns of its time */
  double seg_x[RPT_CLOCK_SEGS]; /* segment i >= 1 starts at x = seg_x[i] (x: its time - job.clock_ref_ns) */
  double seg_a[RPT_CLOCK_SEGS]; /* in segment i the offset is seg_a[i] + rate x */
  bool aligned;       /* shares ops with another clock */
  uint64_t ops;       /* ops it took part in that were used for alignment */
  double resid_p95_ns;
};

/*
 * Evidence and confidence of a finding (docs/report.md "Evidence and confidence"): the
 * finding rests on n units of evidence (ops, transfers, bins), k of which agree with it;
 * its confidence compares the 95% lower bound of k / n (Wilson score) with the rule's own
 * threshold. Below a minimum of evidence a finding is not made but said "not enough data".
 */
enum rpt_conf {
  RPT_CONF_MEDIUM, /* the observed share meets the rule, its lower bound does not */
  RPT_CONF_HIGH    /* even the lower bound meets the rule */
};

/* 95% lower bound (Wilson score) of the share k / n; 0 for n == 0. */
static inline double rpt_share_lo(uint64_t k, uint64_t n) {
  if (!n) return 0;
  const double z = 1.959964;
  double p = (double)k / (double)n, nn = (double)n, d = 1 + z * z / nn;
  double lo = (p + z * z / (2 * nn) - z * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn))) / d;
  return lo > 0 ? lo : 0;
}

static inline const char *rpt_conf_name(enum rpt_conf c) { return c == RPT_CONF_HIGH ? "high" : "medium"; }

/* The least evidence a finding is made on (below it: "not enough data"): a late rank's late
 * ops since its onset (collectives, or P2P transfers); a link's transfers in one (op, size). */
#define RPT_MIN_LATE_OPS 8
#define RPT_MIN_LINK_SAMPLES 3

enum rpt_late_verdict {
  RPT_LATE_NO,      /* not late by the rule */
  RPT_LATE_NAMED,   /* a straggler */
  RPT_LATE_TOO_FEW  /* late by the rule, in fewer ops than the minimum: "not enough data" */
};

/*
 * A rank's lateness judged over the job's time (late.c), for one kind of op: its
 * collectives, or its P2P transfers. Its communicator's time is cut into windows; the
 * onset is the window from which the rank is late (where its late share rises most
 * clearly), else the first; the share and its evidence count from the onset on.
 */
struct rpt_late_judge {
  enum rpt_late_verdict verdict;
  enum rpt_conf conf;           /* of a named one */
  uint64_t since_ops, since_late; /* ops from the onset on, and those it was late in */
  double share, share_lo;       /* since_late / since_ops, and its 95% lower bound */
  double others_share;          /* the other ranks' late share over the same windows */
  double late_med_ns;           /* median lateness of its late ops since the onset */
  uint64_t onset_ns;            /* aligned GPU time the onset window starts at */
  uint64_t window_ns;           /* the windows' width */
  int windows, onset_window;    /* its communicator's windows; the onset's (0: from the start) */
};

/* Per (communicator, rank): what the lateness and bandwidth heat maps show. */
struct rpt_rank_stat {
  int comm, rank;
  uint64_t ops;         /* collectives matched on several ranks */
  uint64_t late_ops;    /* of those, ops it started late in (>= the lateness threshold) */
  uint64_t last_ops;    /* ops it started last in */
  double med_late_ns;   /* median of (its start - median start of the others), aligned */
  double mean_late_ns;
  double med_exec_ns, others_med_exec_ns;
  double busbw_ratio;   /* median of its busbw / the op's median busbw across ranks */
  int top_op;           /* interned name of the op it is most often late in, -1 none */
  double top_op_share;  /* share of that op's instances it is late in */
  struct rpt_late_judge judge; /* over time, windowed */
};

/* Per (communicator, rank): its P2P transfers, each a Send matched with the Recv that met it
 * (they end together): lateness = its start less its peer's start in that transfer. */
struct rpt_p2p_stat {
  int comm, rank;
  uint64_t ops, late_ops;  /* transfers matched, those it started late in */
  double med_late_ns;
  struct rpt_late_judge judge;
};

struct rpt_straggler {
  int comm, rank;
  int host;             /* interned, -1 unknown */
  long long pid;
  const struct rpt_rank_stat *stat;    /* its collectives (NULL: none matched) */
  bool p2p;                            /* named as late in posting its Send/Recv, not its collectives */
  const struct rpt_p2p_stat *p2p_stat; /* its P2P transfers (NULL: none matched) */
  const struct rpt_late_judge *judge;  /* what it was named on (or found late on, too few ops) */
};

/* What a straggler was named on (s->judge); for one built without it (a test's), its
 * collectives' whole-job figures, in *tmp. */
static inline const struct rpt_late_judge *rpt_straggler_judge(const struct rpt_straggler *s,
                                                               struct rpt_late_judge *tmp) {
  if (s->judge) return s->judge;
  *tmp = (struct rpt_late_judge){.verdict = RPT_LATE_NAMED, .conf = RPT_CONF_MEDIUM};
  if (s->stat) {
    tmp->since_ops = s->stat->ops;
    tmp->since_late = s->stat->late_ops;
    tmp->share = s->stat->ops ? (double)s->stat->late_ops / (double)s->stat->ops : 0;
    tmp->share_lo = rpt_share_lo(s->stat->late_ops, s->stat->ops);
    tmp->late_med_ns = s->stat->med_late_ns;
  }
  return tmp;
}

/*
 * A rank that wrote no log but that the others wait for (late_missing.c): in each
 * collective of its communicator, even the last of the others to start waits in its kernel
 * (its kernel time, the shortest of the op's, is its wait plus the transfer), and that wait
 * exceeds what the last to start waits in communicators of the same shape with every rank
 * seen (same op, size, ranks and nodes) by the lateness threshold or more, in at least
 * --late-share of RPT_MIN_LATE_OPS or more collectives, and clearly more often (95% lower
 * bound) than the whole ones' own ops wait that long beyond their median (the transfer times'
 * noise). Where no communicator of its shape is
 * whole, nothing can be measured; when the job misses one process alone, one that it is
 * missing from every communicator that holds all the other processes (a world communicator)
 * is named there too, on the measure taken in the other (`via`).
 */
struct rpt_missing {
  int comm, rank;          /* the rank with no log */
  int via;                 /* communicator its lateness was measured in (== comm: this one) */
  uint64_t ops, waited_ops; /* collectives compared in `via`, those the others waited in */
  double share, share_lo;  /* waited_ops / ops and its 95% lower bound */
  double late_med_ns;      /* median excess wait: its estimated lateness */
  double wait_med_ns;      /* median kernel time of the last of the others to start, in `comm` */
  double ref_ns;           /* the same in whole communicators of `via`'s shape */
  enum rpt_conf conf;      /* high: share_lo >= --late-share */
};
/* Communicators with at most this many ranks missing are looked at (a missing log, not a
 * partial set of logs). */
#define RPT_MISSING_MAX 4

/* A link's bandwidth against the other links of its class on one op and size. */
struct rpt_link_finding {
  int comm, op;
  uint64_t bytes;
  double busbw_p50, class_p50;  /* GB/s: this link, the median link of its class */
  uint64_t samples;
  int class_links;              /* links compared */
};

struct rpt_link {
  int a, b;               /* hosts (cross-node) or ranks (within one host: host >= 0); one way: from a to b */
  bool one_way;           /* slow from a to b only (each direction is judged apart: links.c) */
  int host;               /* -1: a and b are hosts; else the host both ranks are on */
  int comm;               /* for rank links: the communicator the ranks belong to */
  int nfind;
  struct rpt_link_finding *find;
  double worst_ratio;
  /* evidence (links.c): over the groups it was compared in, its (rank, peer) pairs and
   * how many of them had a median below the slow line; its transfers in slow groups */
  int groups;             /* (op, size) groups it was compared in */
  int pairs, pairs_below;
  uint64_t samples;       /* transfers behind its slow findings */
  double agree_lo;        /* 95% lower bound of pairs_below / pairs */
  enum rpt_conf conf;     /* high: agree_lo >= 0.5 */
};

/* Node by node, one (communicator, op, size) in which a slow cross-node link was found (links.c):
 * each direction's median busbw (from the row's host to the column's) over the median link of
 * the class, NAN where no transfer ran that way. What the page draws beside the slow links. */
struct rpt_link_matrix {
  int comm, op;
  uint64_t bytes;
  int nhosts;
  int *host;              /* [nhosts] interned, in name order */
  double *ratio;          /* [from * nhosts + to] */
  double class_p50;       /* GB/s */
};
#define RPT_LINK_MATRIX_MAX 4      /* matrices kept: the first groups of the slow links */
#define RPT_LINK_MATRIX_HOSTS 64   /* hosts a matrix holds at most (else none is kept) */

/* A node all of whose links are slow: reported instead of each of its links. */
struct rpt_slow_node {
  int host;
  int links;
  double worst_ratio;
  int pairs, pairs_below; /* over its links, as for a link */
  uint64_t samples;
  double agree_lo;
  enum rpt_conf conf;
};

struct rpt_change {
  int group;              /* index into job.groups */
  uint64_t t_ns;          /* start of the first bin after the change (aligned GPU clock) */
  double before_gbs, after_gbs;
  /* evidence (change.c): bins on each side, those on their side of the midpoint, ops */
  int bins_before, bins_after, agree_before, agree_after;
  uint64_t ops_before, ops_after;
  double agree_lo;        /* 95% lower bound of (agree_before + agree_after) / bins */
  enum rpt_conf conf;     /* high: agree_lo >= 0.8, the rule's own agreement */
  double p_value;         /* Mann-Whitney, the two sides' bins (change.c) */
  double tests;           /* the tests the search made: p_value x tests <= 0.05 */
};

/*
 * Hangs (hang.c, from the hang, hang_resolved and comm_idle lines: docs/CONTRACTS.md section
 * 2, docs/report.md "Hangs"). The reading keeps, per (communicator, rank), what its log says
 * (struct rpt_rank_log) and, per (communicator, rank, op), what its hang lines say (struct
 * rpt_hang_row); the hang analysis turns them into one struct rpt_hang per stuck op.
 */

/* An op a log reported completed: the newest one of a rank on a communicator. */
struct rpt_last_op {
  int op;           /* interned name, -1: none reported */
  int p2p;
  uint64_t sn;
  uint64_t end_ns;  /* its end on the GPU clock (host ns for host-timed ops), 0 unknown */
  uint64_t line_us; /* dump_timestamp_us of the line that reported it */
  double idle_s;    /* a comm_idle line's idle_s: the op ended idle_s before line_us; -1 a record's
                     * (it ended before line_us, by a dump interval or so); -2 a hang line's
                     * last_completed (it ended before, by as long as the other op was stuck:
                     * its age is not known) */
};

/* The highest sequence number a rank completed of one function on a communicator. */
struct rpt_done {
  int op;           /* interned name */
  int p2p;
  uint64_t sn;
};
#define RPT_DONE_MAX 64 /* functions tracked per (communicator, rank): NCCL has a dozen */

/* What one rank's log says of one communicator, for the hang analysis (acc.c keeps it for every
 * (communicator, rank) that has a line: its size is ranks x communicators, never the lines'). */
struct rpt_rank_log {
  int comm, rank;
  int host;         /* interned hostname of its lines (the smallest place, as for the ranks), -1 */
  long long pid;
  uint64_t last_us; /* the newest dump_timestamp_us of its lines on this communicator, 0 none */
  struct rpt_last_op last;
  /* the newest among the reports that date it (comm_idle lines and records: idle_s >= -1), by
   * the same order: when it is the same op as `last`, its age comes from here (a hang line's
   * last_completed, newer, names the op but not when it ended) */
  struct rpt_last_op last_timed;
  struct rpt_done *done; /* [ndone], by function */
  int ndone;
  bool done_full;   /* more than RPT_DONE_MAX functions: the others' completion is unknown */
};

/* One rank's hang lines about one op (its repeats folded), and its hang_resolved line. */
struct rpt_hang_row {
  int comm, rank;
  int op;                   /* interned name */
  int p2p;
  uint64_t sn;
  int peer;                 /* p2p_peer, -1 */
  int64_t bytes;            /* -1 unknown */
  uint32_t lines;           /* hang lines (0: only its hang_resolved line was read) */
  double in_flight_s;       /* the largest its hang lines gave, -1 none */
  uint64_t first_seen_us;   /* the smallest first sighting they gave, 0 none */
  /* the newest hang line's state (by dump time, then repeat) */
  uint64_t line_us;
  int repeat;
  bool kernel_started;
  int channels_started, channels_stopped, ops_in_flight; /* -1 unknown */
  bool resolved;            /* a hang_resolved line: it completed after all */
  double resolved_s;        /* its in_flight_s, -1 unknown */
};

/* Where a rank stands in a stuck op. */
enum rpt_hang_state {
  RPT_HS_WAITING,   /* issued it, its kernel started: waits inside NCCL for the others */
  RPT_HS_QUEUED,    /* issued it, its kernel never started: queued behind something else */
  RPT_HS_MISSING,   /* its log exists, and has neither a hang line nor a record of the op */
  RPT_HS_COMPLETED, /* a record or hang_resolved line says it completed */
  RPT_HS_UNKNOWN,   /* no line of it on this communicator at all */
  RPT_NHS
};

struct rpt_hang_rank {
  int rank;
  enum rpt_hang_state state;
  int host;                 /* interned, -1 unknown */
  long long pid;            /* -1 unknown */
  /* waiting, queued: from its hang lines */
  const struct rpt_hang_row *row; /* NULL: it had no hang line of this op */
  /* a P2P peer waiting on the matching op rather than this one: that op (row of its own) */
  const struct rpt_hang_row *own;
  /* missing (and every rank with a log): the newest op it completed on this communicator */
  struct rpt_last_op last;
  double last_op_age_s;     /* seconds from its end to job.last_line_us, NAN unknown */
  bool last_op_age_exact;   /* from a comm_idle line; else a lower bound (the line that reported it) */
  int alive;                /* missing: 1 its log has a line written after the hang began, 0 not, -1 unknown */
  double last_line_age_s;   /* seconds from its process's newest line to job.last_line_us, NAN unknown */
  const struct rpt_hang_row *stuck_in; /* missing: another op of this communicator it is stuck in */
};

/* A stuck op: one (communicator, function, sequence number) that has hang lines. */
struct rpt_hang {
  int comm;
  int op, p2p;
  uint64_t sn;
  int64_t bytes;            /* -1 unknown */
  bool resolved;            /* every rank that had it completed it after all */
  double stuck_s;           /* the largest in_flight_s of its lines (resolved: of hang_resolved too) */
  uint64_t began_us;        /* wall clock: its earliest first sighting, 0 unknown */
  int count[RPT_NHS];       /* ranks per state, every one (the unknown ones are not all listed) */
  struct rpt_hang_rank *ranks; /* sorted by rank: every rank with a log (P2P: those stuck and their peers) */
  int nranks;
  struct { int lo, hi; } *unknown; /* the unknown ranks, as ranges [lo, hi] in order */
  int nunknown;
};
/* The most ranks the hangs list in all: past it, further stuck ops are counted, not listed.
 * And the most (communicator, rank, op) rows of hang lines kept: past it, lines are counted. */
#define RPT_HANG_LIST_MAX (1 << 20)
#define RPT_HANG_ROWS_MAX (1 << 20)

static inline const char *rpt_hang_state_name(enum rpt_hang_state s) {
  static const char *const n[RPT_NHS] = {"waiting", "queued", "missing", "completed", "unknown"};
  return s < RPT_NHS ? n[s] : "?";
}

struct rpt_options {
  double max_busbw_gbs;   /* physical ceiling: above it a record is not believed */
  double late_ns;         /* lateness below this is launch skew, not a straggler */
  double late_share;      /* a straggler is late in at least this share of its ops since its onset */
  double slow_link_ratio; /* a link below this x its class median is slow */
  double change_ratio;    /* bandwidth change worth reporting */
  size_t op_memory;       /* bytes for the op sample (cross-rank analysis) */
  int threads;
};

/* A sample of ops for the cross-rank analyses: every rank's record of a kept op. */
struct rpt_opent {
  uint64_t sn, start_ns, exec_ns, bytes;
  uint32_t comm;   /* job.comms index */
  int32_t rank, peer;
  int32_t clock;   /* job.clocks index */
  uint16_t op;     /* interned name */
  uint8_t p2p;
  float busbw;
};

/* Two records of the sample are of one op instance: its communicator, kind, name and
 * sequence number. */
static inline bool rpt_same_instance(const struct rpt_opent *a, const struct rpt_opent *b) {
  return a->comm == b->comm && a->p2p == b->p2p && a->op == b->op && a->sn == b->sn;
}

struct rpt_job {
  struct rpt_options opt;
  /* input */
  long files, rejected, not_records;
  long bounds;                 /* bound lines: ops the plugin left out, bracketed (in no figure) */
  long duplicates;             /* files skipped: the same log as another input (input.c) */
  uint64_t bytes_read, lines;
  uint64_t records;            /* every record read */
  uint64_t records_kind[2];    /* collective, P2P */
  uint64_t excluded[RPT_NEXCL];
  uint64_t no_start;           /* kept records without a GPU start time */
  /* Communicators whose lines disagree on n_ranks (two jobs' logs mixed, or edited ones):
   * each is read with the largest its lines give (acc.c), so that every rank fits. */
  int nranks_mixed_comms;
  uint64_t nranks_mixed_lines; /* their lines that gave fewer ranks than that */
  uint64_t nranks_mixed_id;    /* the first of them (lowest id): its smallest and largest n_ranks */
  int nranks_mixed_lo, nranks_mixed_hi;
  char sampling[128];          /* "" when no log was sampled */
  double covered_lo, covered_hi;
  /* what the logs hold */
  struct rpt_comm *comms;      /* sorted by id; every rank a line gives is < its nranks */
  int ncomms;
  struct rpt_group *groups;    /* sorted: comm, p2p, op, bytes */
  int ngroups;
  struct rpt_pair *pairs;
  int npairs;
  struct rpt_clock *clocks;
  int nclocks;
  uint64_t hang_lines[3];      /* lines read: hang, hang_resolved, comm_idle */
  uint64_t hang_rows_dropped;  /* hang lines left out: more stuck ops than RPT_HANG_ROWS_MAX */
  uint64_t last_line_us;       /* the newest dump_timestamp_us of any line: "now" for the hangs */
  struct rpt_rank_log *rank_logs; /* sorted: comm, rank */
  int nrank_logs;
  struct rpt_hang_row *hang_rows; /* sorted: comm, p2p, op, sn, rank */
  int nhang_rows;
  struct rpt_opent *ops;       /* by (comm, p2p, op, sn), then rank and the other fields (acc.c group_ops):
                                * an order fixed by content, so every sum over them is too */
  size_t nops;
  unsigned sample_shift;       /* the op sample holds 1 op in 2^shift */
  /* findings */
  bool have_starts;            /* GPU start times present: alignment and lateness possible */
  int ncomponents;
  double resid_p50_ns, resid_p95_ns, offset_min_ns, offset_max_ns;
  uint64_t align_ops;
  uint64_t clock_ref_ns;       /* the time offsets are given at: the earliest end used to align */
  double drift_min_ppm, drift_max_ppm; /* over the aligned clocks */
  int clocks_line, clocks_windows; /* aligned clocks modelled with a rate, and piecewise */
  /* The lateness threshold rpt_late used: opt.late_ns, or 3 x resid_p95_ns when that is
   * larger (lateness finer than the alignment cannot be told from clock error). */
  double late_threshold_ns;
  bool late_threshold_raised;
  struct rpt_rank_stat *rstats; /* sorted: comm, rank */
  int nrstats;
  struct rpt_straggler *stragglers; /* in rstats' order: comm, rank */
  int nstragglers;
  struct rpt_p2p_stat *p2p_stats; /* sorted: comm, rank */
  int np2p_stats;
  struct rpt_straggler *few_stragglers; /* late by the rule on too few ops: "not enough data" */
  int nfew_stragglers;
  struct rpt_missing *missing; /* ranks with no log that the others wait for: by comm, rank */
  int nmissing;
  struct rpt_link *links;      /* slow ones only */
  int nlinks;
  struct rpt_link *few_links;  /* slow by the rule on too few transfers: "not enough data" */
  int nfew_links;
  struct rpt_slow_node *slow_nodes;
  int nslow_nodes;
  struct rpt_link_matrix *link_matrices; /* in the order of the groups (comm, op, size) */
  int nlink_matrices;
  struct rpt_change *changes;
  int nchanges;
  struct rpt_hang *hangs;      /* sorted: comm, p2p, op, sn; resolved ones too (rpt_hang.resolved) */
  int nhangs;
  int nhangs_unlisted;         /* stuck ops past RPT_HANG_LIST_MAX ranks: counted only */
};

/* A clock's offset (ns) at x = its own time - job.clock_ref_ns (see struct rpt_clock). */
static inline double rpt_clock_offset(const struct rpt_clock *k, double x) {
  if (k->nseg <= 0) return (double)k->offset_ns; /* no model: a constant (0 when not aligned) */
  int i = 0;
  while (i + 1 < k->nseg && x >= k->seg_x[i + 1]) i++;
  return k->seg_a[i] + k->rate * x;
}

/* Timestamp t of clock `clock` (-1: unknown, unchanged) on the aligned time base. */
static inline int64_t rpt_aligned_ns(const struct rpt_job *j, int clock, uint64_t t) {
  if (clock < 0) return (int64_t)t;
  double x = (double)(int64_t)(t - j->clock_ref_ns); /* small: exact in a double, where t is not */
  return (int64_t)t - (int64_t)llround(rpt_clock_offset(&j->clocks[clock], x));
}

/* The same less job.clock_ref_ns, as a double: differences of aligned times to the ns. */
static inline double rpt_aligned_rel_ns(const struct rpt_job *j, int clock, uint64_t t) {
  double x = (double)(int64_t)(t - j->clock_ref_ns);
  return clock < 0 ? x : x - rpt_clock_offset(&j->clocks[clock], x);
}

/* Frees what the job holds (not the job itself, nor the interned strings). */
void rpt_job_free(struct rpt_job *j);

/* Interned strings (operation names, hostnames): ids from 0, shared by every thread; once
 * the logs are read, in name order (rpt_intern_sort), so comparing ids compares names. */
int rpt_intern(const char *s);
const char *rpt_str(int id);
int rpt_nstrings(void); /* ids are 0 .. rpt_nstrings() - 1 */
/* Renumbers the ids in name order (the merge calls it once, after the last line is read,
 * before any id is compared): returns the map old id -> new id, [rpt_nstrings()], which the
 * caller applies to every id it holds and frees. */
int *rpt_intern_sort(void);
void rpt_intern_free(void); /* at exit, after every output */
uint64_t rpt_intern_probes(void); /* slots the lookups examined so far (for the tests) */

/* Whether (comm, rank) was named a straggler (a binary search: stragglers are sorted). */
bool rpt_is_straggler(const struct rpt_job *j, int comm, int rank);

/* The rank's host name, "?" when unknown. */
const char *rpt_rank_host(const struct rpt_job *j, int comm, int rank);

const char *rpt_excl_name(enum rpt_excl e);
const char *rpt_timing_name(enum rpt_timing t);
const char *rpt_kind_name(enum rpt_comm_kind k);

#endif /* RPT_JOB_H */
