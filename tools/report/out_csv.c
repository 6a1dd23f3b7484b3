/* SPDX-License-Identifier: Apache-2.0 */
/*
 * out_csv.c - the report's tables as CSV files in a directory (--csv DIR; see out.h).
 *
 * One file per table, a header row each, RFC 4180 quoting for strings (comm
 * names and hostnames can hold commas and quotes): groups.csv, ranks.csv,
 * stragglers.csv, links.csv, changes.csv, clocks.csv, hangs.csv. Figures are the same as
 * --json's, in the same units. Each file is written beside its name and renamed
 * over it when complete, never through a link planted there (outfile.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "out.h"

static void cstr(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* DIR may be shared: a table is never written through a link planted at its name (out.h). */
static FILE *open_table(struct rpt_outfile *o, const char *dir, const char *name, char *path, size_t n) {
  snprintf(path, n, "%s/%s", dir, name);
  return rpt_out_open(o, path);
}

/* A number of seconds with the plugin's 6 decimals, or an empty cell. */
static void csec(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.6f", v);
}

/* Unknown ranks written per stuck op, at most (--json's bound: out_json.c). */
#define UNKNOWN_ROWS 65536

/* One row of hangs.csv: a rank of a stuck op (r NULL: unknown rank `rank`). */
static void hang_row(FILE *f, const struct rpt_job *j, const struct rpt_hang *h, const struct rpt_hang_rank *r,
                     int rank) {
  fprintf(f, "0x%" PRIx64 ",", j->comms[h->comm].id);
  cstr(f, j->comms[h->comm].name);
  fprintf(f, ",%s,", h->p2p ? "p2p" : "coll");
  cstr(f, rpt_str(h->op));
  fprintf(f, ",%" PRIu64 ",", h->sn);
  if (h->bytes >= 0) fprintf(f, "%" PRId64, h->bytes);
  fprintf(f, ",%d,", h->resolved);
  csec(f, h->stuck_s);
  fputc(',', f);
  if (h->began_us) fprintf(f, "%" PRIu64, h->began_us);
  if (!r) {
    fprintf(f, ",%d,unknown,,,,,,,,,,,,,,,,\n", rank);
    return;
  }
  fprintf(f, ",%d,%s,", r->rank, rpt_hang_state_name(r->state));
  cstr(f, r->host >= 0 ? rpt_str(r->host) : "");
  fputc(',', f);
  if (r->pid >= 0) fprintf(f, "%lld", r->pid);
  const struct rpt_hang_row *w = r->row && r->state != RPT_HS_COMPLETED ? r->row : r->own;
  fputc(',', f);
  if (w) csec(f, w->in_flight_s);
  fprintf(f, ",%s,", w ? (w->kernel_started ? "1" : "0") : "");
  const struct rpt_hang_row *p = w ? w : r->row;
  if (h->p2p && p && p->peer >= 0) fprintf(f, "%d", p->peer);
  fputc(',', f);
  if (r->own) cstr(f, rpt_str(r->own->op));
  fputc(',', f);
  if (r->own) fprintf(f, "%" PRIu64, r->own->sn);
  fputc(',', f);
  if (r->last.op >= 0) cstr(f, rpt_str(r->last.op));
  fputc(',', f);
  if (r->last.op >= 0) fprintf(f, "%" PRIu64, r->last.sn);
  fputc(',', f);
  if (r->last.op >= 0 && r->last.end_ns) fprintf(f, "%" PRIu64, r->last.end_ns);
  fputc(',', f);
  csec(f, r->last_op_age_s);
  fprintf(f, ",%s,%s,", isfinite(r->last_op_age_s) ? (r->last_op_age_exact ? "1" : "0") : "",
          r->state != RPT_HS_MISSING || r->alive < 0 ? "" : r->alive ? "1" : "0");
  csec(f, r->last_line_age_s);
  fputc(',', f);
  if (r->stuck_in) cstr(f, rpt_str(r->stuck_in->op));
  fputc(',', f);
  if (r->stuck_in) fprintf(f, "%" PRIu64, r->stuck_in->sn);
  fputc('\n', f);
}

static void groups_csv(FILE *f, struct rpt_job *j) {
  fprintf(f, "comm,comm_name,kind,op,bytes,records,kept,excluded_stale_channels,excluded_timing,excluded_ceiling,"
             "time_p50_us,time_p95_us,time_p99_us,busbw_p10_gbs,busbw_p50_gbs,busbw_p90_gbs\n");
  for (int g = 0; g < j->ngroups; g++) {
    struct rpt_group *x = &j->groups[g];
    fprintf(f, "0x%" PRIx64 ",", j->comms[x->comm].id);
    cstr(f, j->comms[x->comm].name);
    fprintf(f, ",%s,", x->p2p ? "p2p" : "coll");
    cstr(f, rpt_str(x->op));
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, x->bytes, x->records,
            x->time_ns.n, x->excluded[RPT_EXCL_STALE], x->excluded[RPT_EXCL_TIMING], x->excluded[RPT_EXCL_CEILING]);
    if (x->time_ns.n)
      fprintf(f, ",%.3f,%.3f,%.3f,%.4f,%.4f,%.4f\n", rpt_qs_quantile(&x->time_ns, 0.5) / 1e3,
              rpt_qs_quantile(&x->time_ns, 0.95) / 1e3, rpt_qs_quantile(&x->time_ns, 0.99) / 1e3,
              rpt_qs_quantile(&x->busbw, 0.1), rpt_qs_quantile(&x->busbw, 0.5), rpt_qs_quantile(&x->busbw, 0.9));
    else
      fprintf(f, ",,,,,,\n");
  }
}

