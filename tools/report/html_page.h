/* SPDX-License-Identifier: Apache-2.0 */
/*
 * html_page.h - what the report's page (out_html.c) shares with its findings sections
 * (html_findings.c): the page's model, and a communicator's display name. Nothing else of
 * the report sees it.
 */
#ifndef RPT_HTML_PAGE_H
#define RPT_HTML_PAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "html_charts.h"
#include "job.h"

struct page {
  struct rpt_job *j;
  FILE *f;
  struct html_size_pt *pts; /* [ngroups]: each group's op, size and quantiles */
  int *comm_g0, *comm_g1;   /* groups of comm c: [comm_g0[c], comm_g1[c]) (sorted by comm) */
  uint64_t *comm_records;
  int heat_cells;           /* ranks drawn on heat maps so far */
  bool names_compared;      /* name_shared known (html_findings.c): */
  bool *name_shared;        /* [ncomms]: another communicator has its name (NULL: no memory) */
};

/* The communicator's display name: "name (0x1a2b)", escaped. */
void page_put_comm(FILE *f, const struct rpt_job *j, int c);
/* The findings: stuck ops, stragglers, slow links and nodes, bandwidth changes. */
void page_findings(struct page *pg);

#endif /* RPT_HTML_PAGE_H */
