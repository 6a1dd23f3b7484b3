/*
 * out_csv.c - the report's tables as CSV files in a directory (--csv DIR; see out.h).
 *
 * One file per table, a header row each, RFC 4180 quoting for strings (comm
 * names and hostnames can hold commas and quotes): groups.csv, ranks.csv,
 * stragglers.csv, links.csv, changes.csv, clocks.csv. Figures are the same as
 * --json's, in the same units. Each file is written beside its name and renamed
 * over it when complete, never through a link planted there (outfile.c).
 */
#include <errno.h>
#include <inttypes.h>
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

int rpt_write_csv(struct rpt_job *j, const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "inspector-report: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char path[4352];
  int rc = 0;
  struct rpt_outfile o;
  FILE *f = open_table(&o, dir, "groups.csv", path, sizeof path);
  if (!f) return -1;
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
  rc |= rpt_out_close(&o, 0);
  if (!(f = open_table(&o, dir, "ranks.csv", path, sizeof path))) return -1;
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
  rc |= rpt_out_close(&o, 0);
  if (!(f = open_table(&o, dir, "stragglers.csv", path, sizeof path))) return -1;
  /* named ones, then those on too few ops (confidence "not enough data"); the figures from
   * evidence_ops on are counted from the rank's onset (--json's "evidence") */
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
  rc |= rpt_out_close(&o, 0);
  if (!(f = open_table(&o, dir, "links.csv", path, sizeof path))) return -1;
  /* a row per (link, op, size), the link's evidence on each; links on too few transfers last */
  fprintf(f, "between,a,b,hostname,comm,op,bytes,busbw_gbs,class_median_gbs,samples,links_compared,"
             "link_samples,link_pairs,link_pairs_below,confidence\n");
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
      fprintf(f, ",%" PRIu64 ",%.4f,%.4f,%" PRIu64 ",%d,%" PRIu64 ",%d,%d,%s\n", x->bytes, x->busbw_p50, x->class_p50,
              x->samples, x->class_links, l->samples, l->pairs, l->pairs_below,
              i >= j->nlinks ? "not enough data" : rpt_conf_name(l->conf));
    }
  }
  for (int i = 0; i < j->nslow_nodes; i++) {
    fputs("node,", f);
    cstr(f, rpt_str(j->slow_nodes[i].host));
    fprintf(f, ",,,,,,,,,%d,%" PRIu64 ",%d,%d,%s\n", j->slow_nodes[i].links, j->slow_nodes[i].samples,
            j->slow_nodes[i].pairs, j->slow_nodes[i].pairs_below, rpt_conf_name(j->slow_nodes[i].conf));
  }
  rc |= rpt_out_close(&o, 0);
  if (!(f = open_table(&o, dir, "changes.csv", path, sizeof path))) return -1;
  fprintf(f, "comm,op,bytes,t_ns,before_gbs,after_gbs,bins_before,bins_after,agree_before,agree_after,ops_before,"
             "ops_after,confidence\n");
  for (int i = 0; i < j->nchanges; i++) {
    const struct rpt_change *c = &j->changes[i];
    const struct rpt_group *g = &j->groups[c->group];
    fprintf(f, "0x%" PRIx64 ",", j->comms[g->comm].id);
    cstr(f, rpt_str(g->op));
    fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%d,%d,%d,%d,%" PRIu64 ",%" PRIu64 ",%s\n", g->bytes, c->t_ns,
            c->before_gbs, c->after_gbs, c->bins_before, c->bins_after, c->agree_before, c->agree_after, c->ops_before,
            c->ops_after, rpt_conf_name(c->conf));
  }
  rc |= rpt_out_close(&o, 0);
  if (!(f = open_table(&o, dir, "clocks.csv", path, sizeof path))) return -1;
  fprintf(f, "hostname,pid,aligned,component,offset_ns,ops,residual_p95_us,drift_ppm,model\n");
  for (int c = 0; c < j->nclocks; c++) {
    const struct rpt_clock *k = &j->clocks[c];
    cstr(f, rpt_str(k->host));
    fprintf(f, ",%lld,%d,%d,%" PRId64 ",%" PRIu64 ",%.3f,%.4f,%s\n", k->pid, k->aligned, k->component, k->offset_ns,
            k->ops, k->resid_p95_ns / 1e3, k->drift_ppm, rpt_clock_model_name(k->model));
  }
  rc |= rpt_out_close(&o, 0);
  return rc ? -1 : 0;
}
