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

/* One process: its GPU timestamps share a time base. */
struct rpt_clock {
  int host;           /* interned hostname */
  long long pid;
  int component;      /* clocks joined by shared ops; offsets are relative within one */
  int64_t offset_ns;  /* add -offset to a timestamp of this clock to align it */
  bool aligned;       /* shares ops with another clock */
  uint64_t ops;       /* ops it took part in that were used for alignment */
  double resid_p95_ns;
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
};

struct rpt_straggler {
  int comm, rank;
  int host;             /* interned, -1 unknown */
  long long pid;
  const struct rpt_rank_stat *stat;
};

/* A link's bandwidth against the other links of its class on one op and size. */
struct rpt_link_finding {
  int comm, op;
  uint64_t bytes;
  double busbw_p50, class_p50;  /* GB/s: this link, the median link of its class */
  uint64_t samples;
  int class_links;              /* links compared */
};

struct rpt_link {
  int a, b;               /* hosts (cross-node) or ranks (within one host: host >= 0) */
  int host;               /* -1: a and b are hosts; else the host both ranks are on */
  int comm;               /* for rank links: the communicator the ranks belong to */
  int nfind;
  struct rpt_link_finding *find;
  double worst_ratio;
};

/* A node all of whose links are slow: reported instead of each of its links. */
struct rpt_slow_node {
  int host;
  int links;
  double worst_ratio;
};

struct rpt_change {
  int group;              /* index into job.groups */
  uint64_t t_ns;          /* start of the first bin after the change (aligned GPU clock) */
  double before_gbs, after_gbs;
};

struct rpt_options {
  double max_busbw_gbs;   /* physical ceiling: above it a record is not believed */
  double late_ns;         /* lateness below this is launch skew, not a straggler */
  double late_share;      /* a straggler is late in at least this share of its ops */
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

struct rpt_job {
  struct rpt_options opt;
  /* input */
  long files, rejected, not_records;
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
  struct rpt_opent *ops;       /* one op's records (one per rank) adjacent, in no other order */
  size_t nops;
  unsigned sample_shift;       /* the op sample holds 1 op in 2^shift */
  /* findings */
  bool have_starts;            /* GPU start times present: alignment and lateness possible */
  int ncomponents;
  double resid_p50_ns, resid_p95_ns, offset_min_ns, offset_max_ns;
  uint64_t align_ops;
  struct rpt_rank_stat *rstats; /* sorted: comm, rank */
  int nrstats;
  struct rpt_straggler *stragglers; /* in rstats' order: comm, rank */
  int nstragglers;
  struct rpt_link *links;      /* slow ones only */
  int nlinks;
  struct rpt_slow_node *slow_nodes;
  int nslow_nodes;
  struct rpt_change *changes;
  int nchanges;
};

/* Frees what the job holds (not the job itself, nor the interned strings). */
void rpt_job_free(struct rpt_job *j);

/* Interned strings (operation names, hostnames): ids from 0, shared by every thread. */
int rpt_intern(const char *s);
const char *rpt_str(int id);
int rpt_nstrings(void); /* ids are 0 .. rpt_nstrings() - 1 */
void rpt_intern_free(void); /* at exit, after every output */

/* Whether (comm, rank) was named a straggler (a binary search: stragglers are sorted). */
bool rpt_is_straggler(const struct rpt_job *j, int comm, int rank);

/* The rank's host name, "?" when unknown. */
const char *rpt_rank_host(const struct rpt_job *j, int comm, int rank);

const char *rpt_excl_name(enum rpt_excl e);
const char *rpt_timing_name(enum rpt_timing t);
const char *rpt_kind_name(enum rpt_comm_kind k);

#endif /* RPT_JOB_H */
