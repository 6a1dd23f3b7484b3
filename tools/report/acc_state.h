/* SPDX-License-Identifier: Apache-2.0 */
/*
 * acc_state.h - a reading thread's accumulation (acc.c) as the merge (acc_merge.c) reads it:
 * its tables, and the few rules the two share. Nothing else of the report sees it (acc.h).
 */
#ifndef RPT_ACC_STATE_H
#define RPT_ACC_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acc.h"

/* splitmix64's finaliser, the hash indexes' and the merge's: every part of a key goes
 * through it before the next is mixed in (acc.c says why). */
static inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* A hash index: hash -> position in an array (acc.c). */
struct hindex {
  uint64_t *h;  /* 0: empty (hashes are forced non-zero) */
  int32_t *pos;
  size_t cap, n;
  uint64_t probes; /* slots examined by lookups and inserts (not by growth) */
};

struct lcomm { /* a communicator as one thread saw it */
  uint64_t id;
  char name[128];               /* the smallest (strcmp) its lines gave */
  int nranks, nnodes;           /* the largest its lines gave */
  int nranks_lo;                /* the smallest n_ranks its lines gave */
  uint64_t lines, lines_at_max; /* its lines; those that gave n_ranks == nranks */
  struct rpt_rank_info *rank;   /* [nranks] or NULL */
};

struct lctx { /* one (communicator, rank): its dump_stats (the largest totals seen), its log's facts */
  int comm, rank;
  uint64_t written[2], dropped[2];
  double covered_lo, covered_hi;
  struct rpt_rank_log log; /* its comm and rank are set at the merge */
};

struct lclock {
  int host;
  long long pid;
  uint64_t last_us; /* its newest line's dump_timestamp_us */
};

struct scache_ent {
  uint64_t h;
  char s[64];
  int id;
};
#define SCACHE 512

struct rpt_acc {
  const struct rpt_options *opt;
  struct lcomm *comms;
  int ncomms, ccomms;
  struct hindex comm_ix;
  struct lctx *ctx;
  int nctx, cctx;
  struct hindex ctx_ix;
  int last_ctx; /* the (communicator, rank) of the previous line: lines come in runs */
  struct rpt_hang_row *hrows;
  int nhrows, chrows;
  struct hindex hrow_ix;
  uint64_t hang_lines[3], hang_rows_dropped;
  struct rpt_group *groups;
  int ngroups, cgroups;
  struct hindex group_ix;
  struct rpt_pair *pairs;
  int npairs, cpairs;
  struct hindex pair_ix;
  struct lclock *clocks;
  int nclocks, cclocks;
  struct hindex clock_ix;
  struct rpt_opent *ops;
  size_t nops, cops, ops_budget;
  unsigned shift;
  struct scache_ent scache[SCACHE];
  /* counts */
  uint64_t lines, records, records_kind[2], excluded[RPT_NEXCL], no_start;
  long rejected, not_records;
  long bounds; /* coll_bound, p2p_bound lines */
  struct rpt_bad_line *bad;
  int nbad, cbad, bad_unit, bad_in_unit;
  char sampling[128];
  double covered_lo, covered_hi;
  int last_comm; /* the communicator of the previous line: lines come in runs */
};

/* The rules both sides apply (acc.c): */
struct rpt_rank_info *rpt_acc_new_rank_table(int nranks); /* NULL past RANK_TABLE_MAX ranks */
bool rpt_acc_last_op_newer(const struct rpt_last_op *x, const struct rpt_last_op *y);
void rpt_acc_note_done(struct rpt_rank_log *g, int op, int p2p, uint64_t sn);
void rpt_acc_hang_row_fold(struct rpt_hang_row *x, const struct rpt_hang_row *y);
/* The op sample's share every thread has come to (it only grows), and a thread's sample
 * thinned to it. */
unsigned rpt_acc_shift(void);
void rpt_acc_thin(struct rpt_acc *a, unsigned shift);
/* A thread's tables freed, and a (after the merge has taken what it needs). */
void rpt_acc_free(struct rpt_acc *a);

#endif /* RPT_ACC_STATE_H */
