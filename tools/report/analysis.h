/* SPDX-License-Identifier: Apache-2.0 */
/*
 * analysis.h - the report's findings, each computed once from the merged job.
 *
 * Order matters and is fixed by report.c: rpt_hangs (stuck ops: needs no other), rpt_align
 * (clock offsets and rates), then
 * rpt_late (lateness on the aligned clocks), then rpt_links (which skips the
 * transfers of the late ranks' processes in every communicator: a late rank's
 * peers wait in their kernels, which would otherwise read as a slow link), then
 * rpt_changes. Each fills its part of
 * struct rpt_job and reads only what earlier steps and the input left there.
 */
#ifndef RPT_ANALYSIS_H
#define RPT_ANALYSIS_H

#include "job.h"

/*
 * GPU clocks of different nodes are not synchronised, nor do they run at one
 * rate (they drift by ppm). A collective ends at nearly the same moment on
 * every rank (every rank waits for the last transfer), so each process's clock
 * is modelled from the ends of the collectives it shares with others:
 * alternately, each op's common end is the median of its ranks' aligned ends,
 * and each clock's offset is fitted to its ends less the common ends over its
 * time (of the collectives that span the most hosts it has enough of: one node's
 * own communicators say nothing of its clock against the others'): a constant, a line (offset and rate) or a line per window (a step),
 * the simplest that fits. Offsets and rates are relative: zero is the median
 * clock of each connected set of processes. The residual (how far an end still
 * is from its op's common end) says how good the alignment is. Aligned times:
 * rpt_aligned_ns (job.h).
 */
void rpt_align(struct rpt_job *j);

/*
 * Per collective matched on several ranks: each rank's lateness is its aligned
 * kernel start less the median start of the other ranks; it is late in the op
 * at the threshold or more (--late-us, raised to 3 x the alignment residual
 * p95 when alignment is coarser; the one used is kept in job.late_threshold_ns).
 * Judged over windows of the communicator's time: from its onset (where a
 * clearly later part begins, or the start), a straggler is late in at least
 * --late-share of its ops, clearly more often than the other ranks, in at least
 * RPT_MIN_LATE_OPS of them (else job.few_stragglers: "not enough data"). P2P:
 * each Send matched with the Recv that ended with it, a rank that posts late
 * is judged the same way on its transfers and named as the rank (kind P2P).
 */
void rpt_late(struct rpt_job *j);
/* Its last step (late_missing.c): a rank with no log that the others wait for (job.h, struct
 * rpt_missing), judged at lateness threshold thr (ns), once the stragglers are named. */
void rpt_late_missing(struct rpt_job *j, double thr);

/*
 * Point-to-point bandwidth per link (two hosts, or two ranks of one host),
 * against the other links of the same class (across nodes, or within one) on
 * the same communicator, op and size: a link is slow when its median busbw is
 * below --slow-link-ratio x the median link's in at least half of the
 * (op, size) groups where any link of its class is; a node all of whose links
 * are slow, to two or more other nodes, is reported as a slow node instead. The transfers of
 * every straggler's process are left out, in every communicator.
 */
void rpt_links(struct rpt_job *j);

/*
 * Bandwidth over time per group: the series' non-empty bins, split where the
 * median bin before and after differ by --change-ratio or more, at least 80%
 * of the bins on each side lie on their side of the midpoint (both sides at
 * least 5 bins) and a Mann-Whitney test of the two sides survives the number of
 * tests the search made (Bonferroni, 0.05 a job); then each side is split again
 * the same way, three levels deep.
 */
void rpt_changes(struct rpt_job *j);

/*
 * Stuck ops, from the hang lines (hang.c): one struct rpt_hang per (communicator, function,
 * sequence number) that a rank wrote a hang line for, each rank of it waiting (its kernel
 * started), queued (not started), completed (a record or hang_resolved line), missing (its log
 * has none of those: it never issued the op) or unknown (no log); a missing rank's last op,
 * and whether its process wrote after the hang began (alive) or stopped before (died or froze).
 * Reads only what the merge left (hang rows, rank logs, clocks): it may run first.
 */
void rpt_hangs(struct rpt_job *j);

/* Median of n doubles (reorders v); 0 for n == 0. Shared by the analyses. */
double rpt_median(double *v, size_t n);
/* The k-th smallest of v[0..n) (k < n), in O(n): v is reordered, the k smaller ones before
 * v[k]. The value a sort would put at k, bit for bit. */
double rpt_select(double *v, size_t n, size_t k);

#endif /* RPT_ANALYSIS_H */
