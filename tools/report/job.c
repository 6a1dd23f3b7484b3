/* SPDX-License-Identifier: Apache-2.0 */
/*
 * job.c - freeing a finished job (see job.h).
 *
 * The report exits right after its outputs, so this is not about memory
 * returned to the system: it keeps LeakSanitizer quiet about real leaks by
 * accounting for every allocation the model holds.
 */
#include <stdlib.h>

#include "job.h"

void rpt_job_free(struct rpt_job *j) {
  for (int c = 0; c < j->ncomms; c++) free(j->comms[c].rank);
  free(j->comms);
  for (int g = 0; g < j->ngroups; g++) {
    rpt_qs_free(&j->groups[g].time_ns);
    rpt_qs_free(&j->groups[g].busbw);
    free(j->groups[g].series.count);
    free(j->groups[g].series.sum_mbs);
  }
  free(j->groups);
  for (int p = 0; p < j->npairs; p++) rpt_qs_free(&j->pairs[p].busbw);
  free(j->pairs);
  free(j->clocks);
  free(j->ops);
  free(j->rstats);
  free(j->stragglers);
  free(j->p2p_stats);
  free(j->few_stragglers);
  free(j->missing);
  for (int l = 0; l < j->nlinks; l++) free(j->links[l].find);
  free(j->links);
  for (int l = 0; l < j->nfew_links; l++) free(j->few_links[l].find);
  free(j->few_links);
  free(j->slow_nodes);
  for (int i = 0; i < j->nlink_matrices; i++) {
    free(j->link_matrices[i].host);
    free(j->link_matrices[i].ratio);
  }
  free(j->link_matrices);
  free(j->changes);
  for (int i = 0; i < j->nrank_logs; i++) free(j->rank_logs[i].done);
  free(j->rank_logs);
  free(j->hang_rows);
  for (int i = 0; i < j->nhangs; i++) {
    free(j->hangs[i].ranks);
    free(j->hangs[i].unknown);
  }
  free(j->hangs);
}