static void ranks_csv(FILE *f, struct rpt_job *j) {
  fprintf(f, "comm,rank,hostname,ops,late_ops,last_ops,median_late_us,mean_late_us,median_exec_us,"
             "others_median_exec_us,busbw_ratio\n");
  for (int i = 0; i < j->nrstats; i++) {
    const struct rpt_rank_stat *r = &j->rstats[i];
    fprintf(f, "0x%" PRIx64 ",%d,", j->comms[r->comm].id, r->rank);
    cstr(f, rpt_rank_host(j, r->comm, r->rank));
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%.3f,%.3f,%.4f\n", r->ops, r->late_ops, r->last_ops,
            r->med_late_ns / 1e3, r->mean_late_ns / 1e3, r->med_exec_ns / 1e3, r->others_med_exec_ns / 1e3,
            r->busbw_ratio);
  }
}

/* Named ones, then those on too few ops (confidence "not enough data"); the figures from
 * evidence_ops on are counted from the rank's onset (--json's "evidence"). */
static void stragglers_csv(FILE *f, struct rpt_job *j) {
  fprintf(f, "comm,comm_name,rank,hostname,pid,ops,late_ops,late_share,median_late_us,mean_late_us,top_op,kind,"
             "onset_ns,from_start,evidence_ops,evidence_late_ops,evidence_late_share,late_share_low,"
             "others_late_share,confidence\n");
  for (int i = 0; i < j->nstragglers + j->nfew_stragglers; i++) {
    const struct rpt_straggler *s = i < j->nstragglers ? &j->stragglers[i] : &j->few_stragglers[i - j->nstragglers];
    struct rpt_late_judge tmp;
    const struct rpt_late_judge *g = rpt_straggler_judge(s, &tmp);
    fprintf(f, "0x%" PRIx64 ",", j->comms[s->comm].id);
    cstr(f, j->comms[s->comm].name);
    fprintf(f, ",%d,", s->rank);
    cstr(f, s->host >= 0 ? rpt_str(s->host) : "?");
    if (s->p2p)
      fprintf(f, ",%lld,%" PRIu64 ",%" PRIu64 ",%.4f,%.3f,,", s->pid, s->p2p_stat->ops, s->p2p_stat->late_ops,
              (double)s->p2p_stat->late_ops / (double)s->p2p_stat->ops, s->p2p_stat->med_late_ns / 1e3);
    else
      fprintf(f, ",%lld,%" PRIu64 ",%" PRIu64 ",%.4f,%.3f,%.3f,", s->pid, s->stat->ops, s->stat->late_ops,
              (double)s->stat->late_ops / (double)s->stat->ops, s->stat->med_late_ns / 1e3,
              s->stat->mean_late_ns / 1e3);
    cstr(f, !s->p2p && s->stat->top_op >= 0 ? rpt_str(s->stat->top_op) : "");
    fprintf(f, ",%s,%" PRIu64 ",%d,%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%.4f,%s\n", s->p2p ? "p2p" : "collective",
            g->onset_ns, !g->onset_window, g->since_ops, g->since_late, g->share, g->share_lo, g->others_share,
            g->verdict == RPT_LATE_NAMED ? rpt_conf_name(g->conf) : "not enough data");
  }
}

/* A row per (link, op, size), the link's evidence on each; links on too few transfers last;
 * then the slow nodes. */
static void links_csv(FILE *f, struct rpt_job *j) {
  fprintf(f, "between,a,b,hostname,comm,op,bytes,busbw_gbs,class_median_gbs,samples,links_compared,"
             "link_samples,link_pairs,link_pairs_below,confidence,direction\n");
  for (int i = 0; i < j->nlinks + j->nfew_links; i++) {
    const struct rpt_link *l = i < j->nlinks ? &j->links[i] : &j->few_links[i - j->nlinks];
    for (int k = 0; k < l->nfind; k++) {
      const struct rpt_link_finding *x = &l->find[k];
      fprintf(f, "%s,", l->host < 0 ? "hosts" : "ranks");
      if (l->host < 0) {
        cstr(f, rpt_str(l->a));
        fputc(',', f);
        cstr(f, rpt_str(l->b));
        fputs(",,", f);
      } else {
        fprintf(f, "%d,%d,", l->a, l->b);
        cstr(f, rpt_str(l->host));
        fputc(',', f);
      }
      fprintf(f, "0x%" PRIx64 ",", j->comms[x->comm].id);
      cstr(f, rpt_str(x->op));
      fprintf(f, ",%" PRIu64 ",%.4f,%.4f,%" PRIu64 ",%d,%" PRIu64 ",%d,%d,%s,%s\n", x->bytes, x->busbw_p50,
              x->class_p50, x->samples, x->class_links, l->samples, l->pairs, l->pairs_below,
              i >= j->nlinks ? "not enough data" : rpt_conf_name(l->conf), l->one_way ? "a_to_b" : "both");
    }
  }
  for (int i = 0; i < j->nslow_nodes; i++) {
    fputs("node,", f);
    cstr(f, rpt_str(j->slow_nodes[i].host));
    fprintf(f, ",,,,,,,,,%d,%" PRIu64 ",%d,%d,%s,\n", j->slow_nodes[i].links, j->slow_nodes[i].samples,
            j->slow_nodes[i].pairs, j->slow_nodes[i].pairs_below, rpt_conf_name(j->slow_nodes[i].conf));
  }
}

static void changes_csv(FILE *f, struct rpt_job *j) {
  fprintf(f, "comm,op,bytes,t_ns,before_gbs,after_gbs,bins_before,bins_after,agree_before,agree_after,ops_before,"
             "ops_after,confidence,p_value,tests\n");
  for (int i = 0; i < j->nchanges; i++) {
    const struct rpt_change *c = &j->changes[i];
    const struct rpt_group *g = &j->groups[c->group];
    fprintf(f, "0x%" PRIx64 ",", j->comms[g->comm].id);
    cstr(f, rpt_str(g->op));
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%d,%d,%d,%d,%" PRIu64 ",%" PRIu64 ",%s,%.3g,%.0f\n", g->bytes,
            c->t_ns, c->before_gbs, c->after_gbs, c->bins_before, c->bins_after, c->agree_before, c->agree_after,
            c->ops_before, c->ops_after, rpt_conf_name(c->conf), c->p_value, c->tests);
  }
}

static void clocks_csv(FILE *f, struct rpt_job *j) {
  fprintf(f, "hostname,pid,aligned,component,offset_ns,ops,residual_p95_us,drift_ppm,model\n");
  for (int c = 0; c < j->nclocks; c++) {
    const struct rpt_clock *k = &j->clocks[c];
    cstr(f, rpt_str(k->host));
    fprintf(f, ",%lld,%d,%d,%" PRId64 ",%" PRIu64 ",%.3f,%.4f,%s\n", k->pid, k->aligned, k->component, k->offset_ns,
            k->ops, k->resid_p95_ns / 1e3, k->drift_ppm, rpt_clock_model_name(k->model));
  }
}

/* A row per rank of each stuck op (those that resolved too), in rank order. */
static void hangs_csv(FILE *f, struct rpt_job *j) {
  fprintf(f, "comm,comm_name,kind,op,sn,size_bytes,resolved,stuck_s,began_us,rank,state,hostname,pid,in_flight_s,"
             "kernel_started,p2p_peer,own_op,own_sn,last_op,last_op_sn,last_op_end_ts_ns,last_op_age_s,"
             "last_op_age_exact,alive,last_line_age_s,stuck_in,stuck_in_sn\n");
  for (int i = 0; i < j->nhangs; i++) {
    const struct rpt_hang *h = &j->hangs[i];
    int u = 0, ur = h->nunknown ? h->unknown[0].lo : -1, listed = 0;
    for (int k = 0; k <= h->nranks;) { /* the ranks with a log and the unknown ones, in rank order */
      int known = k < h->nranks ? h->ranks[k].rank : -1;
      if (ur >= 0 && (known < 0 || ur < known)) {
        if (listed++ < UNKNOWN_ROWS) hang_row(f, j, h, NULL, ur);
        if (ur++ == h->unknown[u].hi || listed >= UNKNOWN_ROWS) ur = ++u < h->nunknown ? h->unknown[u].lo : -1;
        continue;
      }
      if (known < 0) break;
      hang_row(f, j, h, &h->ranks[k++], known);
    }
  }
}

/* The tables, in the order they are written. */
static const struct {
  const char *name;
  void (*write)(FILE *f, struct rpt_job *j); /* the header row, then the rows */
} k_tables[] = {
    {"groups.csv", groups_csv}, {"ranks.csv", ranks_csv},     {"stragglers.csv", stragglers_csv},
    {"links.csv", links_csv},   {"changes.csv", changes_csv}, {"clocks.csv", clocks_csv},
    {"hangs.csv", hangs_csv},
};

int rpt_write_csv(struct rpt_job *j, const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "inspector-report: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
  }
  int rc = 0;
  for (size_t t = 0; t < sizeof k_tables / sizeof *k_tables; t++) {
    char path[4352];
    struct rpt_outfile o;
    FILE *f = open_table(&o, dir, k_tables[t].name, path, sizeof path);
    if (!f) return -1; /* out.h's message said why; the tables after it are not written */
    k_tables[t].write(f, j);
    rc |= rpt_out_close(&o, 0);
  }
  return rc ? -1 : 0;
}
